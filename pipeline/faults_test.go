package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
	"github.com/streamlearner/streamlearner/internal/model"
)

// The fault suite: a broker that misbehaves as Kafka brokers do (kfake's
// Fault: errors a real broker answers, timeouts answered after the work
// was done, leaders and coordinators moving), one fault at a time, under
// both guarantees. Each run checks what the service promises: a
// read_committed consumer sees every input record's prediction exactly
// once under exactly-once, and under idempotent at-least-once (the
// default) once too, since no member crashes here; each prediction is the
// one an uninterrupted run makes; and every partition is served again once
// the fault ends.

// faultRun is one run of the suite: records spread over the input's four
// partitions, a member under guarantee, and inject, called once the first
// predictions are committed (so that the fault lands mid-stream), which
// installs the fault and returns a function that waits for it to have
// done its work and removes it.
type faultRun struct {
	guarantee string
	brokers   int
	records   int
	inject    func(t *testing.T, c *kfake.Cluster) (ended func())
	// early installs the fault before the member starts, for the
	// requests of an assignment (coordinator look-ups, joins, producer
	// ids, committed offsets).
	early bool
	// dups allows predictions written twice (at-least-once after a
	// rebalance the fault caused).
	dups bool
	// produceFirst writes the rest of the records before the fault is
	// installed, for a fault the test's own writer would meet (Metadata
	// names no topic to spare).
	produceFirst bool
	// edit adjusts the member's configuration.
	edit func(*Config)
}

// faultMsgs are the suite's input records: labelled, a mix of sparse
// features, to partition i mod 4.
func faultMsgs(n int) []kafka.Message {
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		y := 1 - 2*(i%3%2)
		msgs[i] = kafka.Message{Partition: i % 4, Value: fmt.Appendf(nil, `{"label": %d, "features": {"1": %d, "%d": 1, "%d": 0.5}}`, y, y, 2+i%7, 9+i%5)}
	}
	return msgs
}

