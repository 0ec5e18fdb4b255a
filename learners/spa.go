package learners

// spa is the Shifting Perceptron of Cavallanti, Cesa-Bianchi and Gentile
// (2007), Fig. 1: on the k-th mistake (k = 0, 1, ...) the weights shrink by
// (1 − λ_k), λ_k = λ/(λ+k), before the example is added with weight y. Old
// support vectors decay polynomially, which lets the learner track a
// drifting target; λ = 0 is exactly the Perceptron.
type spa struct {
	lambda float64
	k      uint64 // mistakes so far
}

func init() {
	register(registration{
		info: Info{
			Name:    "spa",
			Summary: "Shifting Perceptron: shrinks old weights by (1 − λ/(λ+k)) at the k-th mistake; tracks drifting targets; no budget",
			Source:  "Cavallanti, Cesa-Bianchi, Gentile 2007, Fig. 1",
			Params: []ParamInfo{
				{"lambda", "1", "decay λ ≥ 0 (0 = Perceptron; larger forgets faster)"},
				{"max", "0", "optional hard cap on the active set (oldest removed); 0 = unbounded, as in the paper"},
			},
		},
		build: func(p *params, m *model, _ uint64) algorithm {
			capParam(p, m)
			return &spa{lambda: p.float("lambda", 1, 0, 1e300)}
		},
	})
}

func (a *spa) learn(m *model, q query, f float64, y int) bool {
	if float64(y)*f > 0 {
		return false
	}
	// λ_0 = 1 multiplies the zero vector w_0: nothing to scale on k = 0.
	if a.k > 0 && a.lambda > 0 {
		m.sv.scale(1 - a.lambda/(a.lambda+float64(a.k)))
	}
	m.makeRoom()
	m.sv.add(q, y, float64(y), m.rounds)
	a.k++
	return true
}

func (a *spa) encode(e *encoder) { e.uvarint(a.k) }

func (a *spa) decode(d *decoder, _ *model) { a.k = d.uvarint("mistakes") }
