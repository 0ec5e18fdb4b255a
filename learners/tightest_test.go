package learners

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

func init() {
	allSpecs = append(allSpecs, "tightest:budget=15", "tightest:budget=2")
}

// refTightest is Fig. 1 of the paper with no cache: every f(x_i) and every
// kernel value straight from Kernel.Eval for every candidate, an O(B³)
// removal search, nearest neighbours from the vectors themselves.
type refTightest struct {
	k      Kernel
	budget int
	round  uint64
	x      []sparse.Vector
	y      []int
	born   []uint64
	cp, cn []float64
}

func (r *refTightest) f(x sparse.Vector) float64 {
	s := 0.0
	for i := range r.x {
		s += float64(r.y[i]) * r.k.Eval(x, r.x[i])
	}
	return s
}

func (r *refTightest) updateSummary(x sparse.Vector, skip int, cp, cn float64) {
	best, bestD := -1, 0.0
	for i := range r.x {
		if i == skip {
			continue
		}
		d := max(x.SqNorm()+r.x[i].SqNorm()-2*x.Dot(r.x[i]), 0)
		if best < 0 || d < bestD {
			best, bestD = i, d
		}
	}
	kv := r.k.Eval(x, r.x[best])
	if !(kv > 0) {
		kv = 0
	}
	// The test streams' counts stay far below tightestCountMax.
	r.cp[best] += cp * kv
	r.cn[best] += cn * kv
}

func (r *refTightest) play(x sparse.Vector, y int) float64 {
	r.round++
	f := r.f(x)
	if y == 0 {
		return f
	}
	cp, cn := 1.0, 0.0
	if y < 0 {
		cp, cn = 0, 1
	}
	if float64(y)*f > 0 {
		r.updateSummary(x, -1, cp, cn)
		return f
	}
	r.x, r.y, r.born = append(r.x, x), append(r.y, y), append(r.born, r.round)
	r.cp, r.cn = append(r.cp, cp), append(r.cn, cn)
	n := len(r.x)
	if n <= r.budget {
		return f
	}
	best, bestLoss := -1, 0.0
	for j := range r.x {
		s := 0.0
		for i := range r.x {
			g := r.f(r.x[i]) - float64(r.y[j])*r.k.Eval(r.x[j], r.x[i])
			w := tightestWeight(r.cp[i], r.cn[i])
			s += w*max(0, 1-g) + (1-w)*max(0, 1+g)
		}
		if loss := s / float64(n); best < 0 || loss < bestLoss {
			best, bestLoss = j, loss
		}
	}
	r.updateSummary(r.x[best], best, r.cp[best], r.cn[best])
	r.x = slices.Delete(r.x, best, best+1)
	r.y = slices.Delete(r.y, best, best+1)
	r.born = slices.Delete(r.born, best, best+1)
	r.cp = slices.Delete(r.cp, best, best+1)
	r.cn = slices.Delete(r.cn, best, best+1)
	return f
}

// TestTightestMatchesNaiveReference: same margins, support sets and counts,
// bit for bit, over every kernel (negative kernel values included).
func TestTightestMatchesNaiveReference(t *testing.T) {
	xs, ys := stream(41, 600)
	for _, ks := range allKernels {
		k := mustKernel(t, ks)
		for _, budget := range []int{15, 4, 1} {
			l := mustNew(t, "tightest:budget="+strconv.Itoa(budget), k, 1)
			m := l.(*model)
			a := m.alg.(*tightest)
			r := &refTightest{k: k, budget: budget}
			removals, credits := 0, 0
			for i := range xs {
				y := ys[i]
				if i%11 == 0 {
					y = 0
				}
				before := m.sv.len()
				o := l.Round(xs[i], y)
				if want := r.play(xs[i], y); !sameBits(o.Margin, want) {
					t.Fatalf("%s/B=%d round %d: margin %v, reference %v", ks, budget, i, o.Margin, want)
				}
				if !slices.Equal(m.sv.born, r.born) || !slices.Equal(a.cpos, r.cp) || !slices.Equal(a.cneg, r.cn) {
					t.Fatalf("%s/B=%d round %d: born %v c+ %v c- %v, reference %v %v %v", ks, budget, i, m.sv.born, a.cpos, a.cneg, r.born, r.cp, r.cn)
				}
				if m.sv.len() > budget {
					t.Fatalf("%s/B=%d round %d: %d support vectors", ks, budget, i, m.sv.len())
				}
				switch {
				case o.Updated && before == budget:
					removals++
				case y != 0 && !o.Mistake:
					credits++
				}
			}
			if removals < 40 || credits < 40 {
				t.Fatalf("%s/B=%d: %d removals, %d credited rounds: the test proves little", ks, budget, removals, credits)
			}
		}
	}
}

