package learners

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

func TestKernelsMatchTheirFormulas(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dense := func() []float64 {
		x := make([]float64, 6)
		for i := range x {
			if r.IntN(3) > 0 {
				x[i] = r.NormFloat64()
			}
		}
		return x
	}
	dot := func(a, b []float64) float64 {
		s := 0.0
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	sq := func(a, b []float64) float64 {
		s := 0.0
		for i := range a {
			s += (a[i] - b[i]) * (a[i] - b[i])
		}
		return s
	}
	cases := []struct {
		spec string
		f    func(a, b []float64) float64
	}{
		{"linear", dot},
		{"poly:degree=4,coef0=1", func(a, b []float64) float64 { return math.Pow(dot(a, b)+1, 4) }},
		{"poly:degree=3,coef0=0.5,scale=2", func(a, b []float64) float64 { return math.Pow(2*dot(a, b)+0.5, 3) }},
		{"rbf:gamma=0.25", func(a, b []float64) float64 { return math.Exp(-0.25 * sq(a, b)) }},
		{"rbf:sigma2=2", func(a, b []float64) float64 { return math.Exp(-sq(a, b) / 4) }},
		{"poly:degree=4,coef0=1,normalize=true", func(a, b []float64) float64 {
			return math.Pow(dot(a, b)+1, 4) / math.Sqrt(math.Pow(dot(a, a)+1, 4)*math.Pow(dot(b, b)+1, 4))
		}},
		{"linear:normalize=true", func(a, b []float64) float64 { return dot(a, b) / math.Sqrt(dot(a, a)*dot(b, b)) }},
	}
	for _, c := range cases {
		k := mustKernel(t, c.spec)
		for range 200 {
			a, b := dense(), dense()
			if c.spec == "linear:normalize=true" && (dot(a, a) == 0 || dot(b, b) == 0) {
				continue
			}
			want := c.f(a, b)
			got := k.Eval(sparse.FromDense(a), sparse.FromDense(b))
			if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Fatalf("%s: k(%v, %v) = %v, want %v", c.spec, a, b, got, want)
			}
			if rev := k.Eval(sparse.FromDense(b), sparse.FromDense(a)); !sameBits(rev, got) {
				t.Fatalf("%s: not symmetric bit for bit: %v vs %v", c.spec, got, rev)
			}
		}
	}
}

// TestRBFIsExpBitForBit: the RBF kernel's value without a call to exp
// where the distance is zero (k(x,x) in every round) is exp's, bit for
// bit, for every γ a spec allows, overflowing and NaN norms included.
func TestRBFIsExpBitForBit(t *testing.T) {
	norms := []float64{0, 5e-324, 1e-300, 0.3, 1, 14, 1e100, math.MaxFloat64 / 2, math.MaxFloat64, math.Inf(1), math.NaN()}
	for _, spec := range []string{"rbf:gamma=0.01", "rbf:gamma=5e-324", "rbf:sigma2=5e-324", "rbf:gamma=1e308"} {
		k := mustKernel(t, spec)
		ref := func(dot, nx, ny float64) float64 {
			d := nx + ny - 2*dot
			if d < 0 {
				d = 0
			}
			return math.Exp(-k.Gamma * d)
		}
		for _, n := range norms {
			if got, want := k.self(n), ref(n, n, n); !sameBits(got, want) {
				t.Errorf("%s: k(x,x) for ‖x‖² = %g is %v, exp gives %v", spec, n, got, want)
			}
			for _, m := range norms {
				dot := math.Sqrt(n * m) // x and y in the same direction: distance 0 or rounding below
				if got, want := k.raw(dot, n, m), ref(dot, n, m); !sameBits(got, want) {
					t.Errorf("%s: raw(%g, %g, %g) = %v, exp gives %v", spec, dot, n, m, got, want)
				}
			}
		}
	}
}

