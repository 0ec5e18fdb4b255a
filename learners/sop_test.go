package learners

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/streamlearner/streamlearner/learners/rng"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

func init() {
	allSpecs = append(allSpecs, "sop", "sop:a=0.5,max=15", "rbsop:budget=15", "lbsop:budget=15,a=2")
}

// regularizedGram returns aI + K for the points xs, from Kernel.Eval.
func regularizedGram(k Kernel, xs []sparse.Vector, a float64) [][]float64 {
	g := make([][]float64, len(xs))
	for i := range xs {
		g[i] = make([]float64, len(xs))
		for j := range xs {
			g[i][j] = k.Eval(xs[i], xs[j])
		}
		g[i][i] += a
	}
	return g
}

// inverse returns A⁻¹ by Gauss–Jordan elimination with partial pivoting.
func inverse(a [][]float64) [][]float64 {
	n := len(a)
	m := make([][]float64, n)
	for i := range a {
		m[i] = make([]float64, 2*n)
		copy(m[i], a[i])
		m[i][n+i] = 1
	}
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		m[c], m[p] = m[p], m[c]
		d := m[c][c]
		for j := range m[c] {
			m[c][j] /= d
		}
		for r := range n {
			if l := m[r][c]; r != c && l != 0 {
				for j := c; j < 2*n; j++ {
					m[r][j] -= l * m[c][j]
				}
			}
		}
	}
	inv := make([][]float64, n)
	for i := range m {
		inv[i] = m[i][n:]
	}
	return inv
}

// sopRef is the naive SOP: every round it builds aI + K over the support set
// and the current point from Kernel.Eval and solves for the margin.
type sopRef struct {
	k      Kernel
	a      float64
	budget int
	random bool
	rng    *rng.Source
	x      []sparse.Vector
	y      []int
	born   []uint64
	rounds uint64
}

// round returns f, SOP's margin, and h = y_Sᵀ (aI + K_S)⁻¹ k, the margin
// without the current point in the matrix, each with the sum of the
// magnitudes of its terms, then learns.
func (r *sopRef) round(x sparse.Vector, y int) (f, fScale, h, hScale float64) {
	r.rounds++
	n := len(r.x)
	all := append(slices.Clone(r.x), x)
	kx := make([]float64, n+1)
	for i, v := range all {
		kx[i] = r.k.Eval(v, x)
	}
	z := solve(regularizedGram(r.k, all, r.a), kx)
	w := solve(regularizedGram(r.k, r.x, r.a), kx[:n])
	for i := range n {
		f += float64(r.y[i]) * z[i]
		h += float64(r.y[i]) * w[i]
		fScale += math.Abs(z[i])
		hScale += math.Abs(w[i])
	}
	if y == 0 || float64(y)*f > 0 {
		return f, fScale, h, hScale
	}
	if r.budget > 0 && n >= r.budget {
		j := 0
		if r.random {
			j = r.rng.Intn(n)
		}
		r.x = slices.Delete(r.x, j, j+1)
		r.y = slices.Delete(r.y, j, j+1)
		r.born = slices.Delete(r.born, j, j+1)
	}
	r.x = append(r.x, x)
	r.y = append(r.y, y)
	r.born = append(r.born, r.rounds)
	return f, fScale, h, hScale
}

func newSOPRef(t *testing.T, spec string, k Kernel, seed uint64) *sopRef {
	t.Helper()
	sp, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	p := newParams(sp)
	r := &sopRef{k: k, a: p.float("a", 1, 0, math.Inf(1)), random: sp.Name == "rbsop"}
	if sp.Name == "sop" {
		r.budget = p.int("max", 0, 0, 1<<20)
	} else {
		r.budget = p.int("budget", 100, 1, 1<<20)
	}
	r.rng = newRNG(p.uint64("seed", seed))
	return r
}

// sopOf returns the learner's algorithm.
func sopOf(l Learner) *sop { return l.(*model).alg.(*sop) }

// denseM unpacks the learner's M.
func denseM(s *sop, n int) [][]float64 {
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, n)
	}
	p := 0
	for i := range n {
		for j := 0; j <= i; j++ {
			m[i][j], m[j][i] = s.m[p], s.m[p]
			p++
		}
	}
	if p != len(s.m) {
		panic("packed M does not match the active set")
	}
	return m
}

