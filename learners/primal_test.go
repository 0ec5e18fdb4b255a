package learners

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

// primalSpecs are the learners that take the primal form.
var primalSpecs = []string{"perceptron", "pa1:c=1", "pa1:c=0.01"}

var affineKernels = []string{"linear", "linear:bias=1", "poly:degree=1,coef0=0.5,scale=2"}

// newDual builds spec in the dual form, whatever its kernel: the form
// every learner had before the primal one, which the primal must match.
func newDual(t testing.TB, spec string, k Kernel) Learner {
	t.Helper()
	l := mustNew(t, spec, k, 3)
	l.(*model).primal = nil
	return l
}

// loadTestdata reads the first n records of a file of the repository's
// testdata, pos naming the positive label.
func loadTestdata(t testing.TB, file, pos string, n int) ([]sparse.Vector, []int) {
	t.Helper()
	s, err := dataset.Load(context.Background(), "../testdata/"+file,
		dataset.Options{Labels: codec.LabelMap{Positive: []string{pos}}, Limit: n})
	if err != nil {
		t.Fatal(err)
	}
	return s.X, s.Y
}

// closeMargins reports whether a primal margin is the dual's to 1e-9,
// relative to the larger of the margin and 1 (a margin near zero is a sum
// of terms of about unit size that cancel).
func closeMargins(primal, dual float64) bool {
	return math.Abs(primal-dual) <= 1e-9*math.Max(1, math.Abs(dual))
}

// playPrimalAndDual plays one stream through the primal and the dual
// form of spec and fails unless every margin agrees to 1e-9 and every
// round makes the same mistake and update; it returns the mistakes.
func playPrimalAndDual(t *testing.T, spec string, k Kernel, xs []sparse.Vector, ys []int) int {
	t.Helper()
	p, d := mustNew(t, spec, k, 3), newDual(t, spec, k)
	if Form(p) != FormPrimal || Form(d) != FormDual {
		t.Fatalf("%s with %s: forms %s and %s", spec, k, Form(p), Form(d))
	}
	mistakes := 0
	for i := range xs {
		a, b := p.Round(xs[i], ys[i]), d.Round(xs[i], ys[i])
		if !closeMargins(a.Margin, b.Margin) || a.Mistake != b.Mistake || a.Updated != b.Updated {
			t.Fatalf("%s with %s, round %d: primal %+v, dual %+v", spec, k, i, a, b)
		}
		if a.Mistake {
			mistakes++
		}
	}
	if p.Size() != d.Size() {
		t.Fatalf("%s with %s: primal folded %d vectors, the dual holds %d", spec, k, p.Size(), d.Size())
	}
	return mistakes
}

// TestPrimalMatchesDual: the primal form plays as the dual form on a9a
// (sparse, 123 binary features), USPS (dense, 256 features) and the
// synthetic stream, for every learner that takes it and every affine
// kernel.
func TestPrimalMatchesDual(t *testing.T) {
	a9aX, a9aY := loadTestdata(t, "a9a.gz", "1", 4000)
	uspsX, uspsY := loadTestdata(t, "usps-2000.gz", "1", 1000)
	synX, synY := stream(21, 1500)
	for _, ks := range affineKernels {
		k := mustKernel(t, ks)
		for _, spec := range primalSpecs {
			m1 := playPrimalAndDual(t, spec, k, a9aX, a9aY)
			m2 := playPrimalAndDual(t, spec, k, uspsX, uspsY)
			m3 := playPrimalAndDual(t, spec, k, synX, synY)
			t.Logf("%-16s %-32s mistakes a9a %d, usps %d, synthetic %d", spec, ks, m1, m2, m3)
		}
	}
}

