package learners

// pa1 is the kernel Passive-Aggressive learner PA-I of Crammer et al.
// (JMLR 2006), the Projectron paper's accuracy reference: whenever the hinge
// loss ℓ = max(0, 1 − y f(x)) is positive it adds x with weight τy,
// τ = min(C, ℓ / k(x,x)). It updates on margin errors too, so its active
// set grows faster than the Perceptron's.
type pa1 struct{ c float64 }

func init() {
	register(registration{
		info: Info{
			Name:    "pa1",
			Summary: "kernel Passive-Aggressive PA-I: on positive hinge loss add x with weight min(C, ℓ/k(x,x))·y; no budget",
			Source:  "Crammer et al. 2006; baseline in Orabona, Keshet, Caputo 2008",
			Params: []ParamInfo{
				{"c", "1", "aggressiveness C > 0"},
				{"max", "0", "optional hard cap on the active set (oldest removed); 0 = unbounded, as in the paper"},
			},
		},
		build: func(p *params, m *model, _ uint64) algorithm {
			capParam(p, m)
			return &pa1{c: p.float("c", 1, 1e-300, 1e300)}
		},
	})
}

func (a *pa1) learn(m *model, q query, f float64, y int) bool {
	loss := 1 - float64(y)*f
	if loss <= 0 {
		return false
	}
	// A point with k(x,x) = 0 (the zero vector under a linear kernel) is
	// the zero function: adding it cannot change f.
	kxx := m.sv.diag(q)
	if kxx <= 0 {
		return false
	}
	m.makeRoom()
	m.add(q, y, float64(y)*min(a.c, loss/kxx))
	return true
}

func (a *pa1) encode(*encoder)         {}
func (a *pa1) decode(*decoder, *model) {}
