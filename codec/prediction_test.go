package codec

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"unicode/utf8"
)

func TestPredictionRoundTripIsByteStable(t *testing.T) {
	yes := true
	p := Prediction{Topic: "in", Partition: 3, Offset: 42, Key: "k\xff", Predicted: -1, Margin: -0.1 + 1e-17*math.Pi,
		Label: 1, Mistake: &yes, Learner: "rbp:budget=10,seed=1", Support: 10, ModelSeq: 7}
	a, err := AppendPrediction(nil, &p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodePrediction(a)
	if err != nil {
		t.Fatal(err)
	}
	if back.Margin != p.Margin || back.Offset != 42 || back.Partition != 3 || !*back.Mistake || back.Key != "k\ufffd" {
		t.Fatalf("decoded %+v", back)
	}
	b, _ := AppendPrediction(nil, &back)
	c, _ := AppendPrediction(nil, &back)
	if !bytes.Equal(b, c) {
		t.Fatal("encoding is not deterministic")
	}
	unl := Prediction{Topic: "in", Predicted: 1, Learner: "x"}
	u, _ := AppendPrediction(nil, &unl)
	if bytes.Contains(u, []byte("label")) || bytes.Contains(u, []byte("mistake")) {
		t.Fatalf("unlabeled prediction carries a label: %s", u)
	}
	if _, err := DecodePrediction([]byte(`{"label":1}`)); err == nil {
		t.Fatal("an input record decoded as a prediction")
	}
	if k := PredictionKey("in", 2, 9); k != "in/2/9" {
		t.Fatal(k)
	}
}

// samePrediction reports whether two predictions are equal, Mistake
// compared by value.
func samePrediction(a, b Prediction) bool {
	am, bm := a.Mistake, b.Mistake
	a.Mistake, b.Mistake = nil, nil
	ams, bms := a.Margins, b.Margins
	a.Margins, b.Margins = nil, nil
	if len(ams) != len(bms) {
		return false
	}
	for i := range ams {
		if ams[i].Class != bms[i].Class || math.Float64bits(ams[i].Margin) != math.Float64bits(bms[i].Margin) {
			return false
		}
	}
	am2, bm2 := math.Float64bits(a.Margin), math.Float64bits(b.Margin)
	a.Margin, b.Margin = 0, 0
	return reflect.DeepEqual(a, b) && (am == nil) == (bm == nil) && (am == nil || *am == *bm) && am2 == bm2
}

// checkPredictionEncoding: AppendPrediction writes json.Marshal's bytes,
// and DecodePrediction reads them back to the same prediction.
func checkPredictionEncoding(t *testing.T, p Prediction) {
	t.Helper()
	got, err := AppendPrediction([]byte("prefix"), &p)
	want, werr := json.Marshal(&p)
	if (err != nil) != (werr != nil) {
		t.Fatalf("%+v: AppendPrediction error %v, json.Marshal error %v", p, err, werr)
	}
	if err != nil {
		return
	}
	if !bytes.Equal(got[len("prefix"):], want) {
		t.Fatalf("%+v:\nAppendPrediction %s\njson.Marshal     %s", p, got[len("prefix"):], want)
	}
	if !utf8.ValidString(p.Key) || !utf8.ValidString(p.Topic) || !utf8.ValidString(p.Learner) || p.Topic == "" || p.Learner == "" || (p.Predicted != 1 && p.Predicted != -1) {
		return // invalid UTF-8 comes back replaced; some fields make no prediction record
	}
	back, err := DecodePrediction(got[len("prefix"):])
	if err != nil || !samePrediction(back, p) {
		t.Fatalf("%+v: decoded %+v, %v", p, back, err)
	}
}

func TestAppendPredictionIsEncodingJSON(t *testing.T) {
	yes, no := true, false
	for _, p := range []Prediction{
		{Topic: "in", Predicted: 1, Learner: "rbp:budget=100,seed=1"},
		{Topic: "in", Partition: 3, Offset: 1 << 40, Key: "k", KeySize: 200000, KeySHA256: "ab12", Predicted: -1, Margin: -0.1, Label: -1, Mistake: &no, Learner: "x", Support: 100, ModelSeq: 1<<64 - 1},
		{Topic: "a<b>&c", Key: "\x00\x1f\"\\\n\r\t\b\f\u2028\u2029é\xff<script>", Predicted: 1, Margin: 1e-7, Label: 1, Mistake: &yes, Learner: "l\u2029"},
		{Topic: "t", Predicted: 1, Margin: 123456789e20, Learner: "l"},
		{Topic: "ev", Key: "adult-1", Predicted: 2, Class: "<=50K", Margin: 0.25, Margins: []ClassMargin{{"a", -1}, {"b\"", 1e-9}, {"<=50K", 0.25}}, LabelClass: "b\"", Mistake: &yes, Learner: "l"},
		{Topic: "ev", Predicted: 0, Class: "x", Margin: 0, Margins: []ClassMargin{{"x", 0}, {"y", math.NaN()}}, Learner: "l"},
		{Topic: "t", Predicted: 1, Margin: 5e-324, Learner: "l"},
		{Topic: "t", Predicted: -1, Margin: math.Copysign(0, -1), Learner: "l"},
		{Topic: "t", Predicted: -1, Margin: -1e21, Learner: "l"},
		{Topic: "t", Predicted: -1, Margin: 1e-6, Learner: "l"},
		{Topic: "t", Predicted: -1, Margin: 9.999999999999999e-7, Learner: "l"},
		{Topic: "t", Predicted: -1, Margin: 1.5e-300, Learner: "l"},
		{Topic: "t", Predicted: 1, Margin: math.NaN(), Learner: "l"},
		{Topic: "t", Predicted: 1, Margin: math.Inf(-1), Learner: "l"},
		{Partition: -5, Offset: -1, Predicted: 7, Label: 3, Support: -2},
	} {
		checkPredictionEncoding(t, p)
	}
}

// FuzzAppendPrediction compares AppendPrediction with json.Marshal on
// arbitrary field values (its seeds run with the unit tests).
func FuzzAppendPrediction(f *testing.F) {
	f.Add("in", int32(2), int64(9), "key", true, 0.25, int8(1), uint8(1), "rbp:budget=100", 100, uint64(3))
	f.Add("a<&>", int32(-1), int64(-7), "\xff\u2028", false, -3e-9, int8(-1), uint8(2), "\"l\"", 0, uint64(0))
	f.Add("t", int32(0), int64(0), "", true, 1e300, int8(0), uint8(0), "l", -1, uint64(1<<63))
	f.Fuzz(func(t *testing.T, topic string, part int32, off int64, key string, pos bool, margin float64, label int8, mistake uint8, learner string, support int, seq uint64) {
		p := Prediction{Topic: topic, Partition: part, Offset: off, Key: key, Predicted: -1, Margin: margin, Label: int(label), Learner: learner, Support: support, ModelSeq: seq}
		if pos {
			p.Predicted = 1
		}
		if mistake%3 != 0 {
			m := mistake%3 == 1
			p.Mistake = &m
		}
		checkPredictionEncoding(t, p)
	})
}

func TestAppendPredictionAllocatesNothing(t *testing.T) {
	yes := true
	p := Prediction{Topic: "in", Partition: 3, Offset: 42, Key: "k", Predicted: -1, Margin: -0.1, Label: 1, Mistake: &yes, Learner: "rbp:budget=100,seed=1", Support: 100, ModelSeq: 7}
	buf := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() { buf, _ = AppendPrediction(buf[:0], &p) }); n != 0 {
		t.Fatalf("%v allocations per prediction", n)
	}
}
