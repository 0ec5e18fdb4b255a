package checkpoint

import (
	"errors"

	"github.com/streamlearner/streamlearner/internal/model"
)

// Partition names one input partition.
type Partition struct {
	Topic string
	ID    int
}

// State is a partition's model (learners, featurizer, classes, evaluator:
// docs/architecture.md §6) and where it stands in the partition.
type State struct {
	Model      *model.Model
	NextOffset int64 // the first offset not yet learned from
	// LabelTopic and LabelOffset: with labels in a topic of their own
	// (Config.LabelTopic), that topic and the first offset of its
	// partition not yet learned from; saved and committed with NextOffset.
	LabelTopic  string
	LabelOffset int64
	// Snapshot and SnapshotBytes: the name and size of the snapshot the
	// state was restored from (empty and 0 for a new model); a commit
	// that carries no snapshot of its own names this one.
	Snapshot      string
	SnapshotBytes int
}

// ErrNeedsOperator is wrapped by a Restore error no retry can cure: a
// snapshot made with another configuration, a damaged one with no intact
// older one. Reading the store again would only fail again, at the cost
// of reading it.
var ErrNeedsOperator = errors.New("the partition needs an operator")
