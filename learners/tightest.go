package learners

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mathext"
)

// tightest is the Tightest Perceptron of Wang & Vucetic (Fig. 1, §III.A):
// a Tighter Perceptron that validates on its support set, using estimated
// class probabilities instead of the support vectors' own (often noisy)
// labels.
//
// Each support vector x_i carries soft counts (c_i⁺, c_i⁻) of the labels
// seen near it; a new one starts with (1, 0) if y = +1, else (0, 1). A
// round with y f(x) > 0 adds nothing to the model but credits the counts
// of the nearest support vector (UpdateSummary). On a mistake the example
// is added with weight y; when that overflows the budget the learner
// removes
//
//	r = argmin_j loss(f − α_j k(x_j, ·)),
//	loss(g) = (1/|S|) Σ_{i∈S} [w_i⁺ max(0, 1 − g(x_i)) + (1 − w_i⁺) max(0, 1 + g(x_i))],
//
// the sum over the whole current S, the candidate and the new vector
// included, as Eq. (2) is written, with w_i⁺ = P(p > ½) for
// p ~ Beta(c_i⁺ + 1, c_i⁻ + 1) (the paper's prior a⁺ = a⁻ = 1), and then
// hands r's counts to its nearest remaining support vector.
//
// UpdateSummary(S, x, c⁺, c⁻): the support vector x_k nearest to x in
// Euclidean distance in input space (ties to the oldest) gets
// c_k⁺ += c⁺ k(x, x_k), c_k⁻ += c⁻ k(x, x_k).
//
// Readings of the paper:
//   - Fig. 1's indentation, as printed, could attach the last else to
//     "if |S| > B", which would credit a just-added vector with its own
//     label; the text says that a well-classified example, before it is
//     discarded, updates the counts of its nearest support vector, so the
//     else belongs to "if y f(x) ≤ 0".
//   - The paper uses the RBF kernel, whose values lie in (0, 1]. With a
//     kernel that can be negative the increment c·k is clamped at 0, so
//     that counts stay valid Beta parameters. Counts are not capped one by
//     one: a cap on each would distort w⁺, which depends on both (capped
//     at 10¹⁵ each, counts of 8.8·10¹⁶ and 1.4·10¹⁷ would give ½ instead of
//     ≈ 0). Only when an increment would take a count past
//     tightestCountMax are both scaled down together (rescaleCounts),
//     which keeps their ratio; at that size w⁺ is 0, ½ or 1 to double
//     precision whatever the scale.
//
// A correct round changes the counts, not f: Round reports it as a round
// without update, like every other learner's correct round.
//
// Cost per round: a correct round adds one pass of dot products over the
// support set (for the distances; Round's kernel row has the kernel
// values) and O(B) for the nearest neighbour. A removal is O(B²): f(x_i)
// for every support vector is recomputed from the cached kernel matrix,
// summed oldest first as a margin (so the choice equals a brute-force
// search bit for bit), each of the B+1 candidates' loss is then O(B), and
// w_i⁺ is recomputed only for support vectors whose counts changed.
type tightest struct {
	k          gram      // kernel matrix of the active set
	cpos, cneg []float64 // c⁺, c⁻ per support vector
	w          []float64 // w⁺ per support vector; NaN until needed after its counts change
	f          []float64 // scratch: f(x_i)
	loss       []float64 // scratch: loss per candidate
	dots       []float64 // scratch: x·x_j
}

// tightestCountMax bounds the counts, far beyond what a stream reaches
// with kernel values ≤ 1 (one per round) and small enough that
// tightestWeight's arithmetic (n = a + b, μν/(n+1)) neither overflows nor
// loses the standard deviation to underflow.
const tightestCountMax = 1e150

func init() {
	register(registration{
		info: Info{
			Name:    "tightest",
			Summary: "Tightest Perceptron: support vectors carry neighbourhood label counts; on overflow remove the vector whose removal leaves the smallest expected hinge loss on the support set",
			Source:  "Wang & Vucetic, Tighter Perceptron with Improved Dual Use of Cached Data, Fig. 1 and §III.A",
			Params:  []ParamInfo{{"budget", "100", "size of the active set"}},
		},
		build: func(p *params, m *model, _ uint64) algorithm {
			budgetParam(p, m)
			return &tightest{k: newGram(m.budget + 1)}
		},
	})
}

func (a *tightest) learn(m *model, q query, f float64, y int) bool {
	cp, cn := 1.0, 0.0
	if y < 0 {
		cp, cn = 0, 1
	}
	if float64(y)*f > 0 {
		// f ≠ 0, so the active set is not empty.
		a.dots = m.sv.dotRow(q, a.dots)
		k := nearest(a.dots, m.sv.norm, q.norm, -1)
		a.credit(k, cp, cn, m.row[k])
		return false
	}
	a.k.appendSym(m.row, m.sv.diag(q))
	m.sv.add(q, y, float64(y), m.rounds)
	a.cpos = append(a.cpos, cp)
	a.cneg = append(a.cneg, cn)
	a.w = append(a.w, math.NaN())
	if m.sv.len() <= m.budget {
		return true
	}
	r := argmin(a.losses(m))
	a.dots = m.sv.dotRow(query{x: m.sv.vec(r), norm: m.sv.norm[r], self: m.sv.self[r]}, a.dots)
	k := nearest(a.dots, m.sv.norm, m.sv.norm[r], r)
	a.credit(k, a.cpos[r], a.cneg[r], a.k.at(r, k))
	a.k.remove(r)
	m.sv.remove(r)
	a.cpos = del(a.cpos, r)
	a.cneg = del(a.cneg, r)
	a.w = del(a.w, r)
	return true
}

