package model

import (
	"testing"

	"github.com/streamlearner/streamlearner/autolearn"
	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/features"
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
		{"records", "../testdata/a9a.gz", Config{Learner: spec, Kernel: kernel(t, "rbf:gamma=0.1"), Seed: 3}},
		{"classes events", "../testdata/covtype.2000.jsonl.gz", Config{Learner: spec, Kernel: kernel(t, "rbf:gamma=0.1"), Seed: 3,
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
