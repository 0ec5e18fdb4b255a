package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/internal/offline"
)

// TestEvalSkipsUnlistedLabels: with --positive 3 --negative 8, a record of
// label 5 or 6 is skipped and counted whether the file holds LIBSVM
// records or events, streamed (--keep-order) or loaded (random orders),
// in the training and in the test file: 3 examples of 5, no prediction
// for the others, and the count on stderr. (Records were dropped silently,
// events predicted and counted as examples.)
func TestEvalSkipsUnlistedLabels(t *testing.T) {
	dir := t.TempDir()
	var rec, ev strings.Builder
	for i, label := range []string{"3", "8", "5", "3", "6"} {
		fmt.Fprintf(&rec, "%s 1:%d 2:0.5\n", label, i+1)
		fmt.Fprintf(&ev, `{"id":"r%d","x":%d,"y":0.5,"label":%s}`+"\n", i, i+1, label)
	}
	files := map[string]string{"records": filepath.Join(dir, "d.libsvm"), "events": filepath.Join(dir, "d.jsonl")}
	os.WriteFile(files["records"], []byte(rec.String()), 0o644)
	os.WriteFile(files["events"], []byte(ev.String()), 0o644)
	for name, f := range files {
		for _, order := range [][]string{{"--keep-order"}, {"--orders", "2"}} {
			preds := filepath.Join(dir, name+".csv")
			args := append([]string{"eval", "--data", f, "--test", f, "--positive", "3", "--negative", "8", "--learner", "perceptron",
				"--format", "json", "--predictions", preds}, order...)
			var got []offline.Result
			stderr := captureStderr(t, func() { got = evalJSON(t, args...) })
			if len(got) != 1 || got[0].Examples != 3 {
				t.Errorf("%s %v: %+v, want 3 examples", name, order, got)
			}
			want := fmt.Sprintf("2 records of %s skipped", f)
			if strings.Count(stderr, want) != 2 {
				t.Errorf("%s %v: stderr %q, want %q for the training and the test file", name, order, stderr, want)
			}
			b, _ := os.ReadFile(preds)
			if n := strings.Count(string(b), "\n"); n != 1+3 {
				t.Errorf("%s %v: %d prediction lines, want a header and 3:\n%s", name, order, n, b)
			}
		}
	}
}
