package codec

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Prediction is what the service emits for one input record. Its Kafka key
// is PredictionKey(Topic, Partition, Offset), so that consumers can drop
// the duplicates a crash may re-emit: the learners are deterministic, so a
// re-emitted prediction is byte-identical to the first.
type Prediction struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Key       string `json:"key,omitempty"` // the input record's key (invalid UTF-8 replaced)
	// KeySize and KeySHA256 are set only when the input key was longer
	// than the service carries (see pipeline.Config.MaxKeyBytes): Key then
	// holds its first bytes, KeySize its length and KeySHA256 its SHA-256
	// in hex, enough to match it to the input without an unbounded copy.
	KeySize   int    `json:"key_size,omitempty"`
	KeySHA256 string `json:"key_sha256,omitempty"`
	// Predicted is +1 if margin > 0, else −1; with many classes, the
	// predicted class's index (−1 before any class is known), named by
	// Class.
	Predicted int `json:"prediction"`
	// Class names the predicted class: with many classes; with binary
	// labels read through --positive, the positive or negative side as
	// LabelMap.ClassNames names it (Predicted is still ±1).
	Class  string  `json:"class,omitempty"`
	Margin float64 `json:"margin"` // f(x) before learning from this record (many classes: the predicted class's)
	// Margins are every class's margin, in class order (many classes only).
	Margins []ClassMargin `json:"margins,omitempty"`
	// Label is the record's true label as ±1, omitted (0) when it had none
	// (or one the label map leaves out).
	Label int `json:"label,omitempty"`
	// LabelClass is the record's true class, named as Class is.
	LabelClass string `json:"label_class,omitempty"`
	// Mistake is set only for labeled records: Predicted ≠ Label (so a
	// margin of exactly 0, predicted −1, is right for a −1 label).
	Mistake  *bool  `json:"mistake,omitempty"`
	Learner  string `json:"learner"`   // canonical learner spec
	Support  int    `json:"support"`   // active-set size after the round
	ModelSeq uint64 `json:"model_seq"` // model updates before this prediction
}

// ClassMargin is one class's margin in a many-class prediction.
type ClassMargin struct {
	Class  string  `json:"class"`
	Margin float64 `json:"margin"`
}

// PredictionKey is the Kafka key of a prediction: topic/partition/offset of
// its input record (topic names cannot contain '/').
func PredictionKey(topic string, partition int32, offset int64) string {
	return string(AppendPredictionKey(make([]byte, 0, len(topic)+24), topic, partition, offset))
}

// AppendPredictionKey appends PredictionKey's bytes to dst.
func AppendPredictionKey(dst []byte, topic string, partition int32, offset int64) []byte {
	dst = append(dst, topic...)
	dst = append(dst, '/')
	dst = strconv.AppendInt(dst, int64(partition), 10)
	dst = append(dst, '/')
	return strconv.AppendInt(dst, offset, 10)
}

// AppendPrediction encodes p as one JSON object, exactly the bytes
// json.Marshal(p) gives (the tests check it), written by hand because the
// service encodes one per record and encoding/json's reflection cost as
// much as a budget learner's round. The encoding is deterministic: equal
// predictions give equal bytes. A NaN or infinite margin is an error, as
// with encoding/json.
func AppendPrediction(dst []byte, p *Prediction) ([]byte, error) {
	if math.IsNaN(p.Margin) || math.IsInf(p.Margin, 0) {
		return dst, fmt.Errorf("encode prediction: margin %v is not a JSON number", p.Margin)
	}
	for _, cm := range p.Margins {
		if math.IsNaN(cm.Margin) || math.IsInf(cm.Margin, 0) {
			return dst, fmt.Errorf("encode prediction: class %q margin %v is not a JSON number", cm.Class, cm.Margin)
		}
	}
	dst = append(dst, `{"topic":`...)
	dst = appendString(dst, p.Topic, true)
	dst = append(dst, `,"partition":`...)
	dst = strconv.AppendInt(dst, int64(p.Partition), 10)
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendInt(dst, p.Offset, 10)
	if p.Key != "" {
		dst = append(dst, `,"key":`...)
		dst = appendString(dst, p.Key, true)
	}
	if p.KeySize != 0 {
		dst = append(dst, `,"key_size":`...)
		dst = strconv.AppendInt(dst, int64(p.KeySize), 10)
	}
	if p.KeySHA256 != "" {
		dst = append(dst, `,"key_sha256":`...)
		dst = appendString(dst, p.KeySHA256, true)
	}
	dst = append(dst, `,"prediction":`...)
	dst = strconv.AppendInt(dst, int64(p.Predicted), 10)
	if p.Class != "" {
		dst = append(dst, `,"class":`...)
		dst = appendString(dst, p.Class, true)
	}
	dst = append(dst, `,"margin":`...)
	dst = appendFloatAsEncodingJSON(dst, p.Margin)
	if len(p.Margins) > 0 {
		dst = append(dst, `,"margins":[`...)
		for i, cm := range p.Margins {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"class":`...)
			dst = appendString(dst, cm.Class, true)
			dst = append(dst, `,"margin":`...)
			dst = appendFloatAsEncodingJSON(dst, cm.Margin)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if p.Label != 0 {
		dst = append(dst, `,"label":`...)
		dst = strconv.AppendInt(dst, int64(p.Label), 10)
	}
	if p.LabelClass != "" {
		dst = append(dst, `,"label_class":`...)
		dst = appendString(dst, p.LabelClass, true)
	}
	if p.Mistake != nil {
		dst = append(dst, `,"mistake":`...)
		dst = strconv.AppendBool(dst, *p.Mistake)
	}
	dst = append(dst, `,"learner":`...)
	dst = appendString(dst, p.Learner, true)
	dst = append(dst, `,"support":`...)
	dst = strconv.AppendInt(dst, int64(p.Support), 10)
	dst = append(dst, `,"model_seq":`...)
	dst = strconv.AppendUint(dst, p.ModelSeq, 10)
	return append(dst, '}'), nil
}

// appendFloatAsEncodingJSON writes a finite f as encoding/json does: the
// shortest decimal that reads back to f, in exponent form only below 1e-6
// or from 1e21 on, with a one-digit negative exponent unpadded.
func appendFloatAsEncodingJSON(dst []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1]
		dst = dst[:n-1]
	}
	return dst
}

// DecodePrediction parses a prediction written by AppendPrediction.
func DecodePrediction(b []byte) (Prediction, error) {
	var p Prediction
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("decode prediction: %w", err)
	}
	if p.Topic == "" || p.Learner == "" || (p.Predicted != 1 && p.Predicted != -1 && len(p.Margins) == 0 && p.Class == "") {
		return p, fmt.Errorf("decode prediction: not a prediction record")
	}
	return p, nil
}
