package autolearn

import (
	"fmt"
	"testing"
)

// boardSpace is the search of TestFullChampionGrowsItsBudget with the
// budget range at its default.
const boardSpace = "auto:learners=lbp,kernel=given,scale=off,rung=50,window=300,width=2,keep=2,margin=0.2"

// TestDefaultBudgetGrowsPastTheOldCap: at the default budget range a
// full champion's copies keep growing while a bigger budget errs less (a
// 4×4 checkerboard wants more support vectors than 400): the champion
// ends past 400, the default's upper end before, within memory=.
func TestDefaultBudgetGrowsPastTheOldCap(t *testing.T) {
	xs, ys := board(8000, 4, 10)
	a := build(t, boardSpace, 1)
	play(a, xs, ys, 0, len(xs))
	if b := a.cands[a.champion].pt.budget; b <= 400 {
		t.Fatalf("the champion's budget is %d after %d records at the default range: it stopped at the old cap", b, len(xs))
	}
	if m := a.memory(nil); m > a.bound() {
		t.Fatalf("the candidates hold %d bytes, over the bound %d", m, a.bound())
	}
}

// TestBudgetGrowsAsFarAsMemoryAllows: with memory= holding a champion at
// 400 and its copy at 800, but not 800 and 1,600, the champion grows to
// 800 and no candidate ever holds more: memory=, not budget=, stops the
// growth.
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
