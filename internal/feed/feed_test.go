package feed

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkatest"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

func TestProduceLoadsAFileAsJSONRecords(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 3, Topics: []string{"in"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	path := filepath.Join(t.TempDir(), "d.libsvm")
	os.WriteFile(path, []byte("3 1:0.5 4:1\n# comment\n-1 2:2\n\n{\"label\": true, \"features\": [1, 2], \"id\": \"x7\"}\n"), 0o600)
	conn := kafkaconn.Config{Brokers: []string{b.Addr()}}
	n, err := Produce(context.Background(), ProduceConfig{Conn: conn, Topic: "in", Data: path, Key: "id"})
	if err != nil || n != 3 {
		t.Fatalf("sent %d: %v", n, err)
	}
	var got []kafka.Message
	for p := range 3 {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b.Addr()}, Topic: "in", Partition: p, MaxWait: time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				break
			}
			got = append(got, m)
		}
		cancel()
		kafkatest.CloseReader(t, r)
	}
	if len(got) != 3 {
		t.Fatalf("%d records in the topic", len(got))
	}
	labels := map[string]bool{}
	for _, m := range got {
		ex, err := codec.DecodeJSON(m.Value, codec.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", m.Value, err)
		}
		labels[ex.Label] = true
		if ex.Label == "true" && string(m.Key) != "x7" {
			t.Fatalf("key %q, want the id field", m.Key)
		}
	}
	if !labels["3"] || !labels["-1"] || !labels["true"] {
		t.Fatalf("labels %v: multi-class labels must be kept as they are", labels)
	}
	if _, err := Produce(context.Background(), ProduceConfig{Conn: conn, Topic: "in", Data: "/nonexistent"}); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestTailSkipsDuplicatesAndCountsAccuracy(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 2, Topics: []string{"out"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	yes, no := true, false
	mk := func(part int32, off int64, mistake *bool) kafka.Message {
		p := codec.Prediction{Topic: "in", Partition: part, Offset: off, Predicted: 1, Learner: "x", Label: 1, Mistake: mistake}
		if mistake != nil && *mistake {
			p.Predicted = -1 // a mistake is a prediction that differs from the label
		}
		if mistake == nil {
			p.Label = 0
		}
		v, _ := codec.AppendPrediction(nil, &p)
		return kafka.Message{Key: []byte(codec.PredictionKey("in", part, off)), Value: v, Partition: int(part)}
	}
	// Partition 0: offsets 0..3 with a re-emission of 1..2 (as after a crash).
	msgs := []kafka.Message{mk(0, 0, &no), mk(0, 1, &yes), mk(0, 2, nil), mk(0, 1, &yes), mk(0, 2, nil), mk(0, 3, &no), mk(1, 0, &no)}
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Topic: "out", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond,
		Balancer: kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { p, _ := strconv.Atoi(string(m.Key[3])); return p })}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var last TailStats
	n := 0
	_, err = Tail(context.Background(), TailConfig{Conn: kafkaconn.Config{Brokers: []string{b.Addr()}}, Topic: "out", Window: 2, Limit: 5},
		func(p codec.Prediction, st TailStats) error { last = st; n++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	// 5 distinct predictions, 4 labeled, 1 mistake.
	if n != 5 || last.Predictions != 5 || last.Labeled != 4 || last.Accuracy != 0.75 {
		t.Fatalf("emitted %d, stats %+v", n, last)
	}
}

func TestProduceExamplesKeepsOrderOnOnePartition(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 3, Topics: []string{"drift"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	conn := kafkaconn.Config{Brokers: []string{b.Addr()}}
	const n = 2500 // more than one batch
	msgs := func(yield func(Message, error) bool) {
		for i := range n {
			ex := codec.Example{Label: "1", X: sparse.Vector{Idx: []uint32{1}, Val: []float64{float64(i + 1)}}}
			if !yield(Message{Example: ex, Headers: []kafka.Header{{Key: "i", Value: strconv.AppendInt(nil, int64(i), 10)}}}, nil) {
				return
			}
		}
	}
	var progressed int64
	sent, err := ProduceExamples(context.Background(), WriterConfig{Conn: conn, Topic: "drift", Balancer: OnePartition,
		Progress: func(s int64) { progressed = s }}, msgs)
	if err != nil || sent != n || progressed != n {
		t.Fatalf("sent %d (progress %d): %v", sent, progressed, err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b.Addr()}, Topic: "drift", Partition: 0, MaxWait: time.Second})
	defer kafkatest.CloseReader(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		ex, err := codec.DecodeJSON(m.Value, codec.Limits{})
		if err != nil || len(m.Headers) != 1 || string(m.Headers[0].Value) != strconv.Itoa(i) || ex.X.Val[0] != float64(i+1) {
			t.Fatalf("record %d out of order or damaged: %s %v %v", i, m.Value, m.Headers, err)
		}
	}

	// An error from the sequence stops production and is returned.
	bad := errors.New("bad record")
	_, err = ProduceExamples(context.Background(), WriterConfig{Conn: conn, Topic: "drift"},
		func(yield func(Message, error) bool) { yield(Message{}, bad) })
	if !errors.Is(err, bad) {
		t.Fatalf("got %v, want %v", err, bad)
	}
	// A cancelled context stops it too.
	cctx, stop := context.WithCancel(context.Background())
	stop()
	if _, err := ProduceExamples(cctx, WriterConfig{Conn: conn, Topic: "drift"}, msgs); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestProduceExamplesSplitsWideRecordsUnderTheBrokerLimit(t *testing.T) {
	// 1000 records of about 20 KB: one batch would be 20 MB, far over the
	// broker's 1 MiB; the writer must send them in batches it accepts.
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"wide"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	idx := make([]uint32, 1500)
	val := make([]float64, 1500)
	for i := range idx {
		idx[i], val[i] = uint32(i+1), 0.123456789+float64(i)
	}
	msgs := func(yield func(Message, error) bool) {
		for range 1000 {
			if !yield(Message{Example: codec.Example{Label: "1", X: sparse.Vector{Idx: idx, Val: val}}}, nil) {
				return
			}
		}
	}
	conn := kafkaconn.Config{Brokers: []string{b.Addr()}}
	n, err := ProduceExamples(context.Background(), WriterConfig{Conn: conn, Topic: "wide", Balancer: OnePartition}, msgs)
	if err != nil || n != 1000 {
		t.Fatalf("sent %d: %v", n, err)
	}
	// With a batch limit above the broker's, the refusal is one short line.
	_, err = ProduceExamples(context.Background(), WriterConfig{Conn: conn, Topic: "wide", Balancer: OnePartition, MaxBatchBytes: 64 << 20}, msgs)
	if err == nil || !strings.Contains(err.Error(), "records refused, the first:") || len(err.Error()) > 400 {
		t.Fatalf("over-limit batch: %v", err)
	}
}

func TestProduceSendsEventsAndCSVRowsAsTheyAre(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"ev", "csv"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	dir := t.TempDir()
	events := `{"id":"e1","age":39,"w":"State-gov","income":"<=50K"}` + "\n" + `{"id":"e2","age":null,"tags":["a"],"income":">50K"}` + "\n"
	os.WriteFile(filepath.Join(dir, "e.jsonl"), []byte(events), 0o600)
	os.WriteFile(filepath.Join(dir, "d.csv"), []byte("id,age,w,income\ne1,39,State-gov,<=50K\ne2,,Private,>50K\n"), 0o600)
	conn := kafkaconn.Config{Brokers: []string{b.Addr()}}
	read := func(topic string) []kafka.Message {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b.Addr()}, Topic: topic, Partition: 0, MaxWait: time.Second})
		defer kafkatest.CloseReader(t, r)
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		var got []kafka.Message
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				return got
			}
			got = append(got, m)
		}
	}
	if n, err := Produce(context.Background(), ProduceConfig{Conn: conn, Topic: "ev", Data: filepath.Join(dir, "e.jsonl"), Key: "id"}); err != nil || n != 2 {
		t.Fatalf("events: sent %d: %v", n, err)
	}
	got := read("ev")
	if len(got) != 2 || string(got[0].Value)+"\n"+string(got[1].Value)+"\n" != events || string(got[1].Key) != "e2" {
		t.Fatalf("events in the topic: %v", got)
	}
	if n, err := Produce(context.Background(), ProduceConfig{Conn: conn, Topic: "csv", Data: filepath.Join(dir, "d.csv"), Key: "id"}); err != nil || n != 2 {
		t.Fatalf("csv: sent %d: %v", n, err)
	}
	got = read("csv")
	if len(got) != 2 || string(got[0].Value) != `{"id":"e1","age":39,"w":"State-gov","income":"<=50K"}` ||
		string(got[1].Value) != `{"id":"e2","age":null,"w":"Private","income":">50K"}` || string(got[0].Key) != "e1" {
		t.Fatalf("csv rows in the topic: %v", got)
	}
	// A broken event line is an error naming it.
	os.WriteFile(filepath.Join(dir, "bad.jsonl"), []byte(`{"a":1}`+"\n"+`{"a":`+"\n"), 0o600)
	if _, err := Produce(context.Background(), ProduceConfig{Conn: conn, Topic: "ev", Data: filepath.Join(dir, "bad.jsonl")}); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("broken event: %v", err)
	}
}
