package synth

import (
	"cmp"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
)

// ChunksConfig describes the shifting-target construction of Cavallanti,
// Cesa-Bianchi and Gentile (§4): a multi-class data set, in its order, is
// cut into Chunks consecutive chunks of equal length and each chunk is
// binarized against its own target, a record being +1 when its class is in
// the target and -1 otherwise. Chunks 1, 2, 4 and 8 give the paper's 0, 1,
// 3 and 7 shifts.
//
// A record may carry several classes, its label listing them separated by
// commas ("acq,money-fx"), as news stories carry several topics: it is +1
// when any of them is in the target, the paper's binarization of
// multi-labelled stories.
type ChunksConfig struct {
	// Chunks is the number of chunks, at least 1 and at most the number of
	// records; lengths differ by at most one.
	Chunks int
	// Targets holds one target per chunk, each a non-empty set of class
	// labels, compared as strings (pass canonical labels, as codec gives
	// them); they are cycled when there are fewer than Chunks. Every class
	// named must occur in the data, to catch typos. Empty (the default):
	// the Chunks most frequent classes, most frequent first, each alone,
	// cycled if the data has fewer classes.
	Targets [][]string
}

// Chunking is the result of [Chunks]: labels and segments for the records,
// in their order; the features are the caller's, untouched.
type Chunking struct {
	// Y is each record's binary label, +1 or -1.
	Y []int
	// Segment is each record's chunk index.
	Segment []int
	// Targets is the target of each chunk, after cycling and defaults.
	Targets [][]string
	// Shifts are the first positions of chunks 1..Chunks-1.
	Shifts []int64
	// Segments describe the chunks, with concepts "target=3+6+8".
	Segments []SegmentInfo
}

// Validate reports whether cfg is well formed; Chunks checks it against
// the data.
func (cfg ChunksConfig) Validate() error {
	if cfg.Chunks < 1 {
		return fmt.Errorf("synth: chunks: Chunks must be at least 1, got %d", cfg.Chunks)
	}
	for k, t := range cfg.Targets {
		if len(t) == 0 {
			return fmt.Errorf("synth: chunks: target %d is empty", k+1)
		}
		for _, c := range t {
			if c == "" {
				return fmt.Errorf("synth: chunks: target %d holds an empty class", k+1)
			}
		}
	}
	return nil
}

// Chunks binarizes labels, the classes of a data set's records in order.
func Chunks(labels []string, cfg ChunksConfig) (Chunking, error) {
	if err := cfg.Validate(); err != nil {
		return Chunking{}, err
	}
	n := len(labels)
	if cfg.Chunks > n {
		return Chunking{}, fmt.Errorf("synth: chunks: %d chunks need at least as many records, got %d", cfg.Chunks, n)
	}
	for i, l := range labels {
		if l == "" {
			return Chunking{}, fmt.Errorf("synth: chunks: record %d has no label", i+1)
		}
	}
	targets := cfg.Targets
	if len(targets) == 0 {
		for _, c := range FrequentClasses(labels) {
			if len(targets) == cfg.Chunks {
				break
			}
			targets = append(targets, []string{c})
		}
	}
	present := map[string]bool{}
	for _, l := range labels {
		for c := range classesOf(l) {
			present[c] = true
		}
	}
	for _, t := range targets {
		for _, c := range t {
			if !present[c] {
				return Chunking{}, fmt.Errorf("synth: chunks: target class %q does not occur in the data", c)
			}
		}
	}

	out := Chunking{
		Y:       make([]int, n),
		Segment: make([]int, n),
		Targets: make([][]string, cfg.Chunks),
		Shifts:  evenShifts(n, cfg.Chunks-1),
	}
	names := make([]string, cfg.Chunks)
	for k := range out.Targets {
		out.Targets[k] = slices.Clone(targets[k%len(targets)])
		names[k] = "target=" + strings.Join(out.Targets[k], "+")
	}
	out.Segments = segmentInfos(out.Shifts, names)
	seg := 0
	for i, l := range labels {
		for seg < len(out.Shifts) && int64(i) >= out.Shifts[seg] {
			seg++
		}
		out.Segment[i] = seg
		out.Y[i] = -1
		for c := range classesOf(l) {
			if slices.Contains(out.Targets[seg], c) {
				out.Y[i] = 1
				break
			}
		}
	}
	return out, nil
}

// FrequentClasses returns the distinct classes of labels (a label may list
// several, comma-separated), most frequent first; ties
// go in label order: numeric labels by value, before other labels, which
// go in byte order.
func FrequentClasses(labels []string) []string {
	count := map[string]int{}
	for _, l := range labels {
		for c := range classesOf(l) {
			count[c]++
		}
	}
	classes := make([]string, 0, len(count))
	for c := range count {
		classes = append(classes, c)
	}
	slices.SortFunc(classes, func(a, b string) int {
		if d := cmp.Compare(count[b], count[a]); d != 0 {
			return d
		}
		return compareLabels(a, b)
	})
	return classes
}

// classesOf yields the classes a label lists: one, or several separated by
// commas.
func classesOf(label string) iter.Seq[string] {
	return strings.SplitSeq(label, ",")
}

// compareLabels orders labels numerically when both are numbers, so that
// "10" follows "9", numbers before names, and names in byte order.
func compareLabels(a, b string) int {
	fa, errA := strconv.ParseFloat(a, 64)
	fb, errB := strconv.ParseFloat(b, 64)
	switch {
	case errA == nil && errB == nil:
		if d := cmp.Compare(fa, fb); d != 0 {
			return d
		}
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return strings.Compare(a, b)
}
