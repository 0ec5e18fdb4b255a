package learners

import "github.com/streamlearner/streamlearner/learners/rng"

// newRNG returns a learner's own generator. Its state is part of the
// learner's encoded state, so a restored learner draws the same numbers as
// one that never stopped.
func newRNG(seed uint64) *rng.Source { return rng.New(seed, 0xda3e39cb94b95bdb) }
