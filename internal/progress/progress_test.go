package progress

import (
	"strings"
	"testing"
	"time"
)

func TestLine(t *testing.T) {
	l := Line("eval", 500, 1000, 2*time.Second)
	for _, want := range []string{"eval [===============               ]", " 50.0%", "250/s", "eta 2s"} {
		if !strings.Contains(l, want) {
			t.Errorf("%q lacks %q", l, want)
		}
	}
	// A total not known yet (a file still being read): no percentage, no
	// estimate, the count and the rate.
	if l := Line("eval", 47103, 0, time.Second); strings.Contains(l, "%") || strings.Contains(l, "eta") || !strings.Contains(l, "eval 47.1k records 47.1k/s") {
		t.Errorf("unknown total: %q", l)
	}
}

func TestInactiveBarIsSilent(t *testing.T) {
	var b *Bar // what New returns when not on a terminal
	b.Update(1, 2)
	b.Done()
}
