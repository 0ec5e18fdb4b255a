package learners

import (
	"fmt"
	"math"

	"github.com/streamlearner/streamlearner/learners/rng"
)

// The Tighter Perceptron of Weston, Bordes and Bottou (AISTATS 2005) as
// stated in Wang & Vucetic §II.A.4: the Perceptron update (add x with
// weight y when y f(x) ≤ 0); when the active set exceeds the budget, remove
// the support vector j that leaves the fewest mistakes on a validation set V,
//
//	argmin_j Σ_{k∈V} l01(y_k, sign(f(x_k) − α_j k(x_j, x_k))),
//
// where f already includes the new vector. A validation point counts as a
// mistake when its margin has the wrong sign, y_k·(f(x_k) − α_j k(x_j, x_k))
// < 0, as Wang & Vucetic §III.A define the 0-1 loss that Tighter⁰ uses:
// l⁺ = 1 if f(x) < 0 for a positive point. They spell out only l⁺; the
// negative case mirrors it, l⁻ = 1 if f(x) > 0, as their hinge losses
// l⁺ = max(0, 1 − f), l⁻ = max(0, 1 + f) mirror each other. So a margin of
// exactly 0 is no validation mistake for either label, unlike the update
// rule (y f(x) ≤ 0), which stays the Perceptron's. Ties go to the oldest
// support vector.
//
// tighter0 validates on the support set itself (Tighter⁰), the new vector
// included. tighter validates on a uniform sample of N labeled examples
// seen so far, kept by Vitter's reservoir algorithm R with the learner's
// own generator; every labeled round is offered to it, the current one
// first, whether or not it becomes a support vector. (Tighter^A as Wang &
// Vucetic describe it keeps examples disjoint from the support set; a
// reservoir over all rounds does not, and is what a stream allows.)
//
// Both recompute f(x_k) at each removal from cached kernel values, summed
// oldest first as a margin is, so the choice equals a brute-force search
// bit for bit. A removal costs O(B·|V|): tighter0 keeps the kernel matrix
// of the active set (O(B²)), tighter the kernel values between its
// validation points and the support vectors (O(B·N) memory), to which a
// mistake adds one kernel row over V and a sampled point one copy of the
// round's kernel row.

type tighter0 struct {
	k    gram        // kernel matrix of the active set
	view [][]float64 // scratch: the rows of k
	miss []int       // scratch: validation mistakes per candidate
}

type tighter struct {
	size  int        // N, the most validation points
	seen  uint64     // labeled rounds offered to the reservoir
	val   supportSet // the validation points (weights unused)
	cross [][]float64
	rng   *rng.Source
	row   []float64 // scratch
	miss  []int     // scratch
}

func init() {
	register(registration{
		info: Info{
			Name:    "tighter0",
			Summary: "Tighter Perceptron validating on its support set (Tighter⁰): Perceptron update; on overflow remove the vector whose removal leaves the fewest mistakes on the support set",
			Source:  "Weston, Bordes, Bottou 2005, as described in Wang & Vucetic §II.A.4",
			Params:  []ParamInfo{{"budget", "100", "size of the active set"}},
		},
		build: func(p *params, m *model, _ uint64) algorithm {
			budgetParam(p, m)
			return &tighter0{k: newGram(m.budget + 1)}
		},
	})
	register(registration{
		info: Info{
			Name:    "tighter",
			Summary: "Tighter Perceptron with a reservoir of N labeled examples for validation: Perceptron update; on overflow remove the vector whose removal leaves the fewest validation mistakes",
			Source:  "Weston, Bordes, Bottou 2005, as described in Wang & Vucetic §II.A.4; reservoir: Vitter 1985, algorithm R",
			Params: []ParamInfo{
				{"budget", "100", "size of the active set"},
				{"validation", "budget", "N, the size of the validation reservoir (its memory is extra to the budget)"},
				{"seed", "run seed", "seed of the learner's own generator (reservoir draws)"},
			},
		},
		build: func(p *params, m *model, seed uint64) algorithm {
			budgetParam(p, m)
			a := &tighter{val: supportSet{kern: m.sv.kern}}
			a.size = p.int("validation", m.budget, 1, 1<<24)
			a.val.room = a.size
			a.rng = newRNG(p.uint64("seed", seed))
			return a
		},
	})
}

// fewestMistakes returns the support vector j whose removal leaves the
// fewest validation mistakes, the oldest among equals. rows[k][j] is
// k(x_j, v_k) for validation point v_k with label labels[k]; miss is
// scratch of len(alpha). It costs O(len(alpha)·len(rows)).
func fewestMistakes(alpha []float64, rows [][]float64, labels []int8, miss []int) int {
	clear(miss)
	for k, row := range rows {
		f := 0.0
		for j, a := range alpha {
			f += a * row[j]
		}
		y := float64(labels[k])
		for j, a := range alpha {
			if y*(f-a*row[j]) < 0 {
				miss[j]++
			}
		}
	}
	best := 0
	for j := 1; j < len(miss); j++ {
		if miss[j] < miss[best] {
			best = j
		}
	}
	return best
}

