package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/internal/model"
)

// refusingRestores is memCheckpoints whose Restore of partition 0 fails
// with err, the first fails times (fails < 0: always).
type refusingRestores struct {
	memCheckpoints
	err   error
	mu    sync.Mutex
	fails int
	calls int // Restores of partition 0
}

func (c *refusingRestores) Restore(ctx context.Context, p Partition, committed int64, meta string) (*State, error) {
	if p.ID == 0 {
		c.mu.Lock()
		c.calls++
		fail := c.fails != 0
		if c.fails > 0 {
			c.fails--
		}
		c.mu.Unlock()
		if fail {
			return nil, c.err
		}
	}
	return c.memCheckpoints.Restore(ctx, p, committed, meta)
}

func (c *refusingRestores) restores() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// TestRestoreIsRetriedUntilTheStoreAnswers: a checkpoint store that
// fails for a while (a broker restarting under the service) delays the
// partition, it does not cost it its service until the next rebalance:
// the restore is tried again, the partition halted in /readyz meanwhile,
// and then served. Before, a single failure held the partition unserved
// for as long as its generation lasted; a broker restart in the
// broker-kill test left a partition unserved that way.
func TestRestoreIsRetriedUntilTheStoreAnswers(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	cfg := testConfig(t, b, "perceptron")
	cfg.Metrics = NewMetrics(nil)
	store := &refusingRestores{err: errors.New("checkpoint topic: [-1] Unknown: an unexpected server error occurred"), fails: 2}
	cfg.Checkpoints = store
	runMember(t, cfg)
	waitFor(t, "the first refusal to show in /readyz", 20*time.Second, func() bool {
		why := cfg.Metrics.Degradations()
		return len(why) == 1 && strings.Contains(why[0], "partition 0") && strings.Contains(why[0], "cannot restore the partition's model") &&
			strings.Contains(why[0], "Unknown")
	})
	waitFor(t, "all four partitions served", 20*time.Second, cfg.Metrics.Ready)
	if n := store.restores(); n != 3 {
		t.Fatalf("%d restores of partition 0, want two refused and one that answered", n)
	}
	produce(t, b, "in", []kafka.Message{{Value: goodRecord(1)}}, toPartition(0))
	if got := readTopic(t, b, "out", 1, 20*time.Second); len(got) != 1 || got[0].partition != 0 {
		t.Fatalf("predictions %v, want one from partition 0", got)
	}
	if why := cfg.Metrics.Degradations(); len(why) != 0 {
		t.Fatalf("/readyz still says %q", why)
	}
}

// TestRestoreNeedingAnOperatorIsNotRetried: a refusal no retry can cure
// (a snapshot of another configuration) holds the partition, unserved
// and named in /readyz, without reading the store again and again.
func TestRestoreNeedingAnOperatorIsNotRetried(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	cfg := testConfig(t, b, "perceptron")
	cfg.Metrics = NewMetrics(nil)
	store := &refusingRestores{err: fmt.Errorf("snapshot of another learner: %w", ErrNeedsOperator), fails: -1}
	cfg.Checkpoints = store
	runMember(t, cfg)
	waitFor(t, "the refusal to show in /readyz", 20*time.Second, func() bool {
		why := cfg.Metrics.Degradations()
		return len(why) == 1 && strings.Contains(why[0], "partition 0") && strings.Contains(why[0], "another learner")
	})
	waitFor(t, "the three other partitions served", 20*time.Second, func() bool { return gaugeValue(cfg.Metrics.ReadyGauge) == 3 })
	time.Sleep(2 * time.Second) // four retries' worth at the first pauses
	if n := store.restores(); n != 1 || cfg.Metrics.Ready() {
		t.Fatalf("%d restores of partition 0 (ready %v), want one and the partition held", n, cfg.Metrics.Ready())
	}
}

// endingRestores ends the restore's context from inside Restore, as a
// generation ending at that moment does, and finds no checkpoint.
type endingRestores struct{ end func() }

func (c endingRestores) Restore(context.Context, Partition, int64, string) (*State, error) {
	c.end()
	return nil, nil
}

func (endingRestores) Save(context.Context, Partition, int32, *State) (string, int, error) {
	return "", 0, nil
}

func (endingRestores) Committed(context.Context, Partition, string) {}

// TestFailedRestoreLeavesTheKeptModel: a model kept in memory across a
// rebalance (no checkpoint store) is still there for the next try when
// the restore fails after taking it (here the generation ends while it
// asks where the label topic stands). It was lost: the next assignment
// started a new model.
func TestFailedRestoreLeavesTheKeptModel(t *testing.T) {
	b := startBroker(t, "in", "out", "in.dlq", "labels")
	cfg := testConfig(t, b, "perceptron")
	cfg.LabelTopic = "labels"
	ctx, end := context.WithCancel(context.Background())
	defer end()
	cfg.Checkpoints = endingRestores{end: end}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	transport, _ := cfg.Conn.Transport()
	m := &member{cfg: &cfg, client: &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: transport}}
	p := Partition{Topic: "in", ID: 0}
	mod, err := model.New(cfg.ModelConfig(0))
	if err != nil {
		t.Fatal(err)
	}
	// The group's committed offset, where the kept model stands.
	g, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{ID: "g", Brokers: []string{b.Addr()}, Topics: []string{"in"},
		HeartbeatInterval: 200 * time.Millisecond, SessionTimeout: 3 * time.Second, RebalanceTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	gen, err := g.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.commit(context.Background(), gen, p, 5, "", "", -1); err != nil {
		t.Fatal(err)
	}
	g.Close()
	kept := &State{Model: mod, NextOffset: 5}
	m.retain(p, kept)
	w := &worker{m: m, part: p, log: cfg.Log}
	if err := w.restore(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("restore: %v, want the generation's end", err)
	}
	if got := m.retained(p); got != kept {
		t.Fatalf("kept model after a failed restore: %p, want %p", got, kept)
	}
}
