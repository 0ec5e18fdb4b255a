package learners

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

func TestBudgetNeverExceeded(t *testing.T) {
	xs, ys := stream(1, 2000)
	k := mustKernel(t, "rbf:gamma=0.5")
	for _, spec := range allSpecs {
		l := mustNew(t, spec, k, 1)
		if l.Budget() == 0 {
			continue
		}
		full := false
		for i := range xs {
			l.Round(xs[i], ys[i])
			if l.Size() > l.Budget() {
				t.Fatalf("%s: round %d: %d support vectors, budget %d", spec, i, l.Size(), l.Budget())
			}
			full = full || l.Size() == l.Budget()
		}
		if !full {
			t.Fatalf("%s: never filled its budget: the test proves nothing", spec)
		}
	}
}

// TestNamedBudgetIsTheBudget: every learner whose parameters include a
// budget reports budget=B as its Budget() and never holds more than B
// support vectors, whatever else bounds it (Projectron's Eq. 13 does not).
func TestNamedBudgetIsTheBudget(t *testing.T) {
	xs, ys := stream(1, 1500)
	k := mustKernel(t, "rbf:gamma=0.5")
	named := 0
	for _, info := range Available() {
		if !slices.ContainsFunc(info.Params, func(p ParamInfo) bool { return p.Name == "budget" }) {
			continue
		}
		named++
		for _, b := range []int{3, 40} {
			spec := fmt.Sprintf("%s:budget=%d", info.Name, b)
			l := mustNew(t, spec, k, 1)
			if l.Budget() != b {
				t.Fatalf("%s: Budget() = %d", spec, l.Budget())
			}
			for i := range xs {
				l.Round(xs[i], ys[i])
				if l.Size() > b {
					t.Fatalf("%s: round %d: %d support vectors", spec, i, l.Size())
				}
			}
		}
	}
	if named < 10 {
		t.Fatalf("only %d learners name a budget", named)
	}
}

func TestPerceptronMistakesEqualSupportSize(t *testing.T) {
	xs, ys := stream(2, 1000)
	l := mustNew(t, "perceptron", mustKernel(t, "rbf:gamma=0.5"), 1)
	mistakes := 0
	for i := range xs {
		o := l.Round(xs[i], ys[i])
		if o.Mistake != (float64(ys[i])*o.Margin <= 0) || o.Mistake != o.Updated {
			t.Fatalf("round %d: outcome %+v inconsistent with label %d", i, o, ys[i])
		}
		if o.Mistake {
			mistakes++
		}
	}
	if mistakes != l.Size() || mistakes == 0 {
		t.Fatalf("%d mistakes, %d support vectors", mistakes, l.Size())
	}
}

func TestUnlabeledRoundsDoNotLearn(t *testing.T) {
	xs, ys := stream(3, 300)
	for _, spec := range allSpecs {
		l := mustNew(t, spec, mustKernel(t, "rbf:gamma=0.5"), 1)
		for i := range 100 {
			l.Round(xs[i], ys[i])
		}
		before, _ := l.MarshalBinary()
		for i := 100; i < 300; i++ {
			o := l.Round(xs[i], 0)
			if o.Mistake || o.Updated {
				t.Fatalf("%s: unlabeled round reported %+v", spec, o)
			}
			if p := l.Predict(xs[i]); !sameBits(p, o.Margin) {
				t.Fatalf("%s: Predict %v != Round margin %v", spec, p, o.Margin)
			}
		}
		after, _ := l.MarshalBinary()
		// Only the round counter may differ.
		m1, _ := unmarshal(before)
		m2, _ := unmarshal(after)
		m1.rounds = m2.rounds
		b1, _ := m1.MarshalBinary()
		if !bytes.Equal(b1, after) {
			t.Fatalf("%s: unlabeled rounds changed the model", spec)
		}
	}
}

func TestStoptronStopsWhenFull(t *testing.T) {
	xs, ys := stream(4, 1500)
	l := mustNew(t, "stoptron:budget=20", mustKernel(t, "rbf:gamma=0.5"), 1)
	probe := xs[:50]
	var frozen []float64
	for i := range xs {
		o := l.Round(xs[i], ys[i])
		if frozen != nil {
			if o.Updated {
				t.Fatalf("round %d: updated after the budget filled", i)
			}
			for j, x := range probe {
				if p := l.Predict(x); !sameBits(p, frozen[j]) {
					t.Fatalf("round %d: model moved after the budget filled", i)
				}
			}
		} else if l.Size() == 20 {
			frozen = make([]float64, len(probe))
			for j, x := range probe {
				frozen[j] = l.Predict(x)
			}
		}
	}
	if frozen == nil {
		t.Fatal("budget never filled")
	}
}

