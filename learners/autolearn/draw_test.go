package autolearn

import (
	"fmt"
	"slices"
	"testing"

	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/rng"
)

// drawPlain is draw as it was first written, keyed by strings in every
// pass: the reference the numbered keys must draw exactly as.
func drawPlain(a *Auto, all []point, first point, also func(point) string) []point {
	perm := a.src.Perm(len(all))
	shuffled := make([]point, len(all))
	for i, j := range perm {
		shuffled[i] = all[j]
	}
	var out []point
	used := map[point]bool{}
	kernUse, learnUse, alsoUse := map[string]int{}, map[string]int{}, map[string]int{}
	key := func(p point) string { return p.kernel.String() + fmt.Sprint(p.scale) }
	take := func(p point) {
		used[p] = true
		kernUse[key(p)]++
		learnUse[p.learner]++
		if also != nil {
			alsoUse[also(p)]++
		}
		out = append(out, p)
	}
	if slices.Contains(all, first) {
		take(first)
	}
	for len(out) < a.cfg.Width {
		best, bestCost := -1, 0
		for i, p := range shuffled {
			if used[p] {
				continue
			}
			cost := (kernUse[key(p)]*len(a.cfg.Learners) + learnUse[p.learner]) << 16
			if also != nil {
				cost += alsoUse[also(p)]
			}
			if best < 0 || cost < bestCost {
				best, bestCost = i, cost
			}
		}
		if best < 0 {
			break
		}
		take(shuffled[best])
	}
	return out
}

// everyPoint is the search's whole first space, C's grid included, with
// the primal points that stand at two budgets twice.
func everyPoint(a *Auto) []point {
	var all []point
	for _, l := range a.cfg.Learners {
		for _, k := range a.kernels() {
			for _, s := range a.scales() {
				for _, b := range a.budgets0() {
					for _, c := range a.cs(l) {
						all = append(all, a.unbounded(point{learner: l, budget: b, kernel: k, scale: s, c: c}))
					}
				}
			}
		}
	}
	return all
}

func TestDrawIsThePlainDraw(t *testing.T) {
	byC := func(p point) string { return p.learner + fmtFloat(p.c) }
	for _, cfg := range []Config{{}, {Width: 256}, {Width: 5, Learners: []string{"pa1", "rbp"}}, {Scale: "on", Kernels: []string{"rbf", "linear"}}, {Width: 256, Learners: []string{"pa1", "rbp"}, Kernels: []string{"linear"}}} {
		cfg, err := cfg.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		for seed := uint64(1); seed <= 4; seed++ {
			a := &Auto{cfg: cfg}
			all := everyPoint(a)
			outside := point{learner: "none", kernel: learners.Kernel{Kind: learners.Linear}}
			for _, first := range []point{all[0], all[len(all)/2], outside} {
				for _, also := range []func(point) string{nil, byC} {
					a.src, a.seed = rng.New(seed, streamGrid), seed
					got := a.draw(all, first, also)
					b := &Auto{cfg: cfg, src: rng.New(seed, streamGrid)}
					if want := drawPlain(b, all, first, also); !slices.Equal(got, want) {
						t.Fatalf("width %d, seed %d, first %s, also %t: drew\n%v\nnot\n%v", cfg.Width, seed, first, also != nil, got, want)
					}
				}
			}
		}
	}
}
