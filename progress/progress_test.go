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
	if l := Line("x", 0, 0, 0); !strings.Contains(l, "0.0%") || !strings.Contains(l, "eta ?") {
		t.Errorf("empty: %q", l)
	}
}

func TestInactiveBarIsSilent(t *testing.T) {
	var b *Bar // what New returns when not on a terminal
	b.Update(1, 2)
	b.Done()
}