// TestTightestDefiningBehaviours follows the counts round by round on an
// RBF stream: a correct round credits only its nearest support vector, by
// exactly k(x, x_k) on its label's side; a mistake appends unit counts; a
// removal hands the removed vector's counts, times the kernel value, to
// its nearest remaining vector. Nearest neighbours here come from
// sparse.SqDist, computed entry by entry, not from the learner's formula.
func TestTightestDefiningBehaviours(t *testing.T) {
	xs, ys := stream(42, 3000)
	k := mustKernel(t, "rbf:gamma=0.3")
	const budget = 20
	l := mustNew(t, "tightest:budget=20", k, 1)
	m := l.(*model)
	a := m.alg.(*tightest)
	nearestTo := func(x sparse.Vector, among []sparse.Vector) int {
		best := 0
		for j := range among {
			if x.SqDist(among[j]) < x.SqDist(among[best]) {
				best = j
			}
		}
		return best
	}
	var seen [3]int
	for i := range xs {
		x, y := xs[i], ys[i]
		born := slices.Clone(m.sv.born)
		svx := cloneVectors(m.sv.vectors()) // the set's views change with it
		cp, cn := slices.Clone(a.cpos), slices.Clone(a.cneg)
		o := l.Round(x, y)
		unit := func(y int) (float64, float64) {
			if y > 0 {
				return 1, 0
			}
			return 0, 1
		}
		switch {
		case !o.Mistake: // credit the nearest
			seen[0]++
			if o.Updated || !slices.Equal(m.sv.born, born) {
				t.Fatalf("round %d: a correct round changed the support set", i)
			}
			j := nearestTo(x, svx)
			up, un := unit(y)
			cp[j] += up * k.Eval(x, svx[j])
			cn[j] += un * k.Eval(x, svx[j])
		case len(born) < budget: // append
			seen[1]++
			up, un := unit(y)
			born, cp, cn = append(born, uint64(i+1)), append(cp, up), append(cn, un)
			if !slices.Equal(m.sv.born, born) {
				t.Fatalf("round %d: born %v, want %v", i, m.sv.born, born)
			}
		default: // append, remove r, credit r's nearest remaining
			seen[2]++
			up, un := unit(y)
			born, cp, cn = append(born, uint64(i+1)), append(cp, up), append(cn, un)
			svx = append(svx, x)
			r := -1
			for j := range born {
				if !slices.Contains(m.sv.born, born[j]) {
					r = j
				}
			}
			xr, cpr, cnr := svx[r], cp[r], cn[r]
			born, svx = slices.Delete(born, r, r+1), slices.Delete(svx, r, r+1)
			cp, cn = slices.Delete(cp, r, r+1), slices.Delete(cn, r, r+1)
			if !slices.Equal(m.sv.born, born) {
				t.Fatalf("round %d: born %v, want %v less one", i, m.sv.born, born)
			}
			j := nearestTo(xr, svx)
			cp[j] += cpr * k.Eval(xr, svx[j])
			cn[j] += cnr * k.Eval(xr, svx[j])
		}
		if !slices.Equal(a.cpos, cp) || !slices.Equal(a.cneg, cn) {
			t.Fatalf("round %d (mistake %v): counts\n c+ %v\n c- %v\nwant\n c+ %v\n c- %v", i, o.Mistake, a.cpos, a.cneg, cp, cn)
		}
	}
	if seen[0] < 100 || seen[1] != budget || seen[2] < 100 {
		t.Fatalf("rounds of each kind: %v: the test proves little", seen)
	}
}

