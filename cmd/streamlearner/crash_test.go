package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkatest"
	"github.com/streamlearner/streamlearner/internal/model"
)

// TestCrashRecovery is the service's recovery contract, proven by killing
// it: the broker runs as its own process with a data directory; a stream
// of 130,244 labeled records arrives over about a minute; the service is
// killed with SIGKILL at 20 random moments and restarted each time. At the
// end every partition's final model is byte-identical to an uninterrupted
// run's (the offline twin: the same learner over the partition's records
// in order), its evaluator counters show every record learned exactly
// once, every input offset has a prediction, and every duplicate
// prediction is byte-identical to the first. Both checkpoint stores; and
// a named-field, many-class stream (Covertype events, 7 classes
// discovered online, online scaling) with a challenger and the champion
// rule, killed 10 times; Adult events in Avro through the schema
// registry, killed 10 times. Under --processing-guarantee exactly-once (a9a,
// 20 kills; Elec2 with delayed labels, 8 kills; a member paused with
// SIGSTOP and resumed) a read_committed consumer sees each prediction
// exactly once, and a read_uncommitted one the aborted duplicates.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("kills the service 40 times; minutes")
	}
	bin := testBinary(t)
	t.Parallel()
	// The runs mostly wait on paced streams and restarts, so they overlap
	// each other and the other process tests (make test sets -parallel).
	for _, c := range []struct {
		name, store string
		stream      crashStream
	}{{"dir", "dir", a9aStream}, {"topic", "topic", deferred(a9aStream)}, {"events", "dir", coverStream}, {"delayed", "topic", deferred(delayedStream)},
		{"avro", "topic", avroStream}, {"exactly-once", "dir", deferred(eosStream)}, {"zombie", "topic", zombieStream}, {"delayed-exactly-once", "dir", deferred(delayedEOSStream)},
		{"auto", "topic", autoStream}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			crashRecovery(t, bin, c.store, c.stream)
		})
	}
}

// deferred is s with snapshots rarer than commits: one every 2 s at most,
// whatever the model's size, so that most kills leave a commit naming an
// earlier snapshot and the restore replays the records in between.
func deferred(s crashStream) crashStream {
	s.flags = append(slices.Clone(s.flags), "--snapshot-max-rate", "1", "--snapshot-interval", "2s")
	return s
}

// crashStream is what a crash test feeds the service: copies of a file,
// the service's flags that read it, and how many kills.
type crashStream struct {
	file   string
	copies int
	flags  []string
	kills  int
	// delayed: labels come later in the same topic (--delayed-labels);
	// the stream is built by delayedLines from the file's events.
	delayed bool
	// exactlyOnce: the service runs --processing-guarantee exactly-once;
	// a read_committed consumer must see each prediction exactly once,
	// and a read_uncommitted one the aborted duplicates.
	exactlyOnce bool
	// zombie: instead of kills, a member is paused (SIGSTOP) until another
	// took its partitions over, then resumed; it must notice it was
	// fenced, and nothing it writes may become visible.
	zombie bool
	// avro: the records are Avro in the wire format (produce --format
	// avro), their schema in the broker's development registry.
	avro bool
	// learner, if set, is the learner spec instead of rbp:budget=100.
	learner string
}

