package pipeline

import (
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
)

// TestUnlistedLabelsAreDeadLettered: with --positive 3 --negative 8, a
// record of label 5 is dead-lettered (bad_label), as eval skips it and
// replay counts it as bad; records of 3 and 8, and unlabeled ones, are
// predicted. (It was predicted and not learned, nowhere counted.)
func TestUnlistedLabelsAreDeadLettered(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	cfg := testConfig(t, b, "perceptron")
	cfg.Model.Labels = codec.LabelMap{Positive: []string{"3"}, Negative: []string{"8"}}
	runMember(t, cfg)
	var msgs []kafka.Message
	for i, v := range []string{"3 1:1", "8 2:1", "5 1:1 2:1", "1:0.5 2:0.5", "3 1:0.9"} {
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprint("r", i)), Value: []byte(v)})
	}
	produce(t, b, "in", msgs, kafka.BalancerFunc(func(kafka.Message, ...int) int { return 0 }))
	preds := readTopic(t, b, "out", 4, 30*time.Second)
	dead := readTopic(t, b, "in.dlq", 1, 30*time.Second)
	if len(preds) != 4 || len(dead) != 1 || string(dead[0].msg.Key) != "r2" {
		t.Fatalf("5 inputs gave %d predictions and %d dead letters", len(preds), len(dead))
	}
	for _, h := range dead[0].msg.Headers {
		if h.Key == HeaderError && string(h.Value) != string(codec.ReasonBadLabel) {
			t.Errorf("reason %q", h.Value)
		}
	}
}
