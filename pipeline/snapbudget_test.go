package pipeline

import (
	"testing"
	"time"

	"github.com/streamlearner/streamlearner/checkpoint"
)

// TestSnapshotBudgetIsTheMembers: a partition's snapshot of 14 kB, taken
// a second ago, is due again at the default 32 KiB/s a partition when the
// member serves 4 partitions; serving 256, the member's budget (8 × that)
// split 256 ways makes it wait about 14 s — snapshot writes do not grow
// with partitions — and SnapshotInterval still bounds the wait.
func TestSnapshotBudgetIsTheMembers(t *testing.T) {
	cfg := Config{SnapshotMaxRate: 32 << 10, SnapshotMemberMaxRate: 8 * 32 << 10, SnapshotInterval: 30 * time.Second}
	w := &worker{m: &member{cfg: &cfg}}
	w.snap = snapshotState{name: "in/0/1/1", at: time.Now().Add(-time.Second), bytes: 14000}
	w.m.parts.Store(4)
	if !w.snapshotDue() {
		t.Error("4 partitions: a 14 kB snapshot a second old is not due")
	}
	w.m.parts.Store(256)
	if w.snapshotDue() {
		t.Error("256 partitions: a 14 kB snapshot a second old is due again")
	}
	w.snap.at = time.Now().Add(-15 * time.Second)
	if !w.snapshotDue() {
		t.Error("256 partitions: a 14 kB snapshot 15 s old is not due")
	}
	w.m.parts.Store(100000)
	w.snap.at = time.Now().Add(-31 * time.Second)
	if !w.snapshotDue() {
		t.Error("past SnapshotInterval, the snapshot is not due")
	}
}

// TestNewModelsFirstSnapshotIsPaced: a new model's first snapshot, its
// size not known before it is encoded, is paced on the configured
// learner's estimate — not due with the first commit when the member
// serves 1,024 partitions, due by SnapshotInterval — whether the model is
// new at its start or restored from a commit that named it
// (checkpoint.NewModelAt). Before, a restored one was due at once: a
// member restarted soon after its partitions began saved them all.
func TestNewModelsFirstSnapshotIsPaced(t *testing.T) {
	cfg := Config{SnapshotMaxRate: 32 << 10, SnapshotMemberMaxRate: 8 * 32 << 10, SnapshotInterval: 30 * time.Second,
		Checkpoints: &memCheckpoints{}}
	w := &worker{m: &member{cfg: &cfg, newSnapshot: 14000}}
	w.m.parts.Store(1024)
	for _, st := range []*State{{NextOffset: 5}, {NextOffset: 5, Snapshot: checkpoint.NewModelAt(5)}} {
		w.snap = w.lastSnapshot(st)
		if !w.snap.base || w.snap.name != checkpoint.NewModelAt(5) {
			t.Fatalf("state %+v: commits name %q (base %v), want %q", st, w.snap.name, w.snap.base, checkpoint.NewModelAt(5))
		}
		if w.snapshotDue() {
			t.Errorf("state %+v: 1,024 partitions: a new model's first snapshot is due at once", st)
		}
		w.snap.at = time.Now().Add(-31 * time.Second)
		if !w.snapshotDue() {
			t.Errorf("state %+v: past SnapshotInterval, a new model's first snapshot is not due", st)
		}
	}
}
