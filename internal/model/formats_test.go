package model

import (
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/codec/features"
)

// TestFormatsGiveTheSameMargins runs the same rows through a model as JSON
// lines, as CSV (the cells a CSV writer writes for those values: "2" for
// both 2 and "2", True for true, nothing for null), as Avro and as
// Protobuf in the wire format (their schemas in testdata/schemas, which
// spell Adult's education-num as education_num): every margin and
// prediction is the JSON's, bit for bit. Elec2's day is the string "2" in
// JSON, the cell 2 in CSV; Adult's names differ between JSON and the
// schemas.
func TestFormatsGiveTheSameMargins(t *testing.T) {
	for _, set := range []struct {
		data, schema, label, positive string
	}{
		{"../../testdata/elec2.3000.jsonl.gz", "elec2", "class", "UP"},
		{"../../testdata/adult.train.3000.jsonl.gz", "adult", "income", ">50K"},
	} {
		recs := lines(t, set.data, 3000)
		if len(recs) != 3000 {
			t.Fatalf("%s: %d records", set.data, len(recs))
		}
		schemas := codec.StaticSchemas{}
		for id, ext := range map[uint32]string{1: "avsc", 2: "proto"} {
			text, err := os.ReadFile("../../testdata/schemas/" + set.schema + "." + ext)
			if err != nil {
				t.Fatal(err)
			}
			typ := codec.SchemaAvro
			if ext == "proto" {
				typ = codec.SchemaProtobuf
			}
			if schemas[id], err = codec.CompileSchema(id, typ, string(text), nil); err != nil {
				t.Fatal(err)
			}
		}
		msgs := map[string][][]byte{"json": recs}
		var header []string
		var table [][]string
		for _, b := range recs {
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			var obj map[string]any
			if err := d.Decode(&obj); err != nil {
				t.Fatal(err)
			}
			for id, f := range map[uint32]codec.Format{1: codec.FormatAvro, 2: codec.FormatProtobuf} {
				w, err := schemas[id].AppendEncoded(nil, obj)
				if err != nil {
					t.Fatalf("%s: %s: %v", set.data, f, err)
				}
				msgs[f.String()] = append(msgs[f.String()], w)
			}
			if header == nil {
				header = jsonKeys(t, b)
			}
			row := make([]string, len(header))
			for i, k := range header {
				switch v := obj[k].(type) {
				case nil:
				case bool:
					row[i] = map[bool]string{true: "True", false: "False"}[v]
				default:
					row[i] = fmt.Sprint(v)
				}
			}
			table = append(table, row)
		}
		var file bytes.Buffer
		w := csv.NewWriter(&file)
		w.Write(header)
		w.WriteAll(table)
		for ev, err := range dataset.CSVEvents(&file) {
			if err != nil {
				t.Fatal(err)
			}
			msgs["csv"] = append(msgs["csv"], ev)
		}
		for _, c := range []struct {
			learner string
			scale   features.Scale
		}{{"perceptron", features.ScaleOnline}, {"rbp:budget=100", features.ScaleOnline},
			{"projectron++:budget=100,max=100", features.ScaleOnline}, {"perceptron", features.ScaleNone}} {
			cfg := Config{Learner: c.learner, Kernel: kernel(t, "rbf:gamma=0.1"), Seed: 1, Events: true,
				Event:  codec.EventConfig{LabelField: set.label, KeyField: "id"},
				Labels: codec.LabelMap{Positive: []string{set.positive}}, Features: features.Config{Scale: c.scale}}
			models := map[string]*Model{}
			for name := range msgs {
				fc := cfg
				if f, err := codec.ParseFormat(name); err == nil && f.Framed() {
					fc.Format, fc.Schemas = f, schemas
				}
				models[name] = build(t, fc)
			}
			differ := map[string]int{}
			mistakes := 0
			for i := range recs {
				want, err := models["json"].Step(msgs["json"][i])
				if err != nil {
					t.Fatalf("%s: record %d: %v", set.data, i, err)
				}
				if want.Mistake {
					mistakes++
				}
				for f, m := range models {
					if f == "json" {
						continue
					}
					got, err := m.Step(msgs[f][i])
					if err != nil {
						t.Fatalf("%s %s: record %d: %v", set.data, f, i, err)
					}
					if math.Float64bits(got.Margin) != math.Float64bits(want.Margin) || got.Predicted != want.Predicted || got.Labeled != want.Labeled {
						differ[f]++
					}
				}
			}
			for f, n := range differ {
				t.Errorf("%s, %s scale=%s: %d of %d margins of %s differ from the JSON's", set.data, c.learner, c.scale, n, len(recs), f)
			}
			if mistakes == 0 || mistakes > len(recs)/2 {
				t.Errorf("%s, %s: %d mistakes: the models did not learn", set.data, c.learner, mistakes)
			}
		}
	}
}

