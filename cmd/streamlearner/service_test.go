package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
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
	dir := t.TempDir()
	ops := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	go func() {
		_, err := executeCtx(t, ctx, "run", "--brokers", b.Addr(), "--topic", "in", "--group", "g", "--output-topic", "out",
			"--learner", "forgetron:budget=50", "--kernel", "rbf:gamma=0.02", "--log-level", "warn", "--flush-interval", "50ms",
			"--checkpoint-dir", dir, "--checkpoint-every", "100", "--metrics-addr", ops)
		done <- err
	}()
	tctx, tcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer tcancel()
	out, err = executeCtx(t, tctx, "tail", "--brokers", b.Addr(), "--topic", "out", "--limit", "500", "--format", "json")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	// The metrics say what happened: 500 records consumed, predicted and
	// learned over two partitions, support within the budget; ready.
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + ops + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	if code, body := get("/readyz"); code != 200 {
		t.Errorf("/readyz: %d %s", code, body)
	}
	_, metrics := get("/metrics")
	for name, want := range map[string]float64{
		"streamlearner_records_consumed_total": 500, "streamlearner_records_predicted_total": 500,
		"streamlearner_records_learned_total": 500, "streamlearner_assigned_partitions": 2, "streamlearner_ready_partitions": 2,
	} {
		if got := sumSeries(metrics, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if s := sumSeries(metrics, "streamlearner_support_vectors"); s < 2 || s > 100 {
		t.Errorf("support vectors over two partitions: %v", s)
	}
	if !strings.Contains(metrics, "streamlearner_build_info{") {
		t.Error("no build info")
	}
	cancel()
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
	// Each partition's newest checkpoint holds all its 250 records.
	out, err = execute(t, "checkpoint", "list", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	newest := map[string]string{} // partition → newest snapshot (list is oldest first)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(line)
		if f[3] != "forgetron:budget=50" {
			t.Fatalf("list line %q", line)
		}
		newest[f[1]] = f[0]
	}
	if len(newest) != 2 {
		t.Fatalf("checkpoint list:\n%s", out)
	}
	for _, name := range newest {
		out, err = execute(t, "checkpoint", "inspect", "--dir", dir, name)
		if err != nil || !strings.Contains(out, "next offset  250") || !strings.Contains(out, "support      50") {
			t.Fatalf("inspect: %v\n%s", err, out)
		}
	}
	out, err = execute(t, "checkpoint", "inspect", "--dir", dir, "in/0/0000000009/00000000000000000001")
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("inspecting a missing snapshot: %v", err)
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

func TestDemoRunsAndCleansUp(t *testing.T) {
	out, err := execute(t, "demo", "--data", "../../testdata/a9a.t.gz", "--rate", "0", "--learner", "lbp:budget=50")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"16281 records predicted then learned", "lbp:budget=50", "50 SVs", "nothing left running"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

// sumSeries adds up every sample of a metric in Prometheus text format.
func sumSeries(text, name string) float64 {
	total := 0.0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			total += v
		}
	}
	return total
}
