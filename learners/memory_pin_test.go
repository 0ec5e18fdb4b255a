package learners

import (
	"fmt"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/internal/golden"
)

// TestEstimateMemoryPinned pins every field of the estimate, its growth
// and its messages for every learner, bounded and not, under each kind of
// kernel and on sparse and dense data, byte for byte.
func TestEstimateMemoryPinned(t *testing.T) {
	var specs []string
	for _, s := range memSpecs {
		specs = append(specs, fmt.Sprintf(s, 100), fmt.Sprintf(s, 3000))
	}
	specs = append(specs, "perceptron", "spa", "pa1", "sop", "projectron:eta=0.3", "projectron++:eta=0.3",
		"pa1:c=0.01", "tighter:budget=50,validation=200", "nosuch:budget=5")
	kernels := []string{"linear", "rbf:gamma=0.1", "rbf:gamma=0.1,normalize=true", "poly:degree=2"}
	shapes := []Data{{}, {NNZ: 14, Dim: 123}, {NNZ: 150, Dim: 784}, {NNZ: 20, Dim: 100000}}
	var b strings.Builder
	for _, ks := range kernels {
		k, err := ParseKernel(ks)
		if err != nil {
			fmt.Fprintf(&b, "kernel %s: %v\n", ks, err)
			continue
		}
		for _, d := range shapes {
			for _, spec := range specs {
				m, err := EstimateMemory(spec, k, d)
				fmt.Fprintf(&b, "%s %s %+v: ", spec, ks, d)
				if err != nil {
					fmt.Fprintf(&b, "error %v\n", err)
					continue
				}
				fmt.Fprintf(&b, "%q v=%d primal=%t quad=%t held=%d peak=%d snap=%d at=%d,%d,%d,%d\n\t%s\n\t%v\n",
					m.Spec, m.Vectors, m.Primal, m.Quadratic, m.Held, m.Peak, m.Snapshot,
					m.At(0), m.At(10), m.At(1000), m.At(10000), m.Describe("partition"), m.Check(1, "--limit", ""))
			}
		}
	}
	golden.Check(t, "memory.golden", []byte(b.String()))
}
