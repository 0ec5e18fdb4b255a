package learners

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

func init() {
	allSpecs = append(allSpecs, "projectron:eta=0.3", "projectron:budget=60", "projectron:budget=60,max=15",
		"projectron++:budget=60,max=15", "projectron++:eta=0.3,u=2")
}

func TestProjectronWithZeroEtaMakesThePerceptronsMistakes(t *testing.T) {
	xs, ys := stream(31, 800) // holds exact duplicates: those get projected
	for _, ks := range []string{"rbf:gamma=0.5", "poly:degree=2,coef0=1", "linear"} {
		k := mustKernel(t, ks)
		p := mustNew(t, "perceptron", k, 1)
		pr := mustNew(t, "projectron:eta=0", k, 1)
		for i := range xs {
			a, b := p.Round(xs[i], ys[i]), pr.Round(xs[i], ys[i])
			if a.Mistake != b.Mistake || math.Abs(a.Margin-b.Margin) > 1e-7*math.Max(1, math.Abs(a.Margin)) {
				t.Fatalf("%s round %d: perceptron %+v, projectron %+v", ks, i, a, b)
			}
		}
		if pr.Size() >= p.Size() && ks != "rbf:gamma=0.5" {
			t.Fatalf("%s: projectron kept %d vectors, perceptron %d: no projection happened", ks, pr.Size(), p.Size())
		}
		if ks == "rbf:gamma=0.5" && pr.Size() >= p.Size() {
			t.Fatalf("duplicates were not projected: %d vs %d", pr.Size(), p.Size())
		}
	}
}

func TestProjectronLinearKernelStaysWithinTheDimension(t *testing.T) {
	// Dense points in R^5: the span is full after 5 independent vectors.
	r := rand.New(rand.NewPCG(1, 1))
	k := mustKernel(t, "linear")
	for _, spec := range []string{"projectron:eta=0", "projectron:budget=1000", "projectron++:eta=0,u=1"} {
		l := mustNew(t, spec, k, 1)
		for range 3000 {
			x := make([]float64, 5)
			for i := range x {
				x[i] = r.NormFloat64()
			}
			y := 1
			if x[0]+0.5*x[1]-x[2] < 0.3*r.NormFloat64() {
				y = -1
			}
			l.Round(sparse.FromDense(x), y)
			if l.Size() > 5 {
				t.Fatalf("%s: %d support vectors in 5 dimensions", spec, l.Size())
			}
		}
		if spec == "projectron:eta=0" && l.Size() != 5 {
			t.Fatalf("%s: %d support vectors, want the full 5", spec, l.Size())
		}
	}
}

func TestProjectronPlusEqualsProjectronWithoutMarginErrors(t *testing.T) {
	// Scaled orthogonal points: a new point has f = 0 (a mistake), a seen
	// one has |f| = k(x,x) = 4 ≥ 1: there is never a margin error.
	k := mustKernel(t, "linear")
	e := func(i uint32) sparse.Vector { return sparse.Vector{Idx: []uint32{i}, Val: []float64{2}} }
	for _, spec := range []string{"eta=0.5", "budget=100"} {
		a := mustNew(t, "projectron:"+spec, k, 1)
		b := mustNew(t, "projectron++:"+spec, k, 1)
		r := rand.New(rand.NewPCG(2, 2))
		labels := map[uint32]int{}
		for range 400 {
			i := uint32(1 + r.IntN(40))
			if labels[i] == 0 {
				labels[i] = 1 - 2*r.IntN(2)
			}
			oa, ob := a.Round(e(i), labels[i]), b.Round(e(i), labels[i])
			if yf := float64(labels[i]) * oa.Margin; yf > 0 && yf < 1 {
				t.Fatalf("the stream has a margin error: %v", yf)
			}
			if !sameBits(oa.Margin, ob.Margin) || oa.Updated != ob.Updated {
				t.Fatalf("%s: projectron %+v, projectron++ %+v", spec, oa, ob)
			}
		}
		ma, mb := a.(*model), b.(*model)
		if !slices.Equal(ma.sv.born, mb.sv.born) || !slices.Equal(ma.sv.alpha, mb.sv.alpha) {
			t.Fatalf("%s: different final models", spec)
		}
	}
}

