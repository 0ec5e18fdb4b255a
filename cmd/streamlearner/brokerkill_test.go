package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/codec"
)

// TestBrokerKillExactlyOnce: the broker, not the service, is killed with
// SIGKILL 6 times while a paced stream flows through a member running
// exactly-once with its snapshots in a topic, and restarted on its data
// directory each time. A read_committed consumer must then see one
// prediction for every input record: none lost, none twice. (A
// transaction open at a kill was aborted by the restarted broker without
// an abort marker: read_committed readers hid the producer's next
// transaction, and after a later kill the aborted flush read as
// committed, beside its replay.)
func TestBrokerKillExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("kills the broker 6 times; a minute")
	}
	t.Parallel() // a process test that mostly waits: it overlaps the others (make test sets -parallel)
	bin := testBinary(t)
	dir := t.TempDir()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	brokerLog, data := filepath.Join(dir, "broker.log"), filepath.Join(dir, "kafka")
	broker := startBroker(t, bin, brokerLog, port, data)
	createRunTopics(t, addr)

	// 24,000 records at 1,000 a second, retried through the restarts.
	const total = 24_000
	lines := a9aLines(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prodDone := make(chan error, 1)
	var produced atomic.Int64
	go func() { prodDone <- soakProduce(ctx, addr, lines, total, 10, false, &produced) }()

	args := []string{"run", "--brokers", addr, "--topic", "in", "--group", "g", "--output-topic", "out",
		"--learner", "rbp:budget=100", "--kernel", "rbf:gamma=0.02", "--seed", "3", "--checkpoint-topic", "ckpt",
		"--processing-guarantee", "exactly-once", "--checkpoint-every", "2000", "--checkpoint-interval", "500ms",
		"--flush-interval", "50ms", "--heartbeat-interval", "200ms", "--session-timeout", "2s", "--rebalance-timeout", "2s",
		"--log-format", "json", "--metrics-addr", ""}
	runLog := filepath.Join(dir, "run.log")
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range []string{runLog, brokerLog} {
				b, _ := os.ReadFile(l)
				ls := strings.Split(string(b), "\n")
				t.Logf("last lines of %s:\n%s", filepath.Base(l), strings.Join(ls[max(0, len(ls)-30):], "\n"))
			}
		}
	})
	member := start(t, runLog, bin, args...)
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill times drawn with seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	for range 6 {
		time.Sleep(time.Duration(1500+r.IntN(2000)) * time.Millisecond)
		broker.kill()
		broker = startBroker(t, bin, brokerLog, port, data)
	}
	select {
	case err := <-prodDone:
		if err != nil {
			t.Fatalf("producer: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the producer did not finish")
	}
	ends := partitionEnds(t, addr)
	// More when a kill cut a write off after the broker kept it: the
	// test's producer is not idempotent, and every record in the input
	// is owed a prediction of its own (its key is its offset).
	if sum(ends) < total {
		t.Fatalf("input holds %d records, produced %d", sum(ends), total)
	}
	st := &checkpoint.TopicStore{Brokers: []string{addr}, Topic: "ckpt"}
	t.Cleanup(func() { st.Close() })
	waitFor(t, "the snapshots to reach the end of every partition", time.Minute, func() bool {
		snaps := newest(t, st)
		for p, end := range ends {
			if snaps[p] == nil || snaps[p].NextOffset != end {
				return false
			}
		}
		return true
	})
	member.stop(t, 20*time.Second)

	preds := readFetched(t, addr, "out", false)
	missing, dups := 0, 0
	for p := range 4 {
		for off := range ends[p] {
			switch n := len(preds[codec.PredictionKey("in", int32(p), off)]); {
			case n == 0:
				missing++
			case n > 1:
				dups += n - 1
			}
		}
	}
	if missing != 0 || dups != 0 {
		t.Errorf("read_committed after 6 broker kills: %d of %d records without a prediction, %d predictions seen twice", missing, sum(ends), dups)
	}
}
