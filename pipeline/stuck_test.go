package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
	b := startBroker(t, "in", "out", "in.dlq")
	toOne := kafka.BalancerFunc(func(kafka.Message, ...int) int { return 1 })
	msgs := make([]kafka.Message, 400)
	for i := range msgs {
		msgs[i] = kafka.Message{Value: fmt.Appendf(nil, `{"label": %d, "features": {"1": %d, "%d": 1}}`, 1-2*(i%2), 1-2*(i%2), 2+i%7)}
	}
	produce(t, b, "in", msgs, toOne)
	cfg := testConfig(t, b, "rbp:budget=20")
	cfg.ProcessingGuarantee, cfg.Checkpoints, cfg.Metrics = ExactlyOnce, &fullDisk{memCheckpoints: &memCheckpoints{}}, NewMetrics(nil)
	cfg.FlushRecords, cfg.CheckpointEvery, cfg.CommitInterval = 40, 40, 100*time.Millisecond
	cfg.SnapshotMaxRate, cfg.SnapshotInterval = 1, 300*time.Millisecond
	cfg.StuckAfter = time.Second
	runMember(t, cfg)
	why := stuckReason(t, cfg, "no snapshot saved")
	if !strings.Contains(why, "no space left on device") {
		t.Errorf("/readyz says %q; want the save's error", why)
	}
}

// A snapshot save that does not end holds its partition: stuck past
// StuckAfter, named.
func TestHangingSnapshotSaveIsStuck(t *testing.T) {
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
