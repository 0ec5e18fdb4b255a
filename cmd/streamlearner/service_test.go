package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/rs/zerolog"
	"github.com/streamlearner/streamlearner/pipeline"
	"image/png"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/replay"
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
	// A topic that does not exist: the error says what to do, and no
	// "sent 0 records" line pretends it went anywhere.
	out, err = execute(t, "produce", "--brokers", b.Addr(), "--topic", "nope", "--data", "../../testdata/a9a.gz", "--limit", "5")
	if err == nil || !strings.Contains(err.Error(), "--auto-create") || strings.Contains(out, "sent") {
		t.Fatalf("produce to a missing topic: %q %v", out, err)
	}
	// One bad record, in partition 0: 251 records there, 250 in partition 1.
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Topic: "in", RequiredAcks: kafka.RequireAll, Balancer: kafka.BalancerFunc(func(kafka.Message, ...int) int { return 0 })}
	if err := w.WriteMessages(context.Background(), kafka.Message{Value: []byte("{not json")}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	inPartition := map[int]int64{0: 251, 1: 250}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	dir := t.TempDir()
	ops := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	go func() {
		_, err := executeCtx(t, ctx, "run", "--brokers", b.Addr(), "--topic", "in", "--group", "g", "--output-topic", "out",
			"--learner", "forgetron:budget=50", "--kernel", "rbf:gamma=0.02", "--log-level", "warn", "--flush-interval", "50ms",
			"--checkpoint-dir", dir, "--checkpoint-every", "100", "--flush-records", "50", "--checkpoint-interval", "1s", "--metrics-addr", ops)
		done <- err
	}()
	tctx, tcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer tcancel()
	out, err = executeCtx(t, tctx, "tail", "--brokers", b.Addr(), "--topic", "out", "--limit", "500", "--format", "json")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	// Within the checkpoint interval of the last record, each partition's
	// offset is committed with a snapshot of all its records; no snapshot
	// is saved after that until the member stops.
	store := checkpoint.DirStore{Dir: dir}
	newestSnapshot := func(p int) (string, *checkpoint.Snapshot) {
		names, err := store.List(context.Background(), fmt.Sprintf("in/%d/", p))
		if err != nil || len(names) == 0 {
			return "", nil
		}
		data, err := store.Load(context.Background(), names[len(names)-1])
		if err != nil {
			t.Fatal(err)
		}
		snap, err := checkpoint.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		return names[len(names)-1], snap
	}
	cl := &kafka.Client{Addr: kafka.TCP(b.Addr())}
	waitFor(t, "every record in a committed checkpoint", 20*time.Second, func() bool {
		resp, err := cl.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: "g", Topics: map[string][]int{"in": {0, 1}}})
		if err != nil {
			return false
		}
		for _, op := range resp.Topics["in"] {
			if _, snap := newestSnapshot(op.Partition); op.CommittedOffset != inPartition[op.Partition] || snap == nil || snap.NextOffset != op.CommittedOffset {
				return false
			}
		}
		return len(resp.Topics["in"]) == 2
	})

	// The metrics say what happened: 501 records consumed, 500 predicted
	// and learned over two partitions, one dead letter, support within the
	// budget, no lag, every snapshot counted; ready.
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
	scraped := time.Now()
	saves := 0.0 // snapshots written: the newest one's sequence number, per partition
	for p := range inPartition {
		name, snap := newestSnapshot(p)
		_, _, _, seq, err := checkpoint.ParseName(name)
		if err != nil {
			t.Fatal(err)
		}
		saves += float64(seq)
		if seq < 1 {
			// Commits come every 100 records; snapshots when due (the
			// commits before name the new model's base), and when the
			// partition went idle.
			t.Errorf("partition %d: %d snapshots, want one at least", p, seq)
		}
		data, _ := store.Load(context.Background(), name)
		if got := sample(metrics, fmt.Sprintf(`streamlearner_checkpoint_bytes{partition="%d"}`, p)); got != float64(len(data)) {
			t.Errorf("partition %d: checkpoint bytes %v, the snapshot on disk has %d", p, got, len(data))
		}
		age := scraped.Sub(time.Unix(0, int64(1e9*sample(metrics, fmt.Sprintf(`streamlearner_checkpoint_last_success_timestamp_seconds{partition="%d"}`, p)))))
		if age < 0 || age > 5*time.Second || snap == nil {
			t.Errorf("partition %d: checkpoint age %v", p, age)
		}
	}
	for name, want := range map[string]float64{
		"streamlearner_records_consumed_total": 501, "streamlearner_records_predicted_total": 500,
		"streamlearner_records_learned_total": 500, "streamlearner_dead_letters_total": 1,
		"streamlearner_assigned_partitions": 2, "streamlearner_ready_partitions": 2,
		"streamlearner_round_duration_seconds_count": 500, "streamlearner_consumer_lag_records": 0,
		`streamlearner_checkpoint_saves_total{result="ok"}`: saves, `streamlearner_checkpoint_saves_total{result="error"}`: 0,
		"streamlearner_checkpoint_duration_seconds_count": saves,
	} {
		if got := sumSeries(metrics, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := sample(metrics, `streamlearner_dead_letters_total{partition="0",reason="invalid_json"}`); got != 1 {
		t.Errorf("dead letters of partition 0: %v", got)
	}
	if n := strings.Count(metrics, "\nstreamlearner_consumer_lag_records{"); n != 2 {
		t.Errorf("%d lag series, want one per partition", n)
	}
	if s := sumSeries(metrics, "streamlearner_round_duration_seconds_sum"); s <= 0 || s > 10 {
		t.Errorf("total round time %v s", s)
	}
	// Every series the Grafana dashboard queries is served.
	for _, name := range dashboardMetrics(t) {
		if !strings.Contains(metrics, "\n"+name+" ") && !strings.Contains(metrics, "\n"+name+"{") {
			t.Errorf("the dashboard queries %s, which /metrics does not serve", name)
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
	// Each partition's newest checkpoint holds all its records.
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
	for p, name := range newest {
		out, err = execute(t, "checkpoint", "inspect", "--dir", dir, name)
		n, _ := strconv.Atoi(p)
		if err != nil || !strings.Contains(out, fmt.Sprintf("next offset  %d", inPartition[n])) || !strings.Contains(out, "support      50") {
			t.Fatalf("inspect: %v\n%s", err, out)
		}
	}
	out, err = execute(t, "checkpoint", "inspect", "--dir", dir, "in/0/0000000009/00000000000000000001")
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("inspecting a missing snapshot: %v", err)
	}
}

// TestServiceFlagsAreChecked: invalid flags and combinations fail at
// start, before anything connects, with a message naming the problem.
func TestServiceFlagsAreChecked(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0") // another member's metrics address
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	run := func(extra ...string) []string {
		return append([]string{"run", "--brokers", "127.0.0.1:1", "--topic", "in", "--group", "g", "--output-topic", "out", "--learner", "rbp:budget=10", "--kernel", "rbf"}, extra...)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--brokers", "nohost", "--topic", "in", "--group", "g", "--output-topic", "out", "--learner", "rbp", "--kernel", "rbf"}, "host:port"},
		{[]string{"run", "--brokers", "h:1", "--topic", "in", "--group", "g", "--output-topic", "in", "--learner", "rbp", "--kernel", "rbf"}, "must differ"},
		{[]string{"run", "--brokers", "h:1", "--topic", "in", "--group", "g", "--output-topic", "out", "--learner", "rbp", "--kernel", "rbf", "--sasl-mechanism", "plain"}, "username"},
		{[]string{"tail", "--brokers", "h:1", "--topic", "out", "--from", "middle"}, "earliest"},
		{run("--checkpoint-dir", "d", "--checkpoint-topic", "models"), "not both"},
		{run("--reset-model"), "--reset-model needs --checkpoint-dir or --checkpoint-topic"},
		{run("--checkpoint-topic", "out"), "also the input, output or dead-letter topic"},
		{run("--checkpoint-topic", "in.dlq"), "also the input, output or dead-letter topic"},
		{run("--flush-records", "0"), "--flush-records must be positive"},
		{run("--checkpoint-interval=-1s"), "--checkpoint-interval must be positive"},
		{run("--heartbeat-interval", "20s"), "shorter than the session timeout"},
		{run("--tls-key", "service_test.go"), "both the certificate and the key"},
		{run("--negative", "0"), "--negative needs --positive"},
		{run("--metrics-addr", "127.0.0.1:notaport"), "metrics address"},
		{run("--metrics-addr", busy.Addr().String()), "give each member its own --metrics-addr"},
	} {
		_, err := execute(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error mentioning %q", c.args, err, c.want)
		}
	}
}

func TestDemoRunsAndCleansUp(t *testing.T) {
	// The README's first command, as a user runs it: the binary, default
	// stream and learners (faster than real time), from a fresh directory.
	bin := testBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "demo", "--rate", "20000")
	cmd.Dir = dir
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, want := range []string{
		"40000 records predicted then learned", "records/s", "window mistakes %", "support vectors",
		"shifts at [10000 20000 30000]", "segments (mistakes %)", "perceptron", "rbp:budget=200",
		"made exactly the service's mistakes on every partition", "nothing left running",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	// Every partition's line of the report has a number in each column,
	// and the service's learner, within its budget, makes fewer mistakes
	// than the unbudgeted Perceptron: the demo shows a learner worth
	// running.
	row := func(spec string) [][]string {
		return regexp.MustCompile(`(?m)^([0-3]) +`+regexp.QuoteMeta(spec)+` +(\d+\.\d\d) +\d+\.\d\d +-?\d\.\d{3} +(\d+) +(\d+\.\d ){4}`).FindAllStringSubmatch(out, -1)
	}
	served, perceptron := row("projectron++:budget=200,max=200"), row("perceptron:max=0")
	if len(served) != 4 || len(perceptron) != 4 {
		t.Fatalf("%d report rows for the service's learner and %d for the Perceptron, want one per partition:\n%s", len(served), len(perceptron), out)
	}
	for p := range served {
		rate, _ := strconv.ParseFloat(served[p][2], 64)
		support, _ := strconv.Atoi(served[p][3])
		prate, _ := strconv.ParseFloat(perceptron[p][2], 64)
		if support > 200 || rate >= prate {
			t.Errorf("partition %s: the service's learner %.2f %% with %d support vectors, the Perceptron %.2f %%", served[p][1], rate, support, prate)
		}
	}
	f, err := os.Open(filepath.Join(dir, "out/demo/drift.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatalf("drift.png: %v", err)
	}
	var rep replay.Report
	if b, err := os.ReadFile(filepath.Join(dir, "out/demo/report.json")); err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("report.json: %v", err)
	}
	if len(rep.Partitions) != 4 || len(rep.Partitions[0].Shifts) != 3 {
		t.Fatalf("report: %d partitions, %d shifts in the first", len(rep.Partitions), len(rep.Partitions[0].Shifts))
	}
	// Nothing left running: the broker's port is closed.
	addr := regexp.MustCompile(`embedded broker on (127\.0\.0\.1:\d+)`).FindStringSubmatch(out)
	if addr == nil {
		t.Fatalf("no broker address in the output:\n%s", out)
	}
	if c, err := net.DialTimeout("tcp", addr[1], time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after the demo", addr[1])
	}
}

// sumSeries adds up every sample of a metric in Prometheus text format;
// name may end with a label set, `name{result="ok"}`, to add up just that
// series.
func sumSeries(text, name string) float64 {
	total := 0.0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") && !(strings.HasSuffix(name, "}") && strings.HasPrefix(line, name)) {
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

// sample returns the value of one series, `name{labels}` exactly as the
// text format prints it, or NaN when it is not there.
func sample(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			if f, err := strconv.ParseFloat(strings.Fields(v)[0], 64); err == nil {
				return f
			}
		}
	}
	return math.NaN()
}