// TestOldestRemovalKeepsTheMostRecentMistakes: LBP and LBSOP hold exactly
// the last B mistaken examples.
func TestOldestRemovalKeepsTheMostRecentMistakes(t *testing.T) {
	for i, spec := range []string{"lbp:budget=25", "lbsop:budget=25"} {
		xs, ys := stream(uint64(5+29*i), 1500)
		l := mustNew(t, spec, mustKernel(t, "rbf:gamma=0.5"), 1)
		var mistakes []uint64
		for i := range xs {
			if l.Round(xs[i], ys[i]).Updated {
				mistakes = append(mistakes, uint64(i+1))
			}
			want := mistakes[max(0, len(mistakes)-25):]
			if got := l.(*model).sv.born; !slices.Equal(got, want) {
				t.Fatalf("%s round %d: active set born at %v, want the last 25 mistakes %v", spec, i, got, want)
			}
		}
		if len(mistakes) < 100 {
			t.Fatalf("%s: only %d mistakes: the test proves little", spec, len(mistakes))
		}
	}
}

// TestRandomRemovalIsReproducibleFromItsSeed: RBP and RBSOP repeat a run
// exactly for one seed, differ for another, and name the seed in the spec.
func TestRandomRemovalIsReproducibleFromItsSeed(t *testing.T) {
	for i, c := range []struct{ name, wantSpec string }{{"rbp", "rbp:budget=20,seed=7"}, {"rbsop", "rbsop:a=1,budget=20,seed=7"}} {
		xs, ys := stream(uint64(6+29*i), 1500)
		k := mustKernel(t, "rbf:gamma=0.5")
		spec := c.name + ":budget=20"
		run := func(spec string, seed uint64) ([]float64, []uint64) {
			l := mustNew(t, spec, k, seed)
			var ms []float64
			for i := range xs {
				ms = append(ms, l.Round(xs[i], ys[i]).Margin)
			}
			return ms, slices.Clone(l.(*model).sv.born)
		}
		a, aset := run(spec, 1)
		b, bset := run(spec, 1)
		_, cset := run(spec, 2)
		d, _ := run(spec+",seed=1", 99) // the spec's seed wins
		if !slices.Equal(a, b) || !slices.Equal(a, d) || !slices.Equal(aset, bset) {
			t.Fatalf("%s: same seed gave different runs", c.name)
		}
		if slices.Equal(aset, cset) {
			t.Fatalf("%s: different seeds kept the same active set", c.name)
		}
		if s := mustNew(t, spec, k, 7).Spec(); s != c.wantSpec {
			t.Fatalf("spec %q, want %q", s, c.wantSpec)
		}
	}
}

func TestForgetronPhiIsTheLargestFeasible(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	sawNegA, sawRoot := false, false
	for range 20000 {
		sigma := math.Pow(10, -6*r.Float64())
		mu := 6*r.Float64() - 2
		m := uint64(1 + r.IntN(500))
		q := 15.0 / 32.0 * float64(m-1) * r.Float64()
		phi := forgetronPhi(sigma, mu, q, m)
		if !(phi > 0 && phi <= 1) {
			t.Fatalf("σ=%v μ=%v Q=%v M=%d: φ = %v outside (0,1]", sigma, mu, q, m, phi)
		}
		g := func(p float64) float64 { return forgetronPsi(sigma, p, mu) + q - 15.0/32.0*float64(m) }
		scale := 15.0 / 32.0 * float64(m)
		if g(phi) > 1e-12*scale {
			t.Fatalf("σ=%v μ=%v Q=%v M=%d: φ = %v infeasible, g = %v", sigma, mu, q, m, phi, g(phi))
		}
		if phi < 1 {
			sawRoot = true
			if g(math.Min(1, phi*(1+1e-6))) <= 0 {
				t.Fatalf("σ=%v μ=%v Q=%v M=%d: φ = %v is not the largest feasible", sigma, mu, q, m, phi)
			}
			if sigma*sigma-2*sigma*mu < 0 {
				sawNegA = true
			}
		}
	}
	if !sawNegA || !sawRoot {
		t.Fatalf("cases not covered: root %v, a<0 root %v", sawRoot, sawNegA)
	}
	// A case where the quadratic opens downward: a = 1 − 2·3 = −5, b = 2,
	// c = −0.5 + … The wrong root of aφ²+bφ+c is > 1.
	phi := forgetronPhi(1, 3, 0, 2) // c = −15/16
	if phi != 1 {
		// g(1) = −5 + 2 − 0.9375 < 0: φ = 1 is feasible.
		t.Fatalf("φ = %v, want 1", phi)
	}
	phi = forgetronPhi(1, -0.5, 0.9, 3) // a = 2, b = 2, c = 0.9 − 1.40625
	want := (-2 + math.Sqrt(4-4*2*(0.9-15.0/32*3))) / 4
	if math.Abs(phi-want) > 1e-15 {
		t.Fatalf("φ = %v, want the positive root %v", phi, want)
	}
}

