package pipeline

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkatest"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRestoresShareOffsetFetches: 64 partitions asking for their
// committed offsets at once (a generation's restores) take a few
// OffsetFetch requests, not one each, and each gets its own offset and
// metadata, or −1 where nothing was committed. At 1,024 partitions a
// request each took 3.4 s at the median to be answered.
func TestRestoresShareOffsetFetches(t *testing.T) {
	for _, g := range []string{AtLeastOnce, ExactlyOnce} {
		t.Run(g, func(t *testing.T) {
			t.Parallel()
			const parts = 64
			b, err := embedded.Start(embedded.Config{Partitions: parts, Topics: []string{"in", "out"}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(b.Close)
			cfg := testConfig(t, b, "perceptron")
			cfg.ProcessingGuarantee, cfg.Checkpoints, cfg.Metrics = g, &memCheckpoints{}, NewMetrics(nil)
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			transport, _ := cfg.Conn.Transport()
			m := &member{cfg: &cfg, client: &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: transport}}
			ctx := context.Background()
			gen, leave := joinAlone(t, b.Addr())
			for p := 0; p < parts; p += 2 {
				if err := m.commit(ctx, gen, Partition{Topic: "in", ID: p}, int64(100+p), fmt.Sprint("snap-", p), "", 0); err != nil {
					t.Fatal(err)
				}
			}
			leave()
			// The first request is held until every other partition waits
			// for the next: that one carries them all.
			requests := kafkatest.CountRequests(b.Cluster(), kmsg.OffsetFetch, func(first kmsg.Request) {
				kafkatest.WaitFor(func() bool {
					m.offsets.mu.Lock()
					defer m.offsets.mu.Unlock()
					return len(m.offsets.waiting)+offsetFetchPartitions(first) >= parts
				})
			})
			var wg sync.WaitGroup
			for p := range parts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					off, meta, err := m.committed(ctx, Partition{Topic: "in", ID: p})
					want, wantMeta := int64(100+p), fmt.Sprint("snap-", p)
					if p%2 == 1 {
						want, wantMeta = -1, ""
					}
					if err != nil || off != want || meta != wantMeta {
						t.Errorf("partition %d: %d %q %v, want %d %q", p, off, meta, err, want, wantMeta)
					}
				}()
			}
			wg.Wait()
			// One when every partition asked before the first went (the
			// sending goroutine can start that late, as under -race).
			if n := requests(); n < 1 || n > 2 {
				t.Errorf("%d OffsetFetch requests for %d partitions, want 2 at most: the first, and one for all that asked meanwhile", n, parts)
			}
		})
	}
}

// offsetFetchPartitions is how many partitions r asks for.
func offsetFetchPartitions(r kmsg.Request) int {
	req := r.(*kmsg.OffsetFetchRequest)
	n := 0
	for _, t := range req.Topics {
		n += len(t.Partitions)
	}
	for _, g := range req.Groups {
		for _, t := range g.Topics {
			n += len(t.Partitions)
		}
	}
	return n
}

// TestFirstCheckpointsAreSpread: partitions assigned together take their
// first checkpoints spread over the interval, not all at once an
// interval later (at 1,024 partitions the bursts held records back up
// to a second); none later than the interval.
func TestFirstCheckpointsAreSpread(t *testing.T) {
	const parts, interval = 1024, 10 * time.Second
	cfg := Config{CheckpointInterval: interval, DisableIdempotence: true}
	m := &member{cfg: &cfg}
	start := time.Now()
	var dues []time.Duration
	for p := range parts {
		d := m.newOutput(nil, Partition{Topic: "in", ID: p}).due(start).Sub(start)
		if d <= 0 || d > interval {
			t.Fatalf("partition %d: first checkpoint %v after assignment, want within (0, %v]", p, d, interval)
		}
		dues = append(dues, d)
	}
	slices.Sort(dues)
	gap := dues[0]
	for i := 1; i < len(dues); i++ {
		gap = max(gap, dues[i]-dues[i-1])
	}
	if gap > interval/200 {
		t.Errorf("first checkpoints %v apart at most, want ≤ %v", gap, interval/200)
	}
}
