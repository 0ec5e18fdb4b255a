// Package progress draws a one-line progress bar on a terminal, and
// elsewhere (a log, a pipe) writes a plain line every LogEvery, so that
// long commands show they are alive without filling a log with redraws.
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
	log   bool // not a terminal: a line every LogEvery, nothing redrawn
}

// LogEvery is how often a bar that is not on a terminal writes its line.
// The first comes LogEvery after the start, so that a short command
// writes none.
var LogEvery = 5 * time.Second

// New returns a bar drawing on f when f is a terminal, or writing a line
// on f every LogEvery when it is not; nil (inactive) when f is nil.
func New(f *os.File, label string) *Bar {
	if f == nil {
		return nil
	}
	now := time.Now()
	if !IsTerminal(f) {
		return &Bar{w: f, label: label, start: now, last: now, log: true}
	}
	return &Bar{w: f, label: label, start: now}
}

// Update redraws the bar, at most ten times a second.
func (b *Bar) Update(done, total int64) {
	if b == nil || b.w == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if b.log {
		if now.Sub(b.last) >= LogEvery {
			b.last = now
			fmt.Fprintln(b.w, "streamlearner: "+LogLine(b.label, done, total, now.Sub(b.start)))
		}
		return
	}
	if now.Sub(b.last) < 100*time.Millisecond && (done < total || total <= 0) {
		return
	}
	b.last = now
	b.drawn = true
	fmt.Fprint(b.w, "\r"+Line(b.label, done, total, now.Sub(b.start)))
}

// LogLine is a progress line for a log: what is done of how much, the
// rate and the time left; with a total of 0 or less (unknown), the count
// and the rate alone.
func LogLine(label string, done, total int64, elapsed time.Duration) string {
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(done) / s
	}
	if total <= 0 {
		return fmt.Sprintf("%s: %s records, %s/s", label, human(float64(done)), human(rate))
	}
	eta := "?"
	if rate > 0 {
		eta = (time.Duration(float64(max(total-done, 0))/rate) * time.Second).Round(time.Second).String()
	}
	return fmt.Sprintf("%s: %s of %s records (%.1f%%), %s/s, eta %s", label, human(float64(done)), human(float64(total)),
		100*min(float64(done)/float64(total), 1), human(rate), eta)
}

// Done erases the bar.
func (b *Bar) Done() {
	if b == nil || b.w == nil {
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
