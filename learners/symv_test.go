package learners

import (
	"math/rand/v2"
	"testing"
)

// TestSymvIsRowByRow: symv's two rows at a time give the bits of symvRow
// played on every row in turn, at every size from empty up (odd and even
// sizes end differently), with entries of mixed magnitudes whose sums
// round differently in any other order.
func TestSymvIsRowByRow(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	val := func() float64 { return r.NormFloat64() * float64(int(1)<<r.IntN(40)) }
	var out []float64
	for n := range 40 {
		for range 5 {
			mp, x := make([]float64, n*(n+1)/2), make([]float64, n)
			for i := range mp {
				mp[i] = val()
			}
			for i := range x {
				x[i] = val()
			}
			want, p := make([]float64, n), 0
			for i := range n {
				symvRow(mp[p:p+i+1], x, want, i)
				p += i + 1
			}
			out = symv(mp, x, out)
			for i := range want {
				if !sameBits(out[i], want[i]) {
					t.Fatalf("n %d: (Mx)[%d] = %v, row by row %v", n, i, out[i], want[i])
				}
			}
		}
	}
}