func TestKernelRowMatchesEval(t *testing.T) {
	xs, _ := stream(3, 60)
	// Beside allKernels, every case row computes in a loop of its own.
	more := []string{"linear:bias=1", "linear:normalize=true", "poly:coef0=1,degree=1,scale=1", "poly:coef0=0,degree=4,scale=2", "rbf:gamma=0.5,normalize=true"}
	for _, ks := range append(slices.Clone(allKernels), more...) {
		k := mustKernel(t, ks)
		s := supportSet{kern: k}
		for i, x := range xs[:40] {
			s.add(s.newQuery(x), 1, 1, uint64(i))
		}
		for _, x := range xs[40:] {
			row := s.row(s.newQuery(x), nil)
			for j := range row {
				if want := k.Eval(x, s.vec(j)); !sameBits(row[j], want) {
					t.Fatalf("%s: row[%d] = %v, Eval = %v", ks, j, row[j], want)
				}
			}
		}
		// A point beyond the scatter buffer's limit takes the merge path and
		// must give the same bits.
		far := sparse.Vector{Idx: append(append([]uint32{}, xs[50].Idx...), scatterLimit+5), Val: append(append([]float64{}, xs[50].Val...), 0.5)}
		row := s.row(s.newQuery(far), nil)
		for j := range row {
			if want := k.Eval(far, s.vec(j)); !sameBits(row[j], want) {
				t.Fatalf("%s: merge path row[%d] = %v, Eval = %v", ks, j, row[j], want)
			}
		}
	}
}

func TestParseKernel(t *testing.T) {
	for _, s := range []string{"linear", "poly:degree=4,coef0=1", "rbf:gamma=0.01", "rbf:sigma2=25", "poly:degree=5,coef0=1,normalize=true", "linear:normalize=true", "RBF:Gamma=2"} {
		k := mustKernel(t, s)
		back, err := ParseKernel(k.String())
		if err != nil || back != k {
			t.Errorf("%s: String() = %q parses to %+v, %v; want %+v", s, k.String(), back, err, k)
		}
	}
	if k := mustKernel(t, "rbf:sigma2=25"); k.Gamma != 0.02 {
		t.Errorf("sigma2=25 gives gamma %v, want 1/(2·25) = 0.02", k.Gamma)
	}
	for s, want := range map[string]string{
		"":                         "missing name",
		"sigmoid":                  "unknown",
		"rbf:gamma=0":              "out of range",
		"rbf:gamma=-1":             "out of range",
		"rbf:gamma=x":              "not a finite number",
		"rbf:gamma=NaN":            "not a finite number",
		"rbf:gamma=1,sigma2=1":     "not both",
		"rbf:gama=1":               "unknown parameter gama",
		"poly:degree=0":            "out of range",
		"poly:degree=2.5":          "not an integer",
		"linear:degree=2":          "unknown parameter degree",
		"rbf:gamma":                "not key=value",
		"rbf:gamma=1,gamma=2":      "given twice",
		"poly:normalize=sometimes": "not true or false",
	} {
		_, err := ParseKernel(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseKernel(%q) = %v, want error containing %q", s, err, want)
		}
	}
}

// TestRBFDefaultGamma: "rbf" without a parameter is the γ that --kernel
// takes when it is not given at all (it was γ = 1 against 0.1: 25.15 %
// against 22.30 % mistakes on 2,000 a9a records).
func TestRBFDefaultGamma(t *testing.T) {
	for _, s := range []string{"rbf", "gaussian", "rbf:normalize=true"} {
		if k := mustKernel(t, s); k.Gamma != DefaultGamma || DefaultGamma != 0.1 {
			t.Errorf("%s: gamma %v, want the default %v = 0.1", s, k.Gamma, DefaultGamma)
		}
	}
}

func TestPowi(t *testing.T) {
	for _, x := range []float64{-2.5, -1, 0, 0.3, 1, 1.7, 3} {
		for n := 1; n <= 9; n++ {
			if got, want := powi(x, n), math.Pow(x, float64(n)); math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
				t.Errorf("powi(%v, %d) = %v, want %v", x, n, got, want)
			}
		}
	}
}
