package pipeline

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkatest"
)

// eosMember is a member under exactly-once on broker addr, with its
// transactional producer, outside Run: for driving the protocol by hand.
func eosMember(t *testing.T, cfg Config) *member {
	t.Helper()
	cfg.ProcessingGuarantee, cfg.Checkpoints, cfg.Metrics = ExactlyOnce, &memCheckpoints{}, NewMetrics(nil)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	transport, _ := cfg.Conn.Transport()
	m := &member{cfg: &cfg, client: &kafka.Client{Addr: kafka.TCP(cfg.Conn.Brokers...), Transport: transport}}
	m.txn = newMemberTxn(m)
	return m
}

// joinAlone joins group g as the only member and returns its generation
// and a function that leaves the group.
func joinAlone(t *testing.T, addr string) (*kafka.Generation, func()) {
	t.Helper()
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{ID: "g", Brokers: []string{addr}, Topics: []string{"in"},
		HeartbeatInterval: 200 * time.Millisecond, SessionTimeout: 3 * time.Second, RebalanceTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	gen, err := cg.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return gen, func() { cg.Close() }
}

// TestStaleGenerationTransactionIsRefused: a zombie — a member whose
// generation the group has left behind, its transactional id its own and
// so fencing no one — writes a prediction in its transaction and tries to
// commit it with its offsets. The coordinator refuses the generation's
// TxnOffsetCommit; the round aborts the transaction: the prediction never
// becomes visible to read_committed consumers, the offset is not
// committed, and the abort is counted as fenced.
func TestStaleGenerationTransactionIsRefused(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	ctx := context.Background()
	cfg := testConfig(t, b, "perceptron")
	zombie := eosMember(t, cfg)
	g1, leave := joinAlone(t, b.Addr())
	leave() // a newer generation takes the partitions over
	cfg.ProcessingGuarantee, cfg.Checkpoints = ExactlyOnce, &memCheckpoints{}
	_, assigned := runMember(t, cfg)
	waitFor(t, "the new member to own the partitions", 30*time.Second, func() bool {
		g, parts := assigned()
		return g > g1.ID && len(parts) == 4
	})

	mt := zombie.txn
	if err := mt.ensure(ctx, g1.ID); err != nil {
		t.Fatal(err)
	}
	o := &exactlyOnce{m: zombie, mt: mt, gen: g1}
	out := &producer{client: zombie.client, topic: "out", limit: 1 << 20}
	var buf []byte
	if err := out.produce(ctx, 0, []kafka.Message{{Key: []byte("in/0/0"), Value: []byte(`{"zombie":true}`)}}, &buf, o); err != nil {
		t.Fatal(err)
	}
	err := mt.join(ctx, o, joinReq{gen: g1, offsets: map[string][]kafka.TxnOffsetCommit{"in": {{Partition: 0, Offset: 7, Metadata: "zombie"}}}})
	if !errors.Is(err, errFenced) {
		t.Fatalf("the zombie's commit: %v, want fenced", err)
	}
	if off := committedOffset(t, b, 0); off == 7 {
		t.Fatal("the zombie's offset was committed")
	}
	if n := len(readFetched(t, b.Addr(), "out", 0, 1, true, 5*time.Second)); n != 1 {
		t.Fatalf("read_uncommitted: %d records, want the zombie's 1", n)
	}
	if n := len(readFetched(t, b.Addr(), "out", 0, 1, false, 2*time.Second)); n != 0 {
		t.Fatalf("read_committed: %d records, want none of the zombie's", n)
	}
	if f := testutil.ToFloat64(zombie.cfg.Metrics.Transactions.WithLabelValues("aborted", "fenced")); f != 1 {
		t.Errorf("%v fenced aborts counted, want 1", f)
	}
}

// TestTakeoverWaitsForTheOldOwnersTransaction: a partition's new owner
// reads the committed offset while the old owner's transaction holds new
// offsets for it (committed to the transaction, not ended): the read
// waits for the transaction's end and returns the offset it committed,
// rather than the one before it — from which the records in between
// would be predicted twice.
func TestTakeoverWaitsForTheOldOwnersTransaction(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	ctx := context.Background()
	cfg := testConfig(t, b, "perceptron")
	old := eosMember(t, cfg)
	gen, leave := joinAlone(t, b.Addr())
	defer leave()
	// The broker holds the old owner's EndTxn (its offsets are in the
	// transaction, which is not ended) until release.
	inTxn, release := make(chan struct{}), make(chan struct{})
	c := b.Cluster()
	c.ControlKey(int16(kmsg.EndTxn), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		if req := kreq.(*kmsg.EndTxnRequest); !req.Commit {
			c.KeepControl()
			return nil, nil, false
		}
		close(inTxn)
		c.SleepControl(func() { <-release })
		return nil, nil, false
	})
	if err := old.txn.ensure(ctx, gen.ID); err != nil {
		t.Fatal(err)
	}
	o := &exactlyOnce{m: old, mt: old.txn, gen: gen}
	committed := make(chan error, 1)
	go func() {
		committed <- old.txn.join(ctx, o, joinReq{gen: gen, offsets: map[string][]kafka.TxnOffsetCommit{"in": {{Partition: 0, Offset: 42, Metadata: "snap"}}}})
	}()
	<-inTxn
	next := eosMember(t, cfg)
	type answer struct {
		off  int64
		meta string
		err  error
	}
	read := make(chan answer, 1)
	go func() {
		off, meta, err := next.committed(ctx, Partition{Topic: "in", ID: 0})
		read <- answer{off, meta, err}
	}()
	select {
	case a := <-read:
		t.Fatalf("read %d %q (%v) while the transaction holding the partition's offsets was open", a.off, a.meta, a.err)
	case <-time.After(time.Second):
	}
	close(release)
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-read:
		if a.err != nil || a.off != 42 || a.meta != "snap" {
			t.Fatalf("read %d %q (%v), want the transaction's 42 \"snap\"", a.off, a.meta, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the read did not end with the transaction")
	}
}

// TestCommitIsDueAfterTheMembersLastRound: under exactly-once a partition
// that sat out the member's rounds (nothing to commit then) is due an
// interval after the last round, not after its own old commit — else each
// such partition opened a round as soon as a record came (1,024
// partitions: 8.9 rounds a second instead of 2).
func TestCommitIsDueAfterTheMembersLastRound(t *testing.T) {
	cfg := Config{CommitInterval: 500 * time.Millisecond, CheckpointInterval: 5 * time.Second}
	m := &member{cfg: &cfg}
	m.txn = &memberTxn{m: m}
	o := &exactlyOnce{m: m, mt: m.txn}
	own := time.Now().Add(-10 * time.Second)
	if got := o.due(own); !got.Equal(own.Add(cfg.CommitInterval)) {
		t.Errorf("before any round: due %v, want its own commit + interval", got)
	}
	round := time.Now().Add(-100 * time.Millisecond)
	m.txn.ended.Store(round.UnixNano())
	if got := o.due(own); !got.Equal(time.Unix(0, round.UnixNano()).Add(cfg.CommitInterval)) {
		t.Errorf("after a round 100 ms ago: due %v, want the round + interval", got)
	}
	if got := (&atLeastOnce{m: m}).due(own); !got.Equal(own.Add(cfg.CheckpointInterval)) {
		t.Errorf("at-least-once: due %v, want its own commit + checkpoint interval", got)
	}
}

// After a round every worker adds its output partition to the new
// transaction at once: the adds asked for while one request is under way
// go together in the next, not one request an output partition (1,024 a
// round at 1,024 partitions). Each partition is added, once.
func TestOutputPartitionsAreAddedTogether(t *testing.T) {
	const parts = 64
	b, err := embedded.Start(embedded.Config{Partitions: parts, Topics: []string{"in", "out"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	ctx := context.Background()
	c := b.Cluster()
	var requests, named atomic.Int32
	var mt *memberTxn
	c.ControlKey(int16(kmsg.AddPartitionsToTxn), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if requests.Add(1) == 1 {
			// Hold the first request until every other add has asked: on
			// a loaded machine the goroutines start slower than a request
			// returns, and the count would measure the scheduler.
			kafkatest.WaitFor(func() bool {
				mt.mu.Lock()
				defer mt.mu.Unlock()
				return mt.toAdd != nil && len(mt.toAdd.tps) == parts-1
			})
		}
		for _, tp := range kreq.(*kmsg.AddPartitionsToTxnRequest).Topics {
			named.Add(int32(len(tp.Partitions)))
		}
		return nil, nil, false
	})
	m := eosMember(t, testConfig(t, b, "perceptron"))
	mt = m.txn
	if err := mt.ensure(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, parts)
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- mt.add(ctx, topicPartition{"out", p})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(mt.t.added); n != parts {
		t.Fatalf("%d output partitions added, want %d", n, parts)
	}
	if named.Load() != parts {
		t.Errorf("the requests named %d partitions, want each of the %d once", named.Load(), parts)
	}
	if r := requests.Load(); r != 2 {
		t.Errorf("%d AddPartitionsToTxn requests for %d output partitions added at once, want 2: the first, and one for all asked meanwhile", r, parts)
	}
}
