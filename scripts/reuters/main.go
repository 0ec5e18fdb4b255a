// Command reuters turns the Reuters-21578 distribution (the SGML files in a
// .tar.gz) into a chronological stream of TF-IDF vectors for the
// shifting-target experiment of scripts/drift.sh, RESULTS.md's stand-in for
// RCV1: every story with at least one TOPICS category, in NEWID order (the
// distribution's chronological order), title and body tokenized into
// lower-case ASCII words, weighted (1 + ln tf)·ln(N/df) and scaled to unit
// length; one JSON record per story whose label lists its topics,
// comma-separated (`gen chunks` binarizes such multi-label records).
//
// Usage: go run ./scripts/reuters reuters21578_sgm.tar.gz > reuters.jsonl
// It prints the topics by frequency on standard error.
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/dev/synth"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: reuters reuters21578_sgm.tar.gz > reuters.jsonl")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "reuters:", err)
		os.Exit(1)
	}
}

type story struct {
	id     int
	topics []string
	words  map[string]int
}

var (
	reStory  = regexp.MustCompile(`(?s)<REUTERS[^>]*NEWID="(\d+)"[^>]*>(.*?)</REUTERS>`)
	reTopics = regexp.MustCompile(`(?s)<TOPICS>(.*?)</TOPICS>`)
	reD      = regexp.MustCompile(`<D>(.*?)</D>`)
	reTitle  = regexp.MustCompile(`(?s)<TITLE>(.*?)</TITLE>`)
	reBody   = regexp.MustCompile(`(?s)<BODY>(.*?)</BODY>`)
)

func run(path string, out, log io.Writer) error {
	stories, err := read(path)
	if err != nil {
		return err
	}
	slices.SortFunc(stories, func(a, b story) int { return a.id - b.id })

	df := map[string]int{}
	for _, s := range stories {
		for w := range s.words {
			df[w]++
		}
	}
	vocab := make([]string, 0, len(df))
	for w := range df {
		vocab = append(vocab, w)
	}
	slices.Sort(vocab) // feature i+1 is the i-th word in byte order
	index := make(map[string]uint32, len(vocab))
	for i, w := range vocab {
		index[w] = uint32(i + 1)
	}

	bw := bufio.NewWriter(out)
	n := float64(len(stories))
	var labels []string
	var line []byte
	for _, s := range stories {
		v := sparse.Vector{}
		words := make([]string, 0, len(s.words))
		for w := range s.words {
			words = append(words, w)
		}
		slices.SortFunc(words, func(a, b string) int { return int(index[a]) - int(index[b]) })
		var norm float64
		for _, w := range words {
			x := (1 + math.Log(float64(s.words[w]))) * math.Log(n/float64(df[w]))
			if x == 0 { // a word in every story carries nothing
				continue
			}
			v.Idx, v.Val = append(v.Idx, index[w]), append(v.Val, x)
			norm += x * x
		}
		norm = math.Sqrt(norm)
		for i := range v.Val {
			v.Val[i] /= norm
		}
		label := strings.Join(s.topics, ",")
		labels = append(labels, label)
		line = append(codec.AppendJSON(line[:0], codec.Example{Label: label, X: v}), '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(log, "%d stories with topics, %d words; topics by frequency:", len(stories), len(vocab))
	count := map[string]int{}
	for _, l := range labels {
		for _, t := range strings.Split(l, ",") {
			count[t]++
		}
	}
	for i, t := range synth.FrequentClasses(labels) {
		if i == 8 {
			break
		}
		fmt.Fprintf(log, " %s %d", t, count[t])
	}
	fmt.Fprintln(log)
	return nil
}

// read collects the stories that have topics from every .sgm file of the
// archive.
func read(path string) ([]story, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tr := tar.NewReader(zr)
	var stories []story
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return stories, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if !strings.HasSuffix(h.Name, ".sgm") {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, h.Name, err)
		}
		for _, m := range reStory.FindAllSubmatch(b, -1) {
			id, _ := strconv.Atoi(string(m[1]))
			s := story{id: id, words: map[string]int{}}
			if t := reTopics.FindSubmatch(m[2]); t != nil {
				for _, d := range reD.FindAllSubmatch(t[1], -1) {
					s.topics = append(s.topics, string(d[1]))
				}
			}
			if len(s.topics) == 0 {
				continue
			}
			var text []byte
			if t := reTitle.FindSubmatch(m[2]); t != nil {
				text = append(text, t[1]...)
			}
			if t := reBody.FindSubmatch(m[2]); t != nil {
				text = append(append(text, ' '), t[1]...)
			}
			for _, w := range words(html.UnescapeString(string(text))) {
				s.words[w]++
			}
			if len(s.words) > 0 {
				stories = append(stories, s)
			}
		}
	}
}

// words splits text into lower-case runs of ASCII letters of length ≥ 2.
func words(text string) []string {
	var out []string
	var cur bytes.Buffer
	flush := func() {
		if cur.Len() >= 2 {
			out = append(out, cur.String())
		}
		cur.Reset()
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case 'a' <= c && c <= 'z':
			cur.WriteByte(c)
		case 'A' <= c && c <= 'Z':
			cur.WriteByte(c + 'a' - 'A')
		default:
			flush()
		}
	}
	flush()
	return out
}
