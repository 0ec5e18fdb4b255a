package learners

// cks is the budget Perceptron of Crammer, Kandola and Singer (NIPS 2003) as
// described in Wang & Vucetic §II.A.1: update (weight y) when y f(x) ≤ β;
// when the active set exceeds the budget, remove
//
//	argmax_j y_j (f(x_j) − α_j k(x_j, x_j)),
//
// the support vector that would be classified best without itself, the new
// one included. f(x_j) is computed exactly at each removal from a cached
// kernel matrix of the active set, in the same summation order as a margin,
// so the choice equals a brute-force search; ties go to the oldest.
type cks struct {
	beta float64
	k    gram // kernel matrix of the active set
}

func init() {
	register(registration{
		info: Info{
			Name:    "cks",
			Summary: "budget Perceptron of Crammer, Kandola, Singer: update when y f(x) ≤ β; on overflow remove the vector with the largest margin without itself",
			Source:  "Crammer, Kandola, Singer 2003, as described in Wang & Vucetic §II.A.1",
			Params: []ParamInfo{
				{"budget", "100", "size of the active set"},
				{"beta", "0", "margin threshold β ≥ 0 below which the learner updates"},
			},
		},
		build: func(p *params, m *model, _ uint64) algorithm {
			budgetParam(p, m)
			// The active set briefly holds budget+1 vectors.
			return &cks{beta: p.float("beta", 0, 0, 1e300), k: newGram(m.budget + 1)}
		},
	})
}

func (a *cks) learn(m *model, q query, f float64, y int) bool {
	if float64(y)*f > a.beta {
		return false
	}
	a.k.appendSym(m.row, m.sv.diag(q))
	m.sv.add(q, y, float64(y), m.rounds)
	n := m.sv.len()
	if n <= m.budget {
		return true
	}
	best, bestVal := 0, 0.0
	for j := range n {
		fj := 0.0
		kj := a.k.row(j)
		for i, al := range m.sv.alpha {
			fj += al * kj[i]
		}
		v := float64(m.sv.label[j]) * (fj - m.sv.alpha[j]*kj[j])
		if j == 0 || v > bestVal {
			best, bestVal = j, v
		}
	}
	a.k.remove(best)
	m.sv.remove(best)
	return true
}

func (a *cks) encode(*encoder) {}

// decode rebuilds the kernel matrix with the same computation that filled it.
func (a *cks) decode(_ *decoder, m *model) {
	a.k.rebuild(&m.sv)
}