// sopMargin computes SOP's f(x) = a · y_Sᵀ M k / s, s = a + κ − kᵀMk, from
// the learner's state, as an independent reading of that state.
func sopMargin(l Learner, x sparse.Vector) float64 {
	mo := l.(*model)
	s := sopOf(l)
	n := mo.sv.len()
	m := denseM(s, n)
	k := make([]float64, n)
	for i := range n {
		k[i] = mo.Kernel().Eval(mo.sv.vec(i), x)
	}
	yu, kMk := 0.0, 0.0
	for i := range n {
		ui := 0.0
		for j := range n {
			ui += m[i][j] * k[j]
		}
		yu += float64(mo.sv.label[i]) * ui
		kMk += k[i] * ui
	}
	return s.a * yu / (s.a + mo.Kernel().Eval(x, x) - kMk)
}

func relErr(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / math.Abs(want)
}

// closeTo reports whether got is within tol of want relative to the larger
// of |want| and scale, the sum of the magnitudes of the terms that make
// want: a margin that cancels to near zero has the error of its terms.
func closeTo(got, want, scale, tol float64) bool {
	return math.Abs(got-want) <= tol*max(math.Abs(want), scale)
}

// TestSOPMatchesNaiveReference runs the learners beside the naive SOP: the
// same mistakes, the same support sets (births) after every round, SOP's
// margin recomputed from the learner's M, and the reported margin h, each
// within 1e-9 of the reference (relative to the margin, or to its terms
// where they cancel; the worst plain relative errors are logged).
func TestSOPMatchesNaiveReference(t *testing.T) {
	xs, ys := stream(31, 400)
	for _, ks := range allKernels[:3] { // rbf, poly, linear
		k := mustKernel(t, ks)
		for _, spec := range []string{"sop", "sop:a=0.3,max=20", "rbsop:budget=15", "lbsop:budget=15,a=2", "rbsop:budget=1"} {
			l := mustNew(t, spec, k, 5)
			r := newSOPRef(t, spec, k, 5)
			worstF, worstH, mistakes, removals := 0.0, 0.0, 0, 0
			for i := range xs {
				f := sopMargin(l, xs[i])
				n := l.Size()
				o := l.Round(xs[i], ys[i])
				wantF, fScale, wantH, hScale := r.round(xs[i], ys[i])
				if (float64(ys[i])*wantF <= 0) != (float64(ys[i])*wantH <= 0) {
					t.Fatalf("%s/%s round %d: f = %v and h = %v disagree in sign", spec, ks, i, wantF, wantH)
				}
				worstF, worstH = max(worstF, relErr(f, wantF)), max(worstH, relErr(o.Margin, wantH))
				if !closeTo(f, wantF, fScale, 1e-9) || !closeTo(o.Margin, wantH, hScale, 1e-9) {
					t.Fatalf("%s/%s round %d: f = %v, reference %v; h = %v, reference %v", spec, ks, i, f, wantF, o.Margin, wantH)
				}
				if o.Mistake != (float64(ys[i])*wantF <= 0) || o.Updated != o.Mistake {
					t.Fatalf("%s/%s round %d: outcome %+v, reference f = %v", spec, ks, i, o, wantF)
				}
				if got := l.(*model).sv.born; !slices.Equal(got, r.born) {
					t.Fatalf("%s/%s round %d: support born at %v, reference %v", spec, ks, i, got, r.born)
				}
				if o.Mistake {
					mistakes++
					if l.Size() == n {
						removals++
					}
				}
			}
			if mistakes < 50 || (l.Budget() > 0 && removals < 20) {
				t.Fatalf("%s/%s: %d mistakes, %d removals: the test proves little", spec, ks, mistakes, removals)
			}
			t.Logf("%-20s %-32s worst relative error: f %.1e, h %.1e (%d mistakes, %d removals)", spec, ks, worstF, worstH, mistakes, removals)
		}
	}
}