// credit is UpdateSummary's increment of support vector k's counts by
// (cp, cn)·kv.
func (a *tightest) credit(k int, cp, cn, kv float64) {
	a.cpos[k], a.cneg[k] = addCounts(a.cpos[k], a.cneg[k], cp, cn, kv)
	a.w[k] = math.NaN()
}

// addCounts returns (p + cp·kv, n + cn·kv) for counts p, n, cp, cn in
// [0, tightestCountMax], with kv clamped at 0 (a negative kernel value, or
// NaN from an overflowing kernel, credits nothing). When a sum would pass
// tightestCountMax, both are computed in log space and scaled together so
// that the larger is tightestCountMax.
func addCounts(p, n, cp, cn, kv float64) (float64, float64) {
	if !(kv > 0) {
		return p, n
	}
	p2, n2 := p+cp*kv, n+cn*kv
	if p2 <= tightestCountMax && n2 <= tightestCountMax {
		return p2, n2
	}
	lk := math.Log(kv) // kv may be +Inf: then so is the larger sum's log
	lp, ln := math.Log(p), math.Log(n)
	if cp > 0 { // 0·∞ credits nothing
		lp = logAdd(lp, math.Log(cp)+lk)
	}
	if cn > 0 {
		ln = logAdd(ln, math.Log(cn)+lk)
	}
	top := max(lp, ln)
	if math.IsInf(top, 1) {
		// An infinite kernel value: only the side it credits keeps a count
		// (the ratio of an infinite to a finite increment).
		p2, n2 = 0, 0
		if cp > 0 {
			p2 = tightestCountMax
		}
		if cn > 0 {
			n2 = tightestCountMax
		}
		return p2, n2
	}
	return tightestCountMax * math.Exp(lp-top), tightestCountMax * math.Exp(ln-top)
}

