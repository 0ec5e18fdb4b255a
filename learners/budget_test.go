package learners

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestWithBudgetContinuesAsTheLargerBudget: a copy at twice the budget,
// made while the active set is not yet full, plays on exactly as the same
// learner built at that budget from the first record (the budget changes
// nothing before it is reached, for these learners); the original is not
// changed.
func TestWithBudgetContinuesAsTheLargerBudget(t *testing.T) {
	xs, ys := stream(21, 900)
	for _, ks := range []string{"rbf:gamma=0.5", "poly:degree=2,coef0=1", "linear"} {
		k := mustKernel(t, ks)
		for _, spec := range []string{"rbp:budget=%d", "lbp:budget=%d", "forgetron:budget=%d", "perceptron:max=%d",
			"pa1:max=%d", "rbsop:budget=%d", "lbsop:budget=%d", "projectron++:budget=500,max=%d"} {
			small := mustNew(t, fmt.Sprintf(spec, 40), k, 5)
			large := mustNew(t, fmt.Sprintf(spec, 80), k, 5)
			if strings.HasPrefix(spec, "projectron") && ks == "linear" {
				continue // its active set stays within the 12 dimensions
			}
			i := 0
			for ; small.Size() < 30; i++ {
				if i == 600 {
					t.Fatalf("%s/%s: %d support vectors after %d rounds", spec, ks, small.Size(), i)
				}
				small.Round(xs[i], ys[i])
				large.Round(xs[i], ys[i])
			}
			before, _ := small.MarshalBinary()
			grown, err := WithBudget(small, 80)
			if err != nil {
				t.Fatalf("%s/%s: %v", spec, ks, err)
			}
			if after, _ := small.MarshalBinary(); !bytes.Equal(before, after) {
				t.Fatalf("%s/%s: WithBudget changed the original", spec, ks)
			}
			if grown.Budget() != 80 || grown.Spec() != large.Spec() {
				t.Fatalf("%s/%s: grown budget %d spec %q, want 80 and %q", spec, ks, grown.Budget(), grown.Spec(), large.Spec())
			}
			diverged := false
			for ; i < len(xs); i++ {
				a, b := grown.Round(xs[i], ys[i]), large.Round(xs[i], ys[i])
				if !sameBits(a.Margin, b.Margin) {
					t.Fatalf("%s/%s: round %d: grown margin %v, built at 80 %v", spec, ks, i, a.Margin, b.Margin)
				}
				s := small.Round(xs[i], ys[i])
				diverged = diverged || !sameBits(s.Margin, a.Margin)
				if grown.Size() > 80 {
					t.Fatalf("%s/%s: %d support vectors over the budget 80", spec, ks, grown.Size())
				}
			}
			if !diverged || grown.Size() <= 40 {
				t.Fatalf("%s/%s: the stream never filled the small budget (grown holds %d): the test shows nothing", spec, ks, grown.Size())
			}
			g, _ := grown.MarshalBinary()
			l, _ := large.MarshalBinary()
			if !bytes.Equal(g, l) {
				t.Fatalf("%s/%s: final states differ", spec, ks)
			}
		}
	}
}

func TestWithBudgetRefuses(t *testing.T) {
	k := mustKernel(t, "linear")
	for _, c := range []struct{ spec, want string }{
		{"perceptron", "no budget"},
		{"sop", "no budget"},
		{"rbp:budget=50", "below"},
	} {
		_, err := WithBudget(mustNew(t, c.spec, k, 1), 20)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.spec, err, c.want)
		}
	}
}