// TestSOPLinearKernelIsThePrimalSOP compares the dual learner with the
// primal SOP under the linear kernel: w = (aI + Σ_{S∪{t}} x xᵀ)⁻¹ Σ_S y x on
// dense points, solved in dimension d.
func TestSOPLinearKernelIsThePrimalSOP(t *testing.T) {
	const d = 6
	r := rand.New(rand.NewPCG(32, 1))
	k := mustKernel(t, "linear")
	for _, spec := range []string{"sop:a=1", "sop:a=0.25", "lbsop:budget=8,a=1"} {
		l := mustNew(t, spec, k, 1)
		a := newSOPRef(t, spec, k, 1).a
		var sx [][]float64
		var sy []int
		mistakes := 0
		for i := range 300 {
			x := make([]float64, d)
			for j := range x {
				x[j] = r.NormFloat64()
			}
			y := 1
			if x[0]+0.5*x[1]-x[2]*x[3] < 0 {
				y = -1
			}
			if r.IntN(8) == 0 {
				y = -y
			}
			// Primal: A = aI + Σ_S x xᵀ + x_t x_tᵀ, v = Σ_S y x.
			amat := make([][]float64, d)
			for p := range amat {
				amat[p] = make([]float64, d)
				amat[p][p] = a
			}
			v := make([]float64, d)
			for s, xs := range append(slices.Clone(sx), x) {
				for p := range d {
					for q := range d {
						amat[p][q] += xs[p] * xs[q]
					}
					if s < len(sx) {
						v[p] += float64(sy[s]) * xs[p]
					}
				}
			}
			w := solve(amat, v)
			want, scale := 0.0, 0.0
			for p := range d {
				want += w[p] * x[p]
				scale += math.Abs(w[p] * x[p])
			}
			sv := sparse.FromDense(x)
			if got := sopMargin(l, sv); !closeTo(got, want, scale, 1e-9) {
				t.Fatalf("%s round %d: dual f = %v, primal %v", spec, i, got, want)
			}
			o := l.Round(sv, y)
			if o.Mistake != (float64(y)*want <= 0) {
				t.Fatalf("%s round %d: mistake %v, primal margin %v", spec, i, o.Mistake, want)
			}
			if o.Mistake {
				mistakes++
				if b := l.Budget(); b > 0 && len(sx) == b {
					sx, sy = sx[1:], sy[1:]
				}
				sx, sy = append(sx, x), append(sy, y)
			}
		}
		if mistakes < 40 {
			t.Fatalf("%s: %d mistakes", spec, mistakes)
		}
	}
}

// TestSOPWithLargeAIsThePerceptron: as a → ∞, (aI + K)⁻¹ → I/a, so a·h
// tends to the Perceptron's margin and every decision is the Perceptron's.
func TestSOPWithLargeAIsThePerceptron(t *testing.T) {
	xs, ys := stream(33, 1500)
	k := mustKernel(t, "rbf:gamma=0.5")
	for _, pair := range [][2]string{
		{"sop:a=1e9", "perceptron"},
		{"rbsop:a=1e9,budget=20", "rbp:budget=20"},
		{"lbsop:a=1e9,budget=20", "lbp:budget=20"},
	} {
		s, p := mustNew(t, pair[0], k, 4), mustNew(t, pair[1], k, 4)
		worst := 0.0
		for i := range xs {
			os, op := s.Round(xs[i], ys[i]), p.Round(xs[i], ys[i])
			if os.Mistake != op.Mistake || os.Updated != op.Updated {
				t.Fatalf("%s round %d: %+v, %s %+v", pair[0], i, os, pair[1], op)
			}
			scale := 0.0 // Σ_j |k(x_j, x)|, the terms of the Perceptron's margin
			for _, v := range p.(*model).row {
				scale += math.Abs(v)
			}
			if !closeTo(1e9*os.Margin, op.Margin, scale, 1e-6) {
				t.Fatalf("%s round %d: a·h = %v, Perceptron margin %v", pair[0], i, 1e9*os.Margin, op.Margin)
			}
			if d := math.Abs(1e9*os.Margin - op.Margin); d > 0 {
				worst = max(worst, d/max(math.Abs(op.Margin), scale))
			}
			if !slices.Equal(s.(*model).sv.born, p.(*model).sv.born) {
				t.Fatalf("%s round %d: support sets differ", pair[0], i)
			}
		}
		t.Logf("%s: a·h within %.1e of the %s margin (relative to its terms)", pair[0], worst, pair[1])
	}
	// a = 1 is not the Perceptron on the same stream: the test can tell.
	s, p := mustNew(t, "sop:a=1", k, 4), mustNew(t, "perceptron", k, 4)
	same := true
	for i := range xs {
		same = same && s.Round(xs[i], ys[i]).Mistake == p.Round(xs[i], ys[i]).Mistake
	}
	if same {
		t.Fatal("sop:a=1 made the Perceptron's mistakes")
	}
}

