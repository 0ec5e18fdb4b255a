package pipeline

import (
	"context"

	"github.com/streamlearner/streamlearner/checkpoint"
)

// Partition and State are the checkpoint package's: the service hands
// the protocol its partitions and states, and the protocol, below the
// service, knows nothing of it.
type (
	Partition = checkpoint.Partition
	State     = checkpoint.State
)

// Checkpointer is the seam where the checkpoint protocol plugs in
// (docs/architecture.md §3). A worker calls Restore when it is assigned a partition,
// Save after every prediction up to st.NextOffset has been acknowledged and
// before it commits that offset, with the metadata Save returns, and
// Committed once that commit succeeded.
type Checkpointer interface {
	// Restore returns the state to continue from, given the group's
	// committed offset (−1: none) and its metadata. The state may stand
	// before the committed offset (the metadata names an earlier snapshot,
	// or a damaged one's predecessor): the worker then replays the records
	// in between learn-only. A nil State with a nil
	// error means: no checkpoint, start a new model at the committed offset
	// (or the configured start offset). Metadata naming a new model's base
	// (checkpoint.NewModelAt, committed before the partition's first
	// snapshot) also gives a nil State: the worker begins the configured
	// model at the base's offset and replays up to the committed one.
	//
	// An error is retried, with a growing pause, for as long as the
	// partition is this member's: a store or broker that fails for a
	// while (a leader moving, a restart) costs the partition a delay, not
	// its service until the next rebalance. An error wrapping
	// ErrNeedsOperator is not retried: the partition is held, unserved and
	// reported, until its generation ends.
	Restore(ctx context.Context, p Partition, committed int64, metadata string) (*State, error)
	// Save persists st and returns the metadata to commit with
	// st.NextOffset and the size of what it stored (for the
	// streamlearner_checkpoint_bytes gauge). generation fences stale owners.
	Save(ctx context.Context, p Partition, generation int32, st *State) (metadata string, size int, err error)
	// Committed reports that the commit carrying metadata succeeded, so
	// older checkpoints of p may go.
	Committed(ctx context.Context, p Partition, metadata string)
}

// ErrNeedsOperator is wrapped by a Restore error no retry can cure
// (checkpoint.ErrNeedsOperator).
var ErrNeedsOperator = checkpoint.ErrNeedsOperator

// NoCheckpoints keeps no model between owners: a newly assigned partition
// starts a new model at the committed offset.
type NoCheckpoints struct{}

func (NoCheckpoints) Restore(context.Context, Partition, int64, string) (*State, error) {
	return nil, nil
}

func (NoCheckpoints) Save(context.Context, Partition, int32, *State) (string, int, error) {
	return "", 0, nil
}

func (NoCheckpoints) Committed(context.Context, Partition, string) {}
