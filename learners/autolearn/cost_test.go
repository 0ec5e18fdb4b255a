package autolearn

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

// loud is a stream on which a second-order learner on the linear kernel
// runs away: three dense features of norm ≈ 10⁴, so that k(x, x) ≫ a and
// every mistake, past three support vectors, rebuilds the inverse, O(B³);
// the labels are noise, so mistakes are half the rounds.
func loud(n int, seed uint64) ([]sparse.Vector, []int) {
	r := rand.New(rand.NewPCG(seed, 1))
	xs, ys := make([]sparse.Vector, n), make([]int, n)
	for i := range xs {
		xs[i] = sparse.Vector{Idx: []uint32{1, 2, 3}, Val: []float64{1e4 * r.Float64(), 1e4 * r.Float64(), 1e4 * r.Float64()}}
		ys[i] = 2*r.IntN(2) - 1
	}
	return xs, ys
}

// spend plays a on xs, ys and returns the work it reported.
func spend(a *Auto, xs []sparse.Vector, ys []int) (work uint64) {
	for i := range xs {
		work += a.Round(xs[i], ys[i]).Work
	}
	return work
}

// A challenger that costs more than cost= times the champion loses once
// rung= records tell, not at the end of its duel; without the bound it
// duels on.
func TestCostlyChallengerLoses(t *testing.T) {
	const space = "auto:learners=rbp|rbsop,kernels=linear,scale=off,budget=100,rung=50,window=400,keep=3"
	xs, ys := loud(500, 1)
	for _, c := range []struct {
		cost  string
		alive bool
	}{{"", false}, {",cost=1e9", true}} {
		a := build(t, space+c.cost, 1)
		if a.Halving() || a.Champion() != "rbp:budget=100 kernel=linear" {
			t.Fatalf("%s: want two candidates past the halving, rbp champion: %v, %s", c.cost, a.Halving(), a.Champion())
		}
		// Warm-up 200, then 50 labeled records that tell: the cost
		// shows by record 260; the duel itself would end at 600.
		spend(a, xs[:300], ys[:300])
		first := false
		for _, s := range a.Candidates() {
			if strings.HasPrefix(s.Name, "rbsop") && s.Born == 0 {
				first = true
				if s.Work < 50*a.Candidates()[a.champion].Work {
					t.Fatalf("rbsop costs %.0f a record against rbp's %.0f: the stream should make it run away", s.Work, a.Candidates()[a.champion].Work)
				}
			}
		}
		if first != c.alive {
			t.Fatalf("cost bound %q: the first rbsop alive after 300 records is %v, want %v (%+v)", c.cost, first, c.alive, a.Candidates())
		}
	}
}

// At the end of a halving rung, candidates costing more than cost= times
// the rung's median go before the halving by mistakes: the runaway
// second-order candidate on the linear kernel never reaches the second
// rung (without the bound it does: its mistakes are no worse), and the
// search spends after the rung a fraction of the work it spends without.
func TestHalvingDropsCostlyCandidates(t *testing.T) {
	const space = "auto:learners=rbp|forgetron|rbsop,kernels=linear|rbf,gamma=1,scale=off,budget=100,rung=100,width=6,keep=1,drift=none"
	xs, ys := loud(600, 2)
	work := map[string]uint64{}
	for _, cost := range []string{"", ",cost=1e9"} {
		a := build(t, space+cost, 1)
		if len(a.cands) != 6 {
			t.Fatalf("want 6 candidates, got %d", len(a.cands))
		}
		spend(a, xs[:100], ys[:100]) // the first rung
		for _, s := range a.Candidates() {
			if cost == "" && strings.Contains(s.Name, "rbsop") && strings.Contains(s.Name, "linear") {
				t.Fatalf("the runaway candidate %s survived the first rung: %+v", s.Name, a.Candidates())
			}
		}
		work[cost] = spend(a, xs[100:], ys[100:])
	}
	if 10*work[""] > work[",cost=1e9"] {
		t.Fatalf("work after the first rung with the bound %d, without %d: want a tenth at most", work[""], work[",cost=1e9"])
	}
}

