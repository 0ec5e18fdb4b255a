package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
)

// A clean shutdown in the middle of a catch-up writes no prediction twice
// (and the start removes a temporary snapshot a killed save left):
// the write under way when SIGTERM arrives is finished, not cancelled and
// sent again; a restart continues where the last commit points, so the
// whole stream ends with exactly one prediction per record.
func TestSIGTERMWritesNoDuplicates(t *testing.T) {
	if testing.Short() {
		t.Skip("processes and a 130k-record backlog")
	}
	t.Parallel() // a process test that mostly waits: it overlaps the others (make test sets -parallel)
	bin := testBinary(t)
	b, err := embedded.Start(embedded.Config{Partitions: 4, Topics: []string{"in", "out", "in.dlq"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	set, err := dataset.Load(context.Background(), "../../testdata/a9a.gz", dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []kafka.Message
	for c := range 8 {
		for i := range set.Len() {
			msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprint(c, i)), Value: codec.AppendJSON(nil, codec.Example{X: set.X[i], Label: strconv.Itoa(set.Y[i])})})
		}
	}
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Topic: "in", Balancer: &kafka.RoundRobin{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: 5000, BatchBytes: 1 << 20}
	for i := 0; i < len(msgs); i += 5000 {
		if err := w.WriteMessages(context.Background(), msgs[i:min(i+5000, len(msgs))]...); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()

	dir := t.TempDir()
	args := []string{"run", "--brokers", b.Addr(), "--topic", "in", "--group", "g", "--output-topic", "out",
		"--learner", "perceptron", "--kernel", "rbf:gamma=0.02", "--checkpoint-dir", filepath.Join(dir, "ckpt"),
		"--session-timeout", "2s", "--rebalance-timeout", "2s", "--heartbeat-interval", "200ms", "--metrics-addr", "", "--log-format", "json"}
	// What a save killed midway leaves behind: removed at start.
	stale := filepath.Join(dir, "ckpt", "in", "0", ".tmp-1234")
	os.MkdirAll(filepath.Dir(stale), 0o755)
	os.WriteFile(stale, make([]byte, 4096), 0o600)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(stale, old, old)
	log := filepath.Join(dir, "run.log")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := os.ReadFile(log)
			t.Logf("service log:\n%s", out)
		}
	})
	for _, frac := range []float64{0.2, 0.6} {
		p := start(t, log, bin, args...)
		waitFor(t, "predictions", time.Minute, func() bool { return float64(topicLen(t, b.Addr(), "out")) >= frac*float64(len(msgs)) })
		t0 := time.Now()
		p.stop(t, 15*time.Second)
		t.Logf("stopped %v after SIGTERM", time.Since(t0).Round(time.Millisecond))
		if _, err := os.Stat(stale); !os.IsNotExist(err) {
			t.Fatalf("the stale temporary snapshot is still there: %v", err)
		}
		preds := readAll(t, b.Addr(), "out", nil)
		if len(preds) == 0 || len(preds) == len(msgs) {
			t.Fatalf("%d predictions of %d records: the signal missed the catch-up", len(preds), len(msgs))
		}
		for k, v := range preds {
			if len(v) != 1 {
				t.Fatalf("prediction %s written %d times by a clean shutdown", k, len(v))
			}
		}
	}
	p := start(t, log, bin, args...)
	waitFor(t, "every record predicted", 2*time.Minute, func() bool { return topicLen(t, b.Addr(), "out") >= int64(len(msgs)) })
	p.stop(t, 15*time.Second)
	for k, v := range readAll(t, b.Addr(), "out", nil) {
		if len(v) != 1 {
			t.Fatalf("prediction %s written %d times", k, len(v))
		}
	}
}

// topicLen is the number of records in topic (the sum of its partitions'
// ends; the service's topics are never truncated).
func topicLen(t *testing.T, addr, topic string) int64 {
	cl := &kafka.Client{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}}
	var reqs []kafka.OffsetRequest
	for p := range 4 {
		reqs = append(reqs, kafka.LastOffsetOf(p))
	}
	resp, err := cl.ListOffsets(context.Background(), &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, po := range resp.Topics[topic] {
		n += po.LastOffset
	}
	return n
}

// A command receives SIGINT and SIGTERM through its context, though runMain
// asks for them only once the command line is parsed: Ctrl-C stops the
// broker the way its first line says, not the process by the signal.
func TestCtrlCReachesTheCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel() // a process test that mostly waits: it overlaps the others (make test sets -parallel)
	bin := testBinary(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		log := filepath.Join(t.TempDir(), "broker.log")
		p := start(t, log, bin, "broker", "--port", "0")
		waitFor(t, "the broker", 30*time.Second, func() bool {
			out, _ := os.ReadFile(log)
			return strings.Contains(string(out), "listening")
		})
		p.cmd.Process.Signal(sig)
		select {
		case err := <-p.done:
			out, _ := os.ReadFile(log)
			if err != nil || !strings.Contains(string(out), "broker stopped") {
				t.Errorf("after %v: %v, output:\n%s", sig, err, out)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("no exit within 15 s of %v", sig)
		}
	}
}
