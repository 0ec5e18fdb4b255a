package learners

import (
	"fmt"
	"testing"
)

// BenchmarkRoundFullBudget measures one predict-then-learn round of each
// budget learner once its budget is full (steady state), on sparse
// 12-feature points: time and allocations per round.
func BenchmarkRoundFullBudget(b *testing.B) {
	xs, ys := stream(21, 20000)
	k := mustKernel(b, "rbf:gamma=0.5")
	for _, spec := range []string{"stoptron", "rbp", "lbp", "forgetron", "cks", "perceptron:max=100", "spa:lambda=0.5,max=100", "pa1:c=1,max=100"} {
		if spec == "stoptron" || spec == "rbp" || spec == "lbp" || spec == "forgetron" || spec == "cks" {
			spec += ":budget=100"
		}
		b.Run(spec, func(b *testing.B) {
			l := mustNew(b, spec, k, 1)
			for i := range 5000 {
				l.Round(xs[i], ys[i])
			}
			if l.Size() != 100 {
				b.Fatal(fmt.Sprintf("budget not full: %d", l.Size()))
			}
			b.ReportAllocs()
			i := 5000
			for b.Loop() {
				l.Round(xs[i], ys[i])
				if i++; i == len(xs) {
					i = 5000
				}
			}
		})
	}
}