// TestRunDetectsEvents: run's default --input auto reads a topic of
// named-field events as events (it read them as records and dead-lettered
// every one as missing_features), and refuses event-only flags with
// --input records.
func TestRunDetectsEvents(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"ev", "out", "ev.dlq"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if out, err := execute(t, "produce", "--brokers", b.Addr(), "--topic", "ev", "--data", "../../testdata/adult.train.3000.jsonl.gz", "--limit", "300"); err != nil {
		t.Fatalf("produce: %q %v", out, err)
	}
	// A topic that is not there: the error says what to do.
	if _, err := execute(t, "produce", "--brokers", b.Addr(), "--topic", "evv", "--data", "../../testdata/adult.train.3000.jsonl.gz", "--limit", "3"); err == nil || !strings.Contains(err.Error(), "pass --auto-create") {
		t.Fatalf("produce to a missing topic: %v", err)
	}
	args := []string{"run", "--brokers", b.Addr(), "--topic", "ev", "--group", "g", "--output-topic", "out", "--learner", "rbp:budget=50",
		"--label-field", "income", "--key-field", "id", "--positive", ">50K", "--scale", "online", "--log-level", "warn", "--metrics-addr", "",
		"--flush-interval", "50ms"}
	if _, err := execute(t, append(args, "--input", "records")...); err == nil || !strings.Contains(err.Error(), "--key-field, --scale online") {
		t.Fatalf("event-only flags with --input records: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := executeCtx(t, ctx, args...)
		done <- err
	}()
	tctx, tcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer tcancel()
	out, err := executeCtx(t, tctx, "tail", "--brokers", b.Addr(), "--topic", "out", "--limit", "300", "--format", "json")
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	<-done
	if n := strings.Count(out, "\n"); n != 300 || !strings.Contains(out, `"key":"adult-`) {
		t.Fatalf("%d predictions:\n%.500s", n, out)
	}
}

// TestProgressAndSummaryLogs: run logs a progress line every --log-every
// with records/s and each served partition's figures, and a summary with
// mistake rates when it stops.
func TestProgressAndSummaryLogs(t *testing.T) {
	m := pipeline.NewMetrics(nil)
	m.Consumed.WithLabelValues("0").Add(1000)
	m.Learned.WithLabelValues("0").Add(800)
	m.Mistakes.WithLabelValues("0").Add(200)
	m.WindowRate.WithLabelValues("0").Set(0.125)
	m.Support.WithLabelValues("0").Set(100)
	m.Consumed.WithLabelValues("3").Add(10)
	m.DeadLetters.WithLabelValues("3", "invalid_json").Add(10)
	var buf bytes.Buffer
	var mu sync.Mutex
	log := zerolog.New(zerolog.SyncWriter(&lockedWriter{&mu, &buf}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { logProgress(ctx, log, m, 20*time.Millisecond); close(done) }()
	waitFor(t, "a progress line", 5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(buf.String(), `"message":"progress"`)
	})
	cancel()
	<-done
	logSummary(log, m, time.Second)
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	for _, want := range []string{`"records":1010`, `"partitions":{"0":{"records":1000,"window_mistakes_pct":12.5,"support":100}}`,
		`"message":"member stopped: summary"`, `"mistakes_pct":25`, `"3":{"records":10,"learned":0,"dead_letters":10}`, `"dead_letters":10,`} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %s:\n%s", want, out)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
