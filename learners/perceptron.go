package learners

import "github.com/streamlearner/streamlearner/learners/rng"

// The kernel Perceptron and the budget variants that differ from it only in
// what happens when the active set is full: Stoptron stops learning, RBP
// removes a uniformly random support vector, LBP removes the oldest.

type evictPolicy uint8

const (
	evictNone   evictPolicy = iota // unbounded (or the optional max= cap, oldest out)
	evictStop                      // Stoptron: ignore updates once full
	evictRandom                    // RBP
	evictOldest                    // LBP
)

type perceptron struct {
	policy evictPolicy
	rng    *rng.Source // only for evictRandom
}

func init() {
	register(registration{
		info: Info{
			Name:    "perceptron",
			Summary: "kernel Perceptron: adds every mistaken example, weight y; no budget",
			Source:  "Rosenblatt 1958, as stated in Dekel et al. 2005 (Forgetron) §2",
			Params:  []ParamInfo{{"max", "0", "optional hard cap on the active set (oldest removed); 0 = unbounded, as in the paper"}},
		},
		build: func(p *params, m *model, _ uint64) algorithm {
			capParam(p, m)
			return &perceptron{policy: evictNone}
		},
	})
	register(registration{
		info: Info{
			Name:    "stoptron",
			Summary: "Perceptron that stops updating once its active set holds budget vectors",
			Source:  "Orabona, Keshet, Caputo 2008 (Projectron) §5",
			Params:  []ParamInfo{{"budget", "100", "size of the active set"}},
		},
		build: func(p *params, m *model, _ uint64) algorithm {
			budgetParam(p, m)
			return &perceptron{policy: evictStop}
		},
	})
	register(registration{
		info: Info{
			Name:    "rbp",
			Summary: "Randomized Budget Perceptron: on a mistake with a full budget, removes a uniformly random support vector",
			Source:  "Cavallanti, Cesa-Bianchi, Gentile 2007, Fig. 2",
			Params: []ParamInfo{
				{"budget", "100", "size of the active set (the paper requires ≥ 2; 1 is allowed)"},
				{"seed", "run seed", "seed of the learner's own generator"},
			},
		},
		build: func(p *params, m *model, seed uint64) algorithm {
			budgetParam(p, m)
			return &perceptron{policy: evictRandom, rng: newRNG(p.uint64("seed", seed))}
		},
	})
	register(registration{
		info: Info{
			Name:    "lbp",
			Summary: "Least-recent Budget Perceptron: on a mistake with a full budget, removes the oldest support vector",
			Source:  "Cavallanti, Cesa-Bianchi, Gentile 2007 §4; Dekel et al. 2005 §3",
			Params:  []ParamInfo{{"budget", "100", "size of the active set"}},
		},
		build: func(p *params, m *model, _ uint64) algorithm {
			budgetParam(p, m)
			return &perceptron{policy: evictOldest}
		},
	})
}

func (a *perceptron) learn(m *model, q query, f float64, y int) bool {
	if float64(y)*f > 0 {
		return false
	}
	if n := m.sv.len(); m.budget > 0 && n >= m.budget {
		switch a.policy {
		case evictStop:
			return false
		case evictRandom:
			m.sv.remove(a.rng.Intn(n))
		default:
			m.sv.remove(0)
		}
	}
	m.add(q, y, float64(y))
	return true
}

func (a *perceptron) encode(e *encoder) {
	if a.policy == evictRandom {
		b, _ := a.rng.MarshalBinary() // PCG's cannot fail
		e.bytes(b)
	}
}

func (a *perceptron) decode(d *decoder, _ *model) {
	if a.policy == evictRandom {
		b := d.bytes("random generator")
		if d.err == nil {
			if err := a.rng.UnmarshalBinary(b); err != nil {
				d.fail(err.Error())
			}
		}
	}
}