// The work counters are state: a search restored in the middle of a rung
// or a duel drops the same candidates at the same record.
func TestRestoreKeepsTheWorkCounted(t *testing.T) {
	for _, space := range []string{
		"auto:learners=rbp|rbsop,kernels=linear,scale=off,budget=100,rung=50,window=400,keep=3",
		"auto:learners=rbp|forgetron|rbsop,kernels=linear|rbf,gamma=1,scale=off,budget=100,rung=100,width=6,keep=1,drift=none",
	} {
		xs, ys := loud(600, 3)
		whole := build(t, space, 1)
		wantM, wantC := play(whole, xs, ys, 0, len(xs))
		for _, cut := range []int{60, 230, 255} {
			a := build(t, space, 1)
			play(a, xs, ys, 0, cut)
			r := restored(t, a)
			m, c := play(r, xs, ys, cut, len(xs))
			for i := range m {
				if m[i] != wantM[cut+i] || c[i] != wantC[cut+i] {
					t.Fatalf("%s, restored at %d: record %d: margin %x champion %s, want %x %s", space, cut, cut+i, m[i], c[i], wantM[cut+i], wantC[cut+i])
				}
			}
			if got, want := r.Candidates(), whole.Candidates(); len(got) != len(want) || got[0] != want[0] {
				t.Fatalf("%s, restored at %d: candidates %+v, want %+v", space, cut, got, want)
			}
		}
	}
}

// The first candidates hold two budgets, b and 2b, as far as budget=
// allows: on a stream whose best budget is larger, the champion grows
// only once its own budget is full (its copy at 2b must then win a duel).
// The linear learners in primal form hold none (0).
func TestFirstCandidatesHoldTwoBudgets(t *testing.T) {
	for _, c := range []struct {
		spec string
		want []int
	}{
		{"auto", []int{0, 100, 200}},
		{"auto:budget=50..150", []int{0, 100, 150}},
		{"auto:budget=100", []int{0, 100}},
		{"auto:budget=100,learners=rbp|lbp", []int{100}},
	} {
		a := build(t, c.spec, 1)
		seen := map[int]int{}
		for _, cd := range a.cands {
			seen[cd.pt.budget]++
		}
		if len(seen) != len(c.want) {
			t.Fatalf("%s: budgets %v, want %v", c.spec, seen, c.want)
		}
		for _, b := range c.want {
			if seen[b] == 0 {
				t.Fatalf("%s: budgets %v, want %v", c.spec, seen, c.want)
			}
		}
	}
}

// TestFullChampionGrowsItsBudget: once the champion's active set is full,
// its next challenger is its own copy at twice the budget, trained as it
// is (it predicts as the champion does at birth); on a board whose cells
// need more support vectors than the first budgets hold, the copies win
// their duels and the champion's budget grows, never past the space's
// bound; a stop and restore right after each copy's birth continues bit
// for bit (the copy's duel rule is in the state: with margin=0.2 no
// stranger wins a duel, and a copy wins with any fewer mistakes).
func TestFullChampionGrowsItsBudget(t *testing.T) {
	const spec = "auto:learners=lbp,kernel=given,scale=off,budget=50..800,rung=50,window=300,width=2,keep=2,margin=0.2"
	xs, ys := board(12000, 4, 10)
	probe, _ := board(50, 9, 10)
	a := build(t, spec, 1)
	var grownAt []int
	for i := range xs {
		before := len(a.cands)
		play(a, xs, ys, i, i+1) // as the runs below play it
		for _, c := range a.cands {
			if c.l.Budget() > 800 {
				t.Fatalf("record %d: %s holds a budget of %d, over 800", i, c.name, c.l.Budget())
			}
		}
		c := a.cands[len(a.cands)-1]
		if len(a.cands) < before || c.parent == 0 || a.labeled != c.born {
			continue
		}
		p := a.cands[a.champion]
		if c.parent != p.id+1 || c.pt.budget != 2*p.pt.budget || p.l.Size() != p.l.Budget() {
			t.Fatalf("record %d: %s grown from %d, champion %s (id %d) holds %d of %d", i, c.name, c.parent, p.name, p.id, p.l.Size(), p.l.Budget())
		}
		for _, x := range probe {
			if f, g := c.l.Predict(x), p.l.Predict(x); math.Float64bits(f) != math.Float64bits(g) {
				t.Fatalf("record %d: the grown copy predicts %v where the champion predicts %v", i, f, g)
			}
		}
		grownAt = append(grownAt, i)
	}
	if len(grownAt) == 0 {
		t.Fatal("no candidate was grown from a full champion")
	}
	if b := a.cands[a.champion].pt.budget; b < 400 {
		t.Fatalf("the champion's budget is %d after %d records: it did not grow past 200", b, len(xs))
	}

	whole := build(t, spec, 1)
	wantM, wantC := play(whole, xs, ys, 0, len(xs))
	for _, at := range grownAt {
		r := build(t, spec, 1)
		m1, c1 := play(r, xs, ys, 0, at+1)
		m2, c2 := play(restored(t, r), xs, ys, at+1, len(xs))
		if !slices.Equal(append(m1, m2...), wantM) || !slices.Equal(append(c1, c2...), wantC) {
			t.Fatalf("restored after the copy's birth at %d: margins or champions differ from the run without a stop", at)
		}
	}
}

