package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/internal/golden"
)

// capture runs f with its standard output collected.
func capture(t *testing.T, f func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	ferr := f()
	os.Stdout = stdout
	w.Close()
	return string(<-done), ferr
}

// writeReports writes two replay reports per group of shifts, every
// learner in each, some shifts not recovered from (all of them, for
// forgetron).
func writeReports(t *testing.T, dir string) {
	t.Helper()
	specs := []string{"tighter:budget=50", "rbp:budget=100", "perceptron", "rbp:budget=50", "spa:lambda=0.1", "lbp:budget=50,seed=3", "sop", "lbp:budget=100,seed=3", "forgetron:budget=100"}
	for _, g := range []int{0, 1, 3, 7} {
		for s := range 2 {
			var ls []string
			for i, spec := range specs {
				var rec []string
				for k := range g {
					if (i+k+s)%3 == 0 || strings.HasPrefix(spec, "forgetron") {
						rec = append(rec, `{"shift_round":1,"records":null}`)
					} else {
						rec = append(rec, fmt.Sprintf(`{"shift_round":1,"records":%d}`, 100*(i+1)+10*k+s))
					}
				}
				ls = append(ls, fmt.Sprintf(`{"spec":%q,"mistake_rate":%g,"recovery":[%s]}`, spec, 0.01*float64(i+1)+0.003*float64(g)+0.001*float64(s), strings.Join(rec, ",")))
			}
			rep := `{"partitions":[{"learners":[` + strings.Join(ls, ",") + `]}]}`
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("set-s%d-%d.json", g, s)), []byte(rep), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRunPinned pins the tables run prints, byte for byte, and the plot
// it draws, by its hash, and the errors of a missing group and a broken
// report.
func TestRunPinned(t *testing.T) {
	dir := t.TempDir()
	writeReports(t, dir)
	out, err := capture(t, func() error { return run(dir, "set") })
	if err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(filepath.Join(dir, "set-budgets.png"))
	if err != nil {
		t.Fatal(err)
	}
	out += fmt.Sprintf("plot: %d bytes, sha256 %x\n", len(png), sha256.Sum256(png))
	if _, err := capture(t, func() error { return run(dir, "other") }); err != nil {
		out += strings.ReplaceAll(err.Error(), dir, "DIR") + "\n"
	}
	os.WriteFile(filepath.Join(dir, "set-s3-9.json"), []byte("{"), 0o600)
	if _, err := capture(t, func() error { return run(dir, "set") }); err != nil {
		out += strings.ReplaceAll(err.Error(), dir, "DIR") + "\n"
	}
	path := filepath.Join("testdata", "run.golden")
	if golden.Updating() {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal([]byte(out), want) {
		t.Errorf("run's output changed:\n%s\nwant:\n%s", out, want)
	}
}
