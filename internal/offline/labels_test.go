package offline

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/prequential"
	"github.com/streamlearner/streamlearner/learners/rng"
)

// TestClassListsAreMappedOnce plays a 3-vs-8 file as eval does: the set is
// loaded through the --positive/--negative map, and the model template
// carries the same map. The map must be applied once: every record is
// learned, with the mistakes of a learner driven by hand on the ±1 targets.
// Mapping the set's "1"/"-1" tokens a second time found them in neither
// class and left every record unlabeled (0 mistakes, support 0).
func TestClassListsAreMappedOnce(t *testing.T) {
	var b strings.Builder
	r := rng.New(7, 0)
	for i := range 400 {
		label, shift := "3", 1.0
		if i%3 == 0 {
			label, shift = "8", -1.0
		}
		fmt.Fprintf(&b, "%s 1:%g 2:%g\n", label, shift+2*r.Float64()-1, 2*r.Float64()-1)
	}
	kern, _ := learners.ParseKernel("rbf:gamma=0.5")
	for _, labels := range []codec.LabelMap{
		{Positive: []string{"3"}, Negative: []string{"8"}},
		{Positive: []string{"3"}},
	} {
		set, err := dataset.Read(context.Background(), strings.NewReader(b.String()), dataset.Options{Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		// By hand: the learner on the ±1 targets.
		l, err := learners.New("perceptron", kern, 0)
		if err != nil {
			t.Fatal(err)
		}
		mistakes := 0
		for i := range set.Len() {
			if prequential.IsMistake(l.Round(set.X[i], set.Y[i]).Margin, set.Y[i]) {
				mistakes++
			}
		}
		for name, d := range map[string]*Data{"set": FromSet(set), "stream": streamOf(set, 1, nil)} {
			cfg := Config{Learners: []string{"perceptron"}, Kernel: kern, KeepOrder: true, Model: model.Config{Labels: labels}}
			res, err := RunData(context.Background(), d, nil, cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := res[0]
			if got.Examples != 400 || got.Support == 0 || got.MistakeRate != float64(mistakes)/400 {
				t.Errorf("%v, %s: %d examples, %v mistakes, support %v; by hand %d mistakes", labels, name, got.Examples, got.MistakeRate, got.Support, mistakes)
			}
		}
	}
}
