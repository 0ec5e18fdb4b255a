package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/internal/offline"
	"github.com/streamlearner/streamlearner/internal/pending"
	"github.com/streamlearner/streamlearner/internal/replay"
	"github.com/streamlearner/streamlearner/learners"
)

func TestGenThenReplayFromHeaders(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := execute(t, "gen", "sea", "--n", "4000", "--shifts", "3", "--brokers", b.Addr(), "--topic", "sea", "--auto-create"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	report, plot := filepath.Join(dir, "r.json"), filepath.Join(dir, "p.svg")
	out, err := execute(t, "replay", "--brokers", b.Addr(), "--topic", "sea", "--kernel", "rbf:gamma=0.1",
		"--learner", "perceptron", "--learner", "lbp:budget=50", "--shifts", "from-headers", "--window", "200",
		"--detector", "page-hinkley", "--report", report, "--plot", plot)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"perceptron", "lbp:budget=50", "page-hinkley"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	var rep replay.Report
	b2, err := os.ReadFile(report)
	if err != nil || json.Unmarshal(b2, &rep) != nil {
		t.Fatalf("report: %v", err)
	}
	// gen sea cuts 4000 records into four equal segments.
	p := rep.Partitions[0]
	if p.Rounds != 4000 || len(p.Shifts) != 3 || p.Shifts[0].Round != 1000 || p.Shifts[2].Round != 3000 {
		t.Fatalf("rounds %d shifts %+v", p.Rounds, p.Shifts)
	}
	l := p.Learners[1]
	if len(l.Segments) != 4 || len(l.Recovery) != 3 || len(l.Detectors) != 1 || l.Detectors[0].Name != "page-hinkley" || l.SupportMax != 50 {
		t.Fatalf("lbp report: %d segments, %d recoveries, detectors %+v, support max %d", len(l.Segments), len(l.Recovery), l.Detectors, l.SupportMax)
	}
	if svg, err := os.ReadFile(plot); err != nil || !strings.Contains(string(svg), "<svg") {
		t.Fatalf("plot: %v", err)
	}

	// Bad flags fail before any reading.
	for _, args := range [][]string{
		{"--shifts", "10,5"}, {"--shifts", "x"}, {"--plot", "p.gif"}, {"--detector", "cusum"},
	} {
		base := []string{"replay", "--brokers", b.Addr(), "--topic", "sea", "--kernel", "linear", "--learner", "perceptron"}
		if _, err := execute(t, append(base, args...)...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// TestSelectReplayEqualsEval: on the same generated stream, replay of the
// topic and eval of the file play the same selection: every row (each
// learner alone and the selector) has the same mistake rate, support and
// switches.
func TestSelectReplayEqualsEval(t *testing.T) {
	b, dir, file := seaFileAndTopic(t)
	sel := []string{"--kernel", "rbf:gamma=0.1", "--learner", "rbp:budget=40", "--learner", "forgetron:budget=40",
		"--challenger", "perceptron@linear", "--select", "window=200,margin=0.01", "--select-detector", "adwin", "--seed", "3"}
	out, err := execute(t, append([]string{"eval", "--data", file, "--keep-order", "--format", "json"}, sel...)...)
	if err != nil {
		t.Fatal(err)
	}
	var ev struct{ Learners []offline.Result }
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &ev); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	table, rep := replaySea(t, b, dir, sel)
	rows := rep.Partitions[0].Learners
	if len(rows) != 4 || len(ev.Learners) != 4 || !rows[3].Selector || !ev.Learners[3].Selector || rows[3].Switches == 0 {
		t.Fatalf("replay rows %d, eval rows %d", len(rows), len(ev.Learners))
	}
	for i, r := range rows {
		e := ev.Learners[i]
		// The same names too: the canonical spec, @ its kernel if not --kernel.
		if r.Spec != e.Spec || r.MistakeRate != e.MistakeRate || float64(r.Support) != e.Support || float64(r.Switches) != e.Switches {
			t.Errorf("%s: replay %v (support %d, %d switches), eval %s %v (%v, %v)", r.Spec, r.MistakeRate, r.Support, r.Switches, e.Spec, e.MistakeRate, e.Support, e.Switches)
		}
	}
	if !strings.Contains(table, "select(rbp:budget=40|forgetron:budget=40|perceptron:max=0@linear)") || !strings.Contains(table, "best single learner in hindsight") {
		t.Errorf("replay table:\n%s", table)
	}
	// Flags that cannot go together fail before any reading.
	for _, args := range [][]string{
		{"--challenger", "perceptron"}, {"--select", "window=0"}, {"--select", "default", "--select-detector", "cusum"},
		{"--select", "default", "--challenger", "perceptron@rbf:gamma=x"}, {"--select", "default", "--challenger", "@linear"},
	} {
		base := []string{"eval", "--data", file, "--kernel", "linear", "--learner", "lbp:budget=5"}
		if _, err := execute(t, append(base, args...)...); err == nil {
			t.Errorf("eval %v accepted", args)
		}
	}
}

// seaFileAndTopic starts a broker (closed with the test) and writes the
// same SEA stream of 3,000 records with two shifts to its topic "sea" and
// to a file in dir.
func seaFileAndTopic(t *testing.T) (b *embedded.Broker, dir, file string) {
	t.Helper()
	b, err := embedded.Start(embedded.Config{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	dir = t.TempDir()
	file = filepath.Join(dir, "sea.libsvm")
	gen := []string{"gen", "sea", "--n", "3000", "--shifts", "2", "--seed", "4"}
	if _, err := execute(t, append(gen, "--out", file)...); err != nil {
		t.Fatal(err)
	}
	if _, err := execute(t, append(gen, "--brokers", b.Addr(), "--topic", "sea", "--auto-create")...); err != nil {
		t.Fatal(err)
	}
	return b, dir, file
}

// replaySea replays seaFileAndTopic's topic with flags and returns the
// table and the JSON report.
func replaySea(t *testing.T, b *embedded.Broker, dir string, flags []string) (string, replay.Report) {
	t.Helper()
	report := filepath.Join(dir, "r.json")
	table, err := execute(t, append([]string{"replay", "--brokers", b.Addr(), "--topic", "sea", "--report", report, "--detector", "none"}, flags...)...)
	if err != nil {
		t.Fatal(err)
	}
	var rep replay.Report
	raw, err := os.ReadFile(report)
	if err != nil || json.Unmarshal(raw, &rep) != nil {
		t.Fatalf("report: %v", err)
	}
	return table, rep
}

// replay reads committed by default, as run does; --read-uncommitted
// replays the aborted transactions' records too.
func TestReplayIsolationFlag(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"tx"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	for i, commit := range []bool{true, false, true} {
		var vs [][]byte
		for j := range 10 {
			vs = append(vs, []byte(fmt.Sprintf("%+d 1:%d 2:1", 1-2*(j%2), i+j)))
		}
		if err := embedded.ProduceTransaction(ctx, b.Addr(), "tx", 0, "p", vs, commit); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	for _, c := range []struct {
		flags  []string
		rounds int
	}{{nil, 20}, {[]string{"--read-uncommitted"}, 30}} {
		report := filepath.Join(dir, fmt.Sprint(c.rounds, ".json"))
		args := append([]string{"replay", "--brokers", b.Addr(), "--topic", "tx", "--learner", "perceptron", "--kernel", "linear",
			"--detector", "none", "--report", report}, c.flags...)
		if _, err := execute(t, args...); err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(report)
		if want := fmt.Sprintf(`"rounds": %d`, c.rounds); !strings.Contains(string(raw), want) {
			t.Fatalf("%v: report lacks %s:\n%.400s", c.flags, want, raw)
		}
	}
}

// The flags of labels that come late reach the replay: --delay, and
// --delayed-labels with the pending store's bounds, give replay.Run's
// numbers for the same configuration; --label-topic reads the labels
// beside the topic; flags that cannot go together fail before reading.
func TestReplayDelayedLabelFlags(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"keyed", "plain", "in", "labels"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Record i (x = i mod 7, y its sign around 3) keyed k<i> at 100i ms,
	// its label 4 records later; a pause of 10 s after record 200 expires
	// what is held under a max age of 1 s.
	stamp := func(i int) time.Time {
		ms := int64(100 * i)
		if i > 200 {
			ms += 10_000
		}
		return time.UnixMilli(1_700_000_000_000 + ms)
	}
	label := func(i int) string { return map[bool]string{true: "+1", false: "-1"}[i%7 > 3] }
	var keyed, plain, in, labels []kafka.Message
	for i := range 300 {
		key := []byte(fmt.Sprint("k", i))
		rec := fmt.Sprintf("1:%d 2:1", i%7)
		keyed = append(keyed, kafka.Message{Key: key, Value: []byte(rec), Time: stamp(i)})
		in = append(in, keyed[len(keyed)-1])
		plain = append(plain, kafka.Message{Value: []byte(label(i) + " " + rec)})
		if j := i - 4; j >= 0 {
			lab := kafka.Message{Key: []byte(fmt.Sprint("k", j)), Value: []byte(label(j)), Time: stamp(i)}
			keyed, labels = append(keyed, lab), append(labels, lab)
		}
	}
	for topic, msgs := range map[string][]kafka.Message{"keyed": keyed, "plain": plain, "in": in, "labels": labels} {
		w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Topic: topic, BatchSize: 1000, BatchTimeout: 10 * time.Millisecond, RequiredAcks: kafka.RequireAll}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	k, _ := learners.ParseKernel("rbf:gamma=0.5")
	conn := kafkaconn.Config{Brokers: []string{b.Addr()}}
	base := []string{"replay", "--brokers", b.Addr(), "--kernel", "rbf:gamma=0.5", "--learner", "perceptron", "--detector", "none"}
	dir := t.TempDir()
	run := func(args ...string) replay.Report {
		t.Helper()
		report := filepath.Join(dir, "r.json")
		if _, err := execute(t, append(append(base, "--report", report), args...)...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var rep replay.Report
		raw, err := os.ReadFile(report)
		if err != nil || json.Unmarshal(raw, &rep) != nil {
			t.Fatalf("report: %v", err)
		}
		return rep
	}
	cfg := replay.Config{Learners: []string{"perceptron"}, Kernel: k, Detectors: []string{}}
	direct := func(src replay.Source, cfg replay.Config) replay.LearnerReport {
		t.Helper()
		rep, err := replay.Run(ctx, src, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Partitions[0].Learners[0]
	}

	// --delay over the topic is a model.Delayer over its records, as eval
	// --delay --keep-order plays them.
	got := run("--topic", "plain", "--delay", "25").Partitions[0].Learners[0]
	m, err := model.New(model.Config{Learner: "perceptron", Kernel: k, Seed: 1, Window: 1000, Delayed: model.DelayConfig(25)})
	if err != nil {
		t.Fatal(err)
	}
	d, err := model.NewDelayer(m, 25)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range plain {
		if err := d.Step(msg.Value, func(model.Result) {}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Flush(func(model.Result) {}); err != nil {
		t.Fatal(err)
	}
	prompt := direct(replay.Source{Conn: conn, Topic: "plain"}, cfg)
	if ev := m.Eval(); got.Mistakes != ev.Mistakes || got.Labeled != ev.Labeled || got.Support != ev.Support || got.Kappa != ev.Scores().Kappa ||
		got.Labeled != 300 || got.Labels == nil || got.Labels.Late != 300 || got.Mistakes == prompt.Mistakes {
		t.Fatalf("--delay 25: %d mistakes of %d (support %d), labels %+v; the Delayer %d of %d (%d), at once %d",
			got.Mistakes, got.Labeled, got.Support, got.Labels, ev.Mistakes, ev.Labeled, ev.Support, prompt.Mistakes)
	}

	delayed := cfg

	delayed.Model.Delayed = &pending.Config{MaxRecords: 3, MaxAge: 1000}
	got = run("--topic", "keyed", "--delayed-labels", "--pending-max-records", "3", "--pending-max-age", "1s").Partitions[0].Learners[0]
	want := direct(replay.Source{Conn: conn, Topic: "keyed"}, delayed)
	if got.Mistakes != want.Mistakes || got.Labeled != want.Labeled || !reflect.DeepEqual(got.Labels, want.Labels) ||
		got.Labels.Refused["label_evicted"] == 0 || got.Labels.Refused["label_expired"] == 0 {
		t.Fatalf("--delayed-labels: %d/%d, labels %+v; replay.Run %d/%d, %+v", got.Mistakes, got.Labeled, got.Labels, want.Mistakes, want.Labeled, want.Labels)
	}
	// The defaults (100,000 records, no max age): every label finds its
	// record, and the label topic holds the same labels at the same times.
	got = run("--topic", "keyed", "--delayed-labels").Partitions[0].Learners[0]
	rep := run("--topic", "in", "--label-topic", "labels")
	if rep.LabelTopic != "labels" || rep.Partitions[0].LabelRecords != 296 {
		t.Fatalf("label topic %q, %d label records", rep.LabelTopic, rep.Partitions[0].LabelRecords)
	}
	pair := rep.Partitions[0].Learners[0]
	if got.Labels.Late != 296 || got.Labels.Pending != 4 || len(got.Labels.Refused) != 0 || pair.Mistakes != got.Mistakes || !reflect.DeepEqual(pair.Labels, got.Labels) {
		t.Fatalf("same topic %d mistakes, %+v; label topic %d, %+v", got.Mistakes, got.Labels, pair.Mistakes, pair.Labels)
	}

	for _, args := range [][]string{
		{"--delay", "-1"}, {"--delay", "5", "--delayed-labels"}, {"--delay", "5", "--label-topic", "labels"},
		{"--delayed-labels", "--pending-max-records", "0"}, {"--delayed-labels", "--pending-max-age", "1us"},
		{"--label-topic", "labels", "--from", "10"},
	} {
		if _, err := execute(t, append(append(base, "--topic", "in"), args...)...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
