package learners

import (
	"bytes"
	"math"
	"testing"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// A record whose values overflow a kernel (the kernel with itself, or the
// squared norm) is refused by every learner under every kernel: the model
// is left exactly as it was, and the rounds after it are those of a model
// that never saw it.
func TestOverflowingRecordsNeverEnterAModel(t *testing.T) {
	xs, ys := stream(21, 300)
	huge := []sparse.Vector{
		{Idx: []uint32{1}, Val: []float64{1e308}},            // ‖x‖² = +Inf
		{Idx: []uint32{1, 2}, Val: []float64{1e60, -1e60}},   // ‖x‖² = 2e120 > KernelLimit
		{Idx: []uint32{3}, Val: []float64{math.MaxFloat64}},  // the largest finite value
		{Idx: []uint32{1, 2, 3}, Val: []float64{1e30, 1, 1}}, // (x·x+1)⁴ = 1e240
	}
	for _, ks := range []string{"linear", "poly:degree=4", "rbf:gamma=0.5", "rbf:gamma=0.5,normalize=true"} {
		k := mustKernel(t, ks)
		for _, spec := range allSpecs {
			clean := mustNew(t, spec, k, 5)
			dirty := mustNew(t, spec, k, 5)
			for i := range xs {
				if i%50 == 10 {
					before, _ := dirty.MarshalBinary()
					for _, h := range huge {
						if h.SqNorm() <= KernelLimit && ks != "poly:degree=4" {
							continue // overflows only the polynomial kernel
						}
						o := dirty.Round(h, 1)
						if o.Refused != RefusedKernel || o.Updated || o.Mistake || !math.IsNaN(o.Margin) {
							t.Fatalf("%s/%s: record %v gave %+v, want refused as %s", spec, ks, h.Val, o, RefusedKernel)
						}
					}
					after, _ := dirty.MarshalBinary()
					if !bytes.Equal(before, after) {
						t.Fatalf("%s/%s: a refused record changed the model", spec, ks)
					}
				}
				a, b := clean.Round(xs[i], ys[i]), dirty.Round(xs[i], ys[i])
				if !sameBits(a.Margin, b.Margin) || a.Refused != "" {
					t.Fatalf("%s/%s: round %d margin %v, without the bad records %v", spec, ks, i, b.Margin, a.Margin)
				}
			}
		}
	}
}

func TestOrdinaryValuesAreNotRefused(t *testing.T) {
	k := mustKernel(t, "poly:degree=4")
	l := mustNew(t, "perceptron", k, 1)
	// (1e9)² · 100 features = 1e20; (1e20+1)⁴ = 1e80: large, finite, kept.
	x := sparse.Vector{Idx: make([]uint32, 100), Val: make([]float64, 100)}
	for i := range x.Idx {
		x.Idx[i], x.Val[i] = uint32(i+1), 1e9
	}
	if o := l.Round(x, 1); o.Refused != "" || !o.Updated {
		t.Fatalf("%+v: a large but representable record was refused", o)
	}
}