// TestTightestHugeCountsGiveTheHingeLoss: when every w⁺ is its vector's
// label (counts in the millions on the label's side), the removal loss is
// the hinge loss of f − α_j k(x_j, ·) on the support set.
func TestTightestHugeCountsGiveTheHingeLoss(t *testing.T) {
	xs, ys := stream(43, 400)
	k := mustKernel(t, "rbf:gamma=0.3")
	l := mustNew(t, "tightest:budget=25", k, 1)
	for i := range xs {
		l.Round(xs[i], ys[i])
	}
	m := l.(*model)
	a := m.alg.(*tightest)
	for i, y := range m.sv.label {
		a.cpos[i], a.cneg[i] = 0, 0
		if y > 0 {
			a.cpos[i] = 1e6 + float64(i)
		} else {
			a.cneg[i] = 1e6 + float64(i)
		}
		a.w[i] = math.NaN()
		if w := tightestWeight(a.cpos[i], a.cneg[i]); w != max(float64(y), 0) {
			t.Fatalf("w⁺ = %v for counts (%v, %v)", w, a.cpos[i], a.cneg[i])
		}
	}
	loss := a.losses(m)
	n := m.sv.len()
	for j := range n {
		h := 0.0
		for i := range n {
			fi := 0.0
			for q := range n {
				fi += m.sv.alpha[q] * k.Eval(m.sv.vec(i), m.sv.vec(q))
			}
			g := fi - m.sv.alpha[j]*k.Eval(m.sv.vec(j), m.sv.vec(i))
			h += max(0, 1-float64(m.sv.label[i])*g)
		}
		if h /= float64(n); !sameBits(loss[j], h) {
			t.Fatalf("candidate %d: loss %v, hinge loss %v", j, loss[j], h)
		}
	}
	if slices.Min(loss) == slices.Max(loss) {
		t.Fatal("all candidates have the same loss: the test proves little")
	}
}

// TestTightestTiesGoToTheOldest plays x+, x−, x+ on one point x with budget
// 2. Removing either copy of x+ gives the same loss (1, against 1.25 for
// x−): the older one goes, and its counts (1, 0) go to the nearer of the
// two remaining copies, both at distance 0: the older, x−.
func TestTightestTiesGoToTheOldest(t *testing.T) {
	x := sparse.Vector{Idx: []uint32{1, 3}, Val: []float64{0.5, -2}}
	l := mustNew(t, "tightest:budget=2", mustKernel(t, "rbf:gamma=0.5"), 1)
	for _, y := range []int{1, -1, 1} {
		if o := l.Round(x, y); !o.Mistake {
			t.Fatalf("label %d: %+v", y, o)
		}
	}
	m := l.(*model)
	a := m.alg.(*tightest)
	if !slices.Equal(m.sv.born, []uint64{2, 3}) || !slices.Equal(a.cpos, []float64{1, 1}) || !slices.Equal(a.cneg, []float64{1, 0}) {
		t.Fatalf("born %v, c+ %v, c- %v; want [2 3], [1 1], [1 0]", m.sv.born, a.cpos, a.cneg)
	}
	// Equidistant but not duplicated: q = (e1+e2)/2 is at squared distance
	// ½ from e1 and e2 (both exactly), 1½ from e3.
	l = mustNew(t, "tightest:budget=5", mustKernel(t, "rbf:gamma=0.5"), 1)
	e := func(i uint32) sparse.Vector { return sparse.Vector{Idx: []uint32{i}, Val: []float64{1}} }
	l.Round(e(1), 1)
	l.Round(e(2), -1)
	l.Round(e(3), 1)
	q := sparse.Vector{Idx: []uint32{1, 2}, Val: []float64{0.5, 0.5}}
	if o := l.Round(q, 1); o.Mistake {
		t.Fatalf("q: %+v", o)
	}
	a = l.(*model).alg.(*tightest)
	if want := []float64{1 + math.Exp(-0.5*0.5), 0, 1}; !slices.Equal(a.cpos, want) || !slices.Equal(a.cneg, []float64{0, 1, 0}) {
		t.Fatalf("c+ %v c- %v, want %v [0 1 0]", a.cpos, a.cneg, want)
	}
}