func (r faultRun) run(t *testing.T) *Metrics {
	t.Helper()
	b, err := embedded.Start(embedded.Config{Partitions: 4, Topics: []string{"in", "out", "in.dlq"}, Brokers: r.brokers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	n := r.records
	if n == 0 {
		n = 800
	}
	msgs := faultMsgs(n)
	byPart := kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return m.Partition })
	// The first quarter before the member starts, the rest while the
	// fault is on.
	produce(t, b, "in", msgs[:n/4], byPart)
	cfg := testConfig(t, b, "rbp:budget=20")
	cfg.Metrics = NewMetrics(nil)
	cfg.ProcessingGuarantee = r.guarantee
	snaps := &memCheckpoints{}
	cfg.Checkpoints = snaps
	cfg.FlushRecords, cfg.CheckpointEvery, cfg.CommitInterval = 25, 50, 200*time.Millisecond
	cfg.CheckpointInterval = 200 * time.Millisecond
	if r.edit != nil {
		r.edit(&cfg)
	}
	var ended func()
	if r.early {
		ended = r.inject(t, b.Cluster())
	}
	runMember(t, cfg)
	waitFor(t, "the first predictions", 60*time.Second, func() bool {
		return len(readCommitted(t, b.Addr(), 1, 1, 100*time.Millisecond)) > 0
	})
	if r.produceFirst {
		produce(t, b, "in", msgs[n/4:], byPart)
	}
	if !r.early {
		ended = r.inject(t, b.Cluster())
	}
	if !r.produceFirst {
		produce(t, b, "in", msgs[n/4:], byPart)
	}
	ended()
	faultEnded := time.Now()

	// Every partition is served again and all is committed within the
	// session timeout + 10 s of the fault's end.
	within := cfg.SessionTimeout + 10*time.Second
	perPart := make([][]kafka.Message, 4)
	for i := range msgs {
		perPart[i%4] = append(perPart[i%4], msgs[i])
	}
	for p := range 4 {
		want := len(perPart[p])
		waitFor(t, fmt.Sprintf("partition %d's commit of offset %d", p, want), time.Until(faultEnded.Add(within)), func() bool {
			return committedOffset(t, b, p) >= int64(want)
		})
	}
	for p := range 4 {
		// The output of input partition p is output partition p.
		// All there is: the predictions, then whatever follows them
		// within half a second (a duplicate).
		got := readCommitted(t, b.Addr(), p, len(perPart[p]), 15*time.Second)
		got = append(got, readCommittedFrom(t, b.Addr(), p, got, 1<<30, 500*time.Millisecond)...)
		seen := map[int64]int{}
		twin, err := model.New(cfg.ModelConfig(p))
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, len(perPart[p]))
		for i, m := range perPart[p] {
			res, err := twin.Step(m.Value)
			if err != nil {
				t.Fatal(err)
			}
			want[i] = res.Margin
		}
		for _, rec := range got {
			pr := decodePrediction(t, rec.Value)
			seen[pr.Offset]++
			if pr.Offset < 0 || pr.Offset >= int64(len(want)) {
				t.Fatalf("partition %d: prediction for offset %d, beyond the input", p, pr.Offset)
			}
			if pr.Margin != want[pr.Offset] {
				t.Fatalf("partition %d offset %d: margin %v, the uninterrupted run's %v", p, pr.Offset, pr.Margin, want[pr.Offset])
			}
		}
		for off := range want {
			if seen[int64(off)] == 0 {
				t.Errorf("partition %d: no committed prediction for offset %d (of %d)", p, off, len(want))
				break
			}
		}
		if dups := len(got) - len(seen); dups > 0 && !r.dups {
			t.Errorf("partition %d: %d predictions written twice (%d for %d records)", p, dups, len(got), len(want))
		}
		// The committed snapshot, with the records after it replayed as a
		// restore replays them, is the uninterrupted run's model.
		st := committedState(t, b, snaps, cfg, p)
		restored := replayFrom(t, st, perPart[p])
		gotModel, _ := restored.MarshalBinary()
		wantModel, _ := twin.MarshalBinary()
		if !bytes.Equal(gotModel, wantModel) {
			t.Errorf("partition %d: the committed snapshot (offset %d) and the records after it are not the uninterrupted run's model", p, st.NextOffset)
		}
	}
	return cfg.Metrics
}

// replayFrom is what a restore rebuilds from st: a copy of its model with
// the partition's records from its offset on learned (all: the caller
// checked the committed offset is the partition's end).
func replayFrom(t *testing.T, st *State, recs []kafka.Message) *model.Model {
	t.Helper()
	b, err := st.Model.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if st.NextOffset < 0 || st.NextOffset > int64(len(recs)) {
		t.Fatalf("snapshot at offset %d of %d records", st.NextOffset, len(recs))
	}
	for _, r := range recs[st.NextOffset:] {
		if _, err := m.Step(r.Value); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// readCommitted reads partition p of the output, read_committed, from the
// start until want records or d, as readFetched does, through the
// answers a faulty or moving broker gives: a reader that fails starts
// again from where it was.
func readCommitted(t *testing.T, addr string, p, want int, d time.Duration) []fetch.Record {
	return readCommittedFrom(t, addr, p, nil, want, d)
}

// readCommittedFrom is readCommitted after the records read, from the
// offset after the last of them.
func readCommittedFrom(t *testing.T, addr string, p int, read []fetch.Record, want int, d time.Duration) []fetch.Record {
	t.Helper()
	from := int64(0)
	if len(read) > 0 {
		from = read[len(read)-1].Offset + 1
	}
	return readRecords(t, addr, "out", p, from, want, false, true, d)
}

// committedState is the snapshot the group's committed offset of input
// partition p names.
func committedState(t *testing.T, b *embedded.Broker, snaps *memCheckpoints, cfg Config, p int) *State {
	t.Helper()
	oc := &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}}
	resp, err := oc.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: "g", Topics: map[string][]int{"in": {p}}})
	if err != nil || len(resp.Topics["in"]) != 1 {
		t.Fatalf("partition %d: committed offset: %v", p, err)
	}
	meta, _ := splitMeta(resp.Topics["in"][0].Metadata)
	if off, ok := checkpoint.NewModelOffset(meta); ok {
		// No snapshot yet: the new model the partition began as.
		m, err := model.New(cfg.ModelConfig(p))
		if err != nil {
			t.Fatal(err)
		}
		return &State{Model: m, NextOffset: off}
	}
	snaps.mu.Lock()
	st := snaps.snaps[meta]
	snaps.mu.Unlock()
	if st == nil {
		t.Fatalf("partition %d: the committed metadata %q names no snapshot", p, meta)
	}
	return st
}

