package autolearn

import (
	"fmt"
	"math"
	"slices"

	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/rng"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

// A many-class model plays one binary learner per class (one-vs-rest) and
// predicts the class with the largest margin. Searches of their own, the
// classes would choose different kernels, whose margins do not compare,
// and each would score candidates on its own binary mistakes. So the
// model makes its classes' auto learners one search (Group): every class
// holds the same candidates as the first class's learner, the lead; each
// candidate is scored on the many-class mistake of its one-vs-rest set
// (Settle); the lead decides (halving, duels, explorers, memory) and the
// others follow, each with its own learners, seeded from its own seed.

// autos are ls as auto learners, or nil when any is not one.
func autos(ls []learners.Learner) []*Auto {
	out := make([]*Auto, 0, len(ls))
	for _, l := range ls {
		a, ok := l.(*Auto)
		if !ok {
			return nil
		}
		out = append(out, a)
	}
	return out
}

// Group makes ls, a many-class model's one-vs-rest learners in class
// order, one search when they are auto learners (nothing otherwise): the
// others take the first's candidates (new learners for those they lack)
// and its search. The model calls it when it adds a class and when it
// restores its learners.
func Group(ls []learners.Learner) error {
	as := autos(ls)
	if len(as) == 0 {
		return nil
	}
	lead := as[0]
	if len(as) > 1 {
		lead.dropFirstPrimal()
	}
	lead.grouped, lead.lead = true, nil
	lead.bench = nil // a group keeps none (benchOne)
	grew := lead.classes > 0 && len(as) > lead.classes
	lead.classes = len(as)
	if grew {
		// A new class holds the candidates too: each class's share of the
		// memory shrinks now, before the new class copies them. Not when a
		// restore counts the classes again (classes 0): the state restored
		// was already fitted, and fitting it again could differ from the
		// run that saved it.
		lead.fit(nil)
	}
	for _, a := range as[1:] {
		if a.spec != lead.spec {
			return fmt.Errorf("auto: classes with different searches: %s and %s", lead.spec, a.spec)
		}
		a.grouped, a.lead = true, lead
		if err := a.follow(); err != nil {
			return err
		}
	}
	return nil
}

// dropFirstPrimal removes the primal candidates born with the search
// (the champion excepted) once a group has two classes: a one-vs-rest set
// of linear learners made the many-class vote worse (the first 1,000 USPS
// digits: 147 mistakes against the champion's 144; 134 without them), and
// they were there for the binary linear streams. Explorers may still try
// a primal point. It happens once (primalDropped, in the state), so that
// a group restored drops nothing the run that saved it kept.
func (a *Auto) dropFirstPrimal() {
	if a.primalDropped {
		return
	}
	a.primalDropped = true
	ch := a.cands[a.champion]
	kept := slices.DeleteFunc(slices.Clone(a.cands), func(c *cand) bool {
		return c != ch && c.pt.budget == 0 && c.born == 0 && c.parent == 0
	})
	if len(kept) < len(a.cands) {
		a.setCands(kept, ch)
	}
}

// Settle ends a round of a group (after Group) once every class has played
// x: the first known classes' margins give each candidate's many-class
// prediction, scored against class y (−1: unlabeled), and the lead plays
// the search's rules; the others follow. known leaves out a class the
// round's label added, which predicted nothing.
func Settle(ls []learners.Learner, known int, x sparse.Vector, y int) error {
	as := autos(ls)
	if len(as) == 0 || !as[0].grouped {
		return nil
	}
	lead := as[0]
	lead.books(x)
	if y < 0 {
		return nil
	}
	for j, k := range choices(as[:min(known, len(as))], len(lead.cands), func(a *Auto, c *cand) float64 { return c.f }) {
		lead.cands[j].mistake = k != y
	}
	lead.labeled++
	lead.score()
	for _, a := range as[1:] {
		if err := a.follow(); err != nil {
			return err
		}
	}
	return nil
}

// follow makes a's candidates and search its lead's: the same candidates
// in the same order (its own learners for those it has, new ones for the
// others), counters, champion and history.
func (a *Auto) follow() error {
	l := a.lead
	same := len(a.cands) == len(l.cands)
	for i := 0; same && i < len(a.cands); i++ {
		same = a.cands[i].id == l.cands[i].id && a.cands[i].pt == l.cands[i].pt
	}
	if !same {
		have := make(map[uint64]*cand, len(a.cands))
		for _, c := range a.cands {
			have[c.id] = c
		}
		cands := make([]*cand, len(l.cands))
		for i, lc := range l.cands {
			c := have[lc.id]
			if c == nil || c.pt != lc.pt { // a new class drew its own first candidates
				var ln learners.Learner
				var err error
				if p := have[lc.parent-1]; lc.parent != 0 && p != nil {
					ln, err = learners.WithBudget(p.l, lc.pt.budget) // see grow
				} else {
					ln, err = learners.New(lc.pt.spec(), lc.pt.kernel, rng.New(a.seed, streamCand+lc.id).Uint64())
				}
				if err != nil {
					return fmt.Errorf("auto: candidate %s: %w", lc.pt, err)
				}
				c = &cand{id: lc.id, pt: lc.pt, name: lc.name, l: ln}
			}
			cands[i] = c
		}
		a.cands = cands
	}
	for i, lc := range l.cands {
		c := a.cands[i]
		c.born, c.total, c.rung, c.from, c.mine, c.champ = lc.born, lc.total, lc.rung, lc.from, lc.mine, lc.champ
		c.w = lc.w
	}
	a.champion, a.nextID, a.labeled, a.halving = l.champion, l.nextID, l.labeled, l.halving
	a.rungEnd, a.rungLen, a.switches, a.history, a.losers = l.rungEnd, l.rungLen, l.switches, l.history, l.losers
	a.reopens = l.reopens
	return nil
}

// Vote makes margins, the classes' emitted margins (class order, the
// first len(margins) classes of ls), the candidates' vote when ls is a
// group that votes (Config.Emit): each candidate votes, with its weight,
// for the class of its largest margin, and a class's margin is the share
// of the weight that voted for it. played says whether ls have just
// played x (Round), so that each candidate's margins are this round's;
// otherwise they are asked (Predict). On a tie for the most votes, or
// when ls is not a voting group, margins stay the champion's. It
// reports whether it changed them.
func Vote(ls []learners.Learner, x sparse.Vector, played bool, margins []float64) bool {
	as := autos(ls)
	if len(as) == 0 || !as[0].grouped || as[0].cfg.Emit != "vote" || len(margins) == 0 || len(margins) > len(as) {
		return false
	}
	as = as[:len(margins)]
	margin := func(a *Auto, c *cand) float64 { return c.f }
	if !played {
		// Each class scales into storage of its own (scale), so the
		// scaled records of all the classes can be held at once.
		scaled := make(map[*Auto]sparse.Vector, len(as))
		for _, a := range as {
			scaled[a] = a.scale(x)
		}
		margin = func(a *Auto, c *cand) float64 {
			if c.pt.scale {
				return c.l.Predict(scaled[a])
			}
			return c.l.Predict(x)
		}
	}
	votes := make([]float64, len(margins))
	sum := 0.0
	ws := as[0].weights()
	for j, k := range choices(as, len(ws), margin) {
		sum += ws[j]
		if k >= 0 {
			votes[k] += ws[j]
		}
	}
	top, ties := 0, 0
	for k, v := range votes {
		switch {
		case v > votes[top]:
			top, ties = k, 0
		case v == votes[top] && k != top:
			ties++
		}
	}
	if ties > 0 || votes[top] == 0 {
		return false
	}
	for k, v := range votes {
		margins[k] = v / sum
	}
	return true
}

// choices is each candidate's class in a group's many-class prediction:
// the class (index in as) whose learner gave it the largest margin, as
// margin reads it, for each of the n candidates; −1 when none is larger
// than −∞ (no class known yet, or no finite margin).
func choices(as []*Auto, n int, margin func(a *Auto, c *cand) float64) []int {
	best := make([]int, n)
	bestF := make([]float64, len(best))
	for j := range best {
		best[j], bestF[j] = -1, math.Inf(-1)
	}
	for k, a := range as {
		for j, c := range a.cands {
			if f := margin(a, c); f > bestF[j] {
				best[j], bestF[j] = k, f
			}
		}
	}
	return best
}