func (a *tighter0) learn(m *model, q query, f float64, y int) bool {
	if float64(y)*f > 0 {
		return false
	}
	a.k.appendSym(m.row, m.sv.diag(q))
	m.sv.add(q, y, float64(y), m.rounds)
	n := m.sv.len()
	if n <= m.budget {
		return true
	}
	a.view = a.view[:0]
	for i := range n {
		a.view = append(a.view, a.k.row(i))
	}
	a.miss = resize(a.miss, n)
	r := fewestMistakes(m.sv.alpha, a.view, m.sv.label, a.miss)
	a.k.remove(r)
	m.sv.remove(r)
	return true
}

func (a *tighter0) encode(*encoder) {}

// decode rebuilds the kernel matrix with the same computation that filled it.
func (a *tighter0) decode(_ *decoder, m *model) {
	a.k.rebuild(&m.sv)
}

func (a *tighter) learn(m *model, q query, f float64, y int) bool {
	a.sample(m, q, y)
	if float64(y)*f > 0 {
		return false
	}
	// k(x_v, x) is bit-identical to k(x, x_v) (Kernel.value), so the
	// column added here matches what decode recomputes row by row.
	a.row = a.val.row(q, a.row)
	for v, kv := range a.row {
		a.cross[v] = appendRoom(a.cross[v], kv, m.sv.room)
	}
	m.sv.add(q, y, float64(y), m.rounds)
	n := m.sv.len()
	if n <= m.budget {
		return true
	}
	a.miss = resize(a.miss, n)
	r := fewestMistakes(m.sv.alpha, a.cross, a.val.label, a.miss)
	for v := range a.cross {
		a.cross[v] = del(a.cross[v], r)
	}
	m.sv.remove(r)
	return true
}

// sample offers a labeled round to the reservoir (algorithm R): the first
// N rounds fill it, the t-th after that replaces a uniformly chosen slot
// with probability N/t. m.row holds the point's kernel row, which becomes
// its cached row.
func (a *tighter) sample(m *model, q query, y int) {
	if a.seen < math.MaxUint64 { // only a corrupt-but-valid state gets here
		a.seen++
	}
	if n := a.val.len(); n < a.size {
		a.val.add(q, y, 0, m.rounds)
		a.cross = append(a.cross, append(make([]float64, 0, len(m.row)+1), m.row...))
		return
	}
	j := a.rng.Uint64n(a.seen)
	if j >= uint64(a.size) {
		return
	}
	v := int(j)
	a.val.set(v, q)
	a.val.label[v], a.val.born[v] = int8(y), m.rounds
	a.cross[v] = append(a.cross[v][:0], m.row...)
}

func (a *tighter) encode(e *encoder) {
	e.uvarint(a.seen)
	b, _ := a.rng.MarshalBinary() // PCG's cannot fail
	e.bytes(b)
	e.uvarint(uint64(a.val.len()))
	for v := range a.val.len() {
		e.uvarint(a.val.born[v])
		e.uvarint(uint64(a.val.label[v] + 1)) // 0 or 2
		e.vector(a.val.vec(v))
	}
}

func (a *tighter) decode(d *decoder, m *model) {
	a.seen = d.uvarint("labeled rounds")
	b := d.bytes("random generator")
	if d.err != nil {
		return
	}
	if err := a.rng.UnmarshalBinary(b); err != nil {
		d.fail(err.Error())
		return
	}
	if a.seen > m.rounds {
		d.fail(fmt.Sprintf("%d labeled rounds of %d", a.seen, m.rounds))
		return
	}
	// Each point takes at least 3 bytes: birth round, label, vector length.
	n := d.count("validation set size", 3)
	if d.err != nil {
		return
	}
	if uint64(n) != min(a.seen, uint64(a.size)) {
		d.fail(fmt.Sprintf("%d validation points after %d labeled rounds, reservoir of %d", n, a.seen, a.size))
		return
	}
	for range n {
		born := d.uvarint("validation birth round")
		y := int(d.uvarint("validation label")) - 1
		x := d.vector()
		if d.err != nil {
			return
		}
		if y != 1 && y != -1 {
			d.fail(fmt.Sprintf("validation label %d", y))
			return
		}
		a.val.add(a.val.newQuery(x), y, 0, born)
	}
	var row []float64
	for v := range n {
		row = m.sv.row(query{x: a.val.vec(v), norm: a.val.norm[v], self: a.val.self[v]}, row)
		a.cross = append(a.cross, append(make([]float64, 0, len(row)+1), row...))
	}
}
