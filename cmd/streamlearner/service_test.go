package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/streamlearner/streamlearner/embedded"
)

// TestProduceRunTail wires the three service commands together on the
// embedded broker: produce a file, serve it, tail the predictions.
func TestProduceRunTail(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 2, Topics: []string{"in", "out", "in.dlq"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	out, err := execute(t, "produce", "--brokers", b.Addr(), "--topic", "in", "--data", "../../testdata/a9a.gz", "--limit", "500")
	if err != nil || !strings.Contains(out, "sent 500 records") {
		t.Fatalf("produce: %q %v", out, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := executeCtx(t, ctx, "run", "--brokers", b.Addr(), "--topic", "in", "--group", "g", "--output-topic", "out",
			"--learner", "forgetron:budget=50", "--kernel", "rbf:gamma=0.02", "--log-level", "warn", "--flush-interval", "50ms")
		done <- err
	}()
	tctx, tcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer tcancel()
	out, err = executeCtx(t, tctx, "tail", "--brokers", b.Addr(), "--topic", "out", "--limit", "500", "--format", "json")
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 500 {
		t.Fatalf("tail printed %d lines", len(lines))
	}
	var last struct {
		Learner  string  `json:"learner"`
		Accuracy float64 `json:"running_accuracy"`
		Support  int     `json:"support"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if last.Learner != "forgetron:budget=50" || last.Support > 50 || last.Accuracy < 0.5 || last.Accuracy > 0.95 {
		t.Fatalf("last prediction %+v", last)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not stop on cancel")
	}
}

func TestServiceFlagsAreChecked(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--brokers", "nohost", "--topic", "in", "--group", "g", "--output-topic", "out", "--learner", "rbp", "--kernel", "rbf"}, "host:port"},
		{[]string{"run", "--brokers", "h:1", "--topic", "in", "--group", "g", "--output-topic", "in", "--learner", "rbp", "--kernel", "rbf"}, "must differ"},
		{[]string{"run", "--brokers", "h:1", "--topic", "in", "--group", "g", "--output-topic", "out", "--learner", "rbp", "--kernel", "rbf", "--sasl-mechanism", "plain"}, "username"},
		{[]string{"tail", "--brokers", "h:1", "--topic", "out", "--from", "middle"}, "earliest"},
	} {
		_, err := execute(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error mentioning %q", c.args, err, c.want)
		}
	}
}
