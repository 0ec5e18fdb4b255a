package learners

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/learners/rng"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

func init() {
	allSpecs = append(allSpecs, "tighter0:budget=15", "tighter:budget=15,validation=30", "tighter:budget=15,validation=7,seed=9")
}

// refTighter is the Tighter Perceptron written from the paper's formula
// with no cache: every f(x_k) and every k(x_j, x_k) is recomputed with
// Kernel.Eval for every candidate, an O(B²·|V|) removal search.
type refTighter struct {
	k      Kernel
	budget int
	size   int // 0: Tighter⁰, validate on the support set
	rng    *rng.Source
	seen   uint64
	round  uint64
	x      []sparse.Vector
	y      []int
	alpha  []float64
	born   []uint64
	vx     []sparse.Vector
	vy     []int
	vborn  []uint64
}

func (r *refTighter) f(x sparse.Vector) float64 {
	s := 0.0
	for i := range r.x {
		s += r.alpha[i] * r.k.Eval(x, r.x[i])
	}
	return s
}

func (r *refTighter) play(x sparse.Vector, y int) float64 {
	r.round++
	f := r.f(x)
	if y == 0 {
		return f
	}
	if r.size > 0 {
		r.seen++
		if len(r.vx) < r.size {
			r.vx, r.vy, r.vborn = append(r.vx, x), append(r.vy, y), append(r.vborn, r.round)
		} else if j := r.rng.Uint64n(r.seen); j < uint64(r.size) {
			r.vx[j], r.vy[j], r.vborn[j] = x, y, r.round
		}
	}
	if float64(y)*f > 0 {
		return f
	}
	r.x, r.y, r.alpha, r.born = append(r.x, x), append(r.y, y), append(r.alpha, float64(y)), append(r.born, r.round)
	if len(r.x) <= r.budget {
		return f
	}
	vx, vy := r.x, r.y
	if r.size > 0 {
		vx, vy = r.vx, r.vy
	}
	best, bestMiss := -1, 0
	for j := range r.x {
		miss := 0
		for k := range vx {
			// A validation mistake is a margin of the wrong sign (§III.A).
			if float64(vy[k])*(r.f(vx[k])-r.alpha[j]*r.k.Eval(r.x[j], vx[k])) < 0 {
				miss++
			}
		}
		if best < 0 || miss < bestMiss {
			best, bestMiss = j, miss
		}
	}
	r.x = slices.Delete(r.x, best, best+1)
	r.y = slices.Delete(r.y, best, best+1)
	r.alpha = slices.Delete(r.alpha, best, best+1)
	r.born = slices.Delete(r.born, best, best+1)
	return f
}

// TestTighterMatchesNaiveReference: same margins bit for bit, same support
// sets, same reservoir, over every kernel.
func TestTighterMatchesNaiveReference(t *testing.T) {
	xs, ys := stream(31, 700)
	for _, ks := range allKernels {
		k := mustKernel(t, ks)
		for _, c := range []struct {
			spec       string
			budget, nv int
		}{
			{"tighter0:budget=15", 15, 0},
			{"tighter0:budget=4", 4, 0},
			{"tighter:budget=15,validation=30", 15, 30},
			{"tighter:budget=10,validation=5", 10, 5},
		} {
			l := mustNew(t, c.spec, k, 5)
			r := &refTighter{k: k, budget: c.budget, size: c.nv, rng: newRNG(5)}
			m := l.(*model)
			removals := 0
			for i := range xs {
				y := ys[i]
				if i%13 == 0 {
					y = 0 // unlabeled rounds are not offered to the reservoir
				}
				before := m.sv.len()
				o := l.Round(xs[i], y)
				got, want := o.Margin, r.play(xs[i], y)
				if !sameBits(got, want) {
					t.Fatalf("%s/%s round %d: margin %v, reference %v", c.spec, ks, i, got, want)
				}
				if !slices.Equal(m.sv.born, r.born) {
					t.Fatalf("%s/%s round %d: support set born %v, reference %v", c.spec, ks, i, m.sv.born, r.born)
				}
				if m.sv.len() > c.budget {
					t.Fatalf("%s/%s round %d: %d support vectors", c.spec, ks, i, m.sv.len())
				}
				if o.Updated && before == c.budget {
					removals++
				}
				if c.nv > 0 {
					a := m.alg.(*tighter)
					if a.seen != r.seen || !slices.Equal(a.val.born, r.vborn) {
						t.Fatalf("%s/%s round %d: reservoir born %v (seen %d), reference %v (seen %d)", c.spec, ks, i, a.val.born, a.seen, r.vborn, r.seen)
					}
				}
			}
			if removals < 50 {
				t.Fatalf("%s/%s: only %d removals: the test proves little", c.spec, ks, removals)
			}
		}
	}
}

