package learners

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// TestSupportLayoutsGiveEvalBits adds, replaces and removes vectors of
// changing density, so that the set moves between its sparse pool and its
// dense mirror (and through the far-index path), and checks after every
// change that each kernel row equals Kernel.Eval bit for bit and that the
// views still show the vectors that were stored.
func TestSupportLayoutsGiveEvalBits(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	vec := func(dim, nnz int) sparse.Vector {
		d := make([]float64, dim)
		for range nnz {
			d[r.IntN(dim)] = r.NormFloat64() * math.Pow(10, float64(r.IntN(3)-1))
		}
		return sparse.FromDense(d)
	}
	for _, ks := range allKernels {
		s := supportSet{kern: mustKernel(t, ks)}
		var want []sparse.Vector
		var sawDense, sawSparse, sawFar bool
		var row []float64
		for step := range 600 {
			// Phases: dense 20-dimensional points, then sparse ones over
			// 300 dimensions, then dense again over 40, with a far index
			// now and then.
			var x sparse.Vector
			switch phase := step / 200; phase {
			case 0:
				x = vec(20, 20)
			case 1:
				x = vec(300, 4)
			default:
				x = vec(40, 40)
			}
			if step > 420 && step%37 == 0 {
				x.Idx = append(x.Idx, scatterLimit+uint32(step))
				x.Val = append(x.Val, 0.25)
			}
			switch op := r.IntN(10); {
			case op < 6 || len(want) < 3:
				s.add(s.newQuery(x), 1, 1, uint64(step))
				want = append(want, x.Clone())
			case op < 8:
				i := r.IntN(len(want))
				s.set(i, s.newQuery(x))
				want[i] = x.Clone()
			default:
				i := r.IntN(len(want))
				s.remove(i)
				want = append(want[:i], want[i+1:]...)
			}
			sawDense = sawDense || s.dense
			sawSparse = sawSparse || (!s.dense && s.far == 0 && s.len() > denseMinSV)
			sawFar = sawFar || s.far > 0
			q := vec(60, 1+r.IntN(60))
			if step%5 == 0 && s.len() > 0 {
				q = s.vec(r.IntN(s.len())) // a query that is a view of the pool
			}
			row = s.row(s.newQuery(q), row)
			for j := range want {
				if !sameBits(s.vec(j).SqNorm(), want[j].SqNorm()) || s.vec(j).Len() != want[j].Len() {
					t.Fatalf("%s step %d: vector %d is %v, want %v", ks, step, j, s.vec(j), want[j])
				}
				if e := s.kern.Eval(q, want[j]); !sameBits(row[j], e) {
					t.Fatalf("%s step %d (dense %v): row[%d] = %v, Eval %v", ks, step, s.dense, j, row[j], e)
				}
			}
			// Row of a member, which queries with one of the set's own views.
			if s.len() > 0 {
				i := r.IntN(s.len())
				row = s.rowOf(i, row)
				for j := range want {
					if e := s.kern.Eval(want[i], want[j]); !sameBits(row[j], e) {
						t.Fatalf("%s step %d: rowOf(%d)[%d] = %v, Eval %v", ks, step, i, j, row[j], e)
					}
				}
			}
		}
		if !sawDense || !sawSparse || !sawFar {
			t.Fatalf("%s: layouts visited: dense %v, sparse %v, far %v", ks, sawDense, sawSparse, sawFar)
		}
	}
}

// TestExpMemoGivesExpBits: on binary features the RBF row takes most of
// its exponentials from the memo, and every value is still math.Exp's.
func TestExpMemoGivesExpBits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	bin := func() sparse.Vector {
		d := make([]float64, 30)
		for i := range d {
			if r.IntN(3) == 0 {
				d[i] = 1
			}
		}
		return sparse.FromDense(d)
	}
	// Two sets of other widths take turns: they share the memos.
	sets := []supportSet{{kern: mustKernel(t, "rbf:gamma=0.3")}, {kern: mustKernel(t, "rbf:gamma=0.6")}}
	for i := range 200 {
		for j := range sets {
			sets[j].add(sets[j].newQuery(bin()), 1, 1, uint64(i))
		}
	}
	var row []float64
	for i := range 200 {
		s := &sets[i%2]
		q := bin()
		row = s.row(s.newQuery(q), row)
		for j := range row {
			if e := s.kern.Eval(q, s.vec(j)); !sameBits(row[j], e) {
				t.Fatalf("row[%d] = %v, Eval %v", j, row[j], e)
			}
		}
	}
	for _, s := range sets {
		// A row with fewer than a quarter of its exponentials found
		// in the memo would have set it.
		if s.expSkip != 0 {
			t.Fatalf("the memo is not in use on binary data (skip %d)", s.expSkip)
		}
	}
}

// vectors returns views of every support vector, oldest first.
func (s *supportSet) vectors() []sparse.Vector {
	out := make([]sparse.Vector, s.len())
	for j := range out {
		out[j] = s.vec(j)
	}
	return out
}

// TestFullSetKeepsNoGrowthSlack: a set that filled its budget holds its
// arrays at the budget's room, not at the growth factor past it (append
// would leave 128 of 101 places, and the pools half again what they hold:
// 13 of 30 MB at 1,024 partitions of budget 100 on a9a), and a budget
// grown later is room again.
func TestFullSetKeepsNoGrowthSlack(t *testing.T) {
	d := Data{NNZ: 14, Dim: 123}
	xs, ys := memData(d, 3000, 3)
	k := mustKernel(t, "rbf:gamma=0.1")
	check := func(l Learner, budget int) {
		t.Helper()
		s := &l.(*model).sv
		if s.len() != budget {
			t.Fatalf("%d support vectors, want the budget %d", s.len(), budget)
		}
		room := budget + 1
		if s.room != room {
			t.Fatalf("room %d, want %d", s.room, room)
		}
		for name, c := range map[string]int{"off": cap(s.off), "norm": cap(s.norm), "alpha": cap(s.alpha), "born": cap(s.born)} {
			if c < budget || c > room+1 { // +1: a size class may round up
				t.Errorf("budget %d: cap(%s) = %d, want about %d", budget, name, c, room)
			}
		}
		most := room * d.NNZ
		if c := cap(s.val); c > most+most/16+d.NNZ {
			t.Errorf("budget %d: pool of %d entries has capacity %d, past %d vectors' entries and a sixteenth (%d)", budget, len(s.val), c, room, most+most/16)
		}
	}
	l := mustNew(t, "rbp:budget=100", k, 1)
	i := 0
	for ; i < len(xs) && l.Size() < 100; i++ {
		l.Round(xs[i], ys[i])
	}
	for stop := i + 500; i < stop; i++ {
		l.Round(xs[i], ys[i])
	}
	check(l, 100)
	g, err := WithBudget(l, 300)
	if err != nil {
		t.Fatal(err)
	}
	for ; i < len(xs) && g.Size() < 300; i++ {
		g.Round(xs[i], ys[i])
	}
	check(g, 300)
}
