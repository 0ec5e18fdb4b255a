package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	kafka "github.com/segmentio/kafka-go"
)

// fullDisk is a checkpoint store that saves the first snapshot, then
// fails every save (a disk that filled), or, with hang, blocks in it
// until the test ends.
type fullDisk struct {
	*memCheckpoints
	saves atomic.Int32
	hang  chan struct{}
}

func (f *fullDisk) Save(ctx context.Context, p Partition, gen int32, st *State) (string, int, error) {
	if f.saves.Add(1) == 1 {
		return f.memCheckpoints.Save(ctx, p, gen, st)
	}
	if f.hang != nil {
		<-f.hang
	}
	return "", 0, errors.New("write snapshot: no space left on device (injected)")
}

// stuckReason waits for the member to be not ready with a reason that
// says partition 1 is stuck and what, and returns it.
func stuckReason(t *testing.T, cfg Config, says string) string {
	t.Helper()
	var why []string
	waitFor(t, "partition 1 stuck: "+says, 30*time.Second, func() bool {
		why = cfg.Metrics.Degradations()
		return !cfg.Metrics.Ready() && strings.Contains(strings.Join(why, "; "), "partition 1 stuck: "+says)
	})
	return strings.Join(why, "; ")
}

// Under exactly-once, snapshots that keep failing (a full disk) abort
// their transactions and rewind the partition, while the commits
// without a snapshot in between go through: the partition reads its input
// again and again. It is stuck once no snapshot was saved for longer
// than StuckAfter, and /readyz names it and why. Before, each commit that
// went through cleared the abort count and the stuck mark, and /readyz
// said 200 throughout.
func TestFailingSnapshotsAreStuckUnderExactlyOnce(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	toOne := kafka.BalancerFunc(func(kafka.Message, ...int) int { return 1 })
	msgs := make([]kafka.Message, 400)
	for i := range msgs {
		msgs[i] = kafka.Message{Value: fmt.Appendf(nil, `{"label": %d, "features": {"1": %d, "%d": 1}}`, 1-2*(i%2), 1-2*(i%2), 2+i%7)}
	}
	produce(t, b, "in", msgs, toOne)
	disk := &fullDisk{memCheckpoints: &memCheckpoints{}}
	cfg := testConfig(t, b, "rbp:budget=20")
	cfg.ProcessingGuarantee, cfg.Checkpoints, cfg.Metrics = ExactlyOnce, disk, NewMetrics(nil)
	cfg.FlushRecords, cfg.CheckpointEvery, cfg.CommitInterval = 40, 40, 100*time.Millisecond
	cfg.SnapshotMaxRate, cfg.SnapshotInterval = 1, 300*time.Millisecond
	cfg.StuckAfter = time.Second
	runMember(t, cfg)
	// A new model's first snapshot waits until it is due: on a loaded
	// machine the partition may have played all its records by then, and
	// the one save that works covers them. Records after it need another.
	waitFor(t, "the first snapshot", 30*time.Second, func() bool { return disk.saves.Load() >= 1 })
	produce(t, b, "in", msgs, toOne)
	why := stuckReason(t, cfg, "no snapshot saved")
	if !strings.Contains(why, "no space left on device") {
		t.Errorf("/readyz says %q; want the save's error", why)
	}
}

// A snapshot save that does not end holds its partition: stuck past
// StuckAfter, named.
func TestHangingSnapshotSaveIsStuck(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	toOne := kafka.BalancerFunc(func(kafka.Message, ...int) int { return 1 })
	msgs := make([]kafka.Message, 200)
	for i := range msgs {
		msgs[i] = kafka.Message{Value: fmt.Appendf(nil, `{"label": %d, "features": {"1": %d}}`, 1-2*(i%2), 1-2*(i%2))}
	}
	produce(t, b, "in", msgs, toOne)
	hang := make(chan struct{})
	cfg := testConfig(t, b, "perceptron")
	cfg.Checkpoints, cfg.Metrics = &fullDisk{memCheckpoints: &memCheckpoints{}, hang: hang}, NewMetrics(nil)
	cfg.CheckpointEvery, cfg.FlushRecords, cfg.SnapshotEveryCommit, cfg.StuckAfter = 20, 20, true, time.Second
	stop, _ := runMember(t, cfg)
	defer stop()
	defer close(hang)
	stuckReason(t, cfg, "a snapshot save under way")
}

// A partition held inside one record (a decode, a validation, a step
// that does not end) is stuck once the record has been in hand for
// longer than the threshold, naming its offset, and no more once it
// is done.
func TestRecordInHandTooLongIsStuck(t *testing.T) {
	var h health
	h.after = 50 * time.Millisecond
	b := h.track("3")
	b.begin(42)
	if n := h.stuckNow(); n != 0 {
		t.Fatalf("%d stuck at once", n)
	}
	time.Sleep(80 * time.Millisecond)
	if n := h.stuckNow(); n != 1 || !strings.Contains(strings.Join(h.why(), ";"), "partition 3 stuck: no progress on the record at offset 42") {
		t.Errorf("%d stuck: %v", n, h.why())
	}
	b.end()
	if n := h.stuckNow(); n != 0 {
		t.Errorf("%d stuck once the record is done: %v", n, h.why())
	}
	b.begin(43)
	h.forget("3")
	time.Sleep(80 * time.Millisecond)
	if n := h.stuckNow(); n != 0 {
		t.Errorf("%d stuck after the partition went: %v", n, h.why())
	}
}