// TestPrimalForm: which learners and kernels take the primal form.
func TestPrimalForm(t *testing.T) {
	for _, c := range []struct {
		spec, kernel string
		primal       bool
	}{
		{"perceptron", "linear", true},
		{"pa1:c=0.01", "linear:bias=1", true},
		{"pa1", "poly:degree=1,coef0=1", true},
		{"spa", "linear", false},
		{"perceptron", "poly:degree=2", false},
		{"perceptron", "rbf", false},
		{"perceptron", "linear:normalize=true", false},
		{"perceptron:max=10", "linear", false},
		{"pa1:max=10", "linear", false},
		{"rbp:budget=10", "linear", false},
		{"forgetron:budget=10", "linear", false},
		{"sop", "linear", false},
		{"projectron", "linear", false},
		{"nosuch", "linear", false},
	} {
		k := mustKernel(t, c.kernel)
		if got := Primal(c.spec, k); got != c.primal {
			t.Errorf("Primal(%s, %s) = %v, want %v", c.spec, c.kernel, got, c.primal)
		}
		if c.spec == "nosuch" {
			continue
		}
		want := FormDual
		if c.primal {
			want = FormPrimal
		}
		if got := Form(mustNew(t, c.spec, k, 1)); got != want {
			t.Errorf("%s with %s: form %s, want %s", c.spec, c.kernel, got, want)
		}
	}
}

// TestLinearBias: linear:bias=C is poly:degree=1,coef0=C bit for bit in
// the dual form, reads back from its canonical spec, and refuses a
// negative bias.
func TestLinearBias(t *testing.T) {
	k := mustKernel(t, "linear:bias=1")
	if k.String() != "linear:bias=1" || mustKernel(t, k.String()) != k {
		t.Fatalf("linear:bias=1 reads as %+v, spec %q", k, k)
	}
	if s := mustKernel(t, "linear:bias=0.5,normalize=true").String(); s != "linear:bias=0.5,normalize=true" {
		t.Fatalf("canonical spec %q", s)
	}
	if _, err := ParseKernel("linear:bias=-1"); err == nil {
		t.Fatal("a negative bias parsed")
	}
	xs, ys := stream(23, 800)
	playsLikeButNotLike(t, xs, ys, mustNew(t, "rbp:budget=20", k, 1),
		mustNew(t, "rbp:budget=20", mustKernel(t, "poly:degree=1,coef0=1"), 1),
		mustNew(t, "rbp:budget=20", mustKernel(t, "linear"), 1))
}

// TestPrimalStateRoundTrip: a primal state restores and continues bit
// for bit, and its size follows the features, not the stream.
func TestPrimalStateRoundTrip(t *testing.T) {
	xs, ys := loadTestdata(t, "a9a.gz", "1", 6000)
	for _, ks := range affineKernels {
		for _, spec := range primalSpecs {
			l := mustNew(t, spec, mustKernel(t, ks), 1)
			var sizes []int
			for i := range xs {
				if i == 2000 || i == 4000 {
					b, err := l.MarshalBinary()
					if err != nil {
						t.Fatal(err)
					}
					sizes = append(sizes, len(b))
					c, err := Unmarshal(b)
					if err != nil {
						t.Fatalf("%s with %s: %v", spec, ks, err)
					}
					if Form(c) != FormPrimal || c.Size() != l.Size() || c.Spec() != l.Spec() {
						t.Fatalf("%s with %s: restored %s, size %d, spec %s", spec, ks, Form(c), c.Size(), c.Spec())
					}
					l = c
				}
				l.Round(xs[i], ys[i])
			}
			// 123 features: at most 123 entries of 9 or 10 bytes.
			if sizes[1] > 1500 || sizes[1] > sizes[0]+150 {
				t.Errorf("%s with %s: state of %d then %d bytes", spec, ks, sizes[0], sizes[1])
			}
		}
	}
}

// TestPrimalStateContinuesExactly: the restored learner's margins are the
// original's, bit for bit.
func TestPrimalStateContinuesExactly(t *testing.T) {
	xs, ys := stream(24, 1200)
	for _, spec := range primalSpecs {
		l := mustNew(t, spec, mustKernel(t, "linear:bias=1"), 1)
		for i := range 600 {
			l.Round(xs[i], ys[i])
		}
		b, _ := l.MarshalBinary()
		c, err := Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		for i := 600; i < len(xs); i++ {
			if a, b := l.Round(xs[i], ys[i]), c.Round(xs[i], ys[i]); !sameBits(a.Margin, b.Margin) {
				t.Fatalf("%s round %d: margin %v, restored %v", spec, i, a.Margin, b.Margin)
			}
		}
	}
}

