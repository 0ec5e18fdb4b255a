package model

import (
	"context"
	"fmt"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/prequential"
	"github.com/streamlearner/streamlearner/learners/selection"
)

// BenchmarkStep is one partition-model round on Adult events (decode,
// featurize with the online scaler, predict, learn, evaluate) with an RBF
// rbp learner at its budget, binary and one-vs-rest over the two classes.
// Against BenchmarkStepRecords it shows what named fields add.
func BenchmarkStep(b *testing.B) {
	recs := lines(b, "../../testdata/adult.train.3000.jsonl.gz", 3000)
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"binary", Config{Labels: codec.LabelMap{Positive: []string{">50K"}}}},
		{"ovr", Config{Classes: []string{Auto}}},
	} {
		cfg := c.cfg
		cfg.Learner, cfg.Kernel, cfg.Events = "rbp:budget=100", kernel(b, "rbf:gamma=0.1"), true
		cfg.Event = codec.EventConfig{LabelField: "income", KeyField: "id"}
		cfg.Features = features.Config{Scale: features.ScaleOnline}
		b.Run(c.name, func(b *testing.B) { benchSteps(b, build(b, cfg), recs) })
	}
}

// BenchmarkStepRecords is the same round on a9a records (Adult as indexed
// binary features), through the model, so
// that the model's overhead on today's path is visible (codec.Decode
// allocates the record's vector and label, as it does for the service).
func BenchmarkStepRecords(b *testing.B) {
	recs := lines(b, "../../testdata/a9a.gz", 3000)
	benchSteps(b, build(b, Config{Learner: "rbp:budget=100", Kernel: kernel(b, "rbf:gamma=0.1")}), recs)
}

// benchSteps warms m up on 500 records, then times steps over recs.
func benchSteps(b *testing.B, m *Model, recs [][]byte) {
	for _, r := range recs[:500] {
		m.Step(r)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := m.Step(recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkIndexedRound compares one round on a decoded a9a record through
// the bare learner (what eval and replay ran before the model existed) and
// through Model.StepVector (what they run now): the indexed path's cost of
// the model layer (label map, reporting rule, evaluator).
func BenchmarkIndexedRound(b *testing.B) {
	set, err := dataset.Load(context.Background(), "../../testdata/a9a.gz", dataset.Options{Limit: 3000})
	if err != nil {
		b.Fatal(err)
	}
	k := kernel(b, "rbf:gamma=0.01")
	tokens := map[int][]byte{1: []byte("1"), -1: []byte("-1")}
	b.Run("learner", func(b *testing.B) {
		l, _ := learners.New("rbp:budget=100", k, 1)
		var ev prequential.Evaluator
		i := 0
		for b.Loop() {
			j := i % set.Len()
			o := l.Round(set.X[j], set.Y[j])
			ev.Observe(o, true, l.Size())
			i++
		}
	})
	b.Run("model", func(b *testing.B) {
		m := build(b, Config{Learner: "rbp:budget=100", Kernel: k, Seed: 1})
		i := 0
		for b.Loop() {
			j := i % set.Len()
			if _, err := m.StepVector(set.X[j], tokens[set.Y[j]]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkCandidates is one round on a9a records with 1, 2, 4 and 8
// learners (the first and its challengers) under the champion rule: "mixed"
// are budget-100 learners of four kinds on two RBF widths (in that order, so
// that 4 holds one Projectron++ and 8 two), "rbp" are budget-100 RBP
// learners on 8 RBF widths, learners of one cost, which shows the cost per
// added learner.
func BenchmarkCandidates(b *testing.B) {
	recs := lines(b, "../../testdata/a9a.gz", 3000)
	narrow, wide := kernel(b, "rbf:gamma=0.1"), kernel(b, "rbf:gamma=0.01")
	mixed := []Candidate{{"rbp:budget=100", narrow}, {"lbp:budget=100", narrow}, {"forgetron:budget=100", narrow}, {"projectron++:budget=100", narrow},
		{"rbp:budget=100", wide}, {"lbp:budget=100", wide}, {"forgetron:budget=100", wide}, {"projectron++:budget=100", wide}}
	var rbp []Candidate
	for _, g := range []string{"0.1", "0.07", "0.05", "0.03", "0.02", "0.015", "0.01", "0.005"} {
		rbp = append(rbp, Candidate{"rbp:budget=100", kernel(b, "rbf:gamma="+g)})
	}
	for _, set := range []struct {
		name  string
		cands []Candidate
	}{{"mixed", mixed}, {"rbp", rbp}} {
		for _, n := range []int{1, 2, 4, 8} {
			cfg := Config{Learner: set.cands[0].Learner, Kernel: set.cands[0].Kernel, Challengers: set.cands[1:n], Select: selection.Config{Window: 500}}
			b.Run(fmt.Sprintf("%s/learners=%d", set.name, n), func(b *testing.B) { benchSteps(b, build(b, cfg), recs) })
		}
	}
}