// A partition that makes progress clears its stuck mark at every
// checkpoint. With none to clear, that must not walk the member's other
// partitions: at 1,024 partitions the walk made every checkpoint
// O(partitions) (a profile of bench found it in a sixth of the extra CPU
// a record). A mark to clear is still cleared and the gauge recounted.
func TestProgressWithoutAStuckMarkDoesNotWalkThePartitions(t *testing.T) {
	h := &health{after: time.Minute}
	for i := range 1024 {
		h.track(fmt.Sprint(i)).begin(int64(i))
	}
	if allocs := testing.AllocsPerRun(100, func() { h.ok("7") }); allocs != 0 {
		t.Errorf("ok with no mark to clear: %.0f allocations a call, want 0 (it recounted every partition)", allocs)
	}
	h.after = 0
	h.stuck("other", time.Now().Add(-time.Hour))
	if n := h.stuckNow(); n != 1025 {
		t.Fatalf("stuck partitions: %d, want 1,025 (1,024 records in hand and one that cannot commit)", n)
	}
	h.ok("other")
	if n := h.stuckNow(); n != 1024 {
		t.Errorf("after ok: %d stuck, want 1,024 (the mark of other cleared)", n)
	}
}

// sickPartition is a checkpoint store that cannot save one partition's
// snapshots (its disk, its quota), and saves the others'.
type sickPartition struct {
	*memCheckpoints
	sick int
}

func (s *sickPartition) Save(ctx context.Context, p Partition, gen int32, st *State) (string, int, error) {
	if p.ID == s.sick {
		return "", 0, errors.New("write snapshot: quota exceeded (injected)")
	}
	return s.memCheckpoints.Save(ctx, p, gen, st)
}

// Under exactly-once one partition whose every commit fails (here its
// snapshot can never be saved, and every commit carries one)
// aborts the member's transaction each round, and every partition that
// joined the round reads its records again. It must not keep the others
// from committing: once its own failures repeat, it waits, longer each
// time, before it tries again, and the rounds in between commit without
// it. Before, every round aborted and partition 0 never committed.
func TestOneFailingPartitionDoesNotHoldTheOthersCommits(t *testing.T) {
	b := startBroker(t, "in", "out", "in.dlq")
	byKey := kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return int(m.Key[0] - '0') })
	batch := func(p, n, from int) []kafka.Message {
		msgs := make([]kafka.Message, n)
		for i := range msgs {
			y := 1 - 2*((from+i)%3%2)
			msgs[i] = kafka.Message{Key: []byte{byte('0' + p)}, Value: fmt.Appendf(nil, `{"label": %d, "features": {"1": %d, "%d": 1}}`, y, y, 2+i%7)}
		}
		return msgs
	}
	produce(t, b, "in", batch(1, 300, 0), byKey)
	cfg := testConfig(t, b, "rbp:budget=20")
	cfg.ProcessingGuarantee, cfg.Checkpoints, cfg.Metrics = ExactlyOnce, &sickPartition{memCheckpoints: &memCheckpoints{}, sick: 1}, NewMetrics(nil)
	cfg.FlushRecords, cfg.CheckpointEvery, cfg.CommitInterval, cfg.SnapshotEveryCommit = 40, 100, 200*time.Millisecond, true
	start := time.Now()
	runMember(t, cfg)
	// Partition 0's records keep coming while partition 1 fails.
	const every, rounds = 20, 30
	for i := range rounds {
		produce(t, b, "in", batch(0, every, i*every), byKey)
		time.Sleep(100 * time.Millisecond)
	}
	last := time.Now()
	got := readFetched(t, b.Addr(), "out", 0, every*rounds, false, 30*time.Second)
	if len(got) != every*rounds {
		t.Fatalf("partition 0: %d predictions committed of %d, %v after its last record (partition 1's failures aborted the rounds)", len(got), every*rounds, time.Since(last).Round(time.Millisecond))
	}
	for i, r := range got {
		if p := decodePrediction(t, r.Value); p.Offset != int64(i) {
			t.Fatalf("partition 0's committed prediction %d is of offset %d", i, p.Offset)
		}
	}
	aborted := testutil.ToFloat64(cfg.Metrics.Transactions.WithLabelValues("aborted", "error"))
	t.Logf("partition 0: all %d records committed %v after its last one; %v rounds aborted, %v records replayed, %v rounds committed",
		len(got), time.Since(last).Round(time.Millisecond), aborted, testutil.ToFloat64(cfg.Metrics.RestoreReplayed),
		testutil.ToFloat64(cfg.Metrics.Transactions.WithLabelValues("committed", "")))
	// Partition 1 waits longer each time: its failures abort fewer and
	// fewer rounds, about failingAfter + log2(elapsed ÷ commit interval)
	// (2 of slack for a loaded host); one a round would be ~30 here.
	time.Sleep(3 * time.Second)
	elapsed := time.Since(start)
	aborted = testutil.ToFloat64(cfg.Metrics.Transactions.WithLabelValues("aborted", "error"))
	bound := failingAfter + math.Log2(float64(elapsed)/float64(cfg.CommitInterval)) + 2
	if aborted > bound {
		t.Errorf("%v rounds aborted in %v (a commit interval of %v; want ≤ %.1f): the failing partition is not waiting longer each time", aborted, elapsed.Round(time.Millisecond), cfg.CommitInterval, bound)
	}
	// Between two waits the partition tries again (restore, replay, a
	// round), and is not marked then: a loaded host can make that try
	// long, so the mark is looked for over the next wait.
	var why string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if why = strings.Join(cfg.Metrics.Degradations(), "; "); strings.Contains(why, "partition 1 not served: its own commits failed") {
			break
		}
	}
	if !strings.Contains(why, "partition 1 not served: its own commits failed") {
		t.Errorf("/readyz says %q; want partition 1 named as left out of the transactions", why)
	}
}