// TestDualStateLoadsAsPrimal: the state of a learner saved in the dual
// form (format version 1, as every state was before the primal form)
// loads into the primal form, which plays on as the dual would.
func TestDualStateLoadsAsPrimal(t *testing.T) {
	xs, ys := loadTestdata(t, "a9a.gz", "1", 4000)
	for _, spec := range primalSpecs {
		k := mustKernel(t, "linear")
		d := newDual(t, spec, k)
		for i := range 2000 {
			d.Round(xs[i], ys[i])
		}
		b, _ := d.MarshalBinary()
		if !strings.HasPrefix(string(b), stateMagic+"\x01") {
			t.Fatalf("%s: the dual state is not format version 1", spec)
		}
		c, err := Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if Form(c) != FormPrimal || c.Size() != d.Size() {
			t.Fatalf("%s: loaded in the %s form with %d vectors, saved with %d", spec, Form(c), c.Size(), d.Size())
		}
		for i := 2000; i < len(xs); i++ {
			a, b := c.Round(xs[i], ys[i]), d.Round(xs[i], ys[i])
			if !closeMargins(a.Margin, b.Margin) || a.Mistake != b.Mistake {
				t.Fatalf("%s round %d: converted %+v, dual %+v", spec, i, a, b)
			}
		}
	}
}

// TestPrimalStateRejectedForDualLearner: a primal state whose spec keeps
// support vectors is corrupt, not a model.
func TestPrimalStateRejectedForDualLearner(t *testing.T) {
	l := mustNew(t, "perceptron", mustKernel(t, "linear"), 1)
	l.Round(sparse.Vector{Idx: []uint32{1}, Val: []float64{1}}, 1)
	b, _ := l.(*model).AppendBinary(nil)
	bad := l.(*model).appendState(nil, "perceptron:max=5")
	if _, err := Unmarshal(bad); err == nil || !strings.Contains(err.Error(), "primal") {
		t.Fatalf("a primal state for a capped perceptron: %v", err)
	}
	if _, err := Unmarshal(b); err != nil {
		t.Fatal(err)
	}
}

// TestEstimateMemoryPrimal: a model in primal form is estimated by the
// width of its records, not by its stream: the estimate matches the heap
// it holds after the whole stream, and the snapshot its encoding.
func TestEstimateMemoryPrimal(t *testing.T) {
	k := mustKernel(t, "linear:bias=1")
	for _, d := range []Data{{NNZ: 20, Dim: 5000}, {NNZ: 40, Dim: 400}} {
		xs, ys := memData(d, 3000, 3)
		for _, spec := range []string{"perceptron", "pa1"} {
			m, err := EstimateMemory(spec, k, d)
			if err != nil {
				t.Fatal(err)
			}
			if !m.Primal || m.Vectors != 1 || m.At(10) != m.At(100000) || !strings.Contains(m.String(), "primal") {
				t.Fatalf("%s: estimate %+v, %q", spec, m, m)
			}
			got, l := heldBytes(t, spec, k, xs, ys)
			enc, _ := l.MarshalBinary()
			r, rs := float64(m.Held)/float64(got), float64(m.Snapshot)/float64(len(enc))
			t.Logf("%-24s dim %5d, %d vectors folded: held %7d estimate %7d (%.2f); snapshot %6d estimate %6d (%.2f)",
				spec, d.Dim, l.Size(), got, m.Held, r, len(enc), m.Snapshot, rs)
			if r < memLow || r > memHigh || rs < 1 || rs > 1.5 {
				t.Errorf("%s, dim %d: held %d estimated %d (%.2f), snapshot %d estimated %d (%.2f)",
					spec, d.Dim, got, m.Held, r, len(enc), m.Snapshot, rs)
			}
		}
	}
	// A capped perceptron keeps its vectors: the dual estimate.
	if m, _ := EstimateMemory("perceptron:max=50", k, Data{NNZ: 20}); m.Primal || m.Vectors != 50 {
		t.Fatalf("perceptron:max=50: %+v", m)
	}
}

