package pipeline

import (
	"context"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
)

// TestFlushedPartitionHoldsNoArena: a flush that wrote every prediction
// of a partition gives its arena back, so that a partition waiting for
// records holds none (kept, they were 20 MB at 1,024 partitions), and the
// predictions are on the output topic.
func TestFlushedPartitionHoldsNoArena(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"out"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	cfg := testConfig(t, b, "perceptron")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tr := &kafka.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	out := &producer{client: &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: tr}, topic: "out", limit: 1 << 20, q: newSendQueue()}
	w := &worker{m: &member{cfg: &cfg, out: out, dlqLimit: 1 << 20}, part: Partition{Topic: "in", ID: 0}, label: "0", log: cfg.Log, bad: cfg.Log}
	const n = 100
	for off := range int64(n) {
		start := len(w.arena)
		w.arena = codec.AppendPredictionKey(w.arena, "in", 0, off)
		key := len(w.arena)
		w.arena = append(w.arena, `{"predicted":1}`...)
		w.preds = append(w.preds, pred{key: start, value: key, end: len(w.arena)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.flush(ctx); err != nil {
		t.Fatal(err)
	}
	if c := cap(w.arena); c != 0 {
		t.Errorf("the flushed partition holds a %d-byte arena, want none", c)
	}
	if recs := readFetched(t, b.Addr(), "out", 0, n, true, 10*time.Second); len(recs) != n {
		t.Errorf("%d predictions written, want %d", len(recs), n)
	}
}
