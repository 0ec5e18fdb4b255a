package autolearn

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/sparse"
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
			b, err := a.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			r, err := Unmarshal(b)
			if err != nil {
				t.Fatal(err)
			}
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
// allows: an explorer reaches 2b only by winning a duel.
func TestFirstCandidatesHoldTwoBudgets(t *testing.T) {
	for _, c := range []struct {
		spec string
		want []int
	}{
		{"auto", []int{100, 200}},
		{"auto:budget=50..150", []int{100, 150}},
		{"auto:budget=100", []int{100}},
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
