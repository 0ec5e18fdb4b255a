package prequential

import (
	"math/rand/v2"
	"testing"
)

// The window's rate is the mistakes among the last n rounds added,
// counted afresh, at every length, through a reset.
func TestWindowIsTheLastRounds(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 7, 50} {
		w := NewWindow(n)
		var all []bool
		for i := range 300 {
			if i == 150 {
				w.Reset()
				all = nil
			}
			m := r.IntN(3) == 0
			w.Add(m)
			all = append(all, m)
			last := all[max(0, len(all)-n):]
			wrong := 0
			for _, x := range last {
				if x {
					wrong++
				}
			}
			if w.Len() != len(last) || w.Full() != (len(last) == n) || w.Rate() != float64(wrong)/float64(len(last)) {
				t.Fatalf("n %d, round %d: len %d full %v rate %v, want %d rounds, %d wrong", n, i, w.Len(), w.Full(), w.Rate(), len(last), wrong)
			}
		}
	}
	var empty Window
	if empty.Rate() != 0 || empty.Len() != 0 {
		t.Fatalf("empty window: rate %v len %d", empty.Rate(), empty.Len())
	}
}