func TestForgetronKeepsItsInvariants(t *testing.T) {
	xs, ys := stream(9, 3000)
	l := mustNew(t, "forgetron:budget=30", mustKernel(t, "rbf:gamma=0.5"), 1)
	a := l.(*model).alg.(*forgetron)
	shrunk := false
	mistakes := uint64(0)
	for i := range xs {
		qBefore := a.q
		o := l.Round(xs[i], ys[i])
		if o.Mistake {
			mistakes++
		}
		if a.m != mistakes {
			t.Fatalf("round %d: M = %d, counted %d mistakes", i, a.m, mistakes)
		}
		if a.q > 15.0/32.0*float64(a.m)+1e-9 {
			t.Fatalf("round %d: Q = %v exceeds 15/32·M = %v", i, a.q, 15.0/32.0*float64(a.m))
		}
		if !o.Mistake && a.q != qBefore {
			t.Fatalf("round %d: Q changed without a mistake", i)
		}
		sv := l.(*model).sv
		for j := range sv.alpha {
			s := sv.alpha[j] * float64(sv.label[j]) // σ_j
			if !(s > 0 && s <= 1) {
				t.Fatalf("round %d: σ_%d = %v outside (0,1]", i, j, s)
			}
			if j > 0 && sv.alpha[j-1]*float64(sv.label[j-1]) > s {
				t.Fatalf("round %d: an older vector weighs more than a newer one", i)
			}
			shrunk = shrunk || s < 1
		}
	}
	if !shrunk {
		t.Fatal("φ was always 1: the test proves little")
	}
}

func TestSPAWithZeroLambdaIsThePerceptron(t *testing.T) {
	xs, ys := stream(10, 1000)
	k := mustKernel(t, "poly:degree=2")
	p := mustNew(t, "perceptron", k, 1)
	// SPA(λ=0) is the Perceptron; λ = 0.5 is not.
	playsLikeButNotLike(t, xs, ys, mustNew(t, "spa:lambda=0", k, 1), p, mustNew(t, "spa:lambda=0.5", k, 1))
}

func TestSPADecay(t *testing.T) {
	// Linear kernel on orthonormal points: each margin reads one weight.
	k := mustKernel(t, "linear")
	l := mustNew(t, "spa:lambda=1", k, 1)
	e := func(i uint32) sparse.Vector { return sparse.Vector{Idx: []uint32{i}, Val: []float64{1}} }
	for i := uint32(1); i <= 4; i++ {
		l.Round(e(i), 1) // every round is a mistake: f = 0
	}
	// Weights: w1 = (1−λ1)(1−λ2)(1−λ3) with λk = 1/(1+k): ½·⅔·¾ = ¼.
	for i, want := range []float64{0.25, 0.5, 0.75, 1} {
		if got := l.Predict(e(uint32(i + 1))); math.Abs(got-want) > 1e-15 {
			t.Fatalf("weight of x%d = %v, want %v", i+1, got, want)
		}
	}
}

func TestPA1Update(t *testing.T) {
	k := mustKernel(t, "linear")
	x := sparse.Vector{Idx: []uint32{1, 2}, Val: []float64{1, 1}} // k(x,x) = 2
	for _, c := range []struct {
		spec      string
		wantAlpha float64
	}{{"pa1:c=1", 0.5}, {"pa1:c=0.1", 0.1}} {
		l := mustNew(t, c.spec, k, 1)
		o := l.Round(x, 1) // f = 0, loss 1, τ = min(C, 1/2)
		if !o.Updated || !o.Mistake {
			t.Fatalf("%s: %+v", c.spec, o)
		}
		if got := l.Predict(x); math.Abs(got-2*c.wantAlpha) > 1e-15 {
			t.Fatalf("%s: f(x) = %v after the update, want %v", c.spec, got, 2*c.wantAlpha)
		}
	}
	// A correct prediction with margin < 1 still updates (margin error).
	l := mustNew(t, "pa1:c=1", k, 1)
	l.Round(x, 1)                                                       // f(x) becomes 1
	o := l.Round(sparse.Vector{Idx: []uint32{1}, Val: []float64{1}}, 1) // f = 0.5
	if o.Mistake || !o.Updated {
		t.Fatalf("margin error: %+v", o)
	}
	// The zero vector has k(x,x) = 0 under the linear kernel: no update.
	if o := l.Round(sparse.Vector{}, -1); o.Updated {
		t.Fatalf("zero vector updated the model: %+v", o)
	}
}

