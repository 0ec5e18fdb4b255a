package learners

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// stream is a reproducible noisy non-linear problem: sparse points in 12
// dimensions, label = sign of a quadratic form, 10 % of labels flipped, and a
// few exact duplicates so that ties in removal searches occur.
func stream(seed uint64, n int) ([]sparse.Vector, []int) {
	r := rand.New(rand.NewPCG(seed, 7))
	xs := make([]sparse.Vector, n)
	ys := make([]int, n)
	for t := range n {
		if t > 10 && r.IntN(10) == 0 {
			j := r.IntN(t)
			xs[t], ys[t] = xs[j].Clone(), ys[j]
			continue
		}
		dense := make([]float64, 12)
		for i := range dense {
			if r.IntN(2) == 0 {
				dense[i] = r.NormFloat64()
			}
		}
		xs[t] = sparse.FromDense(dense)
		s := dense[0]*dense[1] + dense[2] - 0.5*dense[3]*dense[3] + 0.3
		ys[t] = 1
		if s < 0 {
			ys[t] = -1
		}
		if r.IntN(10) == 0 {
			ys[t] = -ys[t]
		}
	}
	return xs, ys
}

func mustKernel(t testing.TB, s string) Kernel {
	t.Helper()
	k, err := ParseKernel(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustNew(t testing.TB, spec string, k Kernel, seed uint64) Learner {
	t.Helper()
	l, err := New(spec, k, seed)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// allSpecs names one configuration of every registered learner, with a
// small budget so that removals happen often in short streams. The shared
// tests (budget, round trip, corrupt state, fuzzing) run over it; a
// learner's own test file adds its specs in an init function.
var allSpecs = []string{
	"perceptron", "perceptron:max=15", "stoptron:budget=15", "rbp:budget=15", "lbp:budget=15",
	"forgetron:budget=15", "cks:budget=15", "cks:budget=15,beta=0.5", "spa:lambda=0.7",
	"spa:lambda=2,max=15", "pa1:c=0.5", "pa1:c=1,max=15",
}

var allKernels = []string{"rbf:gamma=0.3", "poly:degree=3,coef0=1,scale=0.5", "linear", "poly:degree=2,normalize=true"}

func sameBits(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// solve returns the solution of A z = b by Gaussian elimination with
// partial pivoting; A and b are left unchanged.
func solve(a [][]float64, b []float64) []float64 {
	n := len(b)
	m := make([][]float64, n)
	for i := range a {
		m[i] = append(slices.Clone(a[i]), b[i])
	}
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		m[c], m[p] = m[p], m[c]
		for r := c + 1; r < n; r++ {
			l := m[r][c] / m[c][c]
			for j := c; j <= n; j++ {
				m[r][j] -= l * m[c][j]
			}
		}
	}
	z := make([]float64, n)
	for i := n - 1; i >= 0; i-- {
		s := m[i][n]
		for j := i + 1; j < n; j++ {
			s -= m[i][j] * z[j]
		}
		z[i] = s / m[i][i]
	}
	return z
}

// cloneVectors deep-copies vs: a support set's x are views into its pooled
// storage, which its next change rewrites.
func cloneVectors(vs []sparse.Vector) []sparse.Vector {
	out := make([]sparse.Vector, len(vs))
	for i, v := range vs {
		out[i] = v.Clone()
	}
	return out
}

// playsLikeButNotLike plays the stream through three learners and fails
// unless l's margins equal same's bit for bit in every round and differ
// from other's in some round (so the parameter under test has an effect).
func playsLikeButNotLike(t *testing.T, xs []sparse.Vector, ys []int, l, same, other Learner) {
	t.Helper()
	differ := false
	for i := range xs {
		a, b, c := l.Round(xs[i], ys[i]), same.Round(xs[i], ys[i]), other.Round(xs[i], ys[i])
		if !sameBits(a.Margin, b.Margin) {
			t.Fatalf("round %d: %s margin %v, %s %v", i, l.Spec(), a.Margin, same.Spec(), b.Margin)
		}
		differ = differ || !sameBits(a.Margin, c.Margin)
	}
	if !differ {
		t.Fatalf("%s plays as %s: the parameter has no effect", other.Spec(), l.Spec())
	}
}
