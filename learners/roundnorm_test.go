package learners

import (
	"bytes"
	"math"
	"slices"
	"testing"
)

// TestRoundNormIsRound: every learner played with RoundNorm, given the
// records' squared norms, emits Round's margins, mistakes and work bit for
// bit, and ends in the same state; linear kernels included, where
// PA-I and the Perceptron keep their model in primal form.
func TestRoundNormIsRound(t *testing.T) {
	xs, ys := stream(11, 300)
	for _, ks := range append(slices.Clone(allKernels), "linear:bias=1") {
		k := mustKernel(t, ks)
		for _, spec := range allSpecs {
			a, b := mustNew(t, spec, k, 3), mustNew(t, spec, k, 3)
			for i, x := range xs {
				y := ys[i]
				if i%13 == 0 {
					y = 0
				}
				oa, ob := a.Round(x, y), RoundNorm(b, x, x.SqNorm(), y)
				if math.Float64bits(oa.Margin) != math.Float64bits(ob.Margin) || oa.Mistake != ob.Mistake || oa.Updated != ob.Updated || oa.Work != ob.Work || oa.Refused != ob.Refused {
					t.Fatalf("%s on %s, round %d: RoundNorm %+v, Round %+v", spec, ks, i, ob, oa)
				}
			}
			ea, _ := a.MarshalBinary()
			eb, _ := b.MarshalBinary()
			if !bytes.Equal(ea, eb) {
				t.Fatalf("%s on %s: the states differ", spec, ks)
			}
		}
	}
}