func TestRoundPanicsOnInvalidLabel(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("label 2 did not panic")
		}
	}()
	mustNew(t, "perceptron", mustKernel(t, "linear"), 1).Round(sparse.Vector{}, 2)
}

func TestLearnerSpecs(t *testing.T) {
	k := mustKernel(t, "linear")
	for spec, want := range map[string]string{
		"perceptron":                     "perceptron:max=0",
		"forgetron:budget=50":            "forgetron:budget=50",
		"CKS:beta=0.5":                   "cks:beta=0.5,budget=100",
		"spa:lambda=0.50":                "spa:lambda=0.5,max=0",
		"pa1":                            "pa1:c=1,max=0",
		"sop":                            "sop:a=1,max=0",
		"SOP:a=2.50":                     "sop:a=2.5,max=0",
		"lbsop:budget=50":                "lbsop:a=1,budget=50",
		"rbsop:budget=5,a=0.1":           "rbsop:a=0.1,budget=5,seed=7",
		"tighter0":                       "tighter0:budget=100",
		"tighter:budget=20":              "tighter:budget=20,seed=7,validation=20",
		"tighter:validation=5,budget=10": "tighter:budget=10,seed=7,validation=5",
		"tighter:seed=3":                 "tighter:budget=100,seed=3,validation=100",
		"tightest":                       "tightest:budget=100",
	} {
		if got := mustNew(t, spec, k, 7).Spec(); got != want {
			t.Errorf("New(%q).Spec() = %q, want %q", spec, got, want)
		}
	}
	for spec, want := range map[string]string{
		"nope":                   "unknown",
		"rbp:budget=0":           "out of range",
		"rbp:budgte=10":          "unknown parameter budgte",
		"perceptron:budget=10":   "unknown parameter budget",
		"spa:lambda=-1":          "out of range",
		"pa1:c=0":                "out of range",
		"forgetron:budget=1.5":   "not an integer",
		"rbp:seed=-3":            "not a non-negative integer",
		"cks:budget=10,beta=inf": "not a finite number",
		"sop:a=0":                "out of range",
		"sop:a=-1":               "out of range",
		"sop:budget=10":          "unknown parameter budget",
		"lbsop:budget=0":         "out of range",
		"rbsop:a=nan":            "not a finite number",
		"lbsop:seed=3":           "unknown parameter seed",
		"rbsop:budget=10,a=":     "not key=value",
		"tighter:validation=0":   "out of range",
		"tighter0:validation=3":  "unknown parameter validation",
		"tighter0:seed=3":        "unknown parameter seed",
		"tightest:seed=1":        "unknown parameter seed",
	} {
		_, err := New(spec, k, 1)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(%q) = %v, want error containing %q", spec, err, want)
		}
	}
	names := map[string]bool{}
	for _, info := range Available() {
		names[info.Name] = true
		if info.Summary == "" || info.Source == "" {
			t.Errorf("%s: undocumented", info.Name)
		}
	}
	for _, n := range []string{"perceptron", "stoptron", "cks", "forgetron", "rbp", "lbp", "spa", "pa1", "projectron", "projectron++",
		"tighter0", "tighter", "tightest", "sop", "rbsop", "lbsop"} {
		if !names[n] {
			t.Errorf("learner %s not registered", n)
		}
	}
}

