package model

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/prequential"
	"github.com/streamlearner/streamlearner/learners/rng"
)

func lines(t testing.TB, path string, n int) [][]byte {
	t.Helper()
	var out [][]byte
	err := dataset.LinesOf(context.Background(), path, func(_ int, b []byte) (bool, error) {
		out = append(out, bytes.Clone(b))
		return len(out) < n, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func kernel(t testing.TB, s string) learners.Kernel {
	t.Helper()
	k, err := learners.ParseKernel(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func build(t testing.TB, cfg Config) *Model {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestBinaryRecordsAreTodaysLearner: on indexed records the model's margins
// are, bit for bit, those of the learner the service runs today.
func TestBinaryRecordsAreTodaysLearner(t *testing.T) {
	recs := lines(t, "../../testdata/a9a.gz", 1500)
	k := kernel(t, "rbf:gamma=0.05")
	for _, spec := range []string{"rbp:budget=30", "forgetron:budget=30", "perceptron"} {
		m := build(t, Config{Learner: spec, Kernel: k, Seed: 3})
		l, _ := learners.New(spec, k, 3)
		var ev prequential.Evaluator
		for i, b := range recs {
			r, err := m.Step(b)
			if err != nil {
				t.Fatal(err)
			}
			ex, _ := codec.Decode(b, codec.Limits{})
			y, _, _ := codec.LabelMap{}.Map(ex.Label)
			o := l.Round(ex.X, y)
			ev.Binary(o.Margin, y, o.Updated, l.Size())
			if math.Float64bits(r.Margin) != math.Float64bits(o.Margin) || r.Label != y || r.Updated != o.Updated ||
				r.Predicted != prequential.Predict(o.Margin) || r.Mistake != prequential.IsMistake(o.Margin, y) {
				t.Fatalf("%s round %d: model %+v, learner %+v", spec, i, r, o)
			}
		}
		if e := m.Eval(); e.Mistakes != ev.Mistakes || e.BaselineMistakes != ev.BaselineMistakes || e.Support != ev.Support {
			t.Fatalf("%s: evaluator %+v, by hand %+v", spec, *e, ev)
		}
	}
}

// TestOneVsRestIsKIndependentLearners: with a fixed class list, class k's
// learner is a binary learner seeded ClassSeed(seed, k) that learns +1 on
// class k and −1 otherwise; the prediction is the argmax, first on ties.
func TestOneVsRestIsKIndependentLearners(t *testing.T) {
	recs := lines(t, "../../testdata/covtype.2000.jsonl.gz", 600)
	k := kernel(t, "rbf:gamma=0.5")
	classes := []string{"2", "1", "5", "7", "3", "6", "4"}
	cfg := Config{Learner: "rbp:budget=20", Kernel: k, Seed: 9, Events: true, Classes: classes,
		Event: codec.EventConfig{LabelField: "Cover_Type", KeyField: "id"}, Features: features.Config{Scale: features.ScaleOnline, AllowEmpty: true}}
	m := build(t, cfg)
	dec, _ := codec.NewEventDecoder(cfg.Event)
	feat, _ := features.New(cfg.Features)
	var ls []learners.Learner
	for c := range classes {
		l, _ := learners.New("rbp:budget=20", k, ClassSeed(9, c))
		ls = append(ls, l)
	}
	var ev codec.Event
	for i, b := range recs {
		r, err := m.Step(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := dec.Decode(b, &ev); err != nil {
			t.Fatal(err)
		}
		x, _ := feat.Vector(&ev)
		best, bestM := -1, 0.0
		for c, l := range ls {
			y := -1
			if classes[c] == string(ev.Label()) {
				y = 1
			}
			o := l.Round(x, y)
			if math.Float64bits(o.Margin) != math.Float64bits(r.Margins[c]) {
				t.Fatalf("record %d class %s: margin %v, independent learner %v", i, classes[c], r.Margins[c], o.Margin)
			}
			if best < 0 || o.Margin > bestM {
				best, bestM = c, o.Margin
			}
		}
		if r.Predicted != best || r.Class != classes[best] || r.Label != indexOf(classes, string(ev.Label())) || string(r.Key) != string(ev.Key()) {
			t.Fatalf("record %d: %+v, want class %d", i, r, best)
		}
	}
	if m.Support() > 7*20 {
		t.Fatalf("support %d over the budgets", m.Support())
	}
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
}

func TestClassDiscoveryAndCap(t *testing.T) {
	k := kernel(t, "linear")
	m := build(t, Config{Learner: "perceptron", Kernel: k, Events: true, Classes: []string{Auto}, MaxClasses: 3})
	step := func(s string) (Result, error) { return m.Step([]byte(s)) }
	// The first record: no class known, no prediction; it founds class 0.
	r, err := step(`{"x":1,"label":"b"}`)
	if err != nil || r.Predicted != -1 || r.Label != 0 || !r.Mistake || len(r.Margins) != 0 {
		t.Fatalf("first: %+v %v", r, err)
	}
	r, _ = step(`{"x":2,"label":"a"}`) // predicted b (the only class), a is new: class 1
	if r.Predicted != 0 || r.Class != "b" || r.Label != 1 || len(r.Margins) != 1 {
		t.Fatalf("second: %+v", r)
	}
	step(`{"x":3,"label":7}`)
	if got := m.Classes(); len(got) != 3 || got[0] != "b" || got[1] != "a" || got[2] != "7" {
		t.Fatalf("classes %q", got)
	}
	before, _ := m.MarshalBinary()
	_, err = step(`{"x":4,"label":"c"}`)
	var ce *codec.Error
	if !errors.As(err, &ce) || ce.Reason != codec.ReasonTooManyClasses {
		t.Fatalf("fourth class: %v", err)
	}
	if after, _ := m.MarshalBinary(); !bytes.Equal(before, after) {
		t.Fatal("a refused record changed the model")
	}
	// Unlabeled: predicted among the three, not learned.
	if r, err := step(`{"x":4}`); err != nil || r.Labeled || r.Predicted < 0 || len(r.Margins) != 3 {
		t.Fatalf("unlabeled: %+v %v", r, err)
	}
	// A fixed list refuses other labels.
	f := build(t, Config{Learner: "perceptron", Kernel: k, Events: true, Classes: []string{"x", "y"}})
	if _, err := f.Step([]byte(`{"v":1,"label":"z"}`)); !errors.As(err, &ce) || ce.Reason != codec.ReasonBadLabel {
		t.Fatalf("label outside the list: %v", err)
	}
	for _, cfg := range []Config{
		{Kernel: k},
		{Learner: "perceptron", Kernel: k, Classes: []string{"a"}},
		{Learner: "perceptron", Kernel: k, Classes: []string{"a", "a"}},
		{Learner: "perceptron", Kernel: k, Classes: []string{Auto}, MaxClasses: 1},
		{Learner: "nosuch", Kernel: k},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}

// checkRestoreContinues encodes a (which has played recs[:cut]), restores
// it, and checks that the restored model encodes the same, then continues
// over recs[cut:] with bit-identical results (margins, predictions, the
// champion, mistakes, switches) and ends in the same state. It returns the
// snapshot.
func checkRestoreContinues(t *testing.T, name string, a *Model, recs [][]byte, cut int) []byte {
	t.Helper()
	snap, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Unmarshal(snap)
	if err != nil {
		t.Fatalf("%s cut %d: %v", name, cut, err)
	}
	if again, _ := b.MarshalBinary(); !bytes.Equal(snap, again) {
		t.Fatalf("%s cut %d: the restored model encodes differently", name, cut)
	}
	if b.Spec() != a.Spec() || b.Candidates() != a.Candidates() {
		t.Fatalf("%s: spec %q, restored %q", name, a.Spec(), b.Spec())
	}
	for i, rec := range recs[cut:] {
		ra, ea := a.Step(rec)
		rb, eb := b.Step(rec)
		if (ea == nil) != (eb == nil) || math.Float64bits(ra.Margin) != math.Float64bits(rb.Margin) || ra.Predicted != rb.Predicted ||
			len(ra.Margins) != len(rb.Margins) || ra.Candidate != rb.Candidate || ra.Mistakes != rb.Mistakes || ra.Switched != rb.Switched || ra.To != rb.To {
			t.Fatalf("%s cut %d, record %d after: %+v / %+v", name, cut, i, ra, rb)
		}
		for k := range ra.Margins {
			if math.Float64bits(ra.Margins[k]) != math.Float64bits(rb.Margins[k]) {
				t.Fatalf("%s cut %d, record %d: margins differ", name, cut, i)
			}
		}
	}
	sa, _ := a.MarshalBinary()
	sb, _ := b.MarshalBinary()
	if !bytes.Equal(sa, sb) {
		t.Fatalf("%s cut %d: final states differ", name, cut)
	}
	return snap
}

// TestSnapshotContinuesBitIdentical cuts streams at random points: the
// restored model's outputs equal the original's, bit for bit.
func TestSnapshotContinuesBitIdentical(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		data string
	}{
		{"binary records", Config{Learner: "rbp:budget=25", Kernel: kernel(t, "rbf:gamma=0.05"), Seed: 4}, "../../testdata/a9a.gz"},
		{"binary events scaled", Config{Learner: "forgetron:budget=25", Kernel: kernel(t, "rbf:gamma=0.1"), Seed: 2, Events: true,
			Event: codec.EventConfig{LabelField: "income", KeyField: "id"}, Labels: codec.LabelMap{Positive: []string{">50K"}},
			Features: features.Config{Scale: features.ScaleOnline}}, "../../testdata/adult.train.3000.jsonl.gz"},
		{"auto classes", Config{Learner: "rbp:budget=15", Kernel: kernel(t, "rbf:gamma=0.5"), Seed: 5, Events: true, Classes: []string{Auto},
			Event: codec.EventConfig{LabelField: "Cover_Type", KeyField: "id"}, Features: features.Config{Scale: features.ScaleOnline, HashBits: 12}},
			"../../testdata/covtype.2000.jsonl.gz"},
	}
	r := rng.New(11, 0)
	for _, c := range cases {
		recs := lines(t, c.data, 700)
		for range 3 {
			cut := int(r.Uint64n(uint64(len(recs))))
			a := build(t, c.cfg)
			for _, b := range recs[:cut] {
				a.Step(b)
			}
			snap := checkRestoreContinues(t, c.name, a, recs, cut)
			// Damage is detected.
			bad := bytes.Clone(snap)
			bad[len(bad)/2] ^= 1
			if _, err := Unmarshal(bad); !errors.Is(err, ErrChecksum) {
				t.Fatalf("flipped bit: %v", err)
			}
			bad = bytes.Clone(snap)
			bad[len(snapshotMagic)] = 9
			if _, err := Unmarshal(bad); err == nil || !bytes.Contains([]byte(err.Error()), []byte("version 9")) {
				t.Fatalf("other version: %v", err)
			}
		}
	}
}

// TestTextEvents: a text field goes through the model (tokens, counts, l2
// normalization) and its snapshot keeps the featurizer's configuration.
func TestTextEvents(t *testing.T) {
	words := []string{"rates", "rise", "fall", "oil", "wheat", "bank", "profit", "loss", "Market", "market!"}
	r := rng.New(3, 0)
	var recs [][]byte
	for i := range 400 {
		text, label := "", "down"
		for range 3 + r.Uint64n(5) {
			w := words[r.Uint64n(uint64(len(words)))]
			text += w + " "
			if w == "rise" || w == "profit" {
				label = "up"
			}
		}
		recs = append(recs, []byte(fmt.Sprintf(`{"id":%d,"headline":%q,"label":%q}`, i, text, label)))
	}
	cfg := Config{Learner: "rbp:budget=30", Kernel: kernel(t, "linear"), Events: true, Labels: codec.LabelMap{Positive: []string{"up"}},
		Event:    codec.EventConfig{KeyField: "id", Schema: map[string]codec.FieldKind{"headline": codec.FieldText}},
		Features: features.Config{NormalizeText: true, HashBits: 10}}
	m := build(t, cfg)
	for _, b := range recs[:300] {
		if _, err := m.Step(b); err != nil {
			t.Fatal(err)
		}
	}
	snap, _ := m.MarshalBinary()
	c, err := Unmarshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	if fc := c.Featurizer().Config(); !fc.NormalizeText || fc.HashBits != 10 {
		t.Fatalf("restored featurizer %+v", fc)
	}
	for _, b := range recs[300:] {
		ra, _ := m.Step(b)
		rc, _ := c.Step(b)
		if math.Float64bits(ra.Margin) != math.Float64bits(rc.Margin) {
			t.Fatalf("restored model differs: %v %v", ra.Margin, rc.Margin)
		}
	}
	t.Logf("text stream: %.3f mistakes, baseline %.3f", m.Eval().MistakeRate(), m.Eval().BaselineRate())
	// The label is a word of the text: a linear learner gets most right.
	if e := m.Eval(); e.MistakeRate() > 0.25 || e.BaselineRate() < 0.3 {
		t.Fatalf("text stream: %v mistakes, baseline %v", e.MistakeRate(), e.BaselineRate())
	}
}

func TestPredictChangesNothing(t *testing.T) {
	recs := lines(t, "../../testdata/adult.train.3000.jsonl.gz", 300)
	cfg := Config{Learner: "rbp:budget=20", Kernel: kernel(t, "rbf:gamma=0.1"), Events: true, Classes: []string{Auto},
		Event: codec.EventConfig{LabelField: "income", KeyField: "id"}, Features: features.Config{Scale: features.ScaleOnline, AllowEmpty: true}}
	m := build(t, cfg)
	for _, b := range recs[:200] {
		m.Step(b)
	}
	before, _ := m.MarshalBinary()
	for _, b := range recs[200:] {
		if _, err := m.Predict(b); err != nil {
			t.Fatal(err)
		}
	}
	if after, _ := m.MarshalBinary(); !bytes.Equal(before, after) {
		t.Fatal("Predict changed the model")
	}
}

func TestStepOnEventsAllocatesNothingAtBudget(t *testing.T) {
	recs := lines(t, "../../testdata/adult.train.3000.jsonl.gz", 1000)
	m := build(t, Config{Learner: "rbp:budget=50", Kernel: kernel(t, "rbf:gamma=0.1"), Events: true, Classes: []string{Auto},
		Event: codec.EventConfig{LabelField: "income", KeyField: "id"}, Features: features.Config{Scale: features.ScaleOnline}})
	for _, b := range recs {
		if _, err := m.Step(b); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	if n := testing.AllocsPerRun(200, func() { m.Step(recs[i%len(recs)]); i++ }); n != 0 {
		t.Fatalf("%v allocations per step", n)
	}
}

// Records, LIBSVM lines or JSON objects as the service reads them, decode
// into storage the model reuses: a step at budget allocates nothing (each
// record used to take a vector's two arrays).
func TestStepOnRecordsAllocatesNothingAtBudget(t *testing.T) {
	libsvm := lines(t, "../../testdata/a9a.gz", 1000)
	var json [][]byte
	for _, b := range libsvm {
		ex, err := codec.DecodeLIBSVM(b, codec.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		json = append(json, codec.AppendJSON(nil, ex))
	}
	for name, recs := range map[string][][]byte{"libsvm": libsvm, "json": json} {
		m := build(t, Config{Learner: "rbp:budget=50", Kernel: kernel(t, "rbf:gamma=0.01")})
		for _, b := range recs {
			if _, err := m.Step(b); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		i := 0
		if n := testing.AllocsPerRun(200, func() { m.Step(recs[i%len(recs)]); i++ }); n != 0 {
			t.Errorf("%s: %v allocations per step", name, n)
		}
	}
}

// A learner and evaluator kept apart (checkpoints before the model type)
// become a model that continues exactly as the model that never stopped.
func TestFromLearnerContinuesExactly(t *testing.T) {
	k, _ := learners.ParseKernel("rbf:gamma=0.5")
	cfg := Config{Learner: "rbp:budget=20", Kernel: k, Seed: 9}
	straight, _ := New(cfg)
	l, _ := learners.New(cfg.Learner, k, cfg.Seed)
	var ev prequential.Evaluator
	msgs := [][]byte{}
	for i := range 400 {
		msgs = append(msgs, []byte(fmt.Sprintf("%+d 1:%g 2:%g 3:1", 2*(i%3%2)-1, float64(i%7)/7, float64(i%5)/5)))
	}
	for _, b := range msgs[:200] {
		r, err := straight.Step(b)
		if err != nil {
			t.Fatal(err)
		}
		ex, _ := codec.Decode(b, codec.Limits{})
		y, _, _ := codec.LabelMap{}.Map(ex.Label)
		o := l.Round(ex.X, y)
		ev.Binary(o.Margin, y, o.Updated, l.Size())
		if o.Margin != r.Margin {
			t.Fatal("the twin learner differs already")
		}
	}
	m, err := FromLearner(cfg, l, ev)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range msgs[200:] {
		a, _ := straight.Step(b)
		c, _ := m.Step(b)
		if a.Margin != c.Margin || a.Mistake != c.Mistake {
			t.Fatalf("record %d: %+v, converted %+v", 200+i, a, c)
		}
	}
	sa, _ := straight.MarshalBinary()
	sc, _ := m.MarshalBinary()
	if !bytes.Equal(sa, sc) {
		t.Fatal("the converted model's snapshot differs")
	}
	other, _ := learners.New("lbp:budget=20", k, 9)
	if _, err := FromLearner(cfg, other, ev); err == nil {
		t.Fatal("a learner of another spec was taken")
	}
}
