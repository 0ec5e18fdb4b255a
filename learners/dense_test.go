package learners

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// TestDenseMirrorGivesEvalBits keeps a set on its dense mirror through
// every change that moves entries in it, and checks after each one that
// the kernel row of a query, and of a member, equals Kernel.Eval per
// support vector bit for bit: insertions that add rows, removals whose
// slots later insertions reuse, replacements, vectors with a larger index
// that widen the mirror, and a drop to the sparse layout and a rebuild.
// The values span three orders of magnitude, so that a sum added in
// another order would show in its bits, and the set grows past a hundred
// vectors, so that every block size of dotsDense's loops takes part.
func TestDenseMirrorGivesEvalBits(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	vec := func(dim int, density float64) sparse.Vector {
		d := make([]float64, dim)
		for i := range d {
			if r.Float64() < density {
				d[i] = r.NormFloat64() * math.Pow(10, float64(r.IntN(3)-1))
			}
		}
		return sparse.FromDense(d)
	}
	for _, ks := range allKernels {
		s := supportSet{kern: mustKernel(t, ks)}
		var want []sparse.Vector
		var row []float64
		check := func(step int, q sparse.Vector) {
			t.Helper()
			row = s.row(s.newQuery(q), row)
			for j := range want {
				if e := s.kern.Eval(q, want[j]); !sameBits(row[j], e) {
					t.Fatalf("%s step %d (dense %v): row[%d] = %v, Eval %v", ks, step, s.dense, j, row[j], e)
				}
			}
		}
		var added, reused, widened, rebuilt int
		dim, most := 24, 0
		for step := range 900 {
			wasDense, stride, nrows, nfree := s.dense, s.stride, len(s.rows), len(s.free)
			var x sparse.Vector
			switch {
			case step >= 600 && step < 640:
				// Sparse vectors four times as wide: the density falls
				// below 1/denseOff and the mirror goes. They leave again
				// below, and dense vectors as wide bring it back.
				x = vec(4*dim, 0.01)
				if step == 639 {
					dim *= 4
				}
			case step%97 == 0:
				dim += 1 + r.IntN(dim/3) // a larger index widens the mirror
				x = vec(dim, 0.9)
			default:
				x = vec(dim, 0.9)
			}
			// The set swings between about 20 and 150 vectors, so that
			// the mirror adds rows and frees slots all through it.
			grow := 0.6
			if (step/150)%2 == 1 {
				grow = 0.35
			}
			switch u := r.Float64(); {
			case step >= 600 && step < 640, len(want) < 20 || (u < grow && len(want) < 150):
				s.add(s.newQuery(x), 1, 1, uint64(step))
				want = append(want, x.Clone())
			case u < grow+0.15:
				i := r.IntN(len(want))
				s.set(i, s.newQuery(x))
				want[i] = x.Clone()
			default:
				i := r.IntN(len(want))
				for k, w := range want {
					if step >= 640 && w.Len() < 10 {
						i = k // the sparse vectors first
						break
					}
				}
				s.remove(i)
				want = append(want[:i], want[i+1:]...)
			}
			most = max(most, len(want))
			switch {
			case wasDense && s.dense && s.stride > stride:
				widened++
			case !wasDense && s.dense:
				rebuilt++
			case wasDense && s.dense && len(s.rows) > nrows:
				added++
			}
			if wasDense && s.dense && s.stride == stride && nfree > 0 && len(s.free) < nfree {
				reused++
			}
			if !s.dense && step < 600 && len(want) >= denseMinSV {
				t.Fatalf("%s step %d: %d vectors of density 0.9 without the mirror", ks, step, len(want))
			}
			check(step, vec(dim, 0.7))
			check(step, vec(dim+7, 0.5)) // entries beyond the mirror meet zeros
			if i := r.IntN(len(want)); step%3 == 0 {
				row = s.rowOf(i, row)
				for j := range want {
					if e := s.kern.Eval(want[i], want[j]); !sameBits(row[j], e) {
						t.Fatalf("%s step %d: rowOf(%d)[%d] = %v, Eval %v", ks, step, i, j, row[j], e)
					}
				}
			}
		}
		t.Logf("%s: %d rows added, %d slots reused, %d widenings, %d builds; up to %d vectors, %d columns",
			ks, added, reused, widened, rebuilt, most, s.stride)
		if added < 50 || reused < 50 || widened < 3 || rebuilt < 2 || most < 100 {
			t.Fatalf("%s: the mirror did not go through every change", ks)
		}
	}
}
