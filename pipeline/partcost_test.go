package pipeline

import (
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus/testutil"
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

// TestSpareArenasOutliveCollections: an arena a flush gave back is the
// next partition's, even after collections (a sync.Pool gave them to the
// collector, and their fresh replacements' page faults cost 0.13 s of
// CPU a million records at 1,024 partitions); and the member keeps no
// more than one a partition.
func TestSpareArenasOutliveCollections(t *testing.T) {
	var s spareArenas
	a := make([]byte, 0, 9<<10)
	s.put(a, 2)
	runtime.GC()
	runtime.GC()
	got := s.get()
	if cap(got) != cap(a) || unsafe.SliceData(got) != unsafe.SliceData(a) {
		t.Fatalf("after two collections got an arena of %d bytes at %p, want the one put back (%p)", cap(got), unsafe.SliceData(got), unsafe.SliceData(a))
	}
	if s.get() != nil {
		t.Error("a second get found an arena, but one was kept")
	}
	for range 5 {
		s.put(make([]byte, 0, 1<<10), 3)
	}
	if n := len(s.free); n != 3 {
		t.Errorf("%d arenas kept for 3 partitions, want 3", n)
	}
}

// TestPartitionCostsOneGoroutine: a member serving 72 partitions runs one
// goroutine more for each partition beyond 8, its worker, besides those
// of its connections (at most requestsInFlight in use at once, about 100
// sockets at 1,024 partitions). A worker's context derived from kafka-go's
// generation context cost a second one: the context package watches a
// context of a kind it does not know with a goroutine.
func TestPartitionCostsOneGoroutine(t *testing.T) {
	const few, many = 8, 72
	per := float64(goroutinesServing(t, many)-goroutinesServing(t, few)) / (many - few)
	if per > 1.25 {
		t.Errorf("%.2f goroutines a partition, want 1 (the worker's)", per)
	}
}

// goroutinesServing runs a member over a topic of n partitions until it
// serves them all, and returns how many goroutines the process then runs
// that are not the broker's or a connection's.
func goroutinesServing(t *testing.T, n int) int {
	b, err := embedded.Start(embedded.Config{Partitions: n, Topics: []string{"in", "out", "in.dlq"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := testConfig(t, b, "perceptron")
	cfg.Metrics = NewMetrics(nil)
	stop, _ := runMember(t, cfg)
	defer stop()
	waitFor(t, "every partition served", 30*time.Second, func() bool {
		return testutil.ToFloat64(cfg.Metrics.ReadyGauge) == float64(n)
	})
	time.Sleep(200 * time.Millisecond) // a few fetches: any goroutine they start
	var dump strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&dump, 1); err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, g := range strings.Split(dump.String(), "\n\n")[1:] {
		var k int
		if _, err := fmt.Sscanf(g, "%d @", &k); err != nil {
			continue
		}
		if !strings.Contains(g, "kfake.") && !strings.Contains(g, "kafka-go.(*conn)") && !strings.Contains(g, "net.(*conn)") {
			count += k
		}
	}
	return count
}