// betaUpperBySimpson integrates the Beta(a, b) density over [½, 1] with
// composite Simpson, the normalizer from math.Lgamma. Outside μ ± 50σ the
// density is below anything a float64 sum can see, so the integral runs
// over [½, 1] ∩ [μ − 50σ, μ + 50σ]. When that reaches 1 it substitutes
// x = 1 − t⁴: the density's factor (1 − x)^(b−1), not smooth at 1 for
// non-integer b, becomes t^(4b−4), smooth enough for Simpson's order.
func betaUpperBySimpson(a, b float64) float64 {
	n := a + b
	mu := a / n
	sd := math.Sqrt(a * b / (n * n * (n + 1)))
	lo, hi := max(0.5, mu-50*sd), min(1, mu+50*sd)
	if lo >= hi {
		return 0
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	lnB := la + lb - lab
	// The density at x, given ln x and ln(1 − x).
	dens := func(lx, l1x float64) float64 { return math.Exp((a-1)*lx + (b-1)*l1x - lnB) }
	simpson := func(g func(float64) float64, lo, hi float64) float64 {
		const steps = 40000
		h := (hi - lo) / steps
		s := g(lo) + g(hi)
		for i := 1; i < steps; i++ {
			s += float64(2+2*(i%2)) * g(lo+float64(i)*h)
		}
		return s * h / 3
	}
	if hi < 1 {
		return simpson(func(x float64) float64 { return dens(math.Log(x), math.Log1p(-x)) }, lo, hi)
	}
	return simpson(func(t float64) float64 {
		if t == 0 { // t^(4b−4)·4t³ with b ≥ 1
			return 0
		}
		t4 := t * t * t * t
		return dens(math.Log1p(-t4), 4*math.Log(t)) * 4 * t * t * t
	}, 0, math.Pow(1-lo, 0.25))
}

func TestTightestWeightMatchesTheBetaIntegral(t *testing.T) {
	for _, c := range [][2]float64{
		{0, 0}, {1, 0}, {0, 1}, {3, 5}, {2.5, 0.3}, {0.7, 0.7}, {10.2, 12.9}, {0.01, 40},
		{100, 90}, {999.5, 1000.25}, {4000, 4100.5}, {9999, 9999}, {9990, 10010}, {10005.5, 9990.25},
		{2e4, 2e4 + 150}, {5e4 + 0.5, 5e4}, {1e5, 1e5 + 300.5}, {1e6, 1e6}, {1e6, 1e6 + 1000},
		{1e7 + 0.5, 1e7 + 3000}, {2.5e8, 2.5e8 - 9000}, {1e6, 3}, {5, 1e6}, {123.4, 1e5},
	} {
		got := tightestWeight(c[0], c[1])
		want := betaUpperBySimpson(c[0]+1, c[1]+1)
		// The reference's own error: its log-normalizer, a sum of
		// log-gamma values of size n ln n, carries about 1e-16·n ln n.
		n := c[0] + c[1] + 2
		tol := 2e-11 + 4e-16*n*math.Log(n)
		if math.Abs(got-want) > tol {
			t.Errorf("w⁺(%v, %v) = %.15g, Simpson %.15g (tolerance %.1g)", c[0], c[1], got, want, tol)
		}
		if sym := tightestWeight(c[1], c[0]); math.Abs(got+sym-1) > 1e-12 {
			t.Errorf("w⁺(%v, %v) + w⁺(%v, %v) = %v, want 1", c[0], c[1], c[1], c[0], got+sym)
		}
	}
	// With a = 1 or b = 1 the tail has a closed form: P(p > ½) = ½^b for
	// Beta(1, b), 1 − ½^a for Beta(a, 1). A tiny w⁺ must keep its relative
	// accuracy (1 − I_½(a, b) would round it to 0).
	for _, c := range []float64{0, 0.5, 3, 60, 500.5, 1500} {
		if w, want := tightestWeight(0, c), math.Pow(0.5, c+1); math.Abs(w-want) > 1e-12*want {
			t.Errorf("w⁺(0, %v) = %v, want ½^%v = %v", c, w, c+1, want)
		}
		if w, want := tightestWeight(c, 0), 1-math.Pow(0.5, c+1); math.Abs(w-want) > 1e-15 {
			t.Errorf("w⁺(%v, 0) = %v, want 1 − ½^%v = %v", c, w, c+1, want)
		}
	}
	// Equal counts give exactly ½ by symmetry, at any size: the case where
	// an incomplete beta function that stops its series early goes wrong.
	for _, c := range []float64{0, 1, 17.5, 9999, 1e4, 3e4, 1e5, 1e6, 1e7, 1e9, 1e12, 1e17, 1e100, tightestCountMax} {
		if w := tightestWeight(c, c); math.Abs(w-0.5) > 1e-12 {
			t.Errorf("w⁺(%v, %v) = %.17g, want ½", c, c, w)
		}
	}
	// Monotone in c⁺ across the switch between methods.
	prev := 0.0
	for c := 9000.0; c < 11000; c += 7.3 {
		w := tightestWeight(c, 10000-1)
		if w < prev {
			t.Fatalf("w⁺(%v, 9999) = %v < w⁺ at the previous c⁺, %v", c, w, prev)
		}
		prev = w
	}
}

func TestGaussLegendreRule(t *testing.T) {
	// The 8-point rule integrates polynomials of degree ≤ 15 exactly.
	for deg := 0; deg <= 15; deg += 2 {
		s := 0.0
		for i, x := range gl8Nodes {
			s += 2 * gl8Weights[i] * math.Pow(x, float64(deg))
		}
		if want := 2 / float64(deg+1); math.Abs(s-want) > 1e-15 {
			t.Fatalf("∫x^%d = %v, want %v", deg, s, want)
		}
	}
}

// TestDotRowGivesRowsKernelValues: the dot products behind the nearest
// neighbour are the ones row() computes its kernel values from, bit for
// bit, on both of row()'s paths (scatter and merge) and every kernel.
func TestDotRowGivesRowsKernelValues(t *testing.T) {
	r := rand.New(rand.NewPCG(44, 1))
	randVec := func(maxIdx uint32) sparse.Vector {
		d := map[uint32]float64{}
		for range 1 + r.IntN(20) {
			i := 1 + uint32(r.IntN(30))
			if r.IntN(4) == 0 {
				i = maxIdx - uint32(r.IntN(3))
			}
			d[i] = r.NormFloat64() * math.Pow(10, float64(r.IntN(5)-2))
		}
		var v sparse.Vector
		for _, i := range slices.Sorted(func(yield func(uint32) bool) {
			for i := range d {
				if !yield(i) {
					return
				}
			}
		}) {
			v.Idx, v.Val = append(v.Idx, i), append(v.Val, d[i])
		}
		return v
	}
	for _, ks := range allKernels {
		s := supportSet{kern: mustKernel(t, ks)}
		for range 40 {
			s.add(s.newQuery(randVec(scatterLimit+5)), 1, 1, 0) // some beyond the scatter array
		}
		var row, dots []float64
		for trial := range 200 {
			lim := uint32(100)
			if trial%3 == 0 {
				lim = scatterLimit + 2 // the merge path
			}
			q := s.newQuery(randVec(lim))
			if trial%7 == 0 {
				q = query{x: s.vec(trial % s.len()), norm: s.norm[trial%s.len()], self: s.self[trial%s.len()]}
			}
			row = s.row(q, row)
			dots = s.dotRow(q, dots)
			for j := range row {
				if v := s.kern.value(dots[j], q.norm, s.norm[j], q.self, s.self[j]); !sameBits(v, row[j]) {
					t.Fatalf("%s: k from dotRow %v, row() %v", ks, v, row[j])
				}
				if want := q.x.Dot(s.vec(j)); !sameBits(dots[j], want) {
					t.Fatalf("%s: dot %v, Dot %v", ks, dots[j], want)
				}
			}
		}
	}
}

func TestTightestRejectsInvalidCounts(t *testing.T) {
	xs, ys := stream(45, 200)
	l := mustNew(t, "tightest:budget=10", mustKernel(t, "rbf:gamma=0.5"), 1)
	for i := range xs {
		l.Round(xs[i], ys[i])
	}
	a := l.(*model).alg.(*tightest)
	good, _ := l.MarshalBinary()
	if _, err := Unmarshal(good); err != nil {
		t.Fatal(err)
	}
	for _, c := range []float64{-1, math.NaN(), math.Inf(1), 2 * tightestCountMax} {
		saved := a.cneg[3]
		a.cneg[3] = c
		b, _ := l.MarshalBinary()
		a.cneg[3] = saved
		if _, err := Unmarshal(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("count %v decoded: %v", c, err)
		}
	}
}

// BenchmarkTightestRoundFullBudget is BenchmarkRoundFullBudget for
// Tightest: one steady-state round at B = 100.
func BenchmarkTightestRoundFullBudget(b *testing.B) {
	benchFull(b, "tightest:budget=100")
}

// BenchmarkTightestWeight: w⁺ by RegIncBeta (small counts) and by
// quadrature (large counts).
func BenchmarkTightestWeight(b *testing.B) {
	for _, c := range [][2]float64{{30.5, 20.25}, {3e4, 3e4 + 100}} {
		b.Run(fmtFloat(c[0]+c[1]), func(b *testing.B) {
			for b.Loop() {
				tightestWeight(c[0], c[1])
			}
		})
	}
}

func TestTightBudgetsCostOnlyWhatIsUsed(t *testing.T) {
	// As TestHugeBudgetCostsOnlyWhatIsUsed: no (B+1)² or B·N storage up front.
	xs, ys := stream(46, 300)
	for _, spec := range []string{"tighter0:budget=16000000", "tighter:budget=16000000,validation=16000000", "tightest:budget=16000000"} {
		l := mustNew(t, spec, mustKernel(t, "rbf:gamma=0.5"), 1)
		for i := range xs {
			l.Round(xs[i], ys[i])
		}
		if l.Size() == 0 {
			t.Fatalf("%s learned nothing", spec)
		}
	}
}

// TestTightestWeightOfHugeCounts checks w⁺ at counts far beyond the range
// of the Simpson reference against the normal approximation of the Beta
// distribution, P(p > ½) ≈ Φ((μ − ½)/σ), σ² = μν/(n + 1), whose error is
// O(1/√n) (below 1e-6 here). Counts of 8.8·10¹⁶ and 1.4·10¹⁷ once came
// out ½ (each count capped at 10¹⁵).
func TestTightestWeightOfHugeCounts(t *testing.T) {
	normal := func(cp, cn float64) float64 {
		a, b := cp+1, cn+1
		n := a + b
		mu := a / n
		sd := math.Sqrt(mu * (1 - mu) / (n + 1))
		return 0.5 * math.Erfc((0.5-mu)/sd/math.Sqrt2)
	}
	for _, c := range [][2]float64{
		{8.8e16, 1.4e17}, {1.4e17, 8.8e16}, {1e12, 1e12 - 5e5}, {1e12, 1e12 + 2e6},
		{1e16, 1e16 + 1e8}, {3e14 + 1e7, 3e14}, {1e17, 1e17 + 3e8}, {5e20, 5e20 - 4e10},
		{1e100, 1.000001e100}, {tightestCountMax, tightestCountMax / 3},
	} {
		got, want := tightestWeight(c[0], c[1]), normal(c[0], c[1])
		if math.Abs(got-want) > 1e-6 {
			t.Errorf("w⁺(%g, %g) = %.12g, normal approximation %.12g", c[0], c[1], got, want)
		}
	}
	if w := tightestWeight(8.8e16, 1.4e17); w > 1e-100 {
		t.Errorf("w⁺(8.8e16, 1.4e17) = %v, want ≈ 0", w)
	}
	// Mid-range checks of the approximation's accuracy: z near 1 at n ≈ 2e16.
	if w := tightestWeight(1e16, 1e16+1e8); w < 0.2 || w > 0.3 {
		t.Errorf("w⁺(1e16, 1e16+1e8) = %v, want ≈ Φ(−0.71) ≈ 0.24", w)
	}
}

// TestTightestCountsAreNotCappedOneByOne: credits that take the counts to
// (8.8·10¹⁶, 1.4·10¹⁷) keep both (so w⁺ ≈ 0), and credits past
// tightestCountMax scale both counts together, keeping their ratio.
func TestTightestCountsAreNotCappedOneByOne(t *testing.T) {
	a := &tightest{cpos: []float64{1}, cneg: []float64{0}, w: []float64{math.NaN()}}
	a.credit(0, 1, 0, 8.8e16-1)
	a.credit(0, 0, 1, 1.4e17)
	if a.cpos[0] != 8.8e16 || a.cneg[0] != 1.4e17 {
		t.Fatalf("counts (%v, %v)", a.cpos[0], a.cneg[0])
	}
	if w := tightestWeight(a.cpos[0], a.cneg[0]); w > 1e-100 {
		t.Fatalf("w⁺ = %v", w)
	}
	for _, c := range []struct{ p, n, cp, cn, kv float64 }{
		{tightestCountMax, tightestCountMax / 2, 1, 0, tightestCountMax},         // p doubles
		{tightestCountMax / 4, tightestCountMax, 0, 3, tightestCountMax},         // n quadruples
		{tightestCountMax, 7, tightestCountMax, tightestCountMax, 1e300},         // both overflow float64
		{0.5 * tightestCountMax, 0.25 * tightestCountMax, 1, 1, math.MaxFloat64}, // equal increments dominate
	} {
		p, n := addCounts(c.p, c.n, c.cp, c.cn, c.kv)
		// The exact sums, as ratios computed at a safe scale.
		s := 1 / tightestCountMax
		wantRatio := (c.p*s + c.cp*s*c.kv) / (c.n*s + c.cn*s*c.kv)
		if max(p, n) != tightestCountMax || math.Abs(p/n/wantRatio-1) > 1e-12 {
			t.Errorf("addCounts%+v = (%v, %v): ratio %v, want %v with the larger at the limit", c, p, n, p/n, wantRatio)
		}
	}
	if p, n := addCounts(3, 4, 1, 0, math.Inf(1)); p != tightestCountMax || n != 0 {
		t.Errorf("infinite credit: (%v, %v)", p, n)
	}
	if p, n := addCounts(3, 4, 1, 1, math.NaN()); p != 3 || n != 4 {
		t.Errorf("NaN credit: (%v, %v)", p, n)
	}
}
