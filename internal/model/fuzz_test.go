package model

import (
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/selection"
)

// A damaged snapshot never panics: Unmarshal refuses it, or returns a
// model that steps without panicking.
func FuzzModelUnmarshal(f *testing.F) {
	k, _ := learners.ParseKernel("rbf:gamma=0.5")
	for _, cfg := range []Config{
		{Learner: "rbp:budget=5", Kernel: k, Seed: 3},
		{Learner: "forgetron:budget=5", Kernel: k, Seed: 3, Classes: []string{Auto}},
		{Learner: "rbp:budget=5", Kernel: k, Seed: 3, Challengers: []Candidate{{Learner: "lbp:budget=4"}}, Select: selection.Config{Window: 2, Detector: "ddm"}},
		{Learner: "perceptron", Kernel: k, Events: true, Event: codec.EventConfig{LabelField: "y"}, Features: features.Config{Scale: features.ScaleOnline}, Classes: []string{Auto}},
	} {
		m, err := New(cfg)
		if err != nil {
			f.Fatal(err)
		}
		for i, msg := range []string{`{"y":"a","x":1,"c":"u"}`, `{"y":"b","x":2,"c":"v"}`, `{"y":"a","x":0.5}`} {
			if cfg.Events {
				m.Step([]byte(msg))
			} else {
				m.Step([]byte([]string{"+1 1:1 2:0.5", "-1 1:0.2 3:1", "+1 2:1"}[i]))
			}
		}
		b, err := m.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Unmarshal(b)
		if err != nil {
			return
		}
		m.Step([]byte("+1 1:1 2:0.5"))
		m.Step([]byte(`{"y":"a","x":1}`))
		m.MarshalBinary()
	})
}
