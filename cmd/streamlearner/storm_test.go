package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
)

// TestRecoveryAfterCrashStorm: five members of a group are killed with
// SIGKILL within three seconds, two of them while joining, then one member
// starts. It must serve every partition within about the session timeout
// plus the rebalance timeout of the last kill: the dead members' sessions
// expire, and the coordinator may then hold a join for up to a rebalance
// timeout. (Before, the survivor's join requests timed out while the
// coordinator held them, each retry joined as a new member that the
// coordinator waited for as well, and recovery took several times that
// bound, or never came.)
func TestRecoveryAfterCrashStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("kills group members and waits for their sessions to expire; about a minute")
	}
	t.Parallel() // a process test that mostly waits: it overlaps the others (make test sets -parallel)
	const session, rebalance = 6 * time.Second, 6 * time.Second
	// Headroom for this machine's load: starting the process, the
	// heartbeat that reports the rebalance, stopping and starting workers.
	const margin = 8 * time.Second

	bin := testBinary(t)
	dir := t.TempDir()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	startBroker(t, bin, filepath.Join(dir, "broker.log"), port, filepath.Join(dir, "kafka"))
	if out, err := exec.Command(bin, "produce", "--brokers", addr, "--topic", "in", "--data", "../../testdata/a9a.gz",
		"--limit", "400", "--auto-create").CombinedOutput(); err != nil {
		t.Fatalf("produce: %v\n%s", err, out)
	}
	args := func(metrics string) []string {
		return []string{"run", "--brokers", addr, "--topic", "in", "--group", "g", "--output-topic", "out", "--auto-create",
			"--learner", "rbp:budget=50", "--kernel", "rbf:gamma=0.02", "--flush-interval", "50ms",
			"--heartbeat-interval", "500ms", "--session-timeout", session.String(), "--rebalance-timeout", rebalance.String(),
			"--log-format", "json", "--metrics-addr", metrics}
	}
	admin := &kafka.Client{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}}
	group := func() (state string, members int) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := admin.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{"g"}})
		if err != nil || len(resp.Groups) != 1 {
			return fmt.Sprint(err), 0
		}
		return resp.Groups[0].GroupState, len(resp.Groups[0].Members)
	}

	member := func(name, metrics string) *proc {
		return start(t, filepath.Join(dir, name+".log"), bin, args(metrics)...)
	}
	m1, m2, m3 := member("m1", ""), member("m2", ""), member("m3", "")
	waitFor(t, "three members in a stable group", time.Minute, func() bool {
		s, n := group()
		return s == "Stable" && n == 3
	})

	// The storm: the three members die, m4 and m5 start joining (the
	// rebalance waits for the dead members' sessions) and die too, all
	// within about three seconds.
	kill := func(p *proc, name string) {
		p.kill()
		s, n := group()
		t.Logf("killed %s; group %s with %d members", name, s, n)
	}
	kill(m1, "m1")
	time.Sleep(500 * time.Millisecond)
	kill(m2, "m2")
	time.Sleep(500 * time.Millisecond)
	kill(m3, "m3")
	m4, m5 := member("m4", ""), member("m5", "")
	time.Sleep(time.Second)
	kill(m4, "m4 (joining)")
	time.Sleep(time.Second)
	kill(m5, "m5 (joining)")
	last := time.Now()

	ops := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	member("survivor", ops)
	bound := session + rebalance + margin
	var served time.Duration
	for deadline := time.Now().Add(2 * bound); served == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + ops + "/metrics")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		text := string(b)
		if sample(text, "streamlearner_assigned_partitions") == 4 && sample(text, "streamlearner_ready_partitions") == 4 {
			served = time.Since(last)
		}
	}
	s, n := group()
	joins, _ := exec.Command("grep", "-h", "-i", "join", filepath.Join(dir, "survivor.log")).Output()
	t.Logf("every partition served %v after the last kill at %s (bound %v); group %s with %d members; the survivor's joins:\n%s",
		served.Round(100*time.Millisecond), last.UTC().Format("15:04:05.000"), bound, s, n, joins)
	if served == 0 || served > bound {
		t.Fatalf("not every partition served within session + rebalance timeout + %v of the last kill", margin)
	}

	// Served means predicted: a new record in each partition gets its
	// prediction.
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "in", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond,
		Balancer: kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return int(m.Key[0]) })}
	defer w.Close()
	ends := partitionEnds(t, addr)
	var msgs []kafka.Message
	for p := range 4 {
		msgs = append(msgs, kafka.Message{Key: []byte{byte(p)}, Value: []byte("1 3:1 11:1")})
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a prediction for the new record of every partition", 30*time.Second, func() bool {
		preds := readAll(t, addr, "out", nil)
		for p := range 4 {
			if len(preds[codec.PredictionKey("in", int32(p), ends[p])]) == 0 {
				return false
			}
		}
		return true
	})
}
