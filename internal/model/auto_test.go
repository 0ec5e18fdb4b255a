package model

import (
	"slices"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/learners/autolearn"
)

// TestAutoLearnerSnapshotContinues: a model whose learner is "auto" (its
// whole search in the learner's state) restores bit for bit, on records
// and on many-class events, at cuts in the halving and after it.
func TestAutoLearnerSnapshotContinues(t *testing.T) {
	const spec = "auto:rung=40,window=200,width=8"
	for _, c := range []struct {
		name, data string
		cfg        Config
	}{
		{"records", "../../testdata/a9a.gz", Config{Learner: spec, Kernel: kernel(t, "rbf:gamma=0.1"), Seed: 3}},
		{"classes events", "../../testdata/covtype.2000.jsonl.gz", Config{Learner: spec, Kernel: kernel(t, "rbf:gamma=0.1"), Seed: 3,
			Events: true, Classes: []string{Auto}, Event: codec.EventConfig{LabelField: "Cover_Type", KeyField: "id"},
			Features: features.Config{Scale: features.ScaleOnline, HashBits: 12}}},
	} {
		recs := lines(t, c.data, 1200)
		for _, cut := range []int{30, 150, 700} {
			a := build(t, c.cfg)
			for _, b := range recs[:cut] {
				if _, err := a.Step(b); err != nil {
					t.Fatal(err)
				}
			}
			checkRestoreContinues(t, c.name, a, recs, cut)
			auto, ok := a.CandidateLearners(0)[0].(*autolearn.Auto)
			if !ok {
				t.Fatalf("%s: the learner is %T", c.name, a.CandidateLearners(0)[0])
			}
			if cut == 700 && auto.Switches() == 0 && auto.Halving() {
				t.Fatalf("%s: the search did not get past the halving", c.name)
			}
		}
	}
}

// TestSearchChangesAreReported: each change of an auto learner's champion
// is one Result with SearchFrom and SearchTo, the same with or without a
// restore on the way, and SearchChampion names the configuration emitted.
func TestSearchChangesAreReported(t *testing.T) {
	cfg := Config{Learner: "auto:rung=40,window=200,width=8", Kernel: kernel(t, "rbf:gamma=0.1"), Seed: 3}
	recs := lines(t, "../../testdata/a9a.gz", 1500)
	run := func(cut int) []string {
		m := build(t, cfg)
		var changes []string
		for i, b := range recs {
			if i == cut {
				snap, err := m.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				if m, err = Unmarshal(snap); err != nil {
					t.Fatal(err)
				}
			}
			before := m.SearchChampion()
			r, err := m.Step(b)
			if err != nil {
				t.Fatal(err)
			}
			if r.SearchTo != "" {
				if r.SearchFrom != before || r.SearchTo != m.SearchChampion() || r.SearchFrom == r.SearchTo {
					t.Fatalf("record %d: change %q → %q, champion %q then %q", i, r.SearchFrom, r.SearchTo, before, m.SearchChampion())
				}
				changes = append(changes, r.SearchTo)
			} else if m.SearchChampion() != before {
				t.Fatalf("record %d: the champion changed from %q to %q unreported", i, before, m.SearchChampion())
			}
		}
		a := m.CandidateLearners(0)[0].(*autolearn.Auto)
		if uint64(len(changes)) != a.Switches() || len(changes) == 0 {
			t.Fatalf("%d changes reported, the search made %d", len(changes), a.Switches())
		}
		return changes
	}
	whole := run(-1)
	if got := run(500); !slices.Equal(got, whole) {
		t.Fatalf("with a restore: %v, without: %v", got, whole)
	}
	if m := build(t, Config{Learner: "rbp:budget=10", Kernel: kernel(t, "linear")}); m.SearchChampion() != "" {
		t.Fatal("a learner that does not search has a search champion")
	}
}

// TestAutoClassesSearchAsOne: in many-class mode the classes' auto
// learners hold the same candidates and the same champion, so that the
// largest margin compares margins of one configuration, also for a class
// discovered late and after a restore.
func TestAutoClassesSearchAsOne(t *testing.T) {
	cfg := Config{Learner: "auto:rung=40,window=200,width=8", Kernel: kernel(t, "rbf:gamma=0.1"), Seed: 3,
		Events: true, Classes: []string{Auto}, Event: codec.EventConfig{LabelField: "Cover_Type", KeyField: "id"},
		Features: features.Config{Scale: features.ScaleOnline, HashBits: 12}}
	recs := lines(t, "../../testdata/covtype.2000.jsonl.gz", 1500)
	m := build(t, cfg)
	for i, b := range recs {
		if i == 700 {
			snap, err := m.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if m, err = Unmarshal(snap); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := m.Step(b); err != nil {
			t.Fatal(err)
		}
		ls := m.CandidateLearners(0)
		lead := ls[0].(*autolearn.Auto)
		for k, l := range ls[1:] {
			a := l.(*autolearn.Auto)
			if a.Champion() != lead.Champion() || !slices.Equal(a.Candidates(), lead.Candidates()) && !sameNames(a.Candidates(), lead.Candidates()) {
				t.Fatalf("record %d: class %d's search (%s) is not class 0's (%s):\n%v\n%v", i, k+1, a.Champion(), lead.Champion(), a.Candidates(), lead.Candidates())
			}
		}
	}
	if n := len(m.Classes()); n < 3 {
		t.Fatalf("%d classes: the test needs several", n)
	}
	if lead := m.CandidateLearners(0)[0].(*autolearn.Auto); lead.Switches() == 0 {
		t.Fatal("no change of champion: the test does not test the search")
	}
}

// sameNames reports whether two candidate lists name the same candidates
// in the same order (the support sizes are each class's own).
func sameNames(a, b []autolearn.Status) bool {
	return slices.EqualFunc(a, b, func(x, y autolearn.Status) bool {
		return x.Name == y.Name && x.Born == y.Born && x.Mistakes == y.Mistakes
	})
}
