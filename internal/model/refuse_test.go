package model

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/internal/pending"
	"github.com/streamlearner/streamlearner/learners/rng"
)

// TestRefusedRecordsChangeNothing: a stream with refused records mixed in
// (values over the limit, top level or nested; a value that would make the
// online scaler overflow; a label outside the map; a class over the
// limit; a label message for nothing; a record too large for the kernel)
// leaves the model byte for byte as the same stream without them, for
// binary and many-class models, online scaling, challengers and delayed
// labels; and the snapshot restores. The refused records were featurized
// before their refusal, so the scaler's statistics moved with each of
// them and the snapshot held a scaler entry it could not read back.
func TestRefusedRecordsChangeNothing(t *testing.T) {
	type stream struct {
		cfg    Config
		labels []string // of the three label draws
		poison []string
	}
	common := []string{
		`{"id":"p1","x":1e308,"y":1,"label":"%s"}`,                       // over the limit: refused while decoding
		`{"id":"p2","x":1,"deep":{"er":{"v":-1e250}},"label":"%s"}`,      // nested, over the limit
		`{"id":"p5","x":1e180,"newfield":1,"label":"%s"}`,                // within the limit, but the scaler's statistics overflow
		`{"id":"p7","x":2,"y":"not a number","label":"%s","label":"%s"}`, // malformed after the fields
	}
	base := Config{Learner: "rbp:budget=20", Kernel: kernel(t, "rbf:gamma=0.5"), Seed: 4, Events: true,
		Event:  codec.EventConfig{LabelField: "label", KeyField: "id"},
		Limits: codec.Limits{MaxAbsValue: 1e200}, Features: features.Config{Scale: features.ScaleOnline}}
	many := base
	many.Classes, many.MaxClasses = []string{Auto}, 3
	challenged := many
	challenged.Challengers = []Candidate{{Learner: "forgetron:budget=20"}, {Learner: "perceptron"}}
	held := base
	held.Delayed = &pending.Config{MaxRecords: 50, MaxKeyBytes: 16}
	raw := base
	raw.Features.Scale = features.ScaleNone
	binary := []string{"1", "-1", "-1"}
	classes := []string{"a", "b", "c"}
	streams := map[string]stream{
		// A label that is not binary is refused after the record was featurized.
		"binary":      {base, binary, append(common, `{"id":"p3","x":1,"y":2,"label":"maybe"}`)},
		"classes":     {many, classes, append(common, `{"id":"p4","x":2,"y":3,"label":"d"}`)}, // a fourth class: over the limit
		"challengers": {challenged, classes, append(common, `{"id":"p4","x":2,"y":3,"label":"d"}`)},
		"delayed":     {held, binary, append(common, `{"id":"p6","label":"1"}`, `{"id":"p3","x":1,"y":2,"label":"maybe"}`, `{"id":"a key longer than sixteen bytes","x":1}`)}, // a label for nothing; a key too long to hold
		"raw":         {raw, binary, append(common[:2], `{"id":"p8","x":1e60,"y":1,"label":"1"}`)},                                                                            // k(x,x) over the kernel's limit
	}
	for name, st := range streams {
		t.Run(name, func(t *testing.T) {
			cfg := st.cfg
			r := rng.New(11, 0)
			want, got := build(t, cfg), build(t, cfg)
			play := func(m *Model, b []byte, at At) (Result, error) {
				if cfg.Delayed == nil {
					return m.Step(b)
				}
				return m.StepAt(b, at)
			}
			for i := range 600 {
				label := st.labels[r.Intn(3)]
				b := fmt.Appendf(nil, `{"id":"k%d","x":%g,"y":%g,"cat":"%c","label":"%s"}`, i, 3*r.Float64()+float64(len(label)), 50*r.Float64(), 'p'+rune(r.Intn(4)), label)
				at := At{Time: int64(i), Offset: int64(i)}
				if cfg.Delayed != nil && i%3 == 1 {
					// Unlabeled: held for the label message below.
					b = bytes.Replace(b, []byte(`,"label":`), []byte(`,"later":`), 1)
				}
				if i%5 == 2 {
					p := []byte(strings.ReplaceAll(st.poison[(i/5)%len(st.poison)], "%s", label))
					before, _ := got.MarshalBinary()
					if _, err := play(got, p, At{Time: at.Time, Offset: -1}); err == nil {
						t.Fatalf("%s was taken", p)
					}
					if after, _ := got.MarshalBinary(); !bytes.Equal(before, after) {
						t.Fatalf("refusing %s changed the model", p)
					}
				}
				wr, werr := play(want, b, at)
				gr, gerr := play(got, b, at)
				if werr != nil || gerr != nil || wr.Margin != gr.Margin || wr.Predicted != gr.Predicted {
					t.Fatalf("record %d: %+v %v, without the refused records %+v %v", i, gr, gerr, wr, werr)
				}
				if cfg.Delayed != nil && i%3 == 1 {
					lm := fmt.Appendf(nil, `{"id":"k%d","label":"%s"}`, i, label)
					if _, err := play(want, lm, at); err != nil {
						t.Fatal(err)
					}
					if _, err := play(got, lm, at); err != nil {
						t.Fatal(err)
					}
				}
			}
			wb, _ := want.MarshalBinary()
			gb, err := got.MarshalBinary()
			if err != nil || !bytes.Equal(wb, gb) {
				t.Fatalf("snapshots differ (%d and %d bytes): %v", len(wb), len(gb), err)
			}
			if _, err := Unmarshal(gb); err != nil {
				t.Fatalf("the snapshot does not restore: %v", err)
			}
		})
	}
}
