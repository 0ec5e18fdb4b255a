package codec

import (
	"bytes"
	"math"
	"testing"
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
