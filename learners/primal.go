package learners

import (
	"fmt"
	"math"
	"slices"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// The primal form. Under an affine kernel k(x,y) = S·x·y + C (linear,
// linear:bias=C, or poly of degree 1 with scale S and coef0 C, not
// normalized) the expansion Σ_j α_j k(x_j, x) is S·(w·x) + C·β with
// w = Σ_j α_j x_j and β = Σ_j α_j. A learner that only adds vectors (the
// Perceptron and PA-I, without max=) then needs w and β, not its support
// vectors: a round costs O(nnz(x)) instead of O(support·nnz(x)), and the
// model and its snapshot follow the feature space, not the stream.
//
// The learners that remove chosen vectors (the budget Perceptrons, the
// Forgetron, CKS, a max= cap), that rescale them (the Shifting
// Perceptron, whose rescaled w rounds otherwise than its rescaled
// weights and so breaks a tie the dual breaks the other way) or that
// weigh them by a kernel matrix (the Projectrons, SOP and their budget
// forms) stay in the dual form: see docs/architecture.md, "Primal and
// dual form".

// primalForm is w and β. w is dense up to an index (v) and a map beyond
// it (far), so that it is an array on a feature space it fills (a9a,
// USPS) and a map on a sparse one (2^18 hashed features of which a stream
// uses a few hundred): v covers an index when w has at least one in
// primalDensity of the indices up to it non-zero, or the index is below
// primalDenseMin. Where an entry lives changes no bit of a margin.
type primalForm struct {
	v     []float64          // w_i for i < len(v)
	far   map[uint32]float64 // w_i for i ≥ len(v)
	used  int                // indices of w made non-zero, for the layout
	beta  float64            // Σ_j α_j, the weight of the kernel's constant C
	n     int                // vectors folded in: the dual form's support size
	scale float64            // S
	coef0 float64            // C
}

// The layout of w (see primalForm). A decoded state allocates no more than
// primalDensity floats per encoded entry, past primalDenseMin.
const (
	primalDensity  = 8
	primalDenseMin = 4096
)

// affine reports whether k is S·x·y + C, and returns S and C.
func (k Kernel) affine() (s, c float64, ok bool) {
	switch {
	case k.Normalize:
		return 0, 0, false
	case k.Kind == Linear:
		return 1, k.Coef0, true
	case k.Kind == Poly && k.Degree == 1:
		return k.Scale, k.Coef0, true
	}
	return 0, 0, false
}

// primalAlgorithm is an algorithm whose updates are all additions of a
// vector, which the primal form keeps.
type primalAlgorithm interface{ primal() bool }

func (a *perceptron) primal() bool { return a.policy == evictNone }
func (a *pa1) primal() bool        { return true }

// newPrimal returns the primal form for m, or nil when m must keep its
// support vectors.
func newPrimal(m *model) *primalForm {
	s, c, ok := m.sv.kern.affine()
	if a, isP := m.alg.(primalAlgorithm); !ok || !isP || !a.primal() || m.budget != 0 {
		return nil
	}
	return &primalForm{scale: s, coef0: c}
}

// dot is w·x, one running sum in increasing index order.
func (p *primalForm) dot(x sparse.Vector) float64 {
	d := 0.0
	n := uint32(len(p.v))
	for i, idx := range x.Idx {
		if idx < n {
			d += p.v[idx] * x.Val[i]
		} else {
			d += p.far[idx] * x.Val[i]
		}
	}
	return d
}

// margin is f(x) = S·(w·x) + C·β.
func (p *primalForm) margin(x sparse.Vector) float64 {
	f := p.scale * p.dot(x)
	if p.coef0 != 0 {
		f += p.coef0 * p.beta
	}
	return f
}

// add folds α·x into w.
func (p *primalForm) add(x sparse.Vector, alpha float64) {
	if k := len(x.Idx); k > 0 {
		p.widen(x.Idx[k-1], k)
	}
	for i, idx := range x.Idx {
		p.set(idx, alpha*x.Val[i], true)
	}
	p.beta += alpha
	p.n++
}

// set adds v to w_idx, or makes it v when add is false.
func (p *primalForm) set(idx uint32, v float64, add bool) {
	if int(idx) < len(p.v) {
		if p.v[idx] == 0 {
			p.used++
		}
		if add {
			v += p.v[idx]
		}
		p.v[idx] = v
		return
	}
	if p.far == nil {
		p.far = map[uint32]float64{}
	}
	old, ok := p.far[idx]
	if !ok {
		p.used++
	}
	if add {
		v += old
	}
	p.far[idx] = v
}

// widen extends v to cover index top when w would be dense enough with
// more new non-zeros, moving the entries of far it then covers.
func (p *primalForm) widen(top uint32, more int) {
	if int(top) < len(p.v) || top >= scatterLimit || int(top) >= primalDensity*(p.used+more)+primalDenseMin {
		return
	}
	n := len(p.v)
	p.v = resizeKeep(p.v, int(top)+1)
	clear(p.v[n:])
	for i, x := range p.far {
		if int(i) < len(p.v) {
			p.v[i] = x
			delete(p.far, i)
		}
	}
}

// farKeys are the indices of the map of far weights, increasing: nil
// when it is empty.
func (p *primalForm) farKeys() []uint32 {
	if len(p.far) == 0 {
		return nil
	}
	keys := make([]uint32, 0, len(p.far))
	for i := range p.far {
		keys = append(keys, i)
	}
	slices.Sort(keys)
	return keys
}

// encode writes the primal section of a state (format version 2): the
// count of vectors folded in, β and w's non-zeros, as encoder.vector
// writes a vector, read from the array and the map in place: building
// them into a vector first allocated some 3 KB a learner at each save
// (a9a's 123 features), which auto's bench of primal candidates made
// 50 KB of garbage a snapshot (checkpoint's TestSaveHoldsOneEncoding).
func (p *primalForm) encode(e *encoder) {
	e.uvarint(uint64(p.n))
	e.float(p.beta)
	keys := p.farKeys()
	n := 0
	for _, x := range p.v {
		if x != 0 {
			n++
		}
	}
	for _, i := range keys {
		if p.far[i] != 0 {
			n++
		}
	}
	e.uvarint(uint64(n))
	prev := uint32(0)
	for i, x := range p.v {
		if x != 0 {
			e.uvarint(uint64(uint32(i) - prev))
			prev = uint32(i)
		}
	}
	for _, i := range keys {
		if p.far[i] != 0 {
			e.uvarint(uint64(i - prev))
			prev = i
		}
	}
	for _, x := range p.v {
		if x != 0 {
			e.float(x)
		}
	}
	for _, i := range keys {
		if x := p.far[i]; x != 0 {
			e.float(x)
		}
	}
}

func (p *primalForm) decode(d *decoder) error {
	n := d.uvarint("folded vectors")
	beta := d.float("bias weight")
	w := d.vector()
	if d.err != nil {
		return d.err
	}
	if !finite(beta) || n > math.MaxInt32 {
		return fmt.Errorf("%w: primal bias weight %v, %d vectors", ErrCorrupt, beta, n)
	}
	p.n, p.beta = int(n), beta
	for i, idx := range w.Idx {
		p.widen(idx, 1)
		p.set(idx, w.Val[i], false)
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// The forms a learner keeps its model in, as Form names them.
const (
	FormPrimal = "primal"
	FormDual   = "dual"
)

// Form says whether l keeps its model as a weight vector (FormPrimal) or
// as support vectors and their weights (FormDual).
func Form(l Learner) string {
	if m, ok := l.(*model); ok && m.primal != nil {
		return FormPrimal
	}
	return FormDual
}

// Primal reports whether New(spec, k, seed) builds a learner in primal
// form: perceptron or pa1 without max=, with an affine kernel (linear,
// linear:bias=C, poly:degree=1), not normalized. Such a learner has no
// budget and costs O(nnz(x)) a round.
func Primal(spec string, k Kernel) bool {
	sp, err := ParseSpec(spec)
	if err != nil {
		return false
	}
	if _, ok := composites[sp.Name]; ok {
		return false
	}
	m, err := newFromSpec(sp, k, 0)
	return err == nil && m.primal != nil
}

// Unbounded returns spec without its max= cap when the learner it names
// then keeps its model in primal form under k — a capped perceptron or
// PA-I on an affine kernel, whose cap only bounds a support that the
// primal form does not keep — and false otherwise. A search that tries
// linear learners can ask for the unbounded one this way.
func Unbounded(spec string, k Kernel) (string, bool) {
	sp, err := ParseSpec(spec)
	if err != nil {
		return "", false
	}
	if _, ok := sp.Params["max"]; ok {
		sp.Params["max"] = "0"
	}
	if !Primal(sp.String(), k) {
		return "", false
	}
	m, _ := newFromSpec(sp, k, 0)
	return m.spec, true
}