// TestGroupGrowsEachClassFromItsOwnChampion: in a many-class search every
// class grows its copy from its own champion's learner, not an untrained
// one: at each copy's birth, each class's copy predicts as that class's
// champion.
func TestGroupGrowsEachClassFromItsOwnChampion(t *testing.T) {
	const spec = "auto:learners=lbp,kernel=given,scale=off,budget=50..800,rung=50,window=300,width=2,keep=2"
	xs, _ := board(6000, 5, 10)
	probe, _ := board(30, 9, 10)
	as := []*Auto{build(t, spec, 1), build(t, spec, 2), build(t, spec, 3)}
	ls := []learners.Learner{as[0], as[1], as[2]}
	if err := Group(ls); err != nil {
		t.Fatal(err)
	}
	births := 0
	for _, x := range xs {
		class := (int(x.Val[0]*4/10) + int(x.Val[1]*4/10)) % 3
		for k, l := range ls {
			y := -1
			if k == class {
				y = 1
			}
			l.Round(x, y)
		}
		if err := Settle(ls, 3, x, class); err != nil {
			t.Fatal(err)
		}
		lead := as[0]
		if c := lead.cands[len(lead.cands)-1]; c.parent == 0 || c.born != lead.labeled {
			continue
		}
		births++
		for k, a := range as {
			c, ch := a.cands[len(a.cands)-1], a.cands[a.champion]
			for _, p := range probe {
				if f, g := c.l.Predict(p), ch.l.Predict(p); math.Float64bits(f) != math.Float64bits(g) || ch.l.Size() == 0 {
					t.Fatalf("class %d: the copy %s predicts %v, its champion %s (%d support vectors) %v", k, c.name, f, ch.name, ch.l.Size(), g)
				}
			}
		}
	}
	if births == 0 {
		t.Fatal("no copy was grown: the test shows nothing")
	}
}

// The Perceptron and PA-I on a linear kernel, with or without the
// intercept (poly of degree 1), are candidates in primal form, without a
// cap: they learn past any budget of the space, and the memory bound
// counts their d weights, not a support set. The others keep a budget.
func TestLinearCandidatesHaveNoBudget(t *testing.T) {
	a := build(t, "auto:learners=perceptron|pa1|rbp,kernels=linear|poly,degree=1..2,scale=off,budget=50..100,width=12,keep=12", 1)
	primal := 0
	for _, c := range a.cands {
		linear := c.pt.learner != "rbp" && (c.pt.kernel.Kind == learners.Linear || c.pt.kernel.Degree == 1)
		if got := learners.Form(c.l) == learners.FormPrimal; got != linear || (c.l.Budget() == 0) != linear {
			t.Fatalf("%s: primal %v, budget %d", c.name, got, c.l.Budget())
		}
		if !linear {
			continue
		}
		primal++
		if strings.Contains(c.name, "max=") {
			t.Fatalf("%s: a primal candidate named with a cap", c.name)
		}
		if m, err := learners.EstimateMemory(c.pt.spec(), c.pt.kernel, learners.Data{NNZ: 3, Dim: 3}); err != nil || !m.Primal {
			t.Fatalf("%s: memory %+v, %v: want the primal form's", c.name, m, err)
		}
	}
	// The Perceptron on two kernels, PA-I on two kernels at five C.
	if primal != 12 {
		t.Fatalf("%d primal candidates, want 12", primal)
	}
	// Noisy labels of a hyperplane off the origin: the Perceptron errs on
	// a fifth of 2,000 records, so its folded vectors pass the budget.
	r := rand.New(rand.NewPCG(5, 1))
	for range 2000 {
		u, v := r.Float64(), r.Float64()
		y := 1
		if u+v < 0.7 != (r.Float64() < 0.1) {
			y = -1
		}
		a.Round(sparse.Vector{Idx: []uint32{1, 2}, Val: []float64{u, v}}, y)
	}
	most := 0
	for _, c := range a.cands {
		if learners.Form(c.l) == learners.FormPrimal {
			most = max(most, c.l.Size())
		}
	}
	if most <= 100 {
		t.Fatalf("the primal candidates folded at most %d vectors: capped at the budget", most)
	}
}