var (
	a9aStream   = crashStream{file: "../../testdata/a9a.gz", copies: 4, kills: 20}
	coverStream = crashStream{file: "../../testdata/covtype.2000.jsonl.gz", copies: 25, kills: 10,
		flags: []string{"--input", "events", "--label-field", "Cover_Type", "--key-field", "id", "--classes", "auto", "--scale", "online",
			"--challenger", "forgetron:budget=60@rbf:gamma=0.2", "--select", "window=400,margin=0.01"}}
	eosStream = crashStream{file: "../../testdata/a9a.gz", copies: 4, kills: 20, exactlyOnce: true,
		flags: []string{"--processing-guarantee", "exactly-once"}}
	delayedEOSStream = crashStream{file: "../../testdata/elec2.3000.jsonl.gz", copies: 6, kills: 8, delayed: true, exactlyOnce: true,
		flags: []string{"--input", "events", "--label-field", "class", "--key-field", "id", "--positive", "UP", "--delayed-labels",
			"--pending-max-records", "2000", "--processing-guarantee", "exactly-once"}}
	zombieStream = crashStream{file: "../../testdata/a9a.gz", copies: 2, exactlyOnce: true, zombie: true,
		flags: []string{"--processing-guarantee", "exactly-once"}}
	avroStream = crashStream{file: "../../testdata/adult.train.3000.jsonl.gz", copies: 10, kills: 10, avro: true,
		flags: []string{"--label-field", "income", "--key-field", "id", "--positive", ">50K", "--scale", "online"}}
	// The search in the checkpoint: short rungs and duels, so that kills
	// fall in the halving and between duels.
	autoStream    = crashStream{file: "../../testdata/a9a.gz", copies: 2, kills: 10, learner: "auto:rung=100,window=1000"}
	delayedStream = crashStream{file: "../../testdata/elec2.3000.jsonl.gz", copies: 10, kills: 12, delayed: true,
		flags: []string{"--input", "events", "--label-field", "class", "--key-field", "id", "--positive", "UP", "--delayed-labels",
			"--pending-max-records", "2000"}}
)

// splitEvent turns an Elec2 event of copy c into its record without the
// class and its label message ({"id","class"}), the id made unique per
// copy ("c3-elec2-000001"), which it returns too.
func splitEvent(t *testing.T, line []byte, c int) (id string, rec, label []byte) {
	t.Helper()
	var ev map[string]json.RawMessage
	if err := json.Unmarshal(line, &ev); err != nil {
		t.Fatal(err)
	}
	id = fmt.Sprintf("c%d-%s", c, strings.Trim(string(ev["id"]), `"`))
	ev["id"], _ = json.Marshal(id)
	label, _ = json.Marshal(map[string]json.RawMessage{"id": ev["id"], "class": ev["class"]})
	delete(ev, "class")
	rec, _ = json.Marshal(ev)
	return id, rec, label
}

// delayedLines is the delayed-label stream of copies of an event file:
// each event without its class (ids made unique per copy), and its label
// message ({"id","class"}) 1–300 events later; every 25th label never
// comes and every 500th event is followed by a label for no record.
func delayedLines(t *testing.T, one []byte, copies int) []byte {
	var out bytes.Buffer
	r := rand.New(rand.NewPCG(8, 9))
	due := map[int][][]byte{}
	i := 0
	for c := range copies {
		for _, line := range bytes.Split(bytes.TrimSpace(one), []byte("\n")) {
			_, rec, label := splitEvent(t, line, c)
			for _, l := range due[i] {
				out.Write(l)
				out.WriteByte('\n')
			}
			delete(due, i)
			out.Write(rec)
			out.WriteByte('\n')
			if i%25 != 3 {
				at := i + 1 + r.IntN(300)
				due[at] = append(due[at], label)
			}
			if i%500 == 9 {
				fmt.Fprintf(&out, `{"id":"nobody-%d","class":"UP"}`+"\n", i)
			}
			i++
		}
	}
	for k := i; len(due) > 0; k++ {
		for _, l := range due[k] {
			out.Write(l)
			out.WriteByte('\n')
		}
		delete(due, k)
	}
	return out.Bytes()
}

type proc struct {
	cmd  *exec.Cmd
	done chan error
	// ended is closed when the process has exited, for whoever must not
	// take done's value.
	ended chan struct{}
}

func start(t *testing.T, logPath, bin string, args ...string) *proc {
	t.Helper()
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan error, 1), ended: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		close(p.ended)
		p.done <- err
		f.Close()
	}()
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *proc) kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) stop(t *testing.T, d time.Duration) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(d):
		t.Errorf("no exit within %v of SIGTERM", d)
		p.kill()
	}
}