// removeAfter is an inject that installs faults and ends them once they
// answered hits requests (or after 20 s).
func removeAfter(hits int, faults ...kfake.Fault) func(t *testing.T, c *kfake.Cluster) func() {
	return func(t *testing.T, c *kfake.Cluster) func() {
		h := c.Fault(faults...)
		return func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := h.Wait(ctx, hits); err != nil {
				t.Errorf("the fault answered %d requests, want %d", h.Hits(), hits)
			}
			h.Remove()
		}
	}
}

func key(k kmsg.Key) []kmsg.Key { return []kmsg.Key{k} }

// faultCase is one fault of the suite, run under the guarantees it
// applies to.
type faultCase struct {
	name       string
	guarantees []string
	run        faultRun
}

var both = []string{ExactlyOnce, AtLeastOnce}

// answer is a fault of key answered with err count times, on the output
// topic's partition 1 where the request names partitions.
func answer(k kmsg.Key, err *kerr.Error, count int) kfake.Fault {
	f := kfake.Fault{Keys: key(k), Err: err, Count: count}
	switch k {
	case kmsg.Produce:
		f.Topic, f.Partitions = "out", []int32{1}
	case kmsg.Fetch, kmsg.ListOffsets:
		f.Topic, f.Partitions = "in", []int32{1}
	}
	return f
}