// TestStateRoundTripContinuesBitIdentically stops every learner at random
// rounds, encodes and decodes it, and checks that the restored learner
// gives the same margins, bit for bit, as one that never stopped, and ends
// in the same encoded state.
func TestStateRoundTripContinuesBitIdentically(t *testing.T) {
	xs, ys := stream(12, 900)
	r := rand.New(rand.NewPCG(13, 14))
	for _, ks := range allKernels {
		k := mustKernel(t, ks)
		for _, spec := range allSpecs {
			straight := mustNew(t, spec, k, 3)
			var want []float64
			for i := range xs {
				want = append(want, straight.Round(xs[i], ys[i]).Margin)
			}
			wantState, _ := straight.MarshalBinary()
			for range 3 {
				cuts := []int{r.IntN(len(xs)), r.IntN(len(xs)), r.IntN(len(xs))}
				slices.Sort(cuts)
				l := mustNew(t, spec, k, 3)
				for i := range xs {
					if slices.Contains(cuts, i) {
						b, err := l.MarshalBinary()
						if err != nil {
							t.Fatal(err)
						}
						if l, err = Unmarshal(b); err != nil {
							t.Fatalf("%s/%s: decode at %d: %v", spec, ks, i, err)
						}
					}
					if got := l.Round(xs[i], ys[i]).Margin; !sameBits(got, want[i]) {
						t.Fatalf("%s/%s cut at %v: round %d margin %v, uninterrupted %v", spec, ks, cuts, i, got, want[i])
					}
				}
				gotState, _ := l.MarshalBinary()
				if !bytes.Equal(gotState, wantState) {
					t.Fatalf("%s/%s: final state differs after restores", spec, ks)
				}
				if l.Spec() != straight.Spec() || l.Kernel() != straight.Kernel() {
					t.Fatalf("%s/%s: restored spec %q kernel %v", spec, ks, l.Spec(), l.Kernel())
				}
			}
		}
	}
}

func TestUnmarshalRejectsCorruptState(t *testing.T) {
	xs, ys := stream(15, 400)
	for _, spec := range allSpecs {
		l := mustNew(t, spec, mustKernel(t, "rbf:gamma=0.5"), 1)
		for i := range xs {
			l.Round(xs[i], ys[i])
		}
		good, _ := l.MarshalBinary()
		for n := 0; n < len(good); n += 1 + n/7 {
			if _, err := Unmarshal(good[:n]); err == nil {
				t.Fatalf("%s: truncation to %d of %d bytes decoded", spec, n, len(good))
			}
		}
		if _, err := Unmarshal(append(slices.Clone(good), 0)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: trailing byte: %v", spec, err)
		}
		bad := slices.Clone(good)
		copy(bad, "XXXX")
		if _, err := Unmarshal(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: bad magic: %v", spec, err)
		}
		bad = slices.Clone(good)
		bad[4] = 9 // version
		if _, err := Unmarshal(bad); err == nil || !strings.Contains(err.Error(), "version 9") {
			t.Fatalf("%s: future version: %v", spec, err)
		}
		// Random byte flips must never panic (an error or, rarely, a
		// different valid state).
		r := rand.New(rand.NewPCG(uint64(len(good)), 1))
		for range 300 {
			bad = slices.Clone(good)
			bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
			if m, err := Unmarshal(bad); err == nil && m.Budget() > 0 && m.Size() > m.Budget() {
				t.Fatalf("%s: flipped state decodes over budget", spec)
			}
		}
	}
}

func FuzzUnmarshal(f *testing.F) {
	xs, ys := stream(16, 200)
	for _, spec := range allSpecs {
		l := mustNew(f, spec, mustKernel(f, "rbf:gamma=0.5"), 1)
		for i := range xs {
			l.Round(xs[i], ys[i])
		}
		b, _ := l.MarshalBinary()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := Unmarshal(b)
		if err != nil {
			return
		}
		if l.Budget() > 0 && l.Size() > l.Budget() {
			t.Fatalf("decoded %d support vectors over budget %d", l.Size(), l.Budget())
		}
		again, err := l.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Unmarshal(again); err != nil {
			t.Fatalf("re-encoded state does not decode: %v", err)
		}
		l.Round(sparse.Vector{Idx: []uint32{1}, Val: []float64{1}}, 1)
	})
}

func TestHugeBudgetCostsOnlyWhatIsUsed(t *testing.T) {
	// A budget far beyond what the stream fills must not allocate for it
	// (a (B+1)² kernel matrix here would be petabytes).
	xs, ys := stream(17, 300)
	for _, spec := range []string{"cks:budget=16000000", "forgetron:budget=16000000", "rbp:budget=16000000"} {
		l := mustNew(t, spec, mustKernel(t, "rbf:gamma=0.5"), 1)
		for i := range xs {
			l.Round(xs[i], ys[i])
		}
		if l.Size() == 0 {
			t.Fatalf("%s learned nothing", spec)
		}
	}
}
