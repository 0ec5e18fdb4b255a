package offline

import (
	"context"
	"sync/atomic"
)

// Stream reads a training set in file order, in batches, afresh for each
// run that plays it: a single pass in file order then holds a batch of the
// file at a time, not the file, so that its memory does not grow with the
// file (3.26 million a9a records in the same RSS as 32,561), and it pays
// no page faults and copies for keeping what it already learned from
// (docs/performance.md). Several learners each read the file again, as
// separate processes would.
//
// A Stream calls batch with consecutive runs of records (X and Labels, or
// Events; Lines when known) until the data ends, batch returns an error,
// or ctx ends, and returns the first error: batch's, a reading error (the
// run fails with it, as if the data had been loaded first), or ctx's. A
// batch and what it holds are valid only during the call. first is true
// for one reading of a RunData call (the first run's): a source that
// reports what it skips does so only then, once for the data set.
type Stream func(ctx context.Context, first bool, batch func(*Data) error) error

// streamed is a Data's stream and what its readings found.
type streamed struct {
	read Stream
	// records is how many records a whole reading gave, once one ended
	// (-1 before): the progress total and the results' record count.
	records atomic.Int64
}

// FromStream is the Data of a stream, to give RunData as its train set;
// mapped says its Labels are the ±1 tokens of labels already mapped (see
// Data). Only a pass in file order without a delay reads a stream: other
// configurations need the data set whole (random orders) or its length (a
// delay) and load it.
func FromStream(s Stream, mapped bool) *Data {
	d := &Data{stream: &streamed{read: s}, mapped: mapped}
	d.stream.records.Store(-1)
	return d
}

// LabelToken is the label token of a binary label y (+1, −1, 0 for none),
// as FromSet writes it.
func LabelToken(y int) string {
	switch y {
	case 1:
		return "1"
	case -1:
		return "-1"
	}
	return ""
}