// faultCases are the broker faults of the suite: for each request of the
// data path, errors Kafka really answers it with, held long enough to
// exhaust the retries where they would be retried, and the cluster
// events of a real cluster.
func faultCases() []faultCase {
	one := func(name string, gs []string, early bool, k kmsg.Key, err *kerr.Error, count int) faultCase {
		return faultCase{name, gs, faultRun{early: early, inject: removeAfter(count, answer(k, err, count))}}
	}
	eo := []string{ExactlyOnce}
	alo := []string{AtLeastOnce}
	cases := []faultCase{
		// Produce: answered after the append (a replication timeout), or
		// refused before it.
		one("produce/timed-out-after-append", both, false, kmsg.Produce, kerr.RequestTimedOut, 14),
		one("produce/not-enough-replicas-after-append", both, false, kmsg.Produce, kerr.NotEnoughReplicasAfterAppend, 14),
		one("produce/not-leader", both, false, kmsg.Produce, kerr.NotLeaderForPartition, 14),
		one("produce/out-of-order-sequence", both, false, kmsg.Produce, kerr.OutOfOrderSequenceNumber, 3),
		one("produce/unknown-producer-id", both, false, kmsg.Produce, kerr.UnknownProducerID, 3),
		one("produce/invalid-producer-epoch", both, false, kmsg.Produce, kerr.InvalidProducerEpoch, 3),
		one("produce/producer-fenced", eo, false, kmsg.Produce, kerr.ProducerFenced, 2),
		one("produce/transaction-abortable", eo, false, kmsg.Produce, kerr.TransactionAbortable, 2),
		// Fetch and the offsets lookup: leaders moving.
		one("fetch/not-leader", both, false, kmsg.Fetch, kerr.NotLeaderForPartition, 10),
		one("fetch/fenced-leader-epoch", both, false, kmsg.Fetch, kerr.FencedLeaderEpoch, 10),
		one("list-offsets/not-leader", both, true, kmsg.ListOffsets, kerr.NotLeaderForPartition, 5),
		{"metadata/leader-not-available", both, faultRun{produceFirst: true, inject: removeAfter(5, answer(kmsg.Metadata, kerr.LeaderNotAvailable, 5))}},
		// The group coordinator.
		one("find-coordinator/not-available", both, true, kmsg.FindCoordinator, kerr.CoordinatorNotAvailable, 5),
		one("join-group/load-in-progress", both, true, kmsg.JoinGroup, kerr.CoordinatorLoadInProgress, 3),
		one("sync-group/rebalance-in-progress", both, true, kmsg.SyncGroup, kerr.RebalanceInProgress, 2),
		one("offset-fetch/load-in-progress", both, true, kmsg.OffsetFetch, kerr.CoordinatorLoadInProgress, 5),
		one("offset-commit/timed-out", alo, false, kmsg.OffsetCommit, kerr.RequestTimedOut, 5),
		one("offset-commit/not-coordinator", alo, false, kmsg.OffsetCommit, kerr.NotCoordinator, 5),
		// The transaction coordinator (and the idempotent producer id).
		one("init-producer-id/load-in-progress", both, true, kmsg.InitProducerID, kerr.CoordinatorLoadInProgress, 12),
		one("init-producer-id/concurrent-transactions", eo, true, kmsg.InitProducerID, kerr.ConcurrentTransactions, 12),
		one("add-partitions/concurrent-transactions", eo, false, kmsg.AddPartitionsToTxn, kerr.ConcurrentTransactions, 12),
		one("add-partitions/not-available", eo, false, kmsg.AddPartitionsToTxn, kerr.CoordinatorNotAvailable, 12),
		one("add-offsets/not-coordinator", eo, false, kmsg.AddOffsetsToTxn, kerr.NotCoordinator, 12),
		one("txn-offset-commit/timed-out", eo, false, kmsg.TxnOffsetCommit, kerr.RequestTimedOut, 12),
		one("txn-offset-commit/load-in-progress", eo, false, kmsg.TxnOffsetCommit, kerr.CoordinatorLoadInProgress, 12),
		one("end-txn/not-available", eo, false, kmsg.EndTxn, kerr.CoordinatorNotAvailable, 12),
		one("end-txn/timed-out-after-commit", eo, false, kmsg.EndTxn, kerr.RequestTimedOut, 12),
		// The coordinator fences without a rebalance: the partition is
		// taken back once the generation outlives the session timeout.
		one("end-txn/producer-fenced", eo, false, kmsg.EndTxn, kerr.ProducerFenced, 1),
		one("end-txn/invalid-txn-state", eo, false, kmsg.EndTxn, kerr.InvalidTxnState, 1),
		{"heartbeat/rebalance-in-progress", both, faultRun{dups: true, inject: removeAfter(3, answer(kmsg.Heartbeat, kerr.RebalanceInProgress, 3))}},
		{"leaders-moving", both, faultRun{brokers: 3, inject: func(t *testing.T, c *kfake.Cluster) func() {
			return every(c, 300*time.Millisecond, 12, c.ShufflePartitionLeaders)
		}}},
		{"broker-removed-and-added-back", both, faultRun{brokers: 3, dups: true, inject: func(t *testing.T, c *kfake.Cluster) func() {
			if err := c.RemoveNode(2); err != nil {
				t.Fatal(err)
			}
			return func() {
				time.Sleep(2 * time.Second)
				if _, _, err := c.AddNode(2, 0); err != nil {
					t.Error(err)
				}
			}
		}}},
		{"connection-dropped-mid-request", both, faultRun{inject: func(t *testing.T, c *kfake.Cluster) func() {
			return dropConnections(c, 8, kmsg.Produce, kmsg.Fetch, kmsg.OffsetCommit, kmsg.EndTxn)
		}}},
	}
	return cases
}

// every runs f n times, period apart, and returns a function that waits
// for the last.
func every(c *kfake.Cluster, period time.Duration, n int, f func()) func() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range n {
			time.Sleep(period)
			f()
		}
	}()
	return func() { <-done }
}

