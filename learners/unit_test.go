package learners

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// TestUnitValuesGiveEvalBits: on binary vectors, with now and then one of
// other values stored and later replaced or removed, every kernel row
// equals Kernel.Eval bit for bit, whether the set adds the query's entries
// alone (every stored value 1) or multiplies them, and the set goes back
// to adding them once the other values have gone.
func TestUnitValuesGiveEvalBits(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	vec := func(binary bool) sparse.Vector { return sparseVector(r, 120, binary) }
	for _, ks := range allKernels {
		s := supportSet{kern: mustKernel(t, ks)}
		var want []sparse.Vector
		var row []float64
		var sawOther, sawUnitAfter bool
		for step := range 400 {
			x := vec(r.IntN(40) != 0)
			switch op := r.IntN(10); {
			case op < 4 || len(want) < 3:
				s.add(s.newQuery(x), 1, 1, uint64(step))
				want = append(want, x)
			case op < 6:
				i := r.IntN(len(want))
				s.set(i, s.newQuery(x))
				want[i] = x
			default:
				i := r.IntN(len(want))
				s.remove(i)
				want = append(want[:i], want[i+1:]...)
			}
			if s.dense {
				t.Fatalf("%s: the set went dense: the test is of the sparse path", ks)
			}
			sawUnitAfter = sawUnitAfter || (sawOther && s.nonUnit == 0)
			sawOther = sawOther || s.nonUnit > 0
			q := vec(r.IntN(2) == 0)
			row = s.row(s.newQuery(q), row)
			for j := range want {
				if e := s.kern.Eval(q, want[j]); !sameBits(row[j], e) {
					t.Fatalf("%s step %d (%d non-unit): row[%d] = %v, Eval %v", ks, step, s.nonUnit, j, row[j], e)
				}
			}
		}
		if !sawOther || !sawUnitAfter {
			t.Fatalf("%s: other values seen %v, all-unit again after them %v", ks, sawOther, sawUnitAfter)
		}
	}
}

// TestBinarySetStoresNoValues: a set of binary vectors keeps their
// indices alone (the values were two thirds of its pools), reads every
// value back as 1, and stores them all once a vector of other values
// comes, each vector reading back as given.
func TestBinarySetStoresNoValues(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	vec := func(binary bool) sparse.Vector { return sparseVector(r, 123, binary) }
	s := supportSet{kern: mustKernel(t, "rbf:gamma=0.1"), room: 101}
	var want []sparse.Vector
	same := func(when string) {
		t.Helper()
		for j, w := range want {
			if got := s.vec(j); !slices.Equal(got.Idx, w.Idx) || !slices.Equal(got.Val, w.Val) {
				t.Fatalf("%s: vector %d reads %v, was %v", when, j, got, w)
			}
		}
	}
	for i := range 100 {
		x := vec(true)
		s.add(s.newQuery(x), 1, 1, uint64(i))
		want = append(want, x)
	}
	s.remove(7)
	want = slices.Delete(want, 7, 8)
	if s.valued || cap(s.val) != 0 {
		t.Fatalf("binary vectors: values stored (valued %v, capacity %d)", s.valued, cap(s.val))
	}
	same("binary")
	x := vec(false)
	s.set(3, s.newQuery(x))
	want[3] = x
	if !s.valued || len(s.val) != len(s.idx) {
		t.Fatalf("a vector of other values: valued %v, %d values for %d indices", s.valued, len(s.val), len(s.idx))
	}
	same("after a vector of other values")
}

// sparseVector is a vector of dim features, each present with
// probability 1/9: all 1 when binary, standard normal otherwise.
func sparseVector(r *rand.Rand, dim int, binary bool) sparse.Vector {
	var v sparse.Vector
	for j := range dim {
		if r.IntN(9) == 0 {
			x := 1.0
			if !binary {
				x = r.NormFloat64()
			}
			v.Idx, v.Val = append(v.Idx, uint32(j)), append(v.Val, x)
		}
	}
	return v
}
