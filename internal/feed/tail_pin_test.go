package feed

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/golden"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
)

// TestTailPinned pins every figure Tail emits, prediction by prediction,
// and returns: input partitions of two topics interleaved and met out of
// order, re-emitted predictions, unlabeled ones, classes, records that
// are not predictions, an empty partition, a limit and a start.
func TestTailPinned(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 2, Topics: []string{"out"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var msgs []kafka.Message
	add := func(p codec.Prediction) {
		v, _ := codec.AppendPrediction(nil, &p)
		msgs = append(msgs, kafka.Message{Value: v})
	}
	sources := []struct {
		topic string
		part  int32
	}{{"in", 2}, {"in", 0}, {"other", 1}, {"in", 1}, {"a", 5}}
	for i := range 40 {
		s := sources[(i*7)%len(sources)]
		off := int64(i / 2)
		p := codec.Prediction{Topic: s.topic, Partition: s.part, Offset: off, Predicted: []int{1, -1}[i%2], Margin: float64(i%5) - 2, Learner: "x", Support: i}
		switch {
		case i%6 == 5: // unlabeled
		case s.topic == "a":
			p.Class, p.LabelClass = []string{"u", "v"}[i%2], []string{"u", "v", "w"}[i%3]
		default:
			p.Label = []int{1, -1, -1}[i%3]
		}
		add(p)
		if i%9 == 8 { // a re-emission, as after a crash
			add(p)
		}
		if i%13 == 12 {
			msgs = append(msgs, kafka.Message{Value: []byte(`{"label": 1, "features": [1]}`)})
		}
	}
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Topic: "out", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond,
		Balancer: kafka.BalancerFunc(func(kafka.Message, ...int) int { return 0 })}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	conn := kafkaconn.Config{Brokers: []string{b.Addr()}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	for _, cfg := range []TailConfig{
		{Window: 4, ExitAtEnd: true},
		{Window: 3, Limit: 11},
		{From: "17", ExitAtEnd: true},
	} {
		cfg.Conn, cfg.Topic = conn, "out"
		cfg.Skipped = func(n uint64, partition int, offset int64, err error) {
			fmt.Fprintf(&out, "skipped %d: %d/%d: %v\n", n, partition, offset, err)
		}
		fmt.Fprintf(&out, "== from %q window %d limit %d\n", cfg.From, cfg.Window, cfg.Limit)
		st, err := Tail(ctx, cfg, func(p codec.Prediction, st TailStats) error {
			fmt.Fprintf(&out, "%s/%d@%d: %+v\n", p.Topic, p.Partition, p.Offset, st)
			return nil
		})
		fmt.Fprintf(&out, "returned %+v, %v\n", st, err)
	}
	golden.Check(t, "tail.golden", out.Bytes())
}
