package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

// TestCheckpointCommandsReadATopicStore: list and inspect read the
// compacted topic the compose deployment's members save to, and refuse
// (without creating it) a topic that does not exist.
func TestCheckpointCommandsReadATopicStore(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts := &checkpoint.TopicStore{Brokers: []string{b.Addr()}, Topic: "models"}
	defer ts.Close()
	if err := ts.Ensure(ctx, 1); err != nil {
		t.Fatal(err)
	}
	k, _ := learners.ParseKernel("linear")
	l, err := learners.New("perceptron", k, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		l.Round(sparse.Vector{Idx: []uint32{uint32(i + 1)}, Val: []float64{1}}, -1)
	}
	model, err := l.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	snap := checkpoint.Snapshot{Version: 1, Topic: "input", Partition: 2, Generation: 7, Seq: 4, Learner: "perceptron:max=0", Kernel: "linear",
		NextOffset: 3, Created: time.Now(), Model: model}
	if err := ts.Save(ctx, snap.Name(), snap.Encode()); err != nil {
		t.Fatal(err)
	}

	out, err := execute(t, "checkpoint", "list", "--checkpoint-topic", "models", "--brokers", b.Addr())
	if err != nil || !strings.Contains(out, snap.Name()) || !strings.Contains(out, "perceptron:max=0") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	out, err = execute(t, "checkpoint", "inspect", "--checkpoint-topic", "models", "--brokers", b.Addr(), snap.Name())
	if err != nil || !strings.Contains(out, "next offset  3") || !strings.Contains(out, "support      3") {
		t.Fatalf("inspect: %v\n%s", err, out)
	}
	if _, err := execute(t, "checkpoint", "list", "--checkpoint-topic", "nosuch", "--brokers", b.Addr()); err == nil || !strings.Contains(err.Error(), "no such topic") {
		t.Fatalf("missing topic: %v", err)
	}
	for _, args := range [][]string{
		{"checkpoint", "list"},
		{"checkpoint", "list", "--checkpoint-topic", "models"},
	} {
		if _, err := parse(t, args...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
