package autolearn

import (
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/rng"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

// TestParamsListTheDefaults holds the table `streamlearner learners` prints
// to the code: every parameter of the canonical spec is listed, with the
// default the code takes.
func TestParamsListTheDefaults(t *testing.T) {
	var info *learners.Info
	for _, in := range learners.Available() {
		if in.Name == Name {
			info = &in
		}
	}
	if info == nil {
		t.Fatal("auto is not among the learners available")
	}
	cfg, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	sp, err := learners.ParseSpec(cfg.Spec())
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, p := range info.Params {
		listed[p.Name] = p.Default
	}
	for k, v := range sp.Params {
		if d, ok := listed[k]; !ok {
			t.Errorf("%s= is not listed", k)
		} else if d != v {
			t.Errorf("%s= is listed with default %q; the code takes %q", k, d, v)
		}
	}
	for k := range listed {
		if _, ok := sp.Params[k]; !ok {
			t.Errorf("%s= is listed but not a parameter (%s)", k, strings.TrimPrefix(cfg.Spec(), Name+":"))
		}
	}
}

// TestNewbornIsNotListedAsPerfect: a candidate born at the last labeled
// record has made no mistake because it has not been scored, which
// "0.00 %" would hide.
func TestNewbornIsNotListedAsPerfect(t *testing.T) {
	a, err := New(Config{Learners: []string{"rbp"}, Kernels: []string{"rbf"}, Width: 4, Keep: 2}, learners.Kernel{Kind: learners.Linear}, 1)
	if err != nil {
		t.Fatal(err)
	}
	print := func() string {
		var b strings.Builder
		WriteCandidates(&b, a.Candidates())
		return b.String()
	}
	if out := print(); strings.Contains(out, "0.00 %") || !strings.Contains(out, "new") {
		t.Fatalf("no labeled record yet, listed as:\n%s", out)
	}
	xs, ys := board(1, 1, 1)
	a.Round(xs[0], ys[0])
	for _, c := range a.Candidates() {
		if c.Labeled != 1 {
			t.Fatalf("%s: %d labeled records since its birth, want 1", c.Name, c.Labeled)
		}
	}
	if out := print(); strings.Contains(out, "new") || !strings.Contains(out, " %  ") {
		t.Fatalf("after a labeled record, listed as:\n%s", out)
	}
}

// TestChangesSayWhy: each change of champion records the labeled record
// that decided it and a reason that holds by its rule: the rung's leader
// made fewer mistakes than the old champion, the best at a rung's end no
// more than the runner-up over the whole rung, a duel's winner fewer by
// more than the margin over the window.
func TestChangesSayWhy(t *testing.T) {
	xs, ys := board(5000, 1, 10)
	a := build(t, quick, 1) // a seed whose search changes champion by all three rules
	rules := map[string]int{}
	for i := range xs {
		before := a.Switches()
		a.Round(xs[i], ys[i])
		if a.Switches() == before {
			continue
		}
		c := a.LastChange()
		if c.After != a.Labeled() || c.From() != a.Labeled()+1 || c.Name != a.Champion() || c.Why == nil {
			t.Fatalf("record %d (labeled %d): change %+v, champion %s", i, a.Labeled(), c, a.Champion())
		}
		w := *c.Why
		rules[w.Rule]++
		ok := false
		switch w.Rule {
		case "rung":
			ok = w.Mistakes < w.RunnerUpMistakes && w.Over >= 1 && w.Over <= a.labeled
		case "halving":
			ok = w.Mistakes <= w.RunnerUpMistakes && w.RunnerUp != "" && w.Over >= 50 && w.Over%50 == 0
		case "duel":
			// A copy of the champion at twice its budget wins with any
			// fewer mistakes over half a window; a stranger by more than
			// margin·window over a window.
			margin, over := 0.01*300, uint64(300)
			if a.cands[a.champion].parent != 0 {
				margin, over = 0, 150
			}
			ok = float64(w.RunnerUpMistakes)-float64(w.Mistakes) > margin && w.Over == over
		}
		if !ok || w.Mistakes > w.Over || w.RunnerUpMistakes > w.Over {
			t.Fatalf("record %d: change to %s for %q", i, c.Name, w)
		}
	}
	if rules["rung"] == 0 || rules["duel"] == 0 {
		t.Fatalf("the stream should change champions along a rung and by duels: %v", rules)
	}
	h, cs := a.History(), a.Changes()
	if len(h) != len(cs) || cs[0].Why != nil || cs[len(cs)-1].Why == nil {
		t.Fatalf("history %d, changes %d", len(h), len(cs))
	}
	for i := range h {
		if h[i].Why != nil || h[i].After != cs[i].After || h[i].Name != cs[i].Name {
			t.Fatalf("history %+v against change %+v", h[i], cs[i])
		}
	}
}

// TestGroupDividesItsMemory: a many-class search holds its candidates in
// every class, so its classes share a bound, groupShare times memory=,
// however many the stream reveals: the classes' estimates sum to at most
// min(classes, groupShare) times memory= at every record, and as each
// class comes.
func TestGroupDividesItsMemory(t *testing.T) {
	src := rng.New(9, 9)
	const n, dim, memory = 1500, 100, 6 << 20
	const spec = "auto:memory=6MiB,learners=rbp|forgetron|perceptron,rung=100,window=400"
	var ls []learners.Learner
	bound := func() int64 { return memory * min(int64(len(ls)), groupShare) }
	addClass := func() {
		ls = append(ls, build(t, spec, uint64(len(ls)+1)))
		if err := Group(ls); err != nil {
			t.Fatal(err)
		}
	}
	addClass()
	addClass()
	// Every class holds the lead's candidates; only the lead keeps the
	// records' shape that estimates them.
	sum := func() int64 { return int64(len(ls)) * ls[0].(*Auto).Memory() }
	for i := range n {
		if i%30 == 0 && i > 0 && len(ls) < 8 {
			addClass()
			if m := sum(); m > bound() {
				t.Fatalf("class %d added at record %d: the classes hold %d bytes, bound %d", len(ls), i, m, bound())
			}
		}
		v := make([]float64, dim)
		for j := range v {
			v[j] = src.Float64()
		}
		x := sparse.FromDense(v)
		class := int(v[0]*float64(len(ls))) % len(ls)
		for k, l := range ls {
			y := -1
			if k == class {
				y = 1
			}
			l.Round(x, y)
		}
		if err := Settle(ls, len(ls), x, class); err != nil {
			t.Fatal(err)
		}
		if m := sum(); m > bound() && i > 0 {
			t.Fatalf("record %d, %d classes: the classes hold %d bytes, bound %d", i, len(ls), m, bound())
		}
	}
	if len(ls[0].(*Auto).Candidates()) < 2 {
		t.Fatal("the bound left the champion alone: the test would pass on any division")
	}
}

// A binary search holds primal candidates beside the width; once a group
// has two classes they go (the champion excepted), once: a restored group
// keeps the candidates the run that saved it kept, though the primal
// champion it kept is by then a challenger born with the search.
func TestGroupDropsTheFirstPrimalCandidates(t *testing.T) {
	const spec = "auto:learners=rbp|pa1,kernels=linear|rbf,gamma=1,width=4,rung=50,window=200"
	primal := func(a *Auto) (n int) {
		for _, c := range a.cands {
			if c.pt.budget == 0 && c.born == 0 {
				n++
			}
		}
		return n
	}
	lead := build(t, spec, 1)
	if primal(lead) < 3 {
		t.Fatalf("%d primal candidates born with the search, want the grid of C", primal(lead))
	}
	lead.champion = len(lead.cands) - 1 // the last drawn is primal: as champion, it stays
	ls := []learners.Learner{lead, build(t, spec, 2)}
	if err := Group(ls); err != nil {
		t.Fatal(err)
	}
	if primal(lead) != 1 || lead.cands[lead.champion].pt.budget != 0 {
		t.Fatalf("%d primal candidates born with the search left in a group, champion %s: want the champion alone", primal(lead), lead.Champion())
	}
	lead.champion = 0 // the primal one is now a challenger
	r := restored(t, lead)
	if err := Group([]learners.Learner{r, restored(t, ls[1].(*Auto))}); err != nil {
		t.Fatal(err)
	}
	if len(r.cands) != len(lead.cands) {
		t.Fatalf("restored group: %d candidates, want %d", len(r.cands), len(lead.cands))
	}
}