// dropConnections closes the client's connection on the next n requests
// of the keys (before they are answered), and returns a function that
// waits until n were dropped.
func dropConnections(c *kfake.Cluster, n int, keys ...kmsg.Key) func() {
	left := make(chan struct{}, n)
	for range n {
		left <- struct{}{}
	}
	dropped := make(chan struct{}, n)
	for _, k := range keys {
		c.ControlKey(int16(k), func(kmsg.Request) (kmsg.Response, error, bool) {
			select {
			case <-left:
				c.KeepControl()
				dropped <- struct{}{}
				return nil, fmt.Errorf("connection dropped (injected)"), true
			default:
				return nil, nil, false
			}
		})
	}
	return func() {
		for range n {
			select {
			case <-dropped:
			case <-time.After(20 * time.Second):
				return
			}
		}
	}
}

// TestBrokerFaults runs the fault suite. Under -short (the race
// detector's run) only the faults that once lost or duplicated records.
func TestBrokerFaults(t *testing.T) {
	cases := faultCases()
	// The faults that rewind exactly-once, or move partitions, with
	// commits that name an earlier snapshot: the restores replay records
	// learn-only, and the result must be the same.
	for _, name := range []string{"produce/timed-out-after-append", "end-txn/timed-out-after-commit", "end-txn/producer-fenced", "broker-removed-and-added-back"} {
		for _, c := range cases {
			if c.name == name {
				c.name += "/deferred-snapshots"
				c.run.edit = deferSnapshots
				cases = append(cases, c)
			}
		}
	}
	for _, c := range cases {
		for _, g := range c.guarantees {
			if testing.Short() && c.name != "produce/timed-out-after-append" && c.name != "end-txn/producer-fenced" && c.name != "end-txn/producer-fenced/deferred-snapshots" {
				continue
			}
			t.Run(c.name+"/"+g, func(t *testing.T) {
				t.Parallel()
				r := c.run
				r.guarantee = g
				r.run(t)
			})
		}
	}
}

// deferSnapshots makes most commits name an earlier snapshot: one a
// second at most, whatever the model's size.
func deferSnapshots(c *Config) { c.SnapshotMaxRate, c.SnapshotInterval = 1, time.Second }

// When the output and dead-letter topics both refuse every record for
// good, the partition shows as unserved in /readyz and the refusals are
// counted, but the log says so a few times a second, not for every
// attempt: the worker retried the bare dead letters in a loop without a
// pause, and logged each (212 MB of log in 21 s).
func TestOutputsRefusedForGoodDoNotFloodTheLog(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	for _, topic := range []string{"out", "in.dlq"} {
		b.Cluster().Fault(kfake.Fault{Keys: key(kmsg.Produce), Topic: topic, Err: kerr.InvalidRecord, Count: -1})
	}
	msgs := faultMsgs(200)
	produce(t, b, "in", msgs, toPartition(0))
	logs := &syncWriter{w: &bytes.Buffer{}}
	cfg := testConfig(t, b, "perceptron")
	cfg.Log = zerolog.New(logs)
	cfg.Metrics = NewMetrics(nil)
	cfg.StuckAfter = time.Second
	stop, _ := runMember(t, cfg)
	waitFor(t, "readiness to turn 503", 20*time.Second, func() bool { return testutil.ToFloat64(cfg.Metrics.AssignedGauge) == 4 && !cfg.Metrics.Ready() })
	start := time.Now()
	logs.mu.Lock()
	before := bytes.Count(logs.w.Bytes(), []byte("\n"))
	logs.mu.Unlock()
	time.Sleep(3 * time.Second)
	logs.mu.Lock()
	lines := bytes.Count(logs.w.Bytes(), []byte("\n")) - before
	logs.mu.Unlock()
	took := time.Since(start)
	stop()
	if perSecond := float64(lines) / took.Seconds(); perSecond > 20 {
		t.Errorf("%d log lines in %v (%.0f a second) while the outputs were refused", lines, took, perSecond)
	}
	if n, r := testutil.ToFloat64(cfg.Metrics.ProduceErrors), testutil.ToFloat64(cfg.Metrics.DeadLetters.WithLabelValues("0", string(ReasonOutputRefused))); n == 0 || r == 0 {
		t.Errorf("%v failed writes and %v refused predictions counted, want the refusals counted", n, r)
	}
}