func TestProjectronPlusUpdatesOnMarginErrors(t *testing.T) {
	xs, ys := stream(32, 3000)
	k := mustKernel(t, "rbf:gamma=0.5")
	l := mustNew(t, "projectron++:budget=200", k, 1)
	marginUpdates := 0
	for i := range xs {
		before := l.Size()
		o := l.Round(xs[i], ys[i])
		if yf := float64(ys[i]) * o.Margin; yf > 0 && yf < 1 && o.Updated {
			marginUpdates++
			if l.Size() != before {
				t.Fatalf("round %d: a margin-error update grew the active set", i)
			}
		}
		if yf := float64(ys[i]) * o.Margin; yf >= 1 && o.Updated {
			t.Fatalf("round %d: updated with margin %v ≥ 1", i, yf)
		}
	}
	if marginUpdates == 0 {
		t.Fatal("no margin-error update on a noisy stream")
	}
}

// TestProjectronMatchesDirectSolve checks the incremental K⁻¹ against a
// fresh solve of K d = k every round: same decisions, same margins to
// rounding.
func TestProjectronMatchesDirectSolve(t *testing.T) {
	xs, ys := stream(33, 600)
	for _, ks := range []string{"rbf:gamma=0.5", "poly:degree=3,coef0=1,scale=0.5"} {
		k := mustKernel(t, ks)
		for _, spec := range []string{"projectron:eta=0.4", "projectron++:budget=100", "projectron:budget=300"} {
			l := mustNew(t, spec, k, 1)
			r := &refProjectron{k: k, plus: spec[:12] == "projectron++"}
			sp, _ := ParseSpec(spec)
			if e, ok := sp.Params["eta"]; ok {
				r.fixed, r.eta = true, parseF(e)
			} else {
				b := parseF(sp.Params["budget"])
				r.u = 0.25 * math.Sqrt((b+1)/math.Log(b+1))
				r.max = int(b)
			}
			for i := range xs {
				got := l.Round(xs[i], ys[i])
				want := r.round(xs[i], ys[i])
				if math.Abs(got.Margin-want) > 1e-8*math.Max(1, math.Abs(want)) || l.Size() != len(r.x) {
					t.Fatalf("%s %s round %d: margin %v size %d, direct solve %v size %d", spec, ks, i, got.Margin, l.Size(), want, len(r.x))
				}
			}
			if len(r.x) < 20 {
				t.Fatalf("%s %s: only %d support vectors, the test proves little", spec, ks, len(r.x))
			}
		}
	}
}

func TestProjectronWithEq13NeverLearnsAtSmallBudgets(t *testing.T) {
	// With an RBF kernel and an empty active set, δ = 1 and η = 0.75/U,
	// and U = ¼√(30/ln 30) < 0.75 for B = 29: the literal algorithm stays
	// empty. B = 30 learns.
	xs, ys := stream(34, 300)
	k := mustKernel(t, "rbf:gamma=0.5")
	if l := run(t, "projectron:budget=29", k, xs, ys); l.Size() != 0 {
		t.Fatalf("B=29 learned %d vectors", l.Size())
	}
	if l := run(t, "projectron:budget=30", k, xs, ys); l.Size() == 0 {
		t.Fatal("B=30 learned nothing")
	}
}

func run(t *testing.T, spec string, k Kernel, xs []sparse.Vector, ys []int) Learner {
	l := mustNew(t, spec, k, 1)
	for i := range xs {
		l.Round(xs[i], ys[i])
	}
	return l
}

func parseF(s string) float64 {
	var p params
	p.spec = Spec{Params: map[string]string{"v": s}}
	p.used, p.canon = map[string]bool{}, map[string]string{}
	return p.float("v", 0, -1e300, 1e300)
}

// refProjectron is Algorithm 2 (and §4.1) with no incremental inverse: the
// projection comes from solving K d = k by Gaussian elimination.
type refProjectron struct {
	k           Kernel
	plus, fixed bool
	eta, u      float64
	max         int // cap on the support set, 0 = none
	x           []sparse.Vector
	alpha       []float64
}

