package autolearn

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/internal/golden"
)

// TestUnmarshalPinned pins what Unmarshal makes of a search's state in
// every format and of every cut and one-byte change of it: the error, or
// the digest of the restored search's state. The golden file holds each
// state's outcome, a digest of the outcomes in order, and the outcomes
// counted.
func TestUnmarshalPinned(t *testing.T) {
	xs, ys := flipped(400, 250, 3)
	var out strings.Builder
	for v := uint64(1); v <= version; v++ {
		a := build(t, "auto:rung=20,window=60,width=4,keep=2,budget=3..6", 2)
		play(a, xs, ys, 0, len(xs))
		st, err := a.appendVersion(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "version %d (%d bytes): %s\n", v, len(st), autoOutcome(st))
		var outcomes []string
		for n := range len(st) {
			outcomes = append(outcomes, autoOutcome(st[:n]))
		}
		for at := range st {
			for _, d := range []byte{1, 0x80, 0xff} {
				b := bytes.Clone(st)
				b[at] += d
				outcomes = append(outcomes, autoOutcome(b))
			}
		}
		fmt.Fprintf(&out, "  %d damaged, digest %x\n", len(outcomes), sha256.Sum256([]byte(strings.Join(outcomes, "\n"))))
		count := map[string]int{}
		for _, o := range outcomes {
			// The digest above pins the whole outcomes; the list is for
			// reading.
			if strings.HasPrefix(o, "restored ") {
				o = "restored"
			}
			if len(o) > 40 {
				o = o[:40] + "…"
			}
			count[o]++
		}
		for _, o := range slices.Sorted(maps.Keys(count)) {
			fmt.Fprintf(&out, "  %5d %q\n", count[o], o)
		}
	}
	golden.Check(t, "unmarshal.golden", []byte(out.String()))
}

func autoOutcome(b []byte) string {
	a, err := Unmarshal(b)
	if err != nil {
		return err.Error()
	}
	st, err := a.MarshalBinary()
	if err != nil {
		return "restored, not marshaled: " + err.Error()
	}
	return fmt.Sprintf("restored %x", sha256.Sum256(st))
}
