package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners"
)

// TestCheckpointInspectNamesTheForm: inspect says whether a snapshot's
// model keeps weight vectors (primal) or support vectors (dual).
func TestCheckpointInspectNamesTheForm(t *testing.T) {
	set, err := dataset.Load(context.Background(), "../../testdata/a9a.gz", dataset.Options{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, c := range []struct{ learner, kernel, want string }{
		{"pa1:c=0.01", "linear", "form         primal"},
		{"perceptron", "linear:bias=1", "form         primal"},
		{"rbp:budget=10", "linear", "form         dual"},
	} {
		k, _ := learners.ParseKernel(c.kernel)
		m, err := model.New(model.Config{Learner: c.learner, Kernel: k, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for j, x := range set.X {
			if _, err := m.StepVector(x, []byte(strconv.Itoa(set.Y[j]))); err != nil {
				t.Fatal(err)
			}
		}
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		snap := checkpoint.Snapshot{Version: 2, Topic: "in", Partition: i, Generation: 1, Seq: 1, Learner: m.Spec(), Kernel: k.String(),
			NextOffset: 500, Created: time.Now(), Model: b}
		if err := (checkpoint.DirStore{Dir: dir}).Save(context.Background(), snap.Name(), snap.Encode()); err != nil {
			t.Fatal(err)
		}
		out, err := execute(t, "checkpoint", "inspect", "--checkpoint-dir", dir, snap.Name())
		if err != nil || !strings.Contains(out, c.want) || !strings.Contains(out, "support      "+strconv.Itoa(m.Support())) {
			t.Fatalf("%s with %s: %v\n%s", c.learner, c.kernel, err, out)
		}
	}
}