func (r *refProjectron) round(x sparse.Vector, y int) float64 {
	n := len(r.x)
	kv := make([]float64, n)
	f := 0.0
	for j := range r.x {
		kv[j] = r.k.Eval(x, r.x[j])
		f += r.alpha[j] * kv[j]
	}
	yf := float64(y) * f
	if yf >= 1 || (!r.plus && yf > 0) {
		return f
	}
	K := make([][]float64, n)
	for i := range K {
		K[i] = make([]float64, n)
		for j := range K[i] {
			K[i][j] = r.k.Eval(r.x[i], r.x[j])
		}
	}
	d := solve(K, kv)
	kxx := r.k.Eval(x, x)
	pk2 := 0.0
	for i := range d {
		pk2 += kv[i] * d[i]
	}
	pk2 = min(max(pk2, 0), kxx)
	delta2 := kxx - pk2
	loss := 1 - yf
	if yf > 0 {
		if pk2 <= 0 {
			return f
		}
		tau := min(loss/pk2, 1)
		if tau*(2*loss-tau*pk2-2*r.u*math.Sqrt(delta2)) >= 0 {
			for j := range d {
				r.alpha[j] += float64(y) * tau * d[j]
			}
		}
		return f
	}
	eta := r.eta
	if !r.fixed {
		eta = (2*loss - pk2 - 0.5) / (2 * r.u)
	}
	if delta2 > projectronFloor*kxx && (eta < 0 || delta2 > eta*eta) && (r.max == 0 || n < r.max) {
		r.x = append(r.x, x)
		r.alpha = append(r.alpha, float64(y))
	} else {
		for j := range d {
			r.alpha[j] += float64(y) * d[j]
		}
	}
	return f
}

// TestProjectronBudgetIsAHardCap: with budget=B, Eq. 13 alone grows the
// support set past B on this stream; the learner stops at B (then every
// update is projected), reports B as its budget and matches the capped
// direct solve.
func TestProjectronBudgetIsAHardCap(t *testing.T) {
	xs, ys := stream(33, 1500)
	k := mustKernel(t, "rbf:gamma=0.5")
	const b = 40
	u := 0.25 * math.Sqrt((b+1)/math.Log(b+1))
	for _, plus := range []bool{false, true} {
		spec := "projectron:budget=40"
		if plus {
			spec = "projectron++:budget=40"
		}
		free := &refProjectron{k: k, plus: plus, u: u}
		for i := 0; i < len(xs) && len(free.x) <= b; i++ {
			free.round(xs[i], ys[i])
		}
		if len(free.x) <= b {
			t.Fatalf("%s: Eq. 13 alone stays within %d: the test proves nothing", spec, b)
		}
		l := mustNew(t, spec, k, 1)
		if l.Budget() != b {
			t.Fatalf("%s: Budget() = %d", spec, l.Budget())
		}
		capped := &refProjectron{k: k, plus: plus, u: u, max: b}
		for i := range xs {
			got, want := l.Round(xs[i], ys[i]).Margin, capped.round(xs[i], ys[i])
			if math.Abs(got-want) > 1e-8*math.Max(1, math.Abs(want)) || l.Size() != len(capped.x) || l.Size() > b {
				t.Fatalf("%s round %d: margin %v size %d, direct solve %v size %d", spec, i, got, l.Size(), want, len(capped.x))
			}
		}
		if l.Size() != b {
			t.Fatalf("%s: ended with %d support vectors, never reached the cap", spec, l.Size())
		}
	}
}

// TestProjectronPlusDerivesU: with eta=η and no u, U = 1/(2η) (Theorem 2
// with k(x,x) ≤ 1), shown in the canonical spec and used in Eq. 16; at
// η = 0 there is no such U and u is required.
func TestProjectronPlusDerivesU(t *testing.T) {
	k := mustKernel(t, "rbf:gamma=0.5")
	l := mustNew(t, "projectron++:eta=0.25", k, 1)
	if got := l.(*model).alg.(*projectron).u; got != 2 {
		t.Fatalf("U = %v, want 1/(2·0.25) = 2", got)
	}
	if sp := l.Spec(); sp != "projectron++:eta=0.25,max=0,u=2" {
		t.Fatalf("spec %s", sp)
	}
	// Same margins as the spec that states U = 2, different from U = 1,
	// on a stream with margin errors.
	xs, ys := stream(35, 1500)
	playsLikeButNotLike(t, xs, ys, l, mustNew(t, "projectron++:eta=0.25,u=2", k, 1), mustNew(t, "projectron++:eta=0.25,u=1", k, 1))
	if _, err := New("projectron++:eta=0", k, 1); err == nil || !strings.Contains(err.Error(), "needs u") {
		t.Fatalf("eta=0 without u: %v", err)
	}
	if _, err := New("projectron++:eta=0,u=1.5", k, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := New("projectron:budget=50,max=60", k, 1); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("max above the budget: %v", err)
	}
}