// freePort is a port free when asked, for a process to bind later. It is
// taken below the kernel's ephemeral range, where the client sockets of
// the tests running beside (their Kafka connections) cannot take it in
// between: CI failed so, TestPrometheusEvaluates' run finding its
// --metrics-addr in use. Ports go out in turn from a random start, so
// two tests of this binary never get the same one.
func freePort(t *testing.T) int {
	t.Helper()
	lo := ephemeralLow()
	if lo < 2*portSpan {
		return anyPort(t) // nothing known below the range: the kernel's choice
	}
	portOnce.Do(func() { portNext.Store(int32(lo - portSpan + rand.IntN(portSpan))) })
	for range portSpan {
		p := int(portNext.Add(1))
		if p >= lo {
			portNext.CompareAndSwap(int32(p), int32(lo-portSpan))
			continue
		}
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			l.Close()
			return p
		}
	}
	return anyPort(t)
}

// portSpan is how many ports below the ephemeral range freePort uses.
const portSpan = 8000

var (
	portOnce sync.Once
	portNext atomic.Int32
)

// ephemeralLow is the lowest port the kernel gives sockets that name
// none (Linux's ip_local_port_range), 0 when unknown.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	lo, _ := strconv.Atoi(f[0])
	return lo
}

// anyPort is a port the kernel gives a listener that names none.
func anyPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func crashRecovery(t *testing.T, bin, store string, stream crashStream) {
	dir := t.TempDir()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	var registry []string // the flags that read from the registry
	if stream.avro {
		rport := freePort(t)
		registry = []string{"--schema-registry", fmt.Sprintf("http://127.0.0.1:%d", rport)}
		startBroker(t, bin, filepath.Join(dir, "broker.log"), port, filepath.Join(dir, "kafka"), "--schema-registry-port", strconv.Itoa(rport))
	} else {
		startBroker(t, bin, filepath.Join(dir, "broker.log"), port, filepath.Join(dir, "kafka"))
	}
	// Copies of the file, delivered at 2,000 records/s in the background.
	data := filepath.Join(dir, "stream")
	var all []byte
	one, _ := exec.Command("sh", "-c", "gzip -dc "+stream.file).Output()
	if stream.delayed {
		all = delayedLines(t, one, stream.copies)
	} else {
		for range stream.copies {
			all = append(all, one...)
		}
	}
	os.WriteFile(data, all, 0o600)
	total := strings.Count(string(all), "\n")
	produceArgs := []string{"produce", "--brokers", addr, "--topic", "in", "--data", data, "--rate", "2000", "--auto-create"}
	if stream.delayed {
		produceArgs = append(produceArgs, "--key", "id") // a label and its record share a partition
	}
	if stream.avro {
		produceArgs = append(append(produceArgs, "--format", "avro", "--schema", "../../testdata/schemas/adult.avsc"), registry...)
	}
	producer := start(t, filepath.Join(dir, "produce.log"), bin, produceArgs...)

	const kern = "rbf:gamma=0.02"
	spec := "rbp:budget=100"
	if stream.learner != "" {
		spec = stream.learner
	}
	args := []string{"run", "--brokers", addr, "--topic", "in", "--group", "g", "--output-topic", "out", "--auto-create",
		"--learner", spec, "--kernel", kern, "--seed", "3", "--checkpoint-every", "2000", "--checkpoint-interval", "500ms",
		"--flush-interval", "50ms", "--heartbeat-interval", "200ms", "--session-timeout", "2s", "--rebalance-timeout", "2s",
		"--log-format", "json", "--log-level", "info", "--metrics-addr", ""}
	args = append(args, stream.flags...)
	if stream.avro {
		args = append(append(args, "--input", "avro"), registry...)
	}
	var st checkpoint.Store
	if store == "dir" {
		args = append(args, "--checkpoint-dir", filepath.Join(dir, "ckpt"))
		st = checkpoint.DirStore{Dir: filepath.Join(dir, "ckpt")}
	} else {
		args = append(args, "--checkpoint-topic", "ckpt")
		ts := &checkpoint.TopicStore{Brokers: []string{addr}, Topic: "ckpt"}
		t.Cleanup(func() { ts.Close() })
		st = ts
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill times drawn with seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	runLog := filepath.Join(dir, "run.log")
	if stream.zombie {
		// A member serves every partition, is paused until the others'
		// sessions took them over, then resumed: a zombie.
		zombieLog := filepath.Join(dir, "zombie.log")
		// Its transactions stay open for seconds, so that it is paused
		// with writes of its own in one: resumed, it must find its
		// transaction fenced, whether it writes again or its generation
		// ends first and it tries its last commit.
		zombie := start(t, zombieLog, bin, append(slices.Clone(args), "--commit-interval", "5s", "--checkpoint-every", "1000000")...)
		t.Cleanup(func() {
			if t.Failed() {
				b, _ := os.ReadFile(zombieLog)
				lines := strings.Split(string(b), "\n")
				t.Logf("last lines of the zombie's log:\n%s", strings.Join(lines[max(0, len(lines)-30):], "\n"))
			}
		})
		// Paused only once it serves every partition: on a loaded machine
		// the input topic can take seconds to appear, and a member paused
		// before it joined is no zombie, just a late member.
		waitFor(t, "the zombie to serve every partition", time.Minute, func() bool {
			b, _ := os.ReadFile(zombieLog)
			return strings.Count(string(b), `"message":"partition assigned"`) >= 4
		})
		time.Sleep(1500 * time.Millisecond) // writes of its own in an open transaction
		zombie.cmd.Process.Signal(syscall.SIGSTOP)
		start(t, runLog, bin, args...)
		waitFor(t, "the other member to serve every partition", time.Minute, func() bool {
			b, _ := os.ReadFile(runLog)
			return strings.Count(string(b), `"message":"partition assigned"`) >= 4
		})
		time.Sleep(2 * time.Second)
		zombie.cmd.Process.Signal(syscall.SIGCONT)
		var fencedLine string
		waitFor(t, "the zombie to notice it was fenced", time.Minute, func() bool {
			b, _ := os.ReadFile(zombieLog)
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, "another member owns the partition now") {
					fencedLine = l
					return true
				}
			}
			return false
		})
		t.Logf("the zombie: %s", fencedLine)
	}
	assigned := func() int {
		b, _ := os.ReadFile(runLog)
		return strings.Count(string(b), `"message":"partition assigned"`)
	}
	for range stream.kills {
		before := assigned()
		p := start(t, runLog, bin, args...)
		// Killed while it serves, up to 2.5 s after its first partition:
		// on a loaded machine a member can take seconds to join, and
		// twelve kills drawn from its start (1 to 3.5 s) all fell before
		// it served a record (CI: "12 kills re-emitted no prediction").
		deadline := time.Now().Add(30 * time.Second)
		for assigned() == before && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(time.Duration(r.IntN(2500)) * time.Millisecond)
		p.kill()
	}
	t.Logf("killed %d times", stream.kills)
	select {
	case err := <-producer.done:
		if err != nil {
			b, _ := os.ReadFile(filepath.Join(dir, "produce.log"))
			t.Fatalf("the producer failed: %v\n%s", err, b)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("the producer did not finish")
	}
	final := start(t, runLog, bin, args...)
	ends := partitionEnds(t, addr)
	if sum(ends) != int64(total) {
		t.Fatalf("input holds %d records, produced %d", sum(ends), total)
	}
	var snaps map[int]*checkpoint.Snapshot
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(runLog)
			lines := strings.Split(string(b), "\n")
			t.Logf("last lines of the service's log:\n%s", strings.Join(lines[max(0, len(lines)-60):], "\n"))
			for p, s := range snaps {
				t.Logf("partition %d: newest snapshot %s at %d of %d", p, s.Name(), s.NextOffset, ends[p])
			}
		}
	})
	waitFor(t, "the final snapshots to reach the end of every partition", 2*time.Minute, func() bool {
		snaps = newest(t, st)
		for p, end := range ends {
			if snaps[p] == nil || snaps[p].NextOffset != end {
				return false
			}
		}
		return true
	})
	final.stop(t, 20*time.Second)
	if slices.Contains(stream.flags, "--snapshot-max-rate") && stream.kills > 0 {
		// The kills must have left commits naming earlier snapshots, or
		// the replay went untested.
		b, _ := os.ReadFile(runLog)
		if n := strings.Count(string(b), "replayed the records after the snapshot"); n == 0 {
			t.Errorf("%d kills and no restore replayed records after its snapshot", stream.kills)
		} else {
			t.Logf("%d restores replayed records after their snapshot", n)
		}
	}

	preds := readAll(t, addr, "out", nil)
	if stream.exactlyOnce {
		// What a read_committed consumer sees; the aborted transactions'
		// records stay in the log for read_uncommitted ones.
		uncommitted := readFetched(t, addr, "out", true)
		preds = readFetched(t, addr, "out", false)
		aborted := 0
		for k, v := range uncommitted {
			aborted += len(v) - len(preds[k])
		}
		t.Logf("read_uncommitted: %d predictions of aborted transactions", aborted)
		if aborted == 0 && stream.kills > 0 {
			t.Errorf("%d kills aborted no transaction with predictions in it: the kills missed the stream", stream.kills)
		}
	}
	dups := 0
	for p := range 4 {
		// The uninterrupted twin: the same model, configured as the
		// snapshot says, over the partition's records in order.
		s := snaps[p]
		restored, err := model.Unmarshal(s.Model)
		if err != nil {
			t.Fatal(err)
		}
		cfg := restored.Config()
		if cfg.Learner != spec || cfg.Seed != 3+uint64(p) || cfg.Kernel.String() != kern {
			t.Fatalf("partition %d: snapshot of %s seed %d with %s", p, cfg.Learner, cfg.Seed, cfg.Kernel)
		}
		if stream.avro {
			// A snapshot does not say how records are written.
			cfg.Format, cfg.Schemas = codec.FormatAvro, registered(t, registry[1], "in-value")
		}
		twin, err := model.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		n, late := 0, 0
		readAll(t, addr, "in", func(m kafka.Message) {
			if m.Partition != p {
				return
			}
			r, err := twin.StepAt(m.Value, model.At{Key: m.Key, Time: m.Time.UnixMilli(), Offset: m.Offset})
			vals := preds[codec.PredictionKey("in", int32(p), m.Offset)]
			if stream.delayed && (err != nil || r.Late) {
				// A label, or a label for nothing: never a prediction.
				if len(vals) != 0 {
					t.Fatalf("partition %d offset %d: a label message was predicted", p, m.Offset)
				}
				if r.Late {
					late++
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(vals) == 0 {
				t.Fatalf("partition %d offset %d: no prediction", p, m.Offset)
			}
			for _, v := range vals[1:] {
				if string(v) != string(vals[0]) {
					t.Fatalf("partition %d offset %d: duplicate differs:\n%s\n%s", p, m.Offset, vals[0], v)
				}
			}
			dups += len(vals) - 1
			pr, err := codec.DecodePrediction(vals[0])
			class := r.Class
			if pos, neg, named := twin.Config().Labels.ClassNames(); named && !twin.Multi() {
				// Named binary labels (--positive UP): the side's name.
				class = map[bool]string{true: pos, false: neg}[r.Predicted > 0]
			}
			if err != nil || pr.Margin != r.Margin || pr.Class != class {
				t.Fatalf("partition %d offset %d: %s, uninterrupted margin %v class %q (%v)", p, m.Offset, vals[0], r.Margin, class, err)
			}
			n++
		})
		want, _ := twin.MarshalBinary()
		if string(s.Model) != string(want) {
			t.Fatalf("partition %d: the final model differs from the uninterrupted run's", p)
		}
		learned := n
		if stream.delayed {
			learned = late
			if late == 0 || restored.Pending().Len() == 0 {
				t.Fatalf("partition %d: %d labels learned, %d records waiting", p, late, restored.Pending().Len())
			}
		}
		if ev := restored.Eval(); ev.Rounds != uint64(n) || ev.Labeled != uint64(learned) {
			t.Fatalf("partition %d: evaluator counted %d rounds, %d learned, for %d records, %d labels", p, ev.Rounds, ev.Labeled, n, learned)
		}
		if slices.Contains(stream.flags, "--classes") && (len(restored.Classes()) < 6 || restored.Candidates() != 2) {
			t.Fatalf("partition %d: classes %v, want at least 6 of the 7 cover types", p, restored.Classes())
		}
	}
	t.Logf("%d records, %d duplicate predictions (all byte-identical)", total, dups)
	if stream.exactlyOnce {
		if dups != 0 {
			t.Errorf("exactly-once: a read_committed consumer saw %d duplicate predictions", dups)
		}
		return
	}
	if dups == 0 {
		t.Errorf("%d kills re-emitted no prediction: the kills missed the stream", stream.kills)
	}
}

func partitionEnds(t *testing.T, addr string) map[int]int64 { return topicEnds(t, addr, "in") }

// topicEnds is the end offset of each of topic's four partitions.
func topicEnds(t *testing.T, addr, topic string) map[int]int64 {
	ends := map[int]int64{}
	for p := range 4 {
		c, err := kafka.DialLeader(context.Background(), "tcp", addr, topic, p)
		if err != nil {
			t.Fatal(err)
		}
		ends[p], err = c.ReadLastOffset()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return ends
}

func sum(m map[int]int64) (s int64) {
	for _, v := range m {
		s += v
	}
	return s
}

// newest returns each partition's newest intact snapshot.
func newest(t *testing.T, st checkpoint.Store) map[int]*checkpoint.Snapshot {
	out := map[int]*checkpoint.Snapshot{}
	names, err := st.List(context.Background(), "in/")
	if err != nil {
		return out
	}
	for _, n := range names { // oldest first
		b, err := st.Load(context.Background(), n)
		if err != nil {
			continue
		}
		if s, err := checkpoint.Decode(b); err == nil {
			out[s.Partition] = s
		}
	}
	return out
}

// readAll reads every partition of topic to its current end; with each
// nil it returns the values by key.
func readAll(t *testing.T, addr, topic string, each func(kafka.Message)) map[string][][]byte {
	byKey := map[string][][]byte{}
	for p := range 4 {
		c, err := kafka.DialLeader(context.Background(), "tcp", addr, topic, p)
		if err != nil {
			t.Fatal(err)
		}
		end, _ := c.ReadLastOffset()
		c.Close()
		rd := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: p, MaxWait: time.Second, MaxBytes: 16 << 20})
		for off := int64(0); off < end; {
			m, err := rd.ReadMessage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			off = m.Offset + 1
			if each != nil {
				each(m)
			} else {
				byKey[string(m.Key)] = append(byKey[string(m.Key)], m.Value)
			}
		}
		kafkatest.CloseReader(t, rd)
	}
	return byKey
}

// readFetched reads every partition of topic to its end as a consumer
// with isolation.level read_committed (or read_uncommitted) does, through
// package fetch (transaction markers dropped), and returns the values by
// key.
func readFetched(t *testing.T, addr, topic string, uncommitted bool) map[string][][]byte {
	t.Helper()
	byKey := map[string][][]byte{}
	ends := topicEnds(t, addr, topic)
	for p := range 4 {
		r, err := fetch.NewReader(fetch.Config{Addr: kafka.TCP(addr), Topic: topic, Partition: p, ReadUncommitted: uncommitted, MaxBytes: 4 << 20}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for r.Offset() < ends[p] {
			b, err := r.Fetch(context.Background(), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range b.Records {
				byKey[string(rec.Key)] = append(byKey[string(rec.Key)], bytes.Clone(rec.Value))
			}
		}
	}
	return byKey
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
