// Package progress draws a one-line progress bar on a terminal and stays
// silent otherwise, so that long commands show they are alive without
// polluting logs or pipes.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Bar is a progress line. The zero value and a nil *Bar are inactive; all
// methods are safe for concurrent use.
type Bar struct {
	mu    sync.Mutex
	w     io.Writer
	label string
	start time.Time
	last  time.Time
	drawn bool
}

// New returns a bar drawing on f when f is a terminal, or an inactive bar.
func New(f *os.File, label string) *Bar {
	if !IsTerminal(f) {
		return nil
	}
	return &Bar{w: f, label: label, start: time.Now()}
}

// Update redraws the bar, at most ten times a second.
func (b *Bar) Update(done, total int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if now.Sub(b.last) < 100*time.Millisecond && (done < total || total <= 0) {
		return
	}
	b.last = now
	b.drawn = true
	fmt.Fprint(b.w, "\r"+Line(b.label, done, total, now.Sub(b.start)))
}

// Done erases the bar.
func (b *Bar) Done() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn {
		fmt.Fprint(b.w, "\r\033[K")
	}
}

// Line formats one progress line: label, bar, percentage, rate and the
// estimated time left; with a total of 0 or less (unknown), the count and
// the rate alone.
func Line(label string, done, total int64, elapsed time.Duration) string {
	const width = 30
	if total <= 0 {
		// Not known yet (a file still being read): what is done, and how fast.
		rate := 0.0
		if s := elapsed.Seconds(); s > 0 {
			rate = float64(done) / s
		}
		return fmt.Sprintf("%s %s records %s/s\033[K", label, human(float64(done)), human(rate))
	}
	frac := 0.0
	if total > 0 {
		frac = min(float64(done)/float64(total), 1)
	}
	filled := int(frac * width)
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(done) / s
	}
	eta := "?"
	if rate > 0 {
		eta = (time.Duration(float64(total-done)/rate) * time.Second).Round(time.Second).String()
	}
	return fmt.Sprintf("%s [%s%s] %5.1f%% %s/s eta %s\033[K", label,
		strings.Repeat("=", filled), strings.Repeat(" ", width-filled), 100*frac, human(rate), eta)
}

func human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool { return f != nil && term.IsTerminal(int(f.Fd())) }
