package autolearn

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// offLine is n records of d standard normal features shifted by off,
// labeled by a random hyperplane through the unshifted origin, a
// fraction flip of the labels flipped.
func offLine(n, d int, flip, off float64, seed uint64) ([]sparse.Vector, []int) {
	r := rand.New(rand.NewPCG(seed, 2))
	w := make([]float64, d)
	for j := range w {
		w[j] = r.NormFloat64()
	}
	xs, ys := make([]sparse.Vector, n), make([]int, n)
	for i := range xs {
		v := make([]float64, d)
		s := 0.0
		for j := range v {
			v[j] = r.NormFloat64()
			s += w[j] * v[j]
			v[j] += off
		}
		ys[i] = 1
		if s < 0 != (r.Float64() < flip) {
			ys[i] = -1
		}
		xs[i] = sparse.FromDense(v)
	}
	return xs, ys
}

// PA-I at a small C starts slowly on features off the origin and is the
// best candidate after that: the halving's first rungs cut it, and the
// explorers' steps of C ÷3 from the champion came too late. Benched, the
// primal candidates the halving cut keep learning, and the one that errs
// least of late comes back: the search ends on PA-I at C = 0.001 on the
// linear kernel (without the bench: PA-I on RBF γ = 0.1 at C = 0.333,
// 1,624 mistakes against 1,385), and a restore with a bench continues
// bit for bit.
func TestBenchedSmallCComesBack(t *testing.T) {
	const space = "auto:learners=pa1|rbp,kernels=linear|rbf,scale=off,rung=100,window=400"
	xs, ys := offLine(8000, 10, 0.1, 3, 3)
	whole := build(t, space, 1)
	wantM, wantC := play(whole, xs, ys, 0, len(xs))
	if ch := whole.cands[whole.champion].pt; ch.budget != 0 || ch.c > 0.001 {
		t.Fatalf("champion %s, want PA-I at C = 0.001 on the linear kernel", whole.Champion())
	}
	a := build(t, space, 1)
	m1, c1 := play(a, xs, ys, 0, 5000)
	if len(a.bench) == 0 {
		t.Fatal("no candidate benched after 5,000 records")
	}
	r := restored(t, a)
	m2, c2 := play(r, xs, ys, 5000, len(xs))
	if !slices.Equal(append(m1, m2...), wantM) || !slices.Equal(append(c1, c2...), wantC) {
		t.Fatal("restored with a bench, the margins or champions differ from the run without a stop")
	}
}

// Over memory=, the bench goes before any candidate of the search, its
// most erring first: it is no part of the search.
func TestFitDropsTheBenchFirst(t *testing.T) {
	xs, ys := offLine(3000, 10, 0.1, 3, 3)
	a := build(t, "auto:learners=pa1|rbp,kernels=linear|rbf,scale=off,rung=100,window=400", 1)
	play(a, xs, ys, 0, len(xs))
	if len(a.bench) < 2 {
		t.Fatalf("%d benched: the test shows nothing", len(a.bench))
	}
	most := slices.MaxFunc(a.bench, func(c, d *cand) int { return cmp.Compare(c.recent, d.recent) }).recent
	cands, bench := slices.Clone(a.cands), slices.Clone(a.bench)
	a.cfg.Memory = a.memory(nil) - 1
	a.fit(nil)
	gone := slices.DeleteFunc(bench, func(c *cand) bool { return slices.Contains(a.bench, c) })
	if !slices.Equal(a.cands, cands) || len(gone) != 1 || gone[0].recent != most {
		t.Fatalf("over memory= by a byte: %d of %d candidates left, %d benched gone", len(a.cands), len(cands), len(gone))
	}
}

// The bench is bounded: each benched learner plays every record, and on
// a9a the bench held about 22, auto then costing 5.2 times its champion
// alone. Over a stream whose halving cuts many primal candidates, of PA-I
// and of the Perceptron, the bench never holds more than benchCap (12
// after 100 records without the cap), nor a Perceptron.
func TestBenchStaysWithinItsCap(t *testing.T) {
	xs, ys := offLine(6000, 10, 0.1, 3, 3)
	a := build(t, "auto:learners=pa1|perceptron,kernels=linear|poly,degree=1,rung=100,window=400", 1)
	most := 0
	for i := range xs {
		a.Round(xs[i], ys[i])
		most = max(most, len(a.bench))
		if len(a.bench) > benchCap {
			t.Fatalf("record %d: %d benched, over the cap of %d", i, len(a.bench), benchCap)
		}
		for _, c := range a.bench {
			if c.pt.learner != "pa1" {
				t.Fatalf("record %d: %s benched", i, c.pt)
			}
		}
	}
	if most < benchCap {
		t.Fatalf("at most %d benched: the test shows nothing", most)
	}
}
