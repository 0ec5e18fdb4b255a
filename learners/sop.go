package learners

import (
	"math"

	"github.com/streamlearner/streamlearner/learners/rng"
)

// The kernel Second-Order Perceptron (Cesa-Bianchi, Conconi, Gentile 2005)
// and its budget variants RBSOP and LBSOP (Cavallanti, Cesa-Bianchi,
// Gentile 2007 §4). With S the past mistakes, K_S their kernel matrix,
// k = K(S, x), κ = k(x, x) and M = (aI + K_S)⁻¹, SOP predicts with
//
//	f(x) = (y_S, 0)ᵀ (aI + K_{S∪{x}})⁻¹ (k, κ) = a · y_Sᵀ M k / s,
//	s = a + κ − kᵀ M k,
//
// the block inverse of aI + K_{S∪{x}} (s is its Schur complement). The
// learner keeps α = M y_S as its weights, so the margin the model computes,
// h(x) = Σ_j α_j k(x_j, x) = y_Sᵀ M k, is f(x)·s/a: the same sign (s ≥ a > 0),
// hence the same mistakes and updates, for the cost of a Perceptron margin.
// f itself would cost O(|S|²) on every round, not only on mistakes.
//
// On a mistake M grows by the block inverse, and a removal of support
// vector r downdates it to M_{−r,−r} − M_{−r,r} M_{r,−r} / M_rr, both in
// O(|S|²). α follows each step in O(|S|). Both pivots are Schur complements
// of aI + K, so s ∈ [a, a + κ] and 1/M_rr ∈ [a, a + k(x_r, x_r)] in exact
// arithmetic, never near zero; a computed pivot within rounding of these
// bounds is clamped into them. One outside them means M has drifted, and
// one far below the diagonal entry it comes from (sopPivotTol) means the
// update would lose digits to cancellation: in both cases M and α are
// recomputed from scratch by a Cholesky factorization, O(|S|³).
//
// M is symmetric and stored as its lower triangle, packed by rows, which
// halves memory and work and makes it symmetric by construction. Its bits
// depend on the history of insertions and removals, so it is part of the
// encoded state.
type sop struct {
	a      float64
	policy evictPolicy // evictNone (with the optional max= cap, oldest out), evictRandom or evictOldest
	rng    *rng.Source // only for evictRandom
	m      []float64   // M_ij, j ≤ i, at i(i+1)/2 + j

	k, u  []float64 // scratch: the kernel row after a removal; Mk, then Mk/√s, or a scaled column of M
	chol  []float64 // scratch of a rebuild: aI + K, its Cholesky factor, the factor's inverse
	kfull []float64 // scratch of a rebuild: one kernel row
}

const (
	// sopDriftTol is how far, relative to the pivot's scale, a pivot may
	// fall outside its exact bounds before M counts as drifted. Rounding in
	// a healthy M stays orders of magnitude below it.
	sopDriftTol = 1e-9
	// sopPivotTol is the smallest pivot, relative to the diagonal entry of
	// aI + K it comes from, that an update may divide by. A smaller one means
	// a point almost in the span of the others while a ≪ k(x, x): the
	// update would lose more than three digits, and errors of the explicit
	// inverse grow like the square of cond(aI + K) (a rank-deficient linear
	// kernel with a = 1e-4 drifts to 1e-6 without this test, 1e-11 with it).
	// Under an RBF kernel with a = 1 a pivot is never below 1/2 of its
	// entry, so this only costs time where the incremental update is
	// inaccurate.
	sopPivotTol = 1e-3
)

