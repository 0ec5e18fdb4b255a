package model

import (
	"math"
	"testing"
)

// In many-class mode an auto learner's classes emit their candidates'
// vote over the classes: each class's margin is the share of the weight
// that voted for it, the prediction the class with the most. It errs
// less than the champion's margins on USPS's first 1,000 digits.
func TestManyClassAutoVotes(t *testing.T) {
	recs := lines(t, "../../testdata/usps-2000.gz", 1000)
	var mistakes [2]int
	for i, e := range []string{"vote", "champion"} {
		m := build(t, Config{Learner: "auto:width=16,rung=100,emit=" + e, Kernel: kernel(t, "rbf:gamma=0.1"), Seed: 1, Classes: []string{Auto}})
		for n, b := range recs {
			r, err := m.Step(b)
			if err != nil {
				t.Fatal(err)
			}
			if r.Mistake {
				mistakes[i]++
			}
			if e == "champion" || n < 10 {
				continue
			}
			sum, top := 0.0, 0
			for k, f := range r.Margins {
				if f < 0 || f > 1 {
					t.Fatalf("record %d: class %d's margin %v is not a share of the vote", n, k, f)
				}
				sum += f
				if f > r.Margins[top] {
					top = k
				}
			}
			if math.Abs(sum-1) > 1e-9 || r.Predicted != top {
				t.Fatalf("record %d: margins %v (sum %v), predicted %d", n, r.Margins, sum, r.Predicted)
			}
		}
	}
	// Measured: 134 against 144.
	if mistakes[0] >= mistakes[1] {
		t.Fatalf("the vote made %d mistakes, the champion's margins %d", mistakes[0], mistakes[1])
	}
}