// jsonKeys is the member names of a JSON object, in their order.
func jsonKeys(t *testing.T, b []byte) []string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	if _, err := d.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for d.More() {
		k, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestSnapshotOfEarlierRulesKeepsThem: a model saved under the
// featurization rules before the typing rule (rules 1: Elec2's "day":"2"
// the category day=2, education-num hashed as spelled) is restored with
// those rules and goes on with the features it learned, bit for bit,
// while a model of today's rules on the same records computes other
// margins; a featurizer state of an unknown rules version is refused with
// its number.
func TestSnapshotOfEarlierRulesKeepsThem(t *testing.T) {
	for _, set := range []struct{ data, label, positive string }{
		{"../../testdata/elec2.3000.jsonl.gz", "class", "UP"},
		{"../../testdata/adult.train.3000.jsonl.gz", "income", ">50K"},
	} {
		recs := lines(t, set.data, 600)
		cfg := Config{Learner: "rbp:budget=50", Kernel: kernel(t, "rbf:gamma=0.1"), Seed: 1, Events: true,
			Event:  codec.EventConfig{LabelField: set.label, KeyField: "id"},
			Labels: codec.LabelMap{Positive: []string{set.positive}}, Features: features.Config{Scale: features.ScaleOnline}}
		now := build(t, cfg)
		cfg.Features.Rules = features.RulesSpelled
		old := build(t, cfg)
		differ := 0
		for _, b := range recs[:300] {
			ro, err1 := old.Step(b)
			rn, err2 := now.Step(b)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if ro.Margin != rn.Margin {
				differ++
			}
		}
		if differ == 0 {
			t.Fatalf("%s: the rules give the same margins: the test tests nothing", set.data)
		}
		snap := checkRestoreContinues(t, set.data, old, recs, 300)
		r, err := Unmarshal(snap)
		if err != nil || r.Config().Features.Rules != features.RulesSpelled {
			t.Fatalf("%s: restored with rules %d: %v", set.data, r.Config().Features.Rules, err)
		}
	}
	m := build(t, Config{Learner: "perceptron", Kernel: kernel(t, "rbf:gamma=0.1"), Events: true})
	snap, _ := m.MarshalBinary()
	// The featurizer's state follows the configuration: its first byte is
	// the rules' version. Make it 3 and fix the checksum.
	i := bytes.Index(snap, []byte{features.RulesCurrent, features.DefaultHashBits, 0, 0})
	if i < 0 {
		t.Fatal("no featurizer state in the snapshot")
	}
	snap[i] = 3
	snap = binary.LittleEndian.AppendUint32(snap[:len(snap)-4], crc32.Checksum(snap[:len(snap)-4], castagnoli))
	if _, err := Unmarshal(snap); err == nil || !strings.Contains(err.Error(), "version 3") {
		t.Fatalf("rules 3: %v", err)
	}
}

// TestUnlistedLabelsAreRefused: a label in neither --positive nor
// --negative, or outside a list of classes, is one rule for records and
// events: the record is refused (bad_label, codec.IsUnlisted), neither
// predicted nor learned, and the model is as it was; a record of a listed
// label, or unlabeled, is predicted.
func TestUnlistedLabelsAreRefused(t *testing.T) {
	k := kernel(t, "rbf:gamma=0.5")
	for name, c := range map[string]struct {
		cfg       Config
		in, other string
	}{
		"one-vs-some records": {Config{Learner: "perceptron", Kernel: k, Labels: codec.LabelMap{Positive: []string{"3"}, Negative: []string{"8"}}},
			"3 1:1 2:0.5", "5 1:0.5 2:1"},
		"one-vs-some events": {Config{Learner: "perceptron", Kernel: k, Events: true, Labels: codec.LabelMap{Positive: []string{"3"}, Negative: []string{"8"}}},
			`{"x":1,"y":0.5,"label":3}`, `{"x":0.5,"y":1,"label":5}`},
		"class list": {Config{Learner: "perceptron", Kernel: k, Events: true, Classes: []string{"a", "b"}},
			`{"x":1,"y":0.5,"label":"a"}`, `{"x":0.5,"y":1,"label":"c"}`},
	} {
		m := build(t, c.cfg)
		if _, err := m.Step([]byte(c.in)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		before, _ := m.MarshalBinary()
		_, err := m.Step([]byte(c.other))
		var ce *codec.Error
		if !errors.As(err, &ce) || ce.Reason != codec.ReasonBadLabel || !codec.IsUnlisted(err) {
			t.Errorf("%s: %s gives %v, want an unlisted bad_label", name, c.other, err)
		}
		if after, _ := m.MarshalBinary(); !bytes.Equal(before, after) {
			t.Errorf("%s: the refused record changed the model", name)
		}
		if r, err := m.Step([]byte(c.in)); err != nil || !r.Labeled {
			t.Errorf("%s: a listed label after it: %+v %v", name, r, err)
		}
	}
	if codec.IsUnlisted(&codec.Error{Reason: codec.ReasonBadLabel}) || codec.IsUnlisted(errors.New("x")) {
		t.Error("IsUnlisted of another error")
	}
}