func init() {
	aInfo := ParamInfo{"a", "1", "a > 0, the weight of the identity in aI + K (the paper's experiments use 1; a → ∞ gives the Perceptron)"}
	register(registration{
		info: Info{
			Name:    "sop",
			Summary: "kernel Second-Order Perceptron: predicts with (aI + K)⁻¹ over the mistakes and the current instance; no budget",
			Source:  "Cesa-Bianchi, Conconi, Gentile 2005; kernel form as run in Cavallanti, Cesa-Bianchi, Gentile 2007 §4",
			Params: []ParamInfo{
				aInfo,
				{"max", "0", "optional hard cap on the active set (oldest removed); 0 = unbounded, as in the paper"},
			},
		},
		build: func(p *params, m *model, _ uint64) algorithm {
			capParam(p, m)
			return &sop{a: sopA(p), policy: evictNone}
		},
	})
	register(registration{
		info: Info{
			Name:    "rbsop",
			Summary: "Randomized Budget Second-Order Perceptron: on a mistake with a full budget, removes a uniformly random support vector",
			Source:  "Cavallanti, Cesa-Bianchi, Gentile 2007 §4",
			Params: []ParamInfo{
				{"budget", "100", "size of the active set"},
				aInfo,
				{"seed", "run seed", "seed of the learner's own generator"},
			},
		},
		build: func(p *params, m *model, seed uint64) algorithm {
			budgetParam(p, m)
			return &sop{a: sopA(p), policy: evictRandom, rng: newRNG(p.uint64("seed", seed))}
		},
	})
	register(registration{
		info: Info{
			Name:    "lbsop",
			Summary: "Least-recent Budget Second-Order Perceptron: on a mistake with a full budget, removes the oldest support vector",
			Source:  "Cavallanti, Cesa-Bianchi, Gentile 2007 §4",
			Params: []ParamInfo{
				{"budget", "100", "size of the active set"},
				aInfo,
			},
		},
		build: func(p *params, m *model, _ uint64) algorithm {
			budgetParam(p, m)
			return &sop{a: sopA(p), policy: evictOldest}
		},
	})
}

// sopA reads a. Below 1e-9 aI + K is singular to working precision for any
// repeated point; above 1e30 the learner is the Perceptron and the entries
// of M's updates (of order k²/a³) head for underflow.
func sopA(p *params) float64 { return p.float("a", 1, 1e-9, 1e30) }

func (s *sop) learn(m *model, q query, f float64, y int) bool {
	if float64(y)*f > 0 {
		return false
	}
	k := m.row
	ok := true
	if n := m.sv.len(); m.budget > 0 && n >= m.budget {
		// The removal comes first and chooses among the current support
		// vectors, never the new one: Fig. 2's RBP draws Q_k from the
		// support of w_k, §4 describes RBSOP as discarding a support "among
		// the current set of supports in the cache", and a mistake always
		// enters the model. It also keeps M within B rows.
		r := 0
		if s.policy == evictRandom {
			r = s.rng.Intn(n)
		}
		ok = s.remove(m, r)
		s.k = append(append(s.k[:0], k[:r]...), k[r+1:]...)
		k = s.k
	}
	alpha := 0.0
	if ok {
		alpha, ok = s.extend(m, k, m.sv.diag(q), y)
	}
	m.sv.add(q, y, alpha, m.rounds)
	if !ok {
		s.rebuild(m)
	}
	return true
}

// extend grows M to (aI + K_{S∪{x}})⁻¹ for k = K(S, x), κ = k(x, x) and
// updates α to M y; it returns the weight of x. With u = Mk and s the
// Schur complement,
//
//	M' = [ M + u uᵀ/s   −u/s ]      α' = [ α + u (uᵀy_S − y)/s ]
//	     [ −uᵀ/s         1/s ]           [ (y − uᵀy_S)/s       ]
//
// It reports false, leaving M and α unchanged, when s shows drift or is
// too small for the update to keep its digits (sopPivotTol).
func (s *sop) extend(m *model, k []float64, kappa float64, y int) (float64, bool) {
	n := len(k)
	m.sv.work += uint64(n * n)
	s.u = symv(s.m, k, s.u)
	u := s.u
	kMk := 0.0
	for i, ki := range k {
		kMk += ki * u[i]
	}
	r := kappa - kMk // s − a, in [0, κ]
	tol := sopDriftTol * (s.a + kappa)
	if !(r >= -tol && r <= kappa+tol) {
		return 0, false
	}
	schur := s.a + min(max(r, 0), kappa)
	if schur < sopPivotTol*(s.a+kappa) {
		return 0, false
	}
	h := 0.0
	for i, ui := range u {
		h += ui * float64(m.sv.label[i])
	}
	// M + u uᵀ/s as M + w wᵀ with w = u/√s: one product per entry.
	g := 1 / math.Sqrt(schur)
	for i := range u {
		u[i] *= g
	}
	p := 0
	for i, wi := range u {
		addScaled(s.m[p:p+i+1], u, wi)
		p += i + 1
	}
	for _, wj := range u {
		s.m = append(s.m, -wj*g)
	}
	s.m = append(s.m, 1/schur)
	c := (h - float64(y)) * g
	alpha := m.sv.alpha[:n]
	for i, wi := range u {
		alpha[i] += wi * c
	}
	return (float64(y) - h) / schur, true
}

