package autolearn

import (
	"testing"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// TestKeptPeaksAreTheEstimates: along a search whose records change shape
// (their non-zeros and their largest index grow), the memory counted from
// the kept estimates is the memory counted from new ones at every round.
func TestKeptPeaksAreTheEstimates(t *testing.T) {
	xs, ys := board(1500, 6, 10)
	for i := range xs {
		// Features 3… come in one more every 100 records, present in
		// every other record, so that the average non-zeros move too.
		for j := range i / 100 {
			if (i+j)%2 == 0 {
				xs[i] = sparse.Vector{Idx: append(xs[i].Idx, uint32(3+j)), Val: append(xs[i].Val, 0.5)}
			}
		}
	}
	a := build(t, quick, 2)
	for i := range xs {
		play(a, xs, ys, i, i+1)
		kept := a.memory(nil)
		peaks := a.peaks
		a.peaks = nil
		if fresh := a.memory(nil); kept != fresh {
			t.Fatalf("record %d: %d bytes from the kept estimates, %d from new ones", i, kept, fresh)
		}
		a.peaks = peaks
	}
}
