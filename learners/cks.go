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
	beta   float64
	limit  int       // budget + 1: the active set briefly holds one extra vector
	stride int       // row length of gram; grows up to limit with the active set
	gram   []float64 // gram[i*stride+j] = k(x_i, x_j)
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
			return &cks{beta: p.float("beta", 0, 0, 1e300), limit: m.budget + 1}
		},
	})
}

func (a *cks) at(i, j int) float64 { return a.gram[i*a.stride+j] }

// appendGram adds the kernel row and diagonal of the vector about to become
// support vector n.
func (a *cks) appendGram(n int, row []float64, diag float64) {
	if n >= a.stride {
		// Grow with the active set rather than allocating (B+1)² up front:
		// a large budget that is never reached costs nothing.
		s := min(max(2*a.stride, 16), a.limit)
		g := make([]float64, s*s)
		for i := range n {
			copy(g[i*s:i*s+n], a.gram[i*a.stride:i*a.stride+n])
		}
		a.gram, a.stride = g, s
	}
	for j := range n {
		a.gram[n*a.stride+j] = row[j]
		a.gram[j*a.stride+n] = row[j]
	}
	a.gram[n*a.stride+n] = diag
}

// removeGram deletes row and column r from the n×n matrix.
func (a *cks) removeGram(r, n int) {
	s := a.stride
	for i := range n {
		row := a.gram[i*s : i*s+n]
		copy(row[r:], row[r+1:])
	}
	for i := r; i < n-1; i++ {
		copy(a.gram[i*s:i*s+n-1], a.gram[(i+1)*s:(i+1)*s+n-1])
	}
}

func (a *cks) learn(m *model, q query, f float64, y int) bool {
	if float64(y)*f > a.beta {
		return false
	}
	n := m.sv.len()
	a.appendGram(n, m.row, m.sv.diag(q))
	m.sv.add(q, y, float64(y), m.rounds)
	n++
	if n <= m.budget {
		return true
	}
	best, bestVal := 0, 0.0
	for j := range n {
		fj := 0.0
		for i, al := range m.sv.alpha {
			fj += al * a.at(j, i)
		}
		v := float64(m.sv.label[j]) * (fj - m.sv.alpha[j]*a.at(j, j))
		if j == 0 || v > bestVal {
			best, bestVal = j, v
		}
	}
	a.removeGram(best, n)
	m.sv.remove(best)
	return true
}

func (a *cks) encode(*encoder) {}

// decode rebuilds the kernel matrix with the same computation that filled it.
func (a *cks) decode(_ *decoder, m *model) {
	var row []float64
	for i := range m.sv.len() {
		row = m.sv.rowOf(i, row)
		a.appendGram(i, row, row[i])
	}
}
