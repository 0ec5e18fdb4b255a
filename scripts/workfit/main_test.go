package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/internal/golden"
)

// TestMain runs main instead of the tests when asked to by runMain.
func TestMain(m *testing.M) {
	if args := os.Getenv("WORKFIT_ARGS"); args != "" {
		os.Args = append([]string{"workfit"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runMain runs workfit with args in a child process: its output and exit
// error.
func runMain(t *testing.T, args string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WORKFIT_ARGS="+args)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// writeSet writes n random records of nnz features among dim as LIBSVM,
// gzipped if path ends in .gz.
func writeSet(t *testing.T, path string, n, nnz, dim int, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 3))
	var b bytes.Buffer
	for range n {
		fmt.Fprintf(&b, "%d", 2*r.IntN(2)-1)
		for _, i := range r.Perm(dim)[:nnz] {
			fmt.Fprintf(&b, " %d:%.3f", i+1, r.Float64())
		}
		b.WriteByte('\n')
	}
	// LIBSVM wants increasing indices: sort each line's features.
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	var out bytes.Buffer
	for _, l := range lines {
		f := strings.Fields(l)
		feats := f[1:]
		sortFeatures(feats)
		out.WriteString(f[0] + " " + strings.Join(feats, " ") + "\n")
	}
	data := out.Bytes()
	if strings.HasSuffix(path, ".gz") {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(data)
		zw.Close()
		data = z.Bytes()
	}
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func sortFeatures(fs []string) {
	idx := func(s string) (i int) { fmt.Sscanf(s, "%d:", &i); return i }
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && idx(fs[j-1]) > idx(fs[j]); j-- {
			fs[j-1], fs[j] = fs[j], fs[j-1]
		}
	}
}

// TestMainPinned pins what workfit prints on small streams in the data
// sets' places, times masked: the runs it plays, the work it counts in
// each, the shape of the fit; a set it cannot load, and too few runs.
func TestMainPinned(t *testing.T) {
	dir := t.TempDir()
	writeSet(t, filepath.Join(dir, "a9a", "a9a.gz"), 200, 5, 40, 1)
	writeSet(t, filepath.Join(dir, "covtype", "covtype_small_binary.libsvm"), 200, 8, 8, 2)
	writeSet(t, filepath.Join(dir, "text.libsvm"), 150, 20, 300, 4)
	writeSet(t, filepath.Join(dir, "board.libsvm"), 150, 2, 2, 5)
	var got strings.Builder
	for _, args := range []string{
		"-records 120 -data " + dir,
		"-records 100 -data " + dir + " -text " + filepath.Join(dir, "text.libsvm") + " -checkerboard " + filepath.Join(dir, "board.libsvm"),
		"-data " + filepath.Join(dir, "none"),
	} {
		out, err := runMain(t, args)
		fmt.Fprintf(&got, "%s: %v\n%s", strings.ReplaceAll(args, dir, "DIR"), err, mask(strings.ReplaceAll(out, dir, "DIR")))
	}
	path := filepath.Join("testdata", "main.golden")
	if golden.Updating() {
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("workfit's output changed:\n%s\nwant:\n%s", got.String(), want)
	}
}

var (
	timeColumn = regexp.MustCompile(`(?m)^([^\t\n]+\t[^\t\n]+\t[^\t\n]+\t)-?[0-9]+(\t)`)
	number     = regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?`)
)

// mask replaces the times, and the weights fitted to them, by T.
func mask(s string) string {
	s = timeColumn.ReplaceAllString(s, "${1}T$2")
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "runs: a round") || strings.HasPrefix(l, "in matrix multiply-adds:") {
			head, tail, _ := strings.Cut(l, " (the weights in use")
			head = number.ReplaceAllStringFunc(head, func(n string) string {
				if strings.Contains(l, "runs: a round") && strings.HasPrefix(l, n) {
					return n // the count of runs
				}
				return "T"
			})
			if tail != "" {
				head += " (the weights in use" + tail
			}
			l = head
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