// TestBrokerFaultsWithLabelTopic: the faults that once lost or
// duplicated outputs, with labels read from a label topic: every input
// record is predicted once (read_committed), every label learned once, and
// both offsets committed to the end.
func TestBrokerFaultsWithLabelTopic(t *testing.T) {
	if testing.Short() {
		t.Skip("broker faults with a label topic: run without -short (the race detector's run covers the suite's core)")
	}
	for _, c := range []struct {
		name  string
		fault kfake.Fault
		hits  int
	}{
		{"produce/timed-out-after-append", answer(kmsg.Produce, kerr.RequestTimedOut, 14), 14},
		{"end-txn/producer-fenced", answer(kmsg.EndTxn, kerr.ProducerFenced, 1), 1},
		{"fetch/not-leader", answer(kmsg.Fetch, kerr.NotLeaderForPartition, 10), 10},
	} {
		for _, g := range both {
			if c.name == "end-txn/producer-fenced" && g == AtLeastOnce {
				continue
			}
			t.Run(c.name+"/"+g, func(t *testing.T) {
				t.Parallel()
				b := startBroker(t, "in", "out", "in.dlq", "labels")
				const n = 400
				base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
				var recs, labs []kafka.Message
				for i := range n {
					at := base.Add(time.Duration(i) * time.Millisecond)
					recs = append(recs, kafka.Message{Partition: i % 4, Time: at, Value: fmt.Appendf(nil, `{"id": "r%d", "x": %g, "y": %d}`, i, float64(i%7+1)/7, i%3)})
					class := map[bool]string{true: "UP", false: "DOWN"}[i%3 == 0]
					labs = append(labs, kafka.Message{Partition: i % 4, Time: at.Add(20 * time.Millisecond), Value: fmt.Appendf(nil, `{"id": "r%d", "class": %q}`, i, class)})
				}
				// Labels come after their records: both topics are written
				// before the member starts, and the fault is on from the
				// start. (A label that is read before its record is in the
				// input is an orphan, label_unknown, by design.)
				byPart := kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return m.Partition })
				produce(t, b, "in", recs, byPart)
				produce(t, b, "labels", labs, byPart)
				ended := removeAfter(c.hits, c.fault)(t, b.Cluster())
				cfg := testConfig(t, b, "rbp:budget=20")
				cfg.Model.Events, cfg.Model.Event, cfg.Model.Labels = true, codec.EventConfig{LabelField: "class", KeyField: "id"}, codec.LabelMap{Positive: []string{"UP"}}
				cfg.LabelTopic = "labels"
				snaps := &memCheckpoints{}
				cfg.Metrics, cfg.ProcessingGuarantee, cfg.Checkpoints = NewMetrics(nil), g, snaps
				cfg.FlushRecords, cfg.CheckpointEvery, cfg.CommitInterval, cfg.CheckpointInterval = 25, 50, 200*time.Millisecond, 200*time.Millisecond
				runMember(t, cfg)
				ended()
				learned := uint64(0)
				for p := range 4 {
					waitFor(t, fmt.Sprintf("partition %d's commits", p), 30*time.Second, func() bool {
						return committedOffset(t, b, p) >= n/4 && committedOffsetOf(t, b, "labels", p) >= n/4
					})
					got := readCommitted(t, b.Addr(), p, n/4, 15*time.Second)
					got = append(got, readCommittedFrom(t, b.Addr(), p, got, 1<<30, 500*time.Millisecond)...)
					seen := map[int64]int{}
					for _, rec := range got {
						seen[decodePrediction(t, rec.Value).Offset]++
					}
					if len(seen) != n/4 || len(got) != n/4 && g == ExactlyOnce {
						t.Errorf("partition %d: %d predictions, %d distinct, for %d records", p, len(got), len(seen), n/4)
					}
					learned += committedState(t, b, snaps, cfg, p).Model.Eval().Labeled
				}
				// Each label learned once in the models' history: the
				// committed snapshots' evaluators count them (the learned
				// counter counts rounds, those an abort undid too).
				if learned != n {
					t.Errorf("%d labels learned in the committed models, want %d", learned, n)
				}
			})
		}
	}
}
