package prequential

// Window counts the mistakes of the last N labeled rounds: the windowed
// rate of eval, replay and the service, and replay's recovery window
// after a shift. The zero Window holds nothing; NewWindow gives it room.
type Window struct {
	ring  []bool // the last rounds' mistakes, a ring once full
	next  int    // where the next round goes once full
	wrong int    // mistakes in ring
}

// NewWindow is a window over the last n rounds.
func NewWindow(n int) Window { return Window{ring: make([]bool, 0, n)} }

// Add records a round, dropping the oldest once the window is full.
func (w *Window) Add(mistake bool) {
	if len(w.ring) < cap(w.ring) {
		w.ring = append(w.ring, mistake)
	} else {
		if w.ring[w.next] {
			w.wrong--
		}
		w.ring[w.next] = mistake
		w.next = (w.next + 1) % len(w.ring)
	}
	if mistake {
		w.wrong++
	}
}

// Len is how many rounds the window holds; Cap how many it can.
func (w *Window) Len() int { return len(w.ring) }

// Cap is the window's length once full.
func (w *Window) Cap() int { return cap(w.ring) }

// Full tells whether the window holds its whole length.
func (w *Window) Full() bool { return len(w.ring) == cap(w.ring) }

// Rate is the mistakes over the rounds held; 0 for an empty window.
func (w *Window) Rate() float64 {
	if len(w.ring) == 0 {
		return 0
	}
	return float64(w.wrong) / float64(len(w.ring))
}

// Reset empties the window, keeping its length.
func (w *Window) Reset() { w.ring, w.next, w.wrong = w.ring[:0], 0, 0 }
