package learners

import (
	"math"
	"testing"

	"github.com/streamlearner/streamlearner/learners/rng"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// ref is a deliberately naive implementation of each algorithm, written
// from the papers' pseudo-code with no caching: kernel values straight from
// Kernel.Eval, margins and removal criteria recomputed from scratch. The
// optimized learners must agree with it.
type ref struct {
	name   string
	k      Kernel
	budget int
	beta   float64     // cks
	lambda float64     // spa
	c      float64     // pa1
	rng    *rng.Source // rbp
	x      []sparse.Vector
	y      []int
	alpha  []float64 // perceptron-family weights
	sigma  []float64 // forgetron: σ_i, weight σ_i·y_i
	q      float64   // forgetron Q
	m      int       // mistakes (forgetron M, spa k)
}

func (r *ref) f(x sparse.Vector) float64 {
	s := 0.0
	for i := range r.x {
		w := r.alpha[i]
		if r.name == "forgetron" {
			w = r.sigma[i] * float64(r.y[i])
		}
		s += w * r.k.Eval(x, r.x[i])
	}
	return s
}

func (r *ref) drop(i int) {
	r.x = append(r.x[:i:i], r.x[i+1:]...)
	r.y = append(r.y[:i:i], r.y[i+1:]...)
	r.alpha = append(r.alpha[:i:i], r.alpha[i+1:]...)
	if r.sigma != nil {
		r.sigma = append(r.sigma[:i:i], r.sigma[i+1:]...)
	}
}

func (r *ref) push(x sparse.Vector, y int, alpha float64) {
	r.x = append(r.x, x)
	r.y = append(r.y, y)
	r.alpha = append(r.alpha, alpha)
	if r.name == "forgetron" {
		r.sigma = append(r.sigma, 1)
	}
}

func (r *ref) round(x sparse.Vector, y int) float64 {
	f := r.f(x)
	yf := float64(y) * f
	switch r.name {
	case "perceptron", "stoptron", "lbp", "rbp":
		if yf > 0 {
			break
		}
		if r.budget > 0 && len(r.x) == r.budget {
			switch r.name {
			case "stoptron":
				return f
			case "rbp":
				r.drop(r.rng.Intn(len(r.x)))
			default:
				r.drop(0)
			}
		}
		r.push(x, y, float64(y))
	case "spa":
		if yf > 0 {
			break
		}
		if r.m > 0 {
			lk := r.lambda / (r.lambda + float64(r.m))
			for i := range r.alpha {
				r.alpha[i] *= 1 - lk
			}
		}
		if r.budget > 0 && len(r.x) == r.budget {
			r.drop(0)
		}
		r.push(x, y, float64(y))
		r.m++
	case "pa1":
		loss := 1 - yf
		if loss <= 0 {
			break
		}
		kxx := r.k.Eval(x, x)
		if r.budget > 0 && len(r.x) == r.budget {
			r.drop(0)
		}
		r.push(x, y, float64(y)*math.Min(r.c, loss/kxx))
	case "cks":
		if yf > r.beta {
			break
		}
		r.push(x, y, float64(y))
		if len(r.x) > r.budget {
			best, bestV := -1, math.Inf(-1)
			for j := range r.x {
				v := float64(r.y[j]) * (r.f(r.x[j]) - r.alpha[j]*r.k.Eval(r.x[j], r.x[j]))
				if v > bestV {
					best, bestV = j, v
				}
			}
			r.drop(best)
		}
	case "forgetron":
		if yf > 0 {
			break
		}
		r.m++
		r.push(x, y, 0)
		if len(r.x) <= r.budget {
			break
		}
		mu := float64(r.y[0]) * r.f(r.x[0])
		s := r.sigma[0]
		psi := func(phi float64) float64 { return (s*phi)*(s*phi) + 2*s*phi*(1-phi*mu) }
		bound := 15.0 / 32.0 * float64(r.m)
		phi := 1.0
		if psi(1)+r.q > bound {
			lo, hi := 0.0, 1.0
			for range 200 {
				mid := (lo + hi) / 2
				if psi(mid)+r.q <= bound {
					lo = mid
				} else {
					hi = mid
				}
			}
			phi = lo
		}
		r.q += psi(phi)
		for i := range r.sigma {
			r.sigma[i] *= phi
		}
		r.drop(0)
	}
	return f
}

var refKnows = map[string]bool{"perceptron": true, "stoptron": true, "lbp": true, "rbp": true, "spa": true, "pa1": true, "cks": true, "forgetron": true}

func newRef(t *testing.T, spec string, k Kernel, seed uint64) *ref {
	sp, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	p := newParams(sp)
	r := &ref{name: sp.Name, k: k}
	switch sp.Name {
	case "perceptron", "spa", "pa1":
		r.budget = p.int("max", 0, 0, 1<<20)
	default:
		r.budget = p.int("budget", 100, 1, 1<<20)
	}
	r.beta = p.float("beta", 0, 0, 1e300)
	r.lambda = p.float("lambda", 1, 0, 1e300)
	r.c = p.float("c", 1, 0, 1e300)
	r.rng = newRNG(p.uint64("seed", seed))
	return r
}

// TestLearnersMatchNaiveReference runs every learner and its naive twin on
// the same stream. All but the Forgetron must agree bit for bit (same
// kernel values, same summation order); the Forgetron's reference finds φ
// by bisection instead of the closed form, so it agrees to rounding, and
// a learner in primal form sums w·x, which agrees to rounding too.
func TestLearnersMatchNaiveReference(t *testing.T) {
	xs, ys := stream(11, 700)
	for _, ks := range allKernels {
		k := mustKernel(t, ks)
		for _, spec := range allSpecs {
			if sp, _ := ParseSpec(spec); !refKnows[sp.Name] {
				continue // learners with their own reference tests
			}
			l := mustNew(t, spec, k, 5)
			r := newRef(t, spec, k, 5)
			for i := range xs {
				got := l.Round(xs[i], ys[i]).Margin
				want := r.round(xs[i], ys[i])
				if Form(l) == FormPrimal {
					// w·x sums in another order than Σ α_j x_j·x.
					if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
						t.Fatalf("%s/%s round %d: primal margin %v, reference %v", spec, ks, i, got, want)
					}
				} else if r.name == "forgetron" {
					if math.Abs(got-want) > 1e-7*math.Max(1, math.Abs(want)) {
						t.Fatalf("%s/%s round %d: margin %v, reference %v", spec, ks, i, got, want)
					}
				} else if !sameBits(got, want) {
					t.Fatalf("%s/%s round %d: margin %v, reference %v", spec, ks, i, got, want)
				}
				if l.Size() != len(r.x) {
					t.Fatalf("%s/%s round %d: size %d, reference %d", spec, ks, i, l.Size(), len(r.x))
				}
			}
			if r.name == "forgetron" {
				a := l.(*model).alg.(*forgetron)
				if int(a.m) != r.m || math.Abs(a.q-r.q) > 1e-7*math.Max(1, math.Abs(r.q)) {
					t.Fatalf("%s/%s: Q=%v M=%d, reference Q=%v M=%d", spec, ks, a.q, a.m, r.q, r.m)
				}
			}
		}
	}
}
