package autolearn

import (
	"fmt"
	"testing"
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