// remove deletes support vector r from the active set, M and α:
//
//	M' = M_{−r,−r} − M_{−r,r} M_{r,−r} / M_rr,   α' = α_{−r} − M_{−r,r} α_r / M_rr.
//
// When M_rr shows drift, or r's Schur complement 1/M_rr is too small for
// the update to keep its digits, it removes r from the active set only and
// reports false: M must then be rebuilt.
func (s *sop) remove(m *model, r int) bool {
	n := m.sv.len()
	m.sv.work += uint64(n * n)
	d := s.m[r*(r+1)/2+r]
	krr := m.sv.kern.diag(m.sv.norm[r], m.sv.self[r])
	lo, hi := 1/(s.a+krr), 1/s.a
	if !(d >= lo-sopDriftTol*hi && d <= hi+sopDriftTol*hi) {
		m.sv.remove(r)
		return false
	}
	d = min(max(d, lo), hi)
	// 1/d is r's Schur complement: the same relative test as in extend.
	if 1/d < sopPivotTol*(s.a+krr) {
		m.sv.remove(r)
		return false
	}
	// z = M_{·,r}/√d, so that the update is one product z_i z_j per entry.
	g := 1 / math.Sqrt(d)
	if cap(s.u) < n {
		s.u = make([]float64, n, n+n/2+1)
	}
	z := s.u[:n]
	p := r * (r + 1) / 2
	for j := range r {
		z[j] = s.m[p+j] * g
	}
	z[r] = 0
	for i := r + 1; i < n; i++ {
		z[i] = s.m[i*(i+1)/2+r] * g
	}
	c := m.sv.alpha[r] * g
	for i, zi := range z {
		m.sv.alpha[i] -= zi * c
	}
	// Compact in place: every entry moves to a lower packed index, so a
	// forward pass never overwrites what it has yet to read.
	w, p := 0, 0
	for i := range n {
		if i != r {
			zi := z[i]
			w += downdateRow(s.m[w:], s.m[p:p+min(i+1, r)], z, zi)
			if i > r {
				w += downdateRow(s.m[w:], s.m[p+r+1:p+i+1], z[r+1:], zi)
			}
		}
		p += i + 1
	}
	s.m = s.m[:w]
	m.sv.remove(r)
	return true
}

// downdateRow sets dst[j] = src[j] − zi·z[j] and returns len(src). dst may
// start at or before src in the same array.
func downdateRow(dst, src, z []float64, zi float64) int {
	subScaled(dst, src, z, zi)
	return len(src)
}

// rebuild recomputes M = (aI + K_S)⁻¹ and α = M y_S from the active set:
// aI + K_S = L Lᵀ, M = L⁻ᵀ L⁻¹. It costs O(|S|³) and runs only when a pivot
// has shown drift.
func (s *sop) rebuild(m *model) {
	n := m.sv.len()
	m.sv.work += uint64(n * n * n / 2) // the factorization, its inverse and M, each about n³/6, beside the rows
	size := n * (n + 1) / 2
	if cap(s.chol) < size {
		s.chol = make([]float64, size)
	}
	l := s.chol[:size]
	p := 0
	for i := range n {
		s.kfull = m.sv.rowOf(i, s.kfull)
		copy(l[p:p+i+1], s.kfull[:i+1])
		l[p+i] += s.a
		p += i + 1
	}
	choleskyPacked(l, n, s.a)
	invLowerPacked(l, n)
	// M = Xᵀ X for X = L⁻¹: row k of X adds its outer product to the
	// leading (k+1)×(k+1) block.
	if cap(s.m) < size {
		s.m = make([]float64, size, size+size/2)
	}
	s.m = s.m[:size]
	clear(s.m)
	pk := 0
	for k := range n {
		xk := l[pk : pk+k+1]
		q := 0
		for i, xi := range xk {
			row := s.m[q : q+i+1]
			for j := range row {
				row[j] += xi * xk[j]
			}
			q += i + 1
		}
		pk += k + 1
	}
	for i := range s.kfull[:n] {
		s.kfull[i] = float64(m.sv.label[i])
	}
	s.u = symv(s.m, s.kfull[:n], s.u)
	copy(m.sv.alpha, s.u[:n])
}

