package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/model"
)

// TestCommitsNameAnEarlierSnapshot: with snapshots rarer than commits
// (SnapshotMaxRate), the commits in between name the last snapshot; a
// member that restores from such a commit — what a crash leaves —
// replays the records from the snapshot to the committed offset
// learn-only: no prediction or dead letter is written again, the records
// are not counted again, and from the committed offset on the
// predictions and the model are an uninterrupted run's, bit for bit.
func TestCommitsNameAnEarlierSnapshot(t *testing.T) {
	for _, g := range both {
		t.Run(g, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, "in", "out", "in.dlq")
			const first, second, bad = 600, 200, 100
			msgs := faultMsgs(first + second)
			msgs[bad].Value = []byte(`{"label": 1, "features": {"1": oops}}`)
			snaps := &memCheckpoints{}
			cfg := testConfig(t, b, "rbp:budget=20")
			cfg.ProcessingGuarantee, cfg.Checkpoints, cfg.Metrics = g, snaps, NewMetrics(nil)
			cfg.FlushRecords, cfg.CommitInterval, cfg.CheckpointInterval = 25, 100*time.Millisecond, 100*time.Millisecond
			// One snapshot an hour after the first, whatever the size:
			// every later commit names the first.
			cfg.SnapshotMaxRate, cfg.SnapshotInterval = 1, time.Hour
			stop, assigned := runMember(t, cfg)
			waitFor(t, "the assignment", 30*time.Second, func() bool { _, ps := assigned(); return len(ps) == 4 })
			// The first snapshot: a graceful stop's (commits before it
			// name the new model's base, TestNewModelsCommitTheirBase).
			produce(t, b, "in", msgs[:50], toPartition(1))
			waitFor(t, "the first records committed", 30*time.Second, func() bool { return committedOffset(t, b, 1) == 50 })
			stop()
			stop, assigned = runMember(t, cfg)
			waitFor(t, "the assignment", 30*time.Second, func() bool { _, ps := assigned(); return len(ps) == 4 })
			commits := countCommits(b.Cluster(), 1)
			for i := 50; i < first; i += 50 {
				produce(t, b, "in", msgs[i:i+50], toPartition(1))
				time.Sleep(150 * time.Millisecond)
			}
			waitFor(t, "the records committed", 30*time.Second, func() bool { return committedOffset(t, b, 1) == first })
			off, meta := committedMeta(t, b, 1)
			st := snaps.get(meta)
			if st == nil || st.NextOffset >= off {
				t.Fatalf("the commit at %d names snapshot %q, want one before it", off, meta)
			}
			if saves, n := snaps.savesOf(1), commits.Load(); n < 5 || saves != 1 {
				t.Errorf("%d snapshots of the partition for %d commits, want 1 for many", saves, n)
			}
			// A graceful stop hands over with a snapshot at the end…
			stop()
			if _, m := committedMeta(t, b, 1); snaps.get(m) == nil || snaps.get(m).NextOffset != first {
				t.Errorf("after a graceful stop the commit names %q, want a snapshot at %d", m, first)
			}
			// …a crash would have left the commit naming the earlier one.
			commitMeta(t, b, 1, off, meta)

			produce(t, b, "in", msgs[first:], toPartition(1))
			cfg.Metrics = NewMetrics(nil)
			runMember(t, cfg)
			waitFor(t, "every record committed", 30*time.Second, func() bool { return committedOffset(t, b, 1) == first+second })
			waitFor(t, "the replay counted", 10*time.Second, func() bool {
				return testutil.ToFloat64(cfg.Metrics.RestoreReplayed) > 0
			})
			if n, want := testutil.ToFloat64(cfg.Metrics.RestoreReplayed), float64(off-st.NextOffset); n != want {
				t.Errorf("%v records replayed, want %v (snapshot at %d, committed %d)", n, want, st.NextOffset, off)
			}
			if n := testutil.ToFloat64(cfg.Metrics.Consumed.WithLabelValues("1")); n != second {
				t.Errorf("the second member counted %v records consumed, want the %d after the commit", n, second)
			}

			twin, err := model.New(cfg.ModelConfig(1))
			if err != nil {
				t.Fatal(err)
			}
			want := map[int64]float64{}
			for i, m := range msgs {
				if r, err := twin.Step(m.Value); err == nil {
					want[int64(i)] = r.Margin
				}
			}
			got := readFetched(t, b.Addr(), "out", 1, len(want)+1, false, 3*time.Second)
			seen := map[int64]bool{}
			for _, rec := range got {
				p := decodePrediction(t, rec.Value)
				if seen[p.Offset] {
					t.Fatalf("offset %d predicted twice", p.Offset)
				}
				seen[p.Offset] = true
				if w, ok := want[p.Offset]; !ok || p.Margin != w {
					t.Fatalf("offset %d: margin %v, the uninterrupted run's %v", p.Offset, p.Margin, w)
				}
			}
			if len(seen) != len(want) {
				t.Errorf("%d records predicted, want %d", len(seen), len(want))
			}
			if dead := readFetched(t, b.Addr(), "in.dlq", 1, 2, false, 2*time.Second); len(dead) != 1 {
				t.Errorf("%d dead letters for the one bad record", len(dead))
			}
			final := committedState(t, b, snaps, cfg, 1)
			restored := replayFrom(t, final, msgs)
			gotModel, _ := restored.MarshalBinary()
			wantModel, _ := twin.MarshalBinary()
			if !bytes.Equal(gotModel, wantModel) {
				t.Errorf("the committed snapshot (offset %d) and the records after it are not the uninterrupted run's model", final.NextOffset)
			}
		})
	}
}

