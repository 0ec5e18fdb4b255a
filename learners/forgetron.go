package learners

import "math"

// forgetron is the self-tuned Forgetron of Dekel, Shalev-Shwartz and Singer
// (NIPS 2005), Fig. 1. On a mistake it adds the example with weight y; when
// that overflows the budget it shrinks every weight by the largest
// φ ∈ (0,1] that keeps the accumulated removal damage Q + Ψ within
// (15/32)·M, then removes the oldest support vector.
type forgetron struct {
	q    float64 // Q: Σ Ψ over past removals
	m    uint64  // M: mistakes so far
	rowR []float64
}

func init() {
	register(registration{
		info: Info{
			Name:    "forgetron",
			Summary: "self-tuned Forgetron: Perceptron update, shrink all weights by φ, remove the oldest; has a mistake bound",
			Source:  "Dekel, Shalev-Shwartz, Singer 2005, Fig. 1",
			Params:  []ParamInfo{{"budget", "100", "size of the active set (the bound needs ≥ 83 and k(x,x) ≤ 1)"}},
		},
		build: func(p *params, m *model, _ uint64) algorithm {
			budgetParam(p, m)
			return &forgetron{}
		},
	})
}

func (a *forgetron) learn(m *model, q query, f float64, y int) bool {
	if float64(y)*f > 0 {
		return false
	}
	a.m++
	full := m.sv.len() >= m.budget
	m.sv.add(q, y, float64(y), m.rounds)
	if !full {
		return true
	}
	// r is the oldest support vector; μ = y_r f'(x_r), where f' already
	// includes the new example and the weights are not yet shrunk.
	a.rowR = m.sv.rowOf(0, a.rowR)
	mu := float64(m.sv.label[0]) * m.sv.margin(a.rowR)
	sigma := math.Abs(m.sv.alpha[0])
	phi := forgetronPhi(sigma, mu, a.q, a.m)
	if phi != 1 {
		m.sv.scale(phi)
	}
	a.q += forgetronPsi(sigma, phi, mu)
	m.sv.remove(0)
	return true
}

// forgetronPsi is Ψ(σ, φ, μ) = (σφ)² + 2σφ(1 − φμ): how much removing a
// support vector of weight σ (before shrinking) and margin μ adds to the
// mistake bound.
func forgetronPsi(sigma, phi, mu float64) float64 {
	sp := sigma * phi
	return sp*sp + 2*sp*(1-phi*mu)
}

// forgetronPhi returns the largest φ ∈ (0,1] with Ψ(σ,φ,μ) + Q ≤ (15/32)M.
//
// Ψ + Q − (15/32)M = aφ² + bφ + c with a = σ² − 2σμ, b = 2σ, c = Q − (15/32)M.
// c < 0 always (Q ≤ (15/32)(M−1) by the previous rounds), so φ = 0 is
// feasible. If φ = 1 is feasible it is the answer. Otherwise the quadratic
// crosses zero exactly once in (0,1), upwards, and for either sign of a
// that crossing is the root (−b + √(b² − 4ac)) / 2a — the larger root when
// a > 0, the smaller when a < 0, where taking the other root (as several
// public implementations do) gives φ > 1. Written as −2c / (b + √(b² − 4ac))
// it is also right for a = 0 and suffers no cancellation.
func forgetronPhi(sigma, mu, q float64, m uint64) float64 {
	a := sigma*sigma - 2*sigma*mu
	b := 2 * sigma
	c := q - 15.0/32.0*float64(m)
	if a+b+c <= 0 {
		return 1
	}
	disc := b*b - 4*a*c
	if disc < 0 { // only by rounding: a real root exists since the sign changes
		disc = 0
	}
	phi := -2 * c / (b + math.Sqrt(disc))
	return math.Min(phi, 1)
}

func (a *forgetron) encode(e *encoder) {
	e.float(a.q)
	e.uvarint(a.m)
}

func (a *forgetron) decode(d *decoder, _ *model) {
	a.q = d.float("Q")
	a.m = d.uvarint("M")
}