// maxRelDiff returns max |got − want| / max |want| over the entries.
func maxRelDiff(got, want [][]float64) float64 {
	diff, scale := 0.0, 0.0
	for i := range want {
		for j := range want[i] {
			diff = max(diff, math.Abs(got[i][j]-want[i][j]))
			scale = max(scale, math.Abs(want[i][j]))
		}
	}
	return diff / scale
}

// sopDrift returns how far the learner's M and α are from the direct
// (aI + K_S)⁻¹ and (aI + K_S)⁻¹ y_S.
func sopDrift(l Learner) (dm, da float64) {
	mo := l.(*model)
	s := sopOf(l)
	n := mo.sv.len()
	want := inverse(regularizedGram(mo.Kernel(), mo.sv.vectors(), s.a))
	dm = maxRelDiff(denseM(s, n), want)
	wa := make([][]float64, n)
	ga := make([][]float64, n)
	for i := range n {
		v := 0.0
		for j := range n {
			v += want[i][j] * float64(mo.sv.label[j])
		}
		wa[i], ga[i] = []float64{v}, []float64{mo.sv.alpha[i]}
	}
	return dm, maxRelDiff(ga, wa)
}

// TestSOPInverseStaysAccurate plays long streams with a small budget, so
// that M goes through thousands of insertions and removals, and compares M
// and α with the direct inverse along the way.
func TestSOPInverseStaysAccurate(t *testing.T) {
	if testing.Short() {
		t.Skip("long stream")
	}
	xs, ys := stream(36, 12000)
	for _, c := range []struct{ kernel, spec string }{
		{"rbf:gamma=0.5", "rbsop:budget=40"},
		{"rbf:gamma=0.5", "lbsop:budget=40,a=0.1"},
		{"poly:degree=3,coef0=1,scale=0.5", "rbsop:budget=40,a=1"},
		{"linear", "lbsop:budget=40,a=0.01"},
		// Rank 12 < 40: pivots fall below sopPivotTol, and M is rebuilt.
		{"linear", "lbsop:budget=40,a=1e-4"},
	} {
		l := mustNew(t, c.spec, mustKernel(t, c.kernel), 1)
		worstM, worstA, updates := 0.0, 0.0, 0
		for i := range xs {
			if l.Round(xs[i], ys[i]).Updated {
				updates++
			}
			if i%1000 == 999 {
				dm, da := sopDrift(l)
				worstM, worstA = max(worstM, dm), max(worstA, da)
			}
		}
		t.Logf("%s / %s: %d insertions, %d removals; worst relative error of M %.1e, of α %.1e",
			c.spec, c.kernel, updates, updates-l.Size(), worstM, worstA)
		if updates < 2000 {
			t.Fatalf("%s: only %d updates", c.spec, updates)
		}
		if worstM > 1e-9 || worstA > 1e-9 {
			t.Fatalf("%s / %s: M has drifted: %.1e, α %.1e", c.spec, c.kernel, worstM, worstA)
		}
	}
}

// TestSOPRebuildsADriftedInverse spoils M and checks that the next update
// sees it in its pivot and recomputes M and α from scratch.
func TestSOPRebuildsADriftedInverse(t *testing.T) {
	xs, ys := stream(37, 600)
	k := mustKernel(t, "rbf:gamma=0.5")
	for _, c := range []struct {
		spec  string
		spoil float64 // factor applied to M
	}{
		{"lbsop:budget=20", 3}, // M_rr > 1/a at the next removal
		{"sop", -1},            // s > a + κ at the next insertion
	} {
		l := mustNew(t, c.spec, k, 1)
		i := 0
		for ; i < 300; i++ {
			l.Round(xs[i], ys[i])
		}
		s := sopOf(l)
		for j := range s.m {
			s.m[j] *= c.spoil
		}
		if dm, _ := sopDrift(l); dm < 0.5 {
			t.Fatalf("%s: spoiling M did not spoil it (%v)", c.spec, dm)
		}
		for ; !l.Round(xs[i], ys[i]).Updated; i++ {
		}
		dm, da := sopDrift(l)
		if dm > 1e-12 || da > 1e-12 {
			t.Fatalf("%s: after the update M is off by %.1e, α by %.1e", c.spec, dm, da)
		}
		if c.spec == "lbsop:budget=20" && l.Size() != 20 {
			t.Fatalf("%s: %d support vectors after a rebuild at a removal", c.spec, l.Size())
		}
	}
}

