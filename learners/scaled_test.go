package learners

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestScaledRowsRoundAsScalarCode: addScaled and subScaled (in vector
// lanes where the CPU has them) give the plain statements' bits at every
// length across a few lane blocks, subScaled also writing into its own
// source shifted down, as SOP's downdate compacts M.
func TestScaledRowsRoundAsScalarCode(t *testing.T) {
	t.Logf("vector lanes: %v", useLanes)
	r := rand.New(rand.NewPCG(12, 13))
	val := func() float64 { return r.NormFloat64() * float64(int(1)<<r.IntN(30)) }
	vals := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = val()
		}
		return v
	}
	for n := range 41 {
		a, x, y := val(), vals(n+3), vals(n)
		want := slices.Clone(y)
		for i := range want {
			want[i] += a * x[i]
		}
		addScaled(y, x, a)
		for i := range want {
			if !sameBits(y[i], want[i]) {
				t.Fatalf("addScaled, %d entries: [%d] = %v, scalar %v", n, i, y[i], want[i])
			}
		}
		for _, shift := range []int{-1, 0, 1, 7, 8, 9} {
			buf := vals(n + 10)
			src := buf[10:]
			want := make([]float64, n)
			for i := range want {
				want[i] = src[i] - a*x[i]
			}
			dst := make([]float64, n)
			if shift >= 0 {
				dst = buf[10-shift:] // src's own array, shift entries down
			}
			subScaled(dst, src, x, a)
			for i := range want {
				if !sameBits(dst[i], want[i]) {
					t.Fatalf("subScaled, %d entries, shift %d: [%d] = %v, scalar %v", n, shift, i, dst[i], want[i])
				}
			}
		}
	}
}
