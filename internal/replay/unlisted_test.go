package replay

import (
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/model"
)

// TestUnlistedLabelsAreBadRecords: with --positive 3 --negative 8 a record
// of label 5, a LIBSVM record or an event, is a bad record (bad_label), not
// played, as eval skips it and the service dead-letters it; 3 and 8 are
// played as ±1. (It was played unlabeled.)
func TestUnlistedLabelsAreBadRecords(t *testing.T) {
	labels := codec.LabelMap{Positive: []string{"3"}, Negative: []string{"8"}}
	for _, events := range []bool{false, true} {
		d, err := newDecoder(Source{Labels: labels}, Config{Model: model.Config{Events: events, Labels: labels}})
		if err != nil {
			t.Fatal(err)
		}
		msg := func(label string) kafka.Message {
			if events {
				return kafka.Message{Value: []byte(`{"x":1,"label":` + label + `}`)}
			}
			return kafka.Message{Value: []byte(label + " 1:1")}
		}
		if r := d.decode(msg("5")); r.Bad != string(codec.ReasonBadLabel) {
			t.Errorf("events %v: label 5 gives %+v, want a bad_label record", events, r)
		}
		if r := d.decode(msg("3")); r.Bad != "" || !events && r.Y != 1 {
			t.Errorf("events %v: label 3 gives %+v", events, r)
		}
		if r := d.decode(msg("8")); r.Bad != "" || !events && r.Y != -1 {
			t.Errorf("events %v: label 8 gives %+v", events, r)
		}
	}
}
