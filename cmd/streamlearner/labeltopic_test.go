package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/model"
)

// TestLabelTopicRecovery is the guarantee of labels in a topic of their
// own, proven by killing the service: ten copies of Elec2 flow into the
// input topic at 2,000 records/s while their labels (every 25th missing,
// and now and then one for no record) follow in a co-partitioned label
// topic about two seconds behind; the service is killed with SIGKILL 12
// times and restarted. At the end every record has a prediction, and in
// every partition's final model every label was learned exactly once and
// none lost: as many labeled rounds as the partition's label topic holds
// labels for records, the records whose label never came still waiting
// (each by its key), every round counted once, and no dead letter but the
// labels for no record.
func TestLabelTopicRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("kills the service 12 times; a minute")
	}
	t.Parallel() // a process test that mostly waits: it overlaps the others (make test sets -parallel)
	bin := testBinary(t)
	dir := t.TempDir()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	startBroker(t, bin, filepath.Join(dir, "broker.log"), port, filepath.Join(dir, "kafka"))
	one, err := exec.Command("sh", "-c", "gzip -dc ../../testdata/elec2.3000.jsonl.gz").Output()
	if err != nil {
		t.Fatal(err)
	}
	var recs, labs bytes.Buffer
	unlabeled := map[string]bool{}
	r := rand.New(rand.NewPCG(4, 4))
	i := 0
	for c := range 10 {
		for _, line := range bytes.Split(bytes.TrimSpace(one), []byte("\n")) {
			id, rec, label := splitEvent(t, line, c)
			recs.Write(append(rec, '\n'))
			if i%25 == 3 {
				unlabeled[id] = true
			} else {
				labs.Write(append(label, '\n'))
			}
			if r.IntN(400) == 0 {
				fmt.Fprintf(&labs, `{"id":"nobody-%d","class":"UP"}`+"\n", i)
			}
			i++
		}
	}
	os.WriteFile(filepath.Join(dir, "records"), recs.Bytes(), 0o600)
	os.WriteFile(filepath.Join(dir, "labels"), labs.Bytes(), 0o600)
	produce := func(topic, file string, rate int) *proc {
		return start(t, filepath.Join(dir, topic+".produce.log"), bin, "produce", "--brokers", addr, "--topic", topic,
			"--data", filepath.Join(dir, file), "--rate", fmt.Sprint(rate), "--auto-create", "--key", "id")
	}
	inProducer := produce("in", "records", 2000)
	time.Sleep(2 * time.Second)
	labProducer := produce("labels", "labels", 1930) // as many lines a second, nearly: labels stay ~2 s behind
	waitFor(t, "the label topic", 10*time.Second, func() bool {
		c, err := kafka.DialLeader(t.Context(), "tcp", addr, "labels", 3)
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	args := []string{"run", "--brokers", addr, "--topic", "in", "--label-topic", "labels", "--group", "g", "--output-topic", "out", "--auto-create",
		"--learner", "rbp:budget=100", "--kernel", "rbf:gamma=1", "--seed", "3", "--checkpoint-every", "2000", "--checkpoint-interval", "500ms",
		"--flush-interval", "50ms", "--heartbeat-interval", "200ms", "--session-timeout", "2s", "--rebalance-timeout", "2s",
		"--log-format", "json", "--log-level", "info", "--metrics-addr", "",
		"--input", "events", "--label-field", "class", "--key-field", "id", "--positive", "UP",
		"--checkpoint-dir", filepath.Join(dir, "ckpt")}
	st := checkpoint.DirStore{Dir: filepath.Join(dir, "ckpt")}
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill times drawn with seed %d", seed)
	kr := rand.New(rand.NewPCG(seed, 1))
	runLog := filepath.Join(dir, "run.log")
	const kills = 12
	for range kills {
		p := start(t, runLog, bin, args...)
		time.Sleep(time.Duration(1000+kr.IntN(2500)) * time.Millisecond)
		p.kill()
	}
	for _, p := range []*proc{inProducer, labProducer} {
		select {
		case <-p.done:
		case <-time.After(3 * time.Minute):
			t.Fatal("a producer did not finish")
		}
	}
	final := start(t, runLog, bin, args...)
	inEnds, labEnds := topicEnds(t, addr, "in"), topicEnds(t, addr, "labels")
	var snaps map[int]*checkpoint.Snapshot
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(runLog)
			lines := strings.Split(string(b), "\n")
			t.Logf("last lines of the service's log:\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	waitFor(t, "the final snapshots to reach the end of both topics", 2*time.Minute, func() bool {
		snaps = newest(t, st)
		for p := range 4 {
			if s := snaps[p]; s == nil || s.NextOffset != inEnds[p] || s.LabelTopic != "labels" || s.LabelOffset != labEnds[p] {
				return false
			}
		}
		return true
	})
	final.stop(t, 20*time.Second)

	preds := readAll(t, addr, "out", nil)
	for p := range 4 {
		m, err := model.Unmarshal(snaps[p].Model)
		if err != nil {
			t.Fatal(err)
		}
		var records, waiting int
		readAll(t, addr, "in", func(msg kafka.Message) {
			if msg.Partition != p {
				return
			}
			records++
			if len(preds[codec.PredictionKey("in", int32(p), msg.Offset)]) == 0 {
				t.Fatalf("partition %d offset %d: no prediction", p, msg.Offset)
			}
			if unlabeled[string(msg.Key)] {
				waiting++
				if _, ok := m.Pending().Peek(string(msg.Key)); !ok {
					t.Fatalf("partition %d: record %s, whose label never came, is not waiting", p, msg.Key)
				}
			}
		})
		labels := 0
		readAll(t, addr, "labels", func(msg kafka.Message) {
			if msg.Partition == p && !bytes.HasPrefix(msg.Key, []byte("nobody-")) {
				labels++
			}
		})
		ev := m.Eval()
		if ev.Rounds != uint64(records) || ev.Labeled != uint64(labels) || m.Pending().Len() != waiting || records != labels+waiting {
			t.Fatalf("partition %d: %d rounds, %d labels learned, %d waiting; the topics hold %d records, %d labels, %d never labeled",
				p, ev.Rounds, ev.Labeled, m.Pending().Len(), records, labels, waiting)
		}
	}
	readAll(t, addr, "in.dlq", func(msg kafka.Message) {
		if !bytes.Contains(msg.Value, []byte("nobody-")) {
			t.Fatalf("a dead letter that is not a label for no record: %s", msg.Value)
		}
	})
	t.Logf("%d records, %d labels over 4 partitions; %d kills", i, i-len(unlabeled), kills)
}
