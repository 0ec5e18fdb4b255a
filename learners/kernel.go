package learners

import (
	"fmt"
	"math"
	"strconv"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// KernelKind names a kernel family.
type KernelKind uint8

// The kernel families. Their numeric values are part of no format: specs are
// stored as strings.
const (
	Linear KernelKind = iota + 1 // x·y + bias (Coef0)
	Poly                         // (scale·x·y + coef0)^degree
	RBF                          // exp(−γ‖x−y‖²)
)

// DefaultGamma is the RBF γ of a spec that gives neither gamma nor sigma2
// ("rbf"): the γ of the commands' default kernel, so that naming the kernel
// without its parameter changes nothing. It suits features of about unit
// scale (one-hot categories, scaled LIBSVM sets, events scaled online).
const DefaultGamma = 0.1

// Kernel is a Mercer kernel on sparse vectors. Build one with ParseKernel;
// its zero value is invalid.
//
// Every kernel is computed from the dot product x·y and the squared norms
// ‖x‖², ‖y‖², which a learner caches for its support vectors, so that one
// kernel value costs one sparse dot product.
type Kernel struct {
	Kind   KernelKind
	Gamma  float64 // RBF width: exp(−Gamma·‖x−y‖²); spec gamma=, or sigma2= meaning Gamma = 1/(2·sigma2). Default DefaultGamma (0.1).
	Degree int     // Poly degree, default 2.
	Scale  float64 // Poly scale of x·y, default 1.
	Coef0  float64 // Poly additive constant, default 1; Linear bias= (the intercept's constant), default 0.
	// Normalize divides k(x,y) by √(k(x,x)·k(y,y)) so that k(x,x) = 1, the
	// assumption under which the Forgetron's and Projectron's bounds hold
	// (spec normalize=true). A point with k(x,x) = 0 gets k(x,·) = 0.
	Normalize bool
}

// ParseKernel reads a kernel spec: "linear", "linear:bias=1",
// "poly:degree=4,coef0=1,scale=1", "rbf:gamma=0.01" or "rbf:sigma2=25"; any
// of them may add normalize=true. linear:bias=C is x·y + C, bit for bit
// poly:degree=1,coef0=C: a linear model with an intercept, whose weight
// is C times the sum of the weights.
func ParseKernel(s string) (Kernel, error) {
	sp, err := ParseSpec(s)
	if err != nil {
		return Kernel{}, fmt.Errorf("kernel: %w", err)
	}
	p := newParams(sp)
	k := Kernel{Normalize: p.bool("normalize", false)}
	switch sp.Name {
	case "linear":
		k.Kind = Linear
		k.Coef0 = p.float("bias", 0, 0, math.Inf(1))
	case "poly", "polynomial":
		k.Kind = Poly
		k.Degree = p.int("degree", 2, 1, 64)
		k.Scale = p.float("scale", 1, math.SmallestNonzeroFloat64, math.Inf(1))
		k.Coef0 = p.float("coef0", 1, 0, math.Inf(1))
	case "rbf", "gaussian":
		k.Kind = RBF
		if p.has("gamma") && p.has("sigma2") {
			p.fail("give gamma or sigma2, not both")
		}
		k.Gamma = p.float("gamma", DefaultGamma, math.SmallestNonzeroFloat64, math.Inf(1))
		if p.has("sigma2") {
			k.Gamma = 1 / (2 * p.float("sigma2", 1, math.SmallestNonzeroFloat64, math.Inf(1)))
		}
	default:
		return Kernel{}, fmt.Errorf("kernel %q: unknown (linear, poly or polynomial, rbf or gaussian)", sp.Name)
	}
	if err := p.done(); err != nil {
		return Kernel{}, fmt.Errorf("kernel: %w", err)
	}
	return k, nil
}

// String returns the canonical spec; ParseKernel(k.String()) == k.
func (k Kernel) String() string {
	var s string
	switch k.Kind {
	case Linear:
		s = "linear"
		if k.Coef0 != 0 {
			s += ":bias=" + fmtFloat(k.Coef0)
		}
	case Poly:
		s = "poly:coef0=" + fmtFloat(k.Coef0) + ",degree=" + strconv.Itoa(k.Degree) + ",scale=" + fmtFloat(k.Scale)
	case RBF:
		s = "rbf:gamma=" + fmtFloat(k.Gamma)
	default:
		return "invalid"
	}
	if k.Normalize {
		if k.Kind == Linear && k.Coef0 == 0 {
			s += ":normalize=true"
		} else {
			s += ",normalize=true"
		}
	}
	return s
}

// raw returns the unnormalized kernel value from x·y and the squared norms.
func (k *Kernel) raw(dot, nx, ny float64) float64 {
	switch k.Kind {
	case Linear:
		if k.Coef0 != 0 {
			return dot + k.Coef0 // as Poly computes it for degree 1, scale 1
		}
		return dot
	case Poly:
		return powi(k.Scale*dot+k.Coef0, k.Degree)
	default: // RBF
		// ‖x−y‖² = ‖x‖² + ‖y‖² − 2x·y can round below zero for x ≈ y.
		d := nx + ny - 2*dot
		if d <= 0 {
			if k.Gamma <= math.MaxFloat64 {
				// exp(−γ·0) is 1 exactly, and k(x,x), computed in every
				// round (twice with the model's overflow check), needs
				// no exp. (γ = +Inf, from sigma2 = 5e-324, makes −γ·0
				// NaN.)
				return 1
			}
			d = 0
		}
		return math.Exp(-k.Gamma * d)
	}
}

// self returns the unnormalized k(x,x) from ‖x‖².
func (k *Kernel) self(nx float64) float64 { return k.raw(nx, nx, nx) }

// value returns k(x,y) from x·y, the squared norms and the unnormalized self
// values sx = k(x,x), sy = k(y,y). Every kernel value a learner uses goes
// through here, which makes k(x,y) and k(y,x) bit-identical.
func (k *Kernel) value(dot, nx, ny, sx, sy float64) float64 {
	v := k.raw(dot, nx, ny)
	if k.Normalize {
		d := sx * sy
		if d <= 0 {
			return 0
		}
		v /= math.Sqrt(d)
	}
	return v
}

// diag returns k(x,x) as the learner sees it (1 when normalized, unless x is
// a zero vector under a kernel that gives it no norm).
func (k *Kernel) diag(nx, sx float64) float64 { return k.value(nx, nx, nx, sx, sx) }

// Eval computes k(a, b) directly. Learners use the cached form; Eval is the
// reference that tests and tools compare against.
func (k Kernel) Eval(a, b sparse.Vector) float64 {
	na, nb := a.SqNorm(), b.SqNorm()
	return k.value(a.Dot(b), na, nb, k.self(na), k.self(nb))
}

// powi computes x^n for a small positive integer n by repeated squaring,
// which is faster than math.Pow and exact for the same inputs everywhere.
func powi(x float64, n int) float64 {
	r := 1.0
	for n > 0 {
		if n&1 == 1 {
			r *= x
		}
		x *= x
		n >>= 1
	}
	return r
}
