package feed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn/kafkaconntest"
)

// writePredictions writes n labeled predictions of input partition 0 to
// partition 0 of topic, the i-th with margin m(i), and then junk records.
func writePredictions(t *testing.T, addr, topic string, n int, margin func(int) float64, junk ...string) {
	t.Helper()
	var msgs []kafka.Message
	for i := range n {
		f := margin(i)
		pred := -1
		if f > 0 {
			pred = 1
		}
		p := codec.Prediction{Topic: "in", Partition: 0, Offset: int64(i), Predicted: pred, Margin: f, Label: -1, Learner: "x"}
		mistake := -f >= 0 // the learner's y·f ≤ 0, as the service wrote it before the rule
		p.Mistake = &mistake
		v, _ := codec.AppendPrediction(nil, &p)
		msgs = append(msgs, kafka.Message{Value: v})
	}
	for _, j := range junk {
		msgs = append(msgs, kafka.Message{Value: []byte(j)})
	}
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond,
		Balancer: kafka.BalancerFunc(func(kafka.Message, ...int) int { return 0 })}
	defer w.Close()
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
}

// TestTailRulesStartAndEnd: a margin of exactly 0 predicts −1, right for
// label −1; records that are not predictions are counted and reported;
// --from -N starts N records before the end; ExitAtEnd returns at the end.
func TestTailRulesStartAndEnd(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 2, Topics: []string{"out"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// Margins 0, 1, -1, 0, 1, ... with label −1: 0 and −1 are right.
	writePredictions(t, b.Addr(), "out", 9, func(i int) float64 { return float64([]int{0, 1, -1}[i%3]) },
		`{"label": 1, "features": [1]}`, "not json")
	conn := kafkaconn.Config{Brokers: []string{b.Addr()}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var skipped []int64
	var seen []int64
	st, err := Tail(ctx, TailConfig{Conn: conn, Topic: "out", ExitAtEnd: true,
		Skipped: func(n uint64, _ int, off int64, err error) { skipped = append(skipped, off) }},
		func(p codec.Prediction, _ TailStats) error { seen = append(seen, p.Offset); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.Predictions != 9 || st.Labeled != 9 || st.Skipped != 2 || len(skipped) != 2 || skipped[0] != 9 {
		t.Fatalf("stats %+v, skipped at %v", st, skipped)
	}
	if want := 6.0 / 9; math.Abs(st.Accuracy-want) > 1e-12 {
		t.Fatalf("accuracy %v, want %v: a margin of 0 predicts −1, right for label −1", st.Accuracy, want)
	}

	// The last 5 records: predictions 6, 7, 8 and the two junk records.
	seen = nil
	st, err = Tail(ctx, TailConfig{Conn: conn, Topic: "out", From: "-5", ExitAtEnd: true},
		func(p codec.Prediction, _ TailStats) error { seen = append(seen, p.Offset); return nil })
	if err != nil || len(seen) != 3 || seen[0] != 6 || st.Skipped != 2 {
		t.Fatalf("--from -5: %v, saw %v, stats %+v", err, seen, st)
	}
	seen = nil
	if _, err = Tail(ctx, TailConfig{Conn: conn, Topic: "out", From: "4", ExitAtEnd: true},
		func(p codec.Prediction, _ TailStats) error { seen = append(seen, p.Offset); return nil }); err != nil || len(seen) != 5 || seen[0] != 4 {
		t.Fatalf("--from 4: %v, saw %v", err, seen)
	}
	// A time after every record: nothing to read, and the tail ends.
	seen = nil
	if _, err = Tail(ctx, TailConfig{Conn: conn, Topic: "out", From: time.Now().Add(time.Hour).Format(time.RFC3339), ExitAtEnd: true},
		func(p codec.Prediction, _ TailStats) error { seen = append(seen, p.Offset); return nil }); err != nil || len(seen) != 0 {
		t.Fatalf("--from in the future: %v, saw %v", err, seen)
	}
}

// TestTailDoesNotCreateAMissingTopic: the embedded broker creates topics
// on demand; a tail of a typo must fail instead of leaving one behind.
// TestTailClosesItsConnections: however a tail ends (the log's end, its
// limit, the caller's error), its readers have stopped and its
// connections are closed when it returns.
func TestTailClosesItsConnections(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 3, Topics: []string{"out"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	writePredictions(t, b.Addr(), "out", 30, func(i int) float64 { return float64(i%3 - 1) })
	conn := kafkaconn.Config{Brokers: []string{b.Addr()}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stop := errors.New("enough")
	for _, c := range []struct {
		name string
		cfg  TailConfig
		emit func(codec.Prediction, TailStats) error
		want error
	}{
		{"at the end", TailConfig{ExitAtEnd: true}, func(codec.Prediction, TailStats) error { return nil }, nil},
		{"at the limit, following", TailConfig{Limit: 5}, func(codec.Prediction, TailStats) error { return nil }, nil},
		{"on the caller's error, following", TailConfig{}, func(codec.Prediction, TailStats) error { return stop }, stop},
	} {
		before := kafkaconntest.Open()
		c.cfg.Conn, c.cfg.Topic = conn, "out"
		if _, err := Tail(ctx, c.cfg, c.emit); !errors.Is(err, c.want) {
			t.Fatalf("%s: %v, want %v", c.name, err, c.want)
		}
		kafkaconntest.Closed(t, before, 5*time.Second)
	}
}

func TestTailDoesNotCreateAMissingTopic(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"out"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	conn := kafkaconn.Config{Brokers: []string{b.Addr()}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = Tail(ctx, TailConfig{Conn: conn, Topic: "nosuchtopic"}, func(codec.Prediction, TailStats) error { return nil })
	if !errors.Is(err, fetch.ErrNoTopic) || !strings.Contains(err.Error(), "nosuchtopic") {
		t.Fatalf("got %v, want a no-such-topic error", err)
	}
	d, _ := conn.Dialer()
	c, err := d.DialContext(ctx, "tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ps, err := c.ReadPartitions()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Topic == "nosuchtopic" {
			t.Fatal("the tail created the topic")
		}
	}
}

// One rule for right and wrong: sign(f) against ±1 labels (a zero margin
// predicts −1), the predicted class against the true class with many
// classes; unlabeled predictions are neither.
func TestRight(t *testing.T) {
	for _, c := range []struct {
		p         codec.Prediction
		right, ok bool
	}{
		{codec.Prediction{Predicted: -1, Margin: 0, Label: -1}, true, true},
		{codec.Prediction{Predicted: -1, Margin: 0, Label: 1}, false, true},
		{codec.Prediction{Predicted: 1, Margin: 0.5}, false, false},
		{codec.Prediction{Predicted: 2, Class: "c", LabelClass: "c"}, true, true},
		{codec.Prediction{Predicted: 0, Class: "a", LabelClass: "c"}, false, true},
		{codec.Prediction{Predicted: 0, Class: "a"}, false, false},
	} {
		if r, ok := Right(c.p); r != c.right || ok != c.ok {
			t.Errorf("%+v: right %v ok %v, want %v %v", c.p, r, ok, c.right, c.ok)
		}
	}
}

// TestTailReadsCommitted: the predictions of an aborted transaction (what
// an exactly-once service leaves when it crashes mid-transaction) are not
// read, nor are transaction markers shown as records; with
// ReadUncommitted they are read.
func TestTailReadsCommitted(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"out"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pred := func(off int64, margin float64) []byte {
		p := codec.Prediction{Topic: "in", Partition: 0, Offset: off, Predicted: 1, Margin: margin, Learner: "x"}
		v, _ := codec.AppendPrediction(nil, &p)
		return v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Offsets 0–1 aborted (margin 9), then 0–2 committed (margin 1).
	if err := embedded.ProduceTransaction(ctx, b.Addr(), "out", 0, "t", [][]byte{pred(0, 9), pred(1, 9)}, false); err != nil {
		t.Fatal(err)
	}
	if err := embedded.ProduceTransaction(ctx, b.Addr(), "out", 0, "t", [][]byte{pred(0, 1), pred(1, 1), pred(2, 1)}, true); err != nil {
		t.Fatal(err)
	}
	for _, uncommitted := range []bool{false, true} {
		var margins []float64
		st, err := Tail(ctx, TailConfig{Conn: kafkaconn.Config{Brokers: []string{b.Addr()}}, Topic: "out", ExitAtEnd: true, ReadUncommitted: uncommitted},
			func(p codec.Prediction, _ TailStats) error { margins = append(margins, p.Margin); return nil })
		if err != nil {
			t.Fatal(err)
		}
		want, dups := []float64{1, 1, 1}, uint64(0)
		if uncommitted {
			// The aborted ones come first; the committed 0 and 1 repeat them.
			want, dups = []float64{9, 9, 1}, 2
		}
		if fmt.Sprint(margins) != fmt.Sprint(want) || st.Duplicates != dups || st.Skipped != 0 {
			t.Errorf("uncommitted %v: margins %v, %d duplicates, %d skipped; want %v, %d, 0", uncommitted, margins, st.Duplicates, st.Skipped, want, dups)
		}
	}
}