// noisyLine is n records of two features labeled by a line off the origin,
// a fraction flip of the labels flipped.
func noisyLine(n int, flip float64, seed uint64) ([]sparse.Vector, []int) {
	r := rand.New(rand.NewPCG(seed, 1))
	xs, ys := make([]sparse.Vector, n), make([]int, n)
	for i := range xs {
		u, v := r.Float64(), r.Float64()
		ys[i] = 1
		if u+v < 1 != (r.Float64() < flip) {
			ys[i] = -1
		}
		xs[i] = sparse.Vector{Idx: []uint32{1, 2}, Val: []float64{u, v}}
	}
	return xs, ys
}

// PA-I's C is searched: the first candidates hold every C of the grid,
// and on labels with 20 % noise, where a small C (a strong regularizer)
// errs less, the search with C errs less than the one held at C = 1, and
// ends on a C below 1.
func TestCIsSearched(t *testing.T) {
	const space = "auto:learners=pa1,kernels=linear|poly,degree=1,scale=off,rung=100,window=400"
	a := build(t, space, 1)
	cs := map[float64]bool{}
	for _, c := range a.cands {
		cs[c.pt.c] = true
	}
	if len(cs) != 5 || !cs[0.001] || !cs[10] {
		t.Fatalf("the first candidates' C: %v, want the grid 0.001 to 10", cs)
	}
	xs, ys := noisyLine(6000, 0.2, 3)
	var m [2]int
	for k, spec := range []string{space, space + ",c=1"} {
		a := build(t, spec, 1)
		for i := range xs {
			if a.Round(xs[i], ys[i]).Mistake {
				m[k]++
			}
		}
		if k == 0 && a.cands[a.champion].pt.c >= 1 {
			t.Fatalf("champion %s: want a C below 1 on noisy labels", a.Champion())
		}
	}
	if m[0] >= m[1] {
		t.Fatalf("searching C: %d mistakes, C = 1: %d", m[0], m[1])
	}
	t.Logf("searching C: %d mistakes, C = 1: %d", m[0], m[1])
}

// The cost bound's median is the kernel candidates': the primal ones,
// each a fraction of a kernel candidate's work, would make every kernel
// candidate cost more than cost= times it and go at the first rung.
func TestCheapPrimalCandidatesDoNotSetTheMedian(t *testing.T) {
	a := build(t, "auto:learners=rbp|pa1,kernels=linear|rbf,gamma=1,scale=off,budget=100,rung=150,width=4,keep=1,drift=none", 1)
	kernel := func() (n int) {
		for _, c := range a.cands {
			if c.pt.budget > 0 {
				n++
			}
		}
		return n
	}
	before := kernel()
	if before < 3 || len(a.cands)-before < 5 {
		t.Fatalf("%d kernel and %d primal candidates: want both", before, len(a.cands)-before)
	}
	// 40 dense features: a kernel candidate's round costs some 20 times a
	// primal one's (352).
	r := rand.New(rand.NewPCG(7, 7))
	for range 150 {
		v := make([]float64, 40)
		for j := range v {
			v[j] = r.Float64()
		}
		a.Round(sparse.FromDense(v), 2*r.IntN(2)-1)
	}
	if got := kernel(); got != (before+1)/2 {
		t.Fatalf("after the first rung %d kernel candidates of %d, want the better half: %+v", got, before, a.Candidates())
	}
}

// A primal candidate's memory counts the features seen, not an array as
// wide as the largest index: on hashed features (a few used of 2^18) a
// dozen of them fit in 1 MiB, where the width of the index would count
// some 5 MiB each.
func TestPrimalMemoryCountsTheFeaturesSeen(t *testing.T) {
	a := build(t, "auto:learners=pa1,kernels=linear,width=12", 1)
	r := rand.New(rand.NewPCG(3, 3))
	for range 150 { // within the first rung
		x := sparse.Vector{Idx: []uint32{uint32(1 + r.IntN(20)), 1<<18 - 1}, Val: []float64{1, r.Float64()}}
		a.Round(x, 2*r.IntN(2)-1)
	}
	if len(a.cands) < 10 {
		t.Fatalf("%d candidates: want the grid of C on two scalings", len(a.cands))
	}
	// The scaler's statistics, as wide as the index, are the search's own.
	if m := a.Memory() - a.scalerMemory(); m > 2<<20 {
		t.Fatalf("%d primal candidates estimated at %d bytes", len(a.cands), m)
	}
}