// countCommits counts the commits (OffsetCommit, TxnOffsetCommit) of
// input partition p the cluster answers from now on.
func countCommits(c *kfake.Cluster, p int32) *atomic.Int64 {
	n := &atomic.Int64{}
	// count adds one if the request commits partition p of "in"; parts
	// lists a request's (topic, partitions) pairs.
	count := func(parts func(yield func(string, []int32))) (kmsg.Response, error, bool) {
		c.KeepControl()
		parts(func(topic string, ps []int32) {
			if topic == "in" && slices.Contains(ps, p) {
				n.Add(1)
			}
		})
		return nil, nil, false
	}
	c.ControlKey(int16(kmsg.OffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		return count(func(yield func(string, []int32)) {
			for _, t := range req.(*kmsg.OffsetCommitRequest).Topics {
				var ps []int32
				for _, x := range t.Partitions {
					ps = append(ps, x.Partition)
				}
				yield(t.Topic, ps)
			}
		})
	})
	c.ControlKey(int16(kmsg.TxnOffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		return count(func(yield func(string, []int32)) {
			for _, t := range req.(*kmsg.TxnOffsetCommitRequest).Topics {
				var ps []int32
				for _, x := range t.Partitions {
					ps = append(ps, x.Partition)
				}
				yield(t.Topic, ps)
			}
		})
	})
	return n
}

// committedMeta is group g's committed offset of input partition p and
// its metadata (without a reset tag).
func committedMeta(t *testing.T, b *embedded.Broker, p int) (int64, string) {
	t.Helper()
	cl := &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}}
	resp, err := cl.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: "g", Topics: map[string][]int{"in": {p}}})
	if err != nil || len(resp.Topics["in"]) != 1 {
		t.Fatalf("partition %d: committed offset: %v", p, err)
	}
	meta, _ := splitMeta(resp.Topics["in"][0].Metadata)
	return resp.Topics["in"][0].CommittedOffset, meta
}