// BenchmarkPrimalRound: one round of pa1:c=0.01 with a linear kernel on
// a9a, after 8,000 rounds, in the primal form and in the dual form that
// every learner had before it (whose support then holds thousands of
// vectors): the primal round costs O(nnz(x)), the dual O(support·nnz(x)).
// Predict is the same without the update.
func BenchmarkPrimalRound(b *testing.B) {
	xs, ys := loadTestdata(b, "a9a.gz", "1", 16000)
	k := mustKernel(b, "linear")
	for _, form := range []string{FormPrimal, FormDual} {
		for _, op := range []string{"round", "predict"} {
			b.Run(form+"/"+op, func(b *testing.B) {
				l := mustNew(b, "pa1:c=0.01", k, 1)
				if form == FormDual {
					l = newDual(b, "pa1:c=0.01", k)
				}
				for i := range 8000 {
					l.Round(xs[i], ys[i])
				}
				b.ReportAllocs()
				i := 8000
				for b.Loop() {
					if op == "round" {
						l.Round(xs[i], ys[i])
					} else {
						l.Predict(xs[i])
					}
					if i++; i == len(xs) {
						i = 8000
					}
				}
				b.ReportMetric(float64(l.Size()), "support")
			})
		}
	}
}

// TestPrimalSparseLayout: on a sparse feature space (a dozen features
// spread over 2^18 indices, and some past the scatter array) w stays a
// map, plays as the dual, and restores as a map: a state allocates what
// its entries imply, not what its largest index would.
func TestPrimalSparseLayout(t *testing.T) {
	xs, ys := stream(25, 1500)
	spread := func(v sparse.Vector) sparse.Vector {
		out := sparse.Vector{Val: v.Val}
		for _, i := range v.Idx {
			j := 20000*(i+1) + 7
			if i >= 10 {
				j = scatterLimit + i
			}
			out.Idx = append(out.Idx, j)
		}
		return out
	}
	for i := range xs {
		xs[i] = spread(xs[i])
	}
	k := mustKernel(t, "linear:bias=1")
	for _, spec := range primalSpecs {
		playPrimalAndDual(t, spec, k, xs, ys)
		l := mustNew(t, spec, k, 1)
		for i := range xs {
			l.Round(xs[i], ys[i])
		}
		p := l.(*model).primal
		if len(p.v) != 0 || len(p.far) != 12 {
			t.Fatalf("%s: w dense to %d, %d entries in the map", spec, len(p.v), len(p.far))
		}
		b, _ := l.MarshalBinary()
		c, err := Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if q := c.(*model).primal; len(q.v) != 0 || len(q.far) != 12 {
			t.Fatalf("%s restored: w dense to %d, %d entries in the map", spec, len(q.v), len(q.far))
		}
		for i := range xs {
			if a, b := l.Predict(xs[i]), c.Predict(xs[i]); !sameBits(a, b) {
				t.Fatalf("%s: margin %v, restored %v", spec, a, b)
			}
		}
	}
	// Dense features fill an array: a9a's 123.
	a9aX, a9aY := loadTestdata(t, "a9a.gz", "1", 2000)
	l := mustNew(t, "pa1", mustKernel(t, "linear"), 1)
	for i := range a9aX {
		l.Round(a9aX[i], a9aY[i])
	}
	if p := l.(*model).primal; len(p.v) < 100 || len(p.far) != 0 {
		t.Fatalf("a9a: w dense to %d, %d entries in the map", len(p.v), len(p.far))
	}
}

// TestUnbounded: a capped linear perceptron or PA-I has an unbounded
// primal twin; other learners and kernels have none.
func TestUnbounded(t *testing.T) {
	for _, c := range []struct{ spec, kernel, want string }{
		{"pa1:c=0.01,max=400", "linear", "pa1:c=0.01,max=0"},
		{"perceptron:max=100", "linear:bias=1", "perceptron:max=0"},
		{"perceptron", "poly:degree=1", "perceptron:max=0"},
		{"pa1:max=100", "rbf", ""},
		{"rbp:budget=100", "linear", ""},
		{"spa:max=100", "linear", ""},
		{"nosuch", "linear", ""},
	} {
		got, ok := Unbounded(c.spec, mustKernel(t, c.kernel))
		if got != c.want || ok != (c.want != "") {
			t.Errorf("Unbounded(%s, %s) = %q, %v; want %q", c.spec, c.kernel, got, ok, c.want)
		}
		if ok && Form(mustNew(t, got, mustKernel(t, c.kernel), 1)) != FormPrimal {
			t.Errorf("%s: not primal", got)
		}
	}
}
