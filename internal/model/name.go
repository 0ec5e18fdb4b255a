package model

import (
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/autolearn"
)

// DisplayName is how reports (eval's rows, replay's, the selection's
// name) show a learner, so that one learner reads the same in all of
// them: its canonical spec, every parameter with its default included
// (perceptron:max=0), without a seed the user did not give (each order or
// partition derives its own, so no single value is true), then "@KERNEL"
// when its kernel is not base, the run's --kernel. The zero Kernel is
// base.
func (c Candidate) DisplayName(base learners.Kernel) string {
	k := c.Kernel
	if k == (learners.Kernel{}) {
		k = base
	}
	name := c.Learner
	if l, err := learners.New(c.Learner, k, 0); err == nil {
		user, _ := learners.ParseSpec(c.Learner)
		canon, _ := learners.ParseSpec(l.Spec())
		if canon.Name == autolearn.Name {
			// Its canonical spec, every range of the search, is too long
			// for a row: as the user gave it.
			canon = user
		}
		if _, ok := user.Params["seed"]; !ok {
			delete(canon.Params, "seed")
		}
		name = canon.String()
	}
	if k != base {
		name += "@" + k.String()
	}
	return name
}