// choleskyPacked overwrites the packed lower triangle of aI + K (n×n) with
// its Cholesky factor. Every pivot is a Schur complement of aI + K and so at
// least a in exact arithmetic; one that rounds below a is raised to a.
func choleskyPacked(l []float64, n int, a float64) {
	pi := 0
	for i := range n {
		ri := l[pi : pi+i+1]
		pj := 0
		for j := 0; j <= i; j++ {
			rj := l[pj : pj+j+1]
			sum := ri[j]
			for k, v := range rj[:j] {
				sum -= ri[k] * v
			}
			if j == i {
				ri[i] = math.Sqrt(max(sum, a))
			} else {
				ri[j] = sum / rj[j]
			}
			pj += j + 1
		}
		pi += i + 1
	}
}

// invLowerPacked overwrites a packed lower-triangular L (n×n) with L⁻¹, row
// by row: X_ij = −(Σ_{k=j}^{i−1} L_ik X_kj) / L_ii, in increasing j, which
// reads only entries of row i that are still L's.
func invLowerPacked(l []float64, n int) {
	pi := 0
	for i := range n {
		ri := l[pi : pi+i+1]
		lii := ri[i]
		for j := range i {
			sum := 0.0
			pk := j * (j + 1) / 2
			for k := j; k < i; k++ {
				sum += ri[k] * l[pk+j]
				pk += k + 1
			}
			ri[j] = -sum / lii
		}
		ri[i] = 1 / lii
		pi += i + 1
	}
}

// symv returns out = M x for M symmetric, stored as its packed lower
// triangle; one pass over M. Row i's sum of its entries before the
// diagonal is one running sum in increasing j, and out[j] takes the terms
// of the rows after it in increasing row order, as symvRow row by row
// does (TestSymvIsRowByRow). Here rows go two at a time, each with its own running sum, so that
// the two additions overlap (each sum was a chain of dependent additions)
// and out[j] is loaded and stored once for both: the same sums in the
// same order, so the same bits.
func symv(mp, x, out []float64) []float64 {
	n := len(x)
	if cap(out) < n {
		out = make([]float64, n, n+n/2+1)
	}
	out = out[:n]
	clear(out)
	i, p := 0, 0
	for ; i+1 < n; i += 2 {
		r0 := mp[p : p+i+1]
		r1 := mp[p+i+1 : p+2*i+3]
		x0, x1 := x[i], x[i+1]
		lead, o := x[:i], out[:i]
		r0, r1 = r0[:i+1], r1[:i+2]
		s0, s1 := 0.0, 0.0
		for j, xj := range lead {
			v0, v1 := r0[j], r1[j]
			s0 += v0 * xj
			s1 += v1 * xj
			o[j] = o[j] + v0*x0 + v1*x1
		}
		// Row i's diagonal, then row i+1's entry in column i.
		out[i] += s0 + r0[i]*x0
		s1 += r1[i] * x0
		out[i] += r1[i] * x1
		out[i+1] += s1 + r1[i+1]*x1
		p += 2*i + 3
	}
	if i < n {
		symvRow(mp[p:p+i+1], x, out, i)
	}
	return out
}

// symvRow adds row i of M (its packed entries row) to out = M x: its sum
// before the diagonal to out[i], and its entries times x_i to the out[j]
// before.
func symvRow(row, x, out []float64, i int) {
	xi := x[i]
	sum := 0.0
	lead, o := x[:i], out[:i]
	for j, v := range row[:i] {
		sum += v * lead[j]
		o[j] += v * xi
	}
	out[i] += sum + row[i]*xi
}

func (s *sop) encode(e *encoder) {
	if s.policy == evictRandom {
		b, _ := s.rng.MarshalBinary() // PCG's cannot fail
		e.bytes(b)
	}
	for _, v := range s.m {
		e.float(v)
	}
}

func (s *sop) decode(d *decoder, m *model) {
	if s.policy == evictRandom {
		b := d.bytes("random generator")
		if d.err == nil {
			if err := s.rng.UnmarshalBinary(b); err != nil {
				d.fail(err.Error())
			}
		}
	}
	n := uint64(m.sv.len())
	size := n * (n + 1) / 2
	if d.err != nil || uint64(len(d.b))/8 < size {
		d.fail("inverse matrix")
		return
	}
	s.m = make([]float64, size)
	for i := range s.m {
		v := d.float("inverse matrix")
		if math.IsNaN(v) || math.IsInf(v, 0) {
			d.fail("inverse matrix entry not finite")
			return
		}
		s.m[i] = v
	}
}
