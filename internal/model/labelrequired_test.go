package model

import (
	"errors"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/features"
)

// A stream whose records lack the label field (a misspelled
// --label-field) was predicted record after record by a model that never
// learned anything. With LabelRequired such a record is refused, naming
// the field, and leaves the model as it was; once a label has been
// learned, unlabeled records are predicted as usual.
func TestLabelRequiredRefusesUnlabeledBeforeAnyLearning(t *testing.T) {
	k := kernel(t, "rbf:gamma=0.5")
	cfg := Config{Learner: "perceptron", Kernel: k, Events: true, Event: codec.EventConfig{LabelField: "klass"},
		Features: features.Config{Scale: features.ScaleOnline}, LabelRequired: true}
	m := build(t, cfg)
	ref := build(t, cfg)
	_, err := m.Step([]byte(`{"x":1.5,"class":"UP"}`))
	var ce *codec.Error
	if !errors.As(err, &ce) || ce.Reason != ReasonMissingLabel || !strings.Contains(ce.Detail, `no label field "klass"`) || !strings.Contains(ce.Detail, "x, class") {
		t.Fatalf("unlabeled record before any learning: %v", err)
	}
	// Nothing of it entered the model (the scaler's statistics included):
	// the next records play as in a model that never saw it.
	for _, b := range []string{`{"x":3,"klass":"1"}`, `{"x":-2,"klass":"-1"}`, `{"x":0.5}`} {
		got, err := m.Step([]byte(b))
		want, werr := ref.Step([]byte(b))
		if err != nil || werr != nil || got.Margin != want.Margin || got.Labeled != want.Labeled {
			t.Fatalf("%s: %+v %v, want %+v %v", b, got, err, want, werr)
		}
	}
	if m.Eval().Rounds != 3 {
		t.Errorf("%d rounds, want 3", m.Eval().Rounds)
	}
	// Without the option the unlabeled record is predicted, not learned.
	cfg.LabelRequired = false
	if r, err := build(t, cfg).Step([]byte(`{"x":1.5,"class":"UP"}`)); err != nil || r.Labeled {
		t.Errorf("without LabelRequired: %+v %v", r, err)
	}
}