func TestCholeskyInverse(t *testing.T) {
	xs, _ := stream(38, 60)
	k := mustKernel(t, "poly:degree=2")
	l := mustNew(t, "sop:a=0.7", k, 1).(*model)
	for _, x := range xs {
		l.sv.add(l.sv.newQuery(x), 1, 0, 0)
	}
	s := l.alg.(*sop)
	s.rebuild(l)
	if d := maxRelDiff(denseM(s, len(xs)), inverse(regularizedGram(k, xs, 0.7))); d > 1e-12 {
		t.Fatalf("rebuilt M off by %.1e", d)
	}
}

// BenchmarkSOPRoundFullBudget is BenchmarkRoundFullBudget for the
// second-order learners: one round once the budget is full.
func BenchmarkSOPRoundFullBudget(b *testing.B) {
	xs, ys := stream(21, 20000)
	k := mustKernel(b, "rbf:gamma=0.5")
	for _, spec := range []string{"rbsop:budget=100", "lbsop:budget=100", "sop:max=100", "rbp:budget=100"} {
		b.Run(spec, func(b *testing.B) {
			l := mustNew(b, spec, k, 1)
			for i := range 5000 {
				l.Round(xs[i], ys[i])
			}
			if l.Size() != 100 {
				b.Fatalf("budget not full: %d", l.Size())
			}
			b.ReportAllocs()
			i, mistakes := 5000, 0
			for b.Loop() {
				if l.Round(xs[i], ys[i]).Mistake {
					mistakes++
				}
				if i++; i == len(xs) {
					i = 5000
				}
			}
			b.ReportMetric(float64(mistakes)/float64(b.N), "mistakes/op")
		})
	}
}

// TestSOPInsertionInTheSpanStaysAccurate: under the linear kernel in 12
// dimensions every insertion past the 12th is almost in the span of the
// support set, and with a = 1e-4 its pivot is far below a + κ. Growing M
// there without a rebuild drifts to 5e-6.
func TestSOPInsertionInTheSpanStaysAccurate(t *testing.T) {
	xs, ys := stream(39, 400)
	l := mustNew(t, "sop:a=1e-4", mustKernel(t, "linear"), 1)
	worstM, worstA := 0.0, 0.0
	for i := range xs {
		l.Round(xs[i], ys[i])
		if i%100 == 99 {
			dm, da := sopDrift(l)
			worstM, worstA = max(worstM, dm), max(worstA, da)
		}
	}
	if l.Size() < 100 || worstM > 1e-9 || worstA > 1e-9 {
		t.Fatalf("%d support vectors; M off by %.1e, α by %.1e", l.Size(), worstM, worstA)
	}
}

// TestSOPRemovalOfADuplicateIsExact: removing one of two equal support
// vectors while a ≪ k(x, x) would cancel ~1/a-sized entries of M down to
// 1/(a + κ); the relative pivot test rebuilds M instead.
func TestSOPRemovalOfADuplicateIsExact(t *testing.T) {
	k := mustKernel(t, "linear")
	e := func(i uint32, v float64) sparse.Vector { return sparse.Vector{Idx: []uint32{i}, Val: []float64{v}} }
	l := mustNew(t, "lbsop:budget=2,a=1e-6", k, 1)
	for _, r := range []struct {
		x sparse.Vector
		y int
	}{{e(1, 10), 1}, {e(1, 10), -1}, {e(2, 1), 1}} {
		if !l.Round(r.x, r.y).Updated {
			t.Fatal("expected an update")
		}
	}
	if dm, da := sopDrift(l); dm > 1e-15 || da > 1e-15 {
		t.Fatalf("M off by %.1e, α by %.1e", dm, da)
	}
}