// TestTighterZeroMarginIsNoValidationMistake: on orthonormal points
// (linear kernel) a validation margin of exactly 0 decides the removal.
// S = {e1+, e1−, e2+} with budget 2, α = (1, −1, 1): removing e1+ or e1−
// leaves one margin of the wrong sign; removing e2+ leaves f(e1) = 0 and
// f(e2) = 0, no mistake under the paper's rule (l⁺ = 1 iff f < 0, l⁻ = 1
// iff f > 0) but three if 0 counted as wrong, when the oldest (e1+) would
// go. So e2+ goes.
func TestTighterZeroMarginIsNoValidationMistake(t *testing.T) {
	e := func(i uint32) sparse.Vector { return sparse.Vector{Idx: []uint32{i}, Val: []float64{1}} }
	for _, spec := range []string{"tighter0:budget=2", "tighter:budget=2,validation=3"} {
		l := mustNew(t, spec, mustKernel(t, "linear"), 1)
		l.Round(e(1), 1)
		l.Round(e(1), -1) // f = 1: a mistake, added
		if o := l.Round(e(2), 1); !o.Mistake || !o.Updated {
			t.Fatalf("%s: %+v", spec, o)
		}
		if got := l.(*model).sv.born; !slices.Equal(got, []uint64{1, 2}) {
			t.Fatalf("%s: kept the vectors born in rounds %v, want [1 2]", spec, got)
		}
		// The same decision from the brute-force reference.
		r := &refTighter{k: mustKernel(t, "linear"), budget: 2}
		if spec != "tighter0:budget=2" {
			r.size, r.rng = 3, newRNG(1)
		}
		r.play(e(1), 1)
		r.play(e(1), -1)
		r.play(e(2), 1)
		if !slices.Equal(r.born, []uint64{1, 2}) {
			t.Fatalf("%s: reference kept %v", spec, r.born)
		}
	}
}

// TestTighterReservoirIsUniform: after n labeled rounds every round is in
// the reservoir with probability N/n (algorithm R), whatever its position.
func TestTighterReservoirIsUniform(t *testing.T) {
	const n, size, runs = 40, 8, 4000
	k := mustKernel(t, "linear")
	counts := make([]int, n)
	for seed := range uint64(runs) {
		// A huge budget: no removal, only sampling.
		l := mustNew(t, fmt.Sprintf("tighter:budget=1000,validation=%d", size), k, seed)
		for i := range n {
			l.Round(sparse.Vector{Idx: []uint32{uint32(i + 1)}, Val: []float64{1}}, 1)
		}
		a := l.(*model).alg.(*tighter)
		if a.val.len() != size {
			t.Fatalf("reservoir holds %d points", a.val.len())
		}
		for _, x := range a.val.vectors() {
			counts[x.Idx[0]-1]++
		}
	}
	want := float64(runs) * size / n // 800, sd ≈ √(800·0.8) ≈ 25
	chi2 := 0.0
	for i, c := range counts {
		d := float64(c) - want
		chi2 += d * d / want
		if math.Abs(d) > 6*math.Sqrt(want*(1-float64(size)/n)) {
			t.Fatalf("round %d sampled %d times in %d runs, want about %.0f: %v", i+1, c, runs, want, counts)
		}
	}
	// The counts sum to runs·N, so χ² has about n−1 = 39 degrees of
	// freedom (a little less: sampling without replacement); P(χ² > 80) < 1e-4.
	if chi2 > 80 {
		t.Fatalf("χ² = %.1f over %v", chi2, counts)
	}
}

func TestTighterRejectsInconsistentReservoir(t *testing.T) {
	xs, ys := stream(32, 100)
	l := mustNew(t, "tighter:budget=5,validation=10", mustKernel(t, "rbf:gamma=0.5"), 1)
	for i := range xs {
		l.Round(xs[i], ys[i])
	}
	a := l.(*model).alg.(*tighter)
	a.seen = 5 // fewer labeled rounds than points in the reservoir
	b, _ := l.MarshalBinary()
	if _, err := Unmarshal(b); err == nil || !strings.Contains(err.Error(), "validation points") {
		t.Fatalf("inconsistent reservoir decoded: %v", err)
	}
	a.seen = 1000 // more labeled rounds than rounds
	b, _ = l.MarshalBinary()
	if _, err := Unmarshal(b); err == nil || !strings.Contains(err.Error(), "labeled rounds") {
		t.Fatalf("impossible round count decoded: %v", err)
	}
}

// BenchmarkTighterRoundFullBudget is BenchmarkRoundFullBudget for the
// Tighter learners: one steady-state round at B = 100.
func BenchmarkTighterRoundFullBudget(b *testing.B) {
	benchFull(b, "tighter0:budget=100", "tighter:budget=100,validation=100")
}

func benchFull(b *testing.B, specs ...string) {
	xs, ys := stream(21, 20000)
	k := mustKernel(b, "rbf:gamma=0.5")
	for _, spec := range specs {
		b.Run(spec, func(b *testing.B) {
			l := mustNew(b, spec, k, 1)
			for i := range 5000 {
				l.Round(xs[i], ys[i])
			}
			if l.Size() != l.Budget() {
				b.Fatalf("budget not full: %d", l.Size())
			}
			b.ReportAllocs()
			i := 5000
			for b.Loop() {
				l.Round(xs[i], ys[i])
				if i++; i == len(xs) {
					i = 5000
				}
			}
		})
	}
}
