package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/streamlearner/streamlearner/codec"
)

// TestKcatInterop feeds the service with kcat, the tool operators reach
// for first, and reads its predictions back with kcat. CI installs kcat
// and sets STREAMLEARNER_REQUIRE_KCAT=1 so that a missing tool fails there
// instead of skipping.
func TestKcatInterop(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("STREAMLEARNER_REQUIRE_KCAT") != "" {
			t.Fatal("kcat not installed")
		}
		t.Skip("kcat not installed (Debian package kcat)")
	}
	b := startBroker(t, "in", "out", "in.dlq")
	runMember(t, testConfig(t, b, "lbp:budget=20"))

	var input strings.Builder
	const n = 300
	for i := range n {
		fmt.Fprintf(&input, `{"label": %d, "features": {"1": %g, "2": %g}}`+"\n", 1-2*(i%2), float64(i%7+1)/7, float64(i%5)/5)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod := exec.CommandContext(ctx, kcat, "-P", "-b", b.Addr(), "-t", "in", "-X", "acks=all")
	prod.Stdin = strings.NewReader(input.String())
	if out, err := prod.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}

	// Poll with kcat -C -e (exit at the end of each partition) until all
	// predictions are there.
	var lines []string
	waitFor(t, "kcat to read every prediction", 45*time.Second, func() bool {
		out, err := exec.CommandContext(ctx, kcat, "-C", "-b", b.Addr(), "-t", "out", "-o", "beginning", "-e", "-q", "-f", "%k\t%s\n").Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Logf("kcat -C: %v: %s", err, ee.Stderr)
			}
			return false
		}
		lines = strings.Split(strings.TrimSpace(string(out)), "\n")
		return len(lines) >= n
	})
	seen := map[string]bool{}
	for _, l := range lines {
		key, val, ok := strings.Cut(l, "\t")
		if !ok {
			t.Fatalf("kcat line %q", l)
		}
		p, err := codec.DecodePrediction([]byte(val))
		if err != nil {
			t.Fatalf("%v: %q", err, val)
		}
		if key != codec.PredictionKey(p.Topic, p.Partition, p.Offset) || p.Mistake == nil {
			t.Fatalf("prediction %q %+v", key, p)
		}
		seen[key] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct predictions for %d records", len(seen), n)
	}
	if bytes.Contains([]byte(strings.Join(lines, "\n")), []byte(`"support":21`)) {
		t.Fatal("a prediction reports more support vectors than the budget")
	}
}