// logAdd returns ln(eᵃ + eᵇ) without overflow; ln 0 = −∞ is allowed.
func logAdd(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// losses fills a.loss[j] = loss(f − α_j k(x_j, ·)) for every support
// vector j and returns it.
func (a *tightest) losses(m *model) []float64 {
	n := m.sv.len()
	alpha := m.sv.alpha
	a.f = resize(a.f, n)
	for i := range n {
		row := a.k.row(i)
		fi := 0.0
		for j, al := range alpha {
			fi += al * row[j]
		}
		a.f[i] = fi
		if math.IsNaN(a.w[i]) {
			a.w[i] = tightestWeight(a.cpos[i], a.cneg[i])
		}
	}
	a.loss = resize(a.loss, n)
	w := a.w[:n]
	for j := range n {
		row := a.k.row(j)
		aj := alpha[j]
		s := 0.0
		for i, fi := range a.f {
			g := fi - aj*row[i]
			s += w[i]*max(0, 1-g) + (1-w[i])*max(0, 1+g)
		}
		a.loss[j] = s / float64(n)
	}
	return a.loss
}

// argmin returns the index of the smallest value, the first among equals
// (the oldest support vector).
func argmin(v []float64) int {
	best := 0
	for j := 1; j < len(v); j++ {
		if v[j] < v[best] {
			best = j
		}
	}
	return best
}

// nearest returns the support vector nearest to a point x in input space,
// skipping index skip (−1 for none); ties go to the oldest. dots[j] is
// x·x_j, norms[j] is ‖x_j‖², qnorm is ‖x‖². The squared distance
// ‖x‖² + ‖x_j‖² − 2x·x_j is clamped at 0 as the RBF kernel clamps it, so a
// duplicate is at distance exactly 0.
func nearest(dots, norms []float64, qnorm float64, skip int) int {
	best, bestD := -1, 0.0
	for j, dot := range dots {
		if j == skip {
			continue
		}
		d := max(qnorm+norms[j]-2*dot, 0)
		if best < 0 || d < bestD {
			best, bestD = j, d
		}
	}
	return best
}

func (a *tightest) encode(e *encoder) {
	for j := range a.cpos {
		e.float(a.cpos[j])
		e.float(a.cneg[j])
	}
}

// decode reads the counts and rebuilds the kernel matrix with the same
// computation that filled it; w⁺ is recomputed from the counts when needed.
func (a *tightest) decode(d *decoder, m *model) {
	for range m.sv.len() {
		cp, cn := d.float("count c+"), d.float("count c-")
		if d.err != nil {
			return
		}
		// !(c ≥ 0) also rejects NaN.
		if !(cp >= 0 && cp <= tightestCountMax && cn >= 0 && cn <= tightestCountMax) {
			d.fail(fmt.Sprintf("counts (%v, %v) outside [0, %g]", cp, cn, tightestCountMax))
			return
		}
		a.cpos = append(a.cpos, cp)
		a.cneg = append(a.cneg, cn)
		a.w = append(a.w, math.NaN())
	}
	a.k.rebuild(&m.sv)
}

// tightestWeight returns w⁺ = P(p > ½) for p ~ Beta(cpos + 1, cneg + 1).
//
// It is 1 − I_½(a, b) = I_½(b, a) (I the regularized incomplete beta
// function), computed in the second form so that a small w⁺ is not the
// difference of two numbers near 1. Gonum's RegIncBeta loses accuracy when
// a + b is large and ½ is near the mean (its series stop after a fixed
// number of terms: I_½(a, a), exactly ½, comes out 0.509 at a = 10⁷ and
// above 1 at a = 10⁹); there the weight comes from betaUpperHalf.
func tightestWeight(cpos, cneg float64) float64 {
	a, b := cpos+1, cneg+1
	var w float64
	if a+b <= betaLargeSum {
		w = mathext.RegIncBeta(b, a, 0.5)
	} else {
		w = betaUpperHalf(a, b)
	}
	return min(max(w, 0), 1)
}

const (
	// betaLargeSum is the a + b above which betaUpperHalf replaces
	// RegIncBeta. Below it the two agree to 1e-12; above it RegIncBeta's
	// error near the mean grows (1e-11 at 3·10⁴, 4e-7 at 2·10⁶).
	betaLargeSum = 2000
	// betaTail is the half-width, in standard deviations, of the window
	// betaUpperHalf integrates over; with a + b > betaLargeSum and ½ inside
	// the window the distribution is close to normal and the mass outside
	// is about 1e-23.
	betaTail = 10
)

// betaUpperHalf returns P(p > ½) for p ~ Beta(a, b) with a + b large, by
// Gauss–Legendre quadrature of the density in standard units
// z = (p − μ)/σ over μ ± betaTail·σ, as the ratio of the mass above ½ to
// the whole, so that the normalizing constant (whose log-gamma terms
// cancel badly at large a, b) is never needed.
func betaUpperHalf(a, b float64) float64 {
	n := a + b
	mu, nu := a/n, b/n
	sd := math.Sqrt(mu * nu / (n + 1))
	z0 := (0.5 - mu) / sd
	if z0 >= betaTail {
		return 0
	}
	if z0 <= -betaTail {
		return 1
	}
	d := betaLogDensity{
		// log(density(μ + σz) / density(μ))
		//   = (a−1) ln(1 + σz/μ) + (b−1) ln(1 − σz/ν)
		//   = lin·z + (a−1) L(σz/μ) + (b−1) L(−σz/ν),  L(u) = ln(1+u) − u,
		// with lin = σ((a−1)/μ − (b−1)/ν) = σn(1/b − 1/a): the large
		// first-order terms cancel analytically, not in floating point.
		lin: sd * n * (1/b - 1/a),
		a1:  a - 1, b1: b - 1,
		u1: sd / mu, u2: sd / nu,
	}
	below, above := d.integrate(-betaTail, z0), d.integrate(z0, betaTail)
	return above / (below + above)
}

type betaLogDensity struct{ lin, a1, b1, u1, u2 float64 }

func (d betaLogDensity) at(z float64) float64 {
	return d.lin*z + d.a1*log1pMinusX(d.u1*z) + d.b1*log1pMinusX(-d.u2*z)
}

// integrate returns ∫ exp(at(z)) dz over [lo, hi] by 8-point Gauss–Legendre
// on panels at most two standard deviations wide (three would cost 1e-10).
func (d betaLogDensity) integrate(lo, hi float64) float64 {
	panels := max(1, int(math.Ceil((hi-lo)/2)))
	h := (hi - lo) / float64(panels)
	s := 0.0
	for p := range panels {
		c := lo + (float64(p)+0.5)*h
		for i, x := range gl8Nodes {
			s += gl8Weights[i] * (math.Exp(d.at(c-h/2*x)) + math.Exp(d.at(c+h/2*x)))
		}
	}
	return s * h / 2
}

// The positive nodes of the 8-point Gauss–Legendre rule on [−1, 1] and
// their weights (the rule is symmetric).
var (
	gl8Nodes   = [4]float64{0.1834346424956498, 0.5255324099163290, 0.7966664774136267, 0.9602898564975363}
	gl8Weights = [4]float64{0.3626837833783620, 0.3137066458778873, 0.2223810344533745, 0.1012285362903763}
)

// log1pMinusX returns ln(1 + u) − u without the cancellation of computing
// it that way for small u.
func log1pMinusX(u float64) float64 {
	if math.Abs(u) < 1e-3 {
		// −u²/2 + u³/3 − … ; the first omitted term is below 1e-18·u².
		return u * u * (-1.0/2 + u*(1.0/3+u*(-1.0/4+u*(1.0/5+u*(-1.0/6+u/7)))))
	}
	return math.Log1p(u) - u
}
