package codec

import (
	"encoding/json"
	"fmt"
)

// Prediction is what the service emits for one input record. Its Kafka key
// is PredictionKey(Topic, Partition, Offset), so that consumers can drop
// the duplicates a crash may re-emit: the learners are deterministic, so a
// re-emitted prediction is byte-identical to the first.
type Prediction struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	Key       string  `json:"key,omitempty"` // the input record's key (invalid UTF-8 replaced)
	Predicted int     `json:"prediction"`    // +1 if margin > 0, else −1
	Margin    float64 `json:"margin"`        // f(x) before learning from this record
	// Label is the record's true label as ±1, omitted (0) when it had none
	// (or one the label map leaves out).
	Label int `json:"label,omitempty"`
	// Mistake is set only for labeled records: label·margin ≤ 0.
	Mistake  *bool  `json:"mistake,omitempty"`
	Learner  string `json:"learner"`   // canonical learner spec
	Support  int    `json:"support"`   // active-set size after the round
	ModelSeq uint64 `json:"model_seq"` // model updates before this prediction
}

// PredictionKey is the Kafka key of a prediction: topic/partition/offset of
// its input record (topic names cannot contain '/').
func PredictionKey(topic string, partition int32, offset int64) string {
	return fmt.Sprintf("%s/%d/%d", topic, partition, offset)
}

// AppendPrediction encodes p as one JSON object. The encoding is
// deterministic: equal predictions give equal bytes.
func AppendPrediction(dst []byte, p *Prediction) ([]byte, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return dst, fmt.Errorf("encode prediction: %w", err)
	}
	return append(dst, b...), nil
}

// DecodePrediction parses a prediction written by AppendPrediction.
func DecodePrediction(b []byte) (Prediction, error) {
	var p Prediction
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("decode prediction: %w", err)
	}
	if p.Topic == "" || p.Learner == "" || (p.Predicted != 1 && p.Predicted != -1) {
		return p, fmt.Errorf("decode prediction: not a prediction record")
	}
	return p, nil
}