// commitMeta commits offset and metadata for input partition p of the
// empty group g, as a tool outside the group does.
func commitMeta(t *testing.T, b *embedded.Broker, p int, offset int64, meta string) {
	t.Helper()
	cl := &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}}
	resp, err := cl.OffsetCommit(context.Background(), &kafka.OffsetCommitRequest{GroupID: "g", GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{"in": {{Partition: p, Offset: offset, Metadata: meta}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Topics["in"] {
		if r.Error != nil {
			t.Fatal(fmt.Errorf("commit: %w", r.Error))
		}
	}
}

// TestNewModelsCommitTheirBase: before a partition's first snapshot its
// commits name the new model it began as (checkpoint.NewModelAt) at the
// first offset it read — here the log's end, where it started — and no
// snapshot is saved, so a member given many new partitions does not save
// one of each at its first commit. A member restoring such a commit (what
// a crash leaves) begins that model again and replays up to the committed
// offset learn-only: the predictions after it and the model are an
// uninterrupted run's, bit for bit.
func TestNewModelsCommitTheirBase(t *testing.T) {
	for _, g := range both {
		t.Run(g, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, "in", "out", "in.dlq")
			const before, first, second = 10, 300, 100
			msgs := faultMsgs(before + first + second)
			produce(t, b, "in", msgs[:before], toPartition(1))
			snaps := &memCheckpoints{}
			cfg := testConfig(t, b, "rbp:budget=20")
			cfg.ProcessingGuarantee, cfg.Checkpoints, cfg.Metrics, cfg.StartOffset = g, snaps, NewMetrics(nil), "latest"
			cfg.FlushRecords, cfg.CommitInterval, cfg.CheckpointInterval = 25, 100*time.Millisecond, 100*time.Millisecond
			cfg.SnapshotMaxRate, cfg.SnapshotInterval = 1, time.Hour
			stop, assigned := runMember(t, cfg)
			waitFor(t, "the assignment", 30*time.Second, func() bool { _, ps := assigned(); return len(ps) == 4 })
			commits := countCommits(b.Cluster(), 1)
			for i := before; i < before+first; i += 50 {
				produce(t, b, "in", msgs[i:i+50], toPartition(1))
				time.Sleep(100 * time.Millisecond)
			}
			waitFor(t, "the records committed", 30*time.Second, func() bool { return committedOffset(t, b, 1) == before+first })
			off, meta := committedMeta(t, b, 1)
			if want := checkpoint.NewModelAt(before); meta != want || commits.Load() < 3 {
				t.Fatalf("%d commits, the last names %q, want several naming %q", commits.Load(), meta, want)
			}
			if n := snaps.savesOf(1); n != 0 {
				t.Errorf("%d snapshots saved before one was due, want none", n)
			}
			stop() // a graceful stop hands over with a snapshot…
			if _, m := committedMeta(t, b, 1); snaps.get(m) == nil {
				t.Errorf("after a graceful stop the commit names %q, want a snapshot", m)
			}
			commitMeta(t, b, 1, off, meta) // …a crash would have left the base

			produce(t, b, "in", msgs[before+first:], toPartition(1))
			cfg.Metrics = NewMetrics(nil)
			runMember(t, cfg)
			waitFor(t, "every record committed", 30*time.Second, func() bool { return committedOffset(t, b, 1) == before+first+second })
			if n := testutil.ToFloat64(cfg.Metrics.RestoreReplayed); n != first {
				t.Errorf("%v records replayed, want the %d from the base to the commit", n, first)
			}
			twin, err := model.New(cfg.ModelConfig(1))
			if err != nil {
				t.Fatal(err)
			}
			want := map[int64]float64{}
			for i, m := range msgs[before:] {
				if r, err := twin.Step(m.Value); err == nil {
					want[int64(before+i)] = r.Margin
				}
			}
			for _, rec := range readFetched(t, b.Addr(), "out", 1, first+second+1, false, 3*time.Second) {
				if p := decodePrediction(t, rec.Value); p.Margin != want[p.Offset] {
					t.Fatalf("offset %d: margin %v, the uninterrupted run's %v", p.Offset, p.Margin, want[p.Offset])
				}
			}
			final := committedState(t, b, snaps, cfg, 1)
			gotModel, _ := replayFrom(t, final, msgs).MarshalBinary()
			wantModel, _ := twin.MarshalBinary()
			if !bytes.Equal(gotModel, wantModel) {
				t.Errorf("the committed snapshot (offset %d) and the records after it are not the uninterrupted run's model", final.NextOffset)
			}
		})
	}
}