// TestFullChampionGrowsAtOnce: once the halving is done, a full champion's
// copy at twice its budget is born within growEvery labeled records,
// in place of the worst challenger when no place is free (it waited for
// a challenger to lose a whole duel first), and the copy's duel is
// settled Window/2 labeled records after its birth (it took Window).
func TestFullChampionGrowsAtOnce(t *testing.T) {
	const spec = "auto:learners=lbp,kernel=given,scale=off,budget=50..800,rung=50,window=300,width=4,keep=2,margin=0.2"
	xs, ys := board(8000, 4, 10)
	a := build(t, spec, 1)
	fullSince := uint64(0)        // labeled record since which a full champion has had no copy alive
	copies := map[uint64]uint64{} // copies in their duel, by id: their birth
	done := map[uint64]bool{}
	for i := range xs {
		play(a, xs, ys, i, i+1)
		ch := a.cands[a.champion]
		alive := map[uint64]bool{}
		for _, c := range a.cands {
			alive[c.id] = true
			if c.parent != 0 {
				if _, ok := copies[c.id]; !ok && !done[c.id] {
					copies[c.id] = c.born
				}
			}
		}
		for id, born := range copies {
			if !alive[id] || ch.id == id {
				at := a.labeled // a loser goes at once
				if alive[id] {
					at = a.history[len(a.history)-1].After // a win takes effect from the next record
				}
				if d := at - born; d != 150 {
					t.Fatalf("record %d: the copy born at %d was settled after %d labeled records, want 150", i, born, d)
				}
				done[id] = true
				delete(copies, id)
			}
		}
		g := ch.pt.grown()
		grows := !a.halving && ch.l.Size() >= ch.l.Budget() && g.budget <= 800 && !slices.Contains(a.losers, g.String())
		if !grows || slices.ContainsFunc(a.cands, func(c *cand) bool { return c.pt == g }) {
			fullSince = 0
			continue
		}
		if fullSince == 0 {
			fullSince = a.labeled
		}
		if a.labeled-fullSince > growEvery {
			t.Fatalf("record %d: the champion %s has been full since labeled record %d without a copy", i, ch.name, fullSince)
		}
	}
	if len(done) < 2 {
		t.Fatalf("%d copies' duels settled: the test shows little", len(done))
	}
}

// When the first candidates do not fit in memory=, the kernel candidates
// go before the primal ones: on hashed features (an index near 2^18) each
// kernel candidate's scatter array holds some 3 MB, a primal candidate
// 0.1 MB, and the first check, at the first labeled record, broke the
// ties of the rates since birth against the later born, the primal ones.
// PA-I at a small C, best on labels with 20 % noise, went with them, and
// the search ended at C = 1 (Adult events: 21.14 % mistakes against 16.79
// for PA-I at C = 0.01 alone).
func TestMemoryDropsKernelCandidatesFirst(t *testing.T) {
	const space = "auto:learners=pa1|rbp,memory=24MiB,rung=100,window=400"
	xs, ys := noisyLine(6000, 0.2, 3)
	for i, x := range xs {
		xs[i] = sparse.Vector{Idx: append(slices.Clone(x.Idx), 1<<18-1), Val: append(slices.Clone(x.Val), 1)}
	}
	a := build(t, space, 1)
	primal := func() (n int) {
		for _, c := range a.cands {
			if c.pt.budget == 0 {
				n++
			}
		}
		return n
	}
	before, all := primal(), len(a.cands)
	a.Round(xs[0], ys[0])
	if len(a.cands) == all {
		t.Fatalf("%d candidates fit in memory=24MiB: the test shows nothing", all)
	}
	if got := primal(); got != before {
		t.Fatalf("after the first record %d primal candidates of %d are left (%d of %d in all): the kernel ones go first", got, before, len(a.cands), all)
	}
	for i := 1; i < len(xs); i++ {
		a.Round(xs[i], ys[i])
	}
	if c := a.cands[a.champion].pt; c.budget != 0 || c.c >= 1 {
		t.Fatalf("champion %s: want PA-I at a C below 1 on noisy labels", a.Champion())
	}
}
