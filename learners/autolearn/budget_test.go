package autolearn

import (
	"fmt"
	"slices"
	"testing"

	"github.com/streamlearner/streamlearner/learners"
)

// boardSpace is the search of TestFullChampionGrowsItsBudget with an open
// budget range: memory= and cost= bound the growth.
const boardSpace = "auto:learners=lbp,kernel=given,scale=off,rung=50,window=300,width=2,keep=2,margin=0.2,budget=50.."

// TestOpenBudgetRangeGrowsPastTheDefaultCap: with budget=50.. a full
// champion's copies keep growing while a bigger budget errs less (a 4×4
// checkerboard wants more support vectors than 400): the champion ends
// past 400, the default range's upper end, within memory=; the spec
// says the range it searched, and reads back the same.
func TestOpenBudgetRangeGrowsPastTheDefaultCap(t *testing.T) {
	xs, ys := board(8000, 4, 10)
	a := build(t, boardSpace, 1)
	if a.cfg.BudgetLo != 50 || a.cfg.BudgetHi != MaxBudget {
		t.Fatalf("budget=50.. reads as %d..%d, want 50..%d", a.cfg.BudgetLo, a.cfg.BudgetHi, MaxBudget)
	}
	if again := build(t, a.Spec(), 1); again.Spec() != a.Spec() {
		t.Fatalf("spec %q reads back as %q", a.Spec(), again.Spec())
	}
	play(a, xs, ys, 0, len(xs))
	if b := a.cands[a.champion].pt.budget; b <= 400 {
		t.Fatalf("the champion's budget is %d after %d records with budget=50..: it stopped at the default cap", b, len(xs))
	}
	if m := a.memory(nil); m > a.bound() {
		t.Fatalf("the candidates hold %d bytes, over the bound %d", m, a.bound())
	}
}

// TestBudgetGrowsAsFarAsMemoryAllows: with memory= holding a champion at
// 400 and its copy at 800, but not 800 and 1,600, the champion grows to
// 800 and no candidate ever holds more: in an open range memory=, not
// budget=, stops the growth.
func TestBudgetGrowsAsFarAsMemoryAllows(t *testing.T) {
	xs, ys := board(8000, 4, 10)
	probe := build(t, boardSpace, 1)
	play(probe, xs, ys, 0, 50) // the estimate needs the records' size
	ch := probe.cands[probe.champion].pt
	est := func(b int) int64 {
		p := ch
		p.budget = b
		return probe.memory(&p) - probe.memory(nil)
	}
	mem := est(400) + est(800) + est(800)/4
	if mem >= est(800)+est(1600) {
		t.Fatalf("memory=%d holds 800 and 1,600 (%d): the test shows nothing", mem, est(800)+est(1600))
	}
	a := build(t, fmt.Sprintf("%s,memory=%dB", boardSpace, mem), 1)
	top := 0
	for i := range xs {
		play(a, xs, ys, i, i+1)
		for _, c := range a.cands {
			if c.pt.budget > 800 {
				t.Fatalf("record %d: %s holds a budget of %d; memory=%d allows 800", i, c.name, c.pt.budget, mem)
			}
		}
		top = max(top, a.cands[a.champion].pt.budget)
	}
	if top != 800 {
		t.Fatalf("the champion's budget reached %d, want 800: as far as memory=%d allows", top, mem)
	}
}

// A primal champion has no budget to grow: the best challenger with one
// grows instead, by a copy at twice its budget once it is full, and it
// stays (trained, its duel restarted) when it loses a duel to the primal
// champion; without both, a linear champion held Covertype's events for
// 65,000 records while kernel explorers at their first budget lost to it.
func TestKernelChallengerOfAPrimalChampionGrows(t *testing.T) {
	a := build(t, "auto:learners=pa1|lbp,kernels=rbf,scale=off,budget=10..5000,rung=50,window=300,width=4,keep=3", 1)
	xs, ys := board(1500, 4, 10)
	play(a, xs, ys, 0, len(xs))
	if a.halving {
		t.Fatal("the halving is not over after 1,500 records")
	}
	var k *cand
	for _, c := range a.cands {
		if c.pt.budget > 0 && c.l.Size() >= c.l.Budget() && (k == nil || a.better(c, k)) {
			k = c
		}
	}
	if k == nil {
		t.Fatalf("no full candidate with a budget: %+v", a.Candidates())
	}
	primal := a.unbounded(point{learner: "pa1", kernel: learners.Kernel{Kind: learners.Linear}, c: 1})
	if err := a.add(primal); err != nil {
		t.Fatal(err)
	}
	a.setCands(a.cands, a.cands[len(a.cands)-1])
	for _, c := range a.cands {
		if c != k && c.pt.budget > 0 && a.better(c, k) {
			k = c // the best with a budget, now that the duels restarted
		}
	}
	if a.growing() != k {
		t.Fatalf("growing %v, want the best challenger with a budget %s", a.growing(), k.name)
	}
	a.growFull()
	i := slices.IndexFunc(a.cands, func(c *cand) bool { return c.parent == k.id+1 })
	if i < 0 || a.cands[i].pt.budget != 2*k.pt.budget {
		t.Fatalf("no copy of %s at twice its budget: %+v", k.name, a.Candidates())
	}
	k.mine, k.champ = 200, 0 // a lost duel
	a.duel(slices.Index(a.cands, k))
	if !slices.Contains(a.cands, k) || k.from != a.labeled || k.mine != 0 {
		t.Fatalf("the best challenger with a budget went, or its duel did not restart, after losing to a primal champion")
	}
}
