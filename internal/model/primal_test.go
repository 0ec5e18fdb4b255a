package model

import (
	"math"
	"os"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/learners"
)

// TestFormNamesTheLearners: Form says whether the model's learners keep
// weight vectors, before and after a many-class model meets its classes,
// and across a snapshot.
func TestFormNamesTheLearners(t *testing.T) {
	linear := kernel(t, "linear")
	ev := func(cfg Config) Config {
		cfg.Events, cfg.Classes = true, []string{Auto}
		cfg.Event = codec.EventConfig{LabelField: "Cover_Type", KeyField: "id"}
		cfg.Features = features.Config{Scale: features.ScaleOnline, AllowEmpty: true}
		return cfg
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Learner: "pa1:c=0.01", Kernel: linear}, learners.FormPrimal},
		{Config{Learner: "perceptron", Kernel: kernel(t, "linear:bias=1")}, learners.FormPrimal},
		{Config{Learner: "rbp:budget=10", Kernel: linear}, learners.FormDual},
		{Config{Learner: "perceptron", Kernel: kernel(t, "rbf")}, learners.FormDual},
		{Config{Learner: "pa1", Kernel: linear, Challengers: []Candidate{{Learner: "rbp:budget=10"}}}, FormMixed},
		{ev(Config{Learner: "perceptron", Kernel: linear}), learners.FormPrimal},
		{ev(Config{Learner: "rbp:budget=10", Kernel: linear}), learners.FormDual},
	} {
		m := build(t, c.cfg)
		if got := m.Form(); got != c.want {
			t.Errorf("%s with %s, new: form %s, want %s", c.cfg.Learner, c.cfg.Kernel, got, c.want)
		}
		file, n := "../../testdata/a9a.gz", 300
		if c.cfg.Events {
			file = "../../testdata/covtype.2000.jsonl.gz"
		}
		for _, b := range lines(t, file, n) {
			if _, err := m.Step(b); err != nil {
				t.Fatal(err)
			}
		}
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		r, err := Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Form(); got != c.want || m.Form() != c.want {
			t.Errorf("%s with %s, trained and restored: form %s and %s, want %s", c.cfg.Learner, c.cfg.Kernel, m.Form(), got, c.want)
		}
	}
}

// TestPrimalSnapshotFollowsTheFeatures: the snapshot of a model in
// primal form does not grow with the stream (a9a: 123 features, all seen
// early); in the dual form (poly of degree 2) it does.
func TestPrimalSnapshotFollowsTheFeatures(t *testing.T) {
	recs := lines(t, "../../testdata/a9a.gz", 6000)
	for _, c := range []struct {
		kernel string
		grows  bool
	}{{"linear:bias=1", false}, {"poly:degree=2", true}} {
		m := build(t, Config{Learner: "pa1:c=0.01", Kernel: kernel(t, c.kernel)})
		var sizes []int
		for i, b := range recs {
			if _, err := m.Step(b); err != nil {
				t.Fatal(err)
			}
			if i == 1999 || i == 5999 {
				s, _ := m.MarshalBinary()
				sizes = append(sizes, len(s))
			}
		}
		grew := float64(sizes[1]) / float64(sizes[0])
		t.Logf("%s: snapshot %d bytes after 2000 records, %d after 6000 (%.2f×), %d vectors folded or held", c.kernel, sizes[0], sizes[1], grew, m.Support())
		if (grew > 1.2) != c.grows {
			t.Errorf("%s: snapshot %d bytes after 2000 records, %d after 6000", c.kernel, sizes[0], sizes[1])
		}
	}
}

// TestDualSnapshotLoadsAsPrimal: a snapshot saved by the build before the
// primal form, whose linear PA-I kept 300 records' support vectors, loads
// in primal form and plays on as a model trained in primal form from the
// start: margins to 1e-9, the same mistakes; written back, it is smaller.
func TestDualSnapshotLoadsAsPrimal(t *testing.T) {
	old, err := os.ReadFile("../../testdata/model-v1-pa1-linear-dual.snap")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Unmarshal(old)
	if err != nil {
		t.Fatal(err)
	}
	recs := lines(t, "../../testdata/a9a.gz", 2000)
	m := build(t, Config{Learner: "pa1:c=0.01", Kernel: kernel(t, "linear"), Seed: 7})
	for _, b := range recs[:300] {
		if _, err := m.Step(b); err != nil {
			t.Fatal(err)
		}
	}
	if r.Form() != learners.FormPrimal || r.Support() != m.Support() || r.Eval().Mistakes != m.Eval().Mistakes {
		t.Fatalf("loaded: form %s, support %d, mistakes %d; trained: support %d, mistakes %d",
			r.Form(), r.Support(), r.Eval().Mistakes, m.Support(), m.Eval().Mistakes)
	}
	for i, b := range recs[300:] {
		a, err1 := r.Step(b)
		c, err2 := m.Step(b)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if math.Abs(a.Margin-c.Margin) > 1e-9*math.Max(1, math.Abs(c.Margin)) || a.Mistake != c.Mistake {
			t.Fatalf("record %d: loaded %+v, trained %+v", 300+i, a, c)
		}
	}
	if again, _ := r.MarshalBinary(); len(again) >= len(old)/4 {
		t.Fatalf("written back in %d bytes, was %d with 300 records' support", len(again), len(old))
	}
}
