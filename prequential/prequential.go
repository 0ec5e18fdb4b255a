// Package prequential is the test-then-train evaluator shared by eval
// (files), replay (a topic) and the live metrics of run: every labeled
// round is first scored with the model as it was, then learned from.
//
// It counts rounds, labeled rounds, mistakes (y·f(x) ≤ 0, the learners'
// own rule) and updates, tracks the support-set size and its peak, and
// keeps the mistake rate over a sliding window of the last Window labeled
// rounds.
package prequential

import "github.com/streamlearner/streamlearner/learners"

// DefaultWindow is the sliding window used when Window is 0.
const DefaultWindow = 1000

// Evaluator accumulates prequential statistics. The zero value is ready
// to use with DefaultWindow.
type Evaluator struct {
	Window int // labeled rounds in the sliding window; 0 means DefaultWindow

	Rounds     uint64 // all rounds, labeled or not
	Labeled    uint64
	Mistakes   uint64
	Updates    uint64
	Support    int // support-set size after the last round
	SupportMax int

	ring     []bool // mistakes of the last Window labeled rounds
	next     int
	inWindow int // mistakes currently in ring
}

// Observe records one round: its outcome, whether it was labeled, and the
// support-set size after it.
func (e *Evaluator) Observe(o learners.Outcome, labeled bool, support int) {
	e.Rounds++
	e.Support = support
	e.SupportMax = max(e.SupportMax, support)
	if o.Updated {
		e.Updates++
	}
	if !labeled {
		return
	}
	e.Labeled++
	if o.Mistake {
		e.Mistakes++
	}
	if e.ring == nil {
		w := e.Window
		if w <= 0 {
			w = DefaultWindow
		}
		e.ring = make([]bool, 0, w)
	}
	if len(e.ring) < cap(e.ring) {
		e.ring = append(e.ring, o.Mistake)
	} else {
		if e.ring[e.next] {
			e.inWindow--
		}
		e.ring[e.next] = o.Mistake
		e.next = (e.next + 1) % len(e.ring)
	}
	if o.Mistake {
		e.inWindow++
	}
}

// MistakeRate is the cumulative mistake rate over labeled rounds (0 before
// any).
func (e *Evaluator) MistakeRate() float64 {
	if e.Labeled == 0 {
		return 0
	}
	return float64(e.Mistakes) / float64(e.Labeled)
}

// WindowRate is the mistake rate over the last Window labeled rounds (or
// fewer, before the window has filled).
func (e *Evaluator) WindowRate() float64 {
	if len(e.ring) == 0 {
		return 0
	}
	return float64(e.inWindow) / float64(len(e.ring))
}
