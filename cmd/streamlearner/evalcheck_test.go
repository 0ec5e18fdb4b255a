package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/internal/dev/embedded"
)

const elec2 = "../../testdata/elec2.3000.jsonl.gz"

// A label field that no record has left every record unlabeled: eval used
// to report 0.00 % mistakes and succeed. It must fail naming the fields.
func TestEvalMissingLabelFieldFails(t *testing.T) {
	for _, order := range [][]string{nil, {"--keep-order"}} {
		args := append([]string{"eval", "--data", elec2, "--label-field", "klass", "--positive", "UP", "--learner", "perceptron"}, order...)
		out, err := execute(t, args...)
		if err == nil {
			t.Fatalf("%v: no error; printed %s", order, out)
		}
		for _, want := range []string{`label field "klass"`, "nothing to learn", "class (3000)", "nswprice (3000)", "--label-field"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v: error %q does not say %q", order, err, want)
			}
		}
		if strings.Contains(out, "0.00") {
			t.Errorf("%v: printed a table: %s", order, out)
		}
	}
}

// A --positive class that no record has (the labels are UP and DOWN) made
// every record negative: 0.00 % mistakes. And a list that takes every
// label leaves no negative. Both must fail naming the labels seen.
func TestEvalOneSidedPositiveFails(t *testing.T) {
	for _, tc := range []struct{ positive, side string }{{"up", "none is"}, {"UP,DOWN", "every one is"}} {
		_, err := execute(t, "eval", "--data", elec2, "--label-field", "class", "--positive", tc.positive, "--learner", "perceptron")
		if err == nil {
			t.Fatalf("--positive %s: no error", tc.positive)
		}
		for _, want := range []string{tc.side + " in --positive (" + tc.positive + ")", "DOWN (1797), UP (1203)"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("--positive %s: error %q does not say %q", tc.positive, err, want)
			}
		}
	}
	// LIBSVM records: the labels are the first tokens.
	_, err := execute(t, "eval", "--data", "../../testdata/a9a.gz", "--limit", "300", "--positive", "3", "--learner", "perceptron")
	if err == nil || !strings.Contains(err.Error(), "-1 (") || !strings.Contains(err.Error(), ", 1 (") {
		t.Errorf("a9a --positive 3: %v", err)
	}
	// A class that does occur still runs.
	ok := evalJSON(t, "eval", "--data", elec2, "--label-field", "class", "--positive", "UP", "--learner", "perceptron", "--format", "json")
	if r := ok[0]; r.Labeled != 3000 || r.Positives != 1203 {
		t.Errorf("--positive UP: labeled %d, positives %d; want 3000 and 1203", r.Labeled, r.Positives)
	}
}

// Flags only events use did nothing on records: --scale online gave the
// same mistakes with and without it. They are refused.
func TestEvalRefusesEventFlagsOnRecords(t *testing.T) {
	for _, flags := range [][]string{{"--scale", "online"}, {"--key-field", "id"}, {"--normalize-text"}, {"--label-field", "class"}, {"--hash-bits", "10"}} {
		args := append([]string{"eval", "--data", "../../testdata/a9a.gz", "--limit", "200", "--learner", "perceptron"}, flags...)
		_, err := execute(t, args...)
		if err == nil || !strings.Contains(err.Error(), flags[0]) || !strings.Contains(err.Error(), "indexed records") {
			t.Errorf("%v: %v", flags, err)
		}
	}
	if _, err := execute(t, "eval", "--data", elec2, "--label-field", "class", "--positive", "UP", "--learner", "perceptron", "--scale", "online", "--limit", "300"); err != nil {
		t.Errorf("--scale online on events: %v", err)
	}
}

// Flags that change nothing in the run asked for are refused, each
// saying what it needs: they were accepted and silently ignored.
func TestEvalRefusesFlagsWithoutEffect(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--keep-order", "--orders", "3"}, "--orders 3 with --keep-order"},
		{[]string{"--window", "50"}, "--window is the windowed rate of --print-every and --curve"},
		{[]string{"--max-classes", "5"}, "give --classes auto"},
	} {
		args := append([]string{"eval", "--data", "../../testdata/a9a.gz", "--limit", "200", "--learner", "perceptron"}, tc.flags...)
		if _, err := execute(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.flags, err, tc.want)
		}
	}
	// With what they need, they are taken.
	for _, flags := range [][]string{{"--window", "50", "--print-every", "100"}, {"--orders", "3"}} {
		args := append([]string{"eval", "--data", "../../testdata/a9a.gz", "--limit", "200", "--learner", "perceptron"}, flags...)
		if _, err := execute(t, args...); err != nil {
			t.Errorf("%v: %v", flags, err)
		}
	}
}

// The table says which order the rates were measured in.
func TestEvalTableNamesTheOrder(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{nil, "order: 1 random order of the records (--seed 1)"},
		{[]string{"--orders", "2", "--seed", "7"}, "order: 2 random orders of the records (--seed 7)"},
		{[]string{"--keep-order"}, "order: the file's (--keep-order)"},
	} {
		args := append([]string{"eval", "--data", "../../testdata/a9a.gz", "--limit", "200", "--learner", "perceptron"}, tc.flags...)
		out, err := execute(t, args...)
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("%v: %v; output lacks %q:\n%s", tc.flags, err, tc.want, out)
		}
	}
}

// Every command that connects takes the same short flags: -b for the
// brokers, and -t for the topic it reads or writes (tail had them, produce
// and replay answered "unknown flag -b").
func TestConnectingCommandsShareShortFlags(t *testing.T) {
	k := cliModel(t)
	byCmd := map[string]map[string]rune{}
	for f, n := range flagOwners(k.Model.Node) {
		path := strings.Join(commandPath(n), " ")
		if byCmd[path] == nil {
			byCmd[path] = map[string]rune{}
		}
		byCmd[path][f.Name] = f.Short
	}
	connecting := 0
	for path, flags := range byCmd {
		short, ok := flags["brokers"]
		if !ok {
			continue
		}
		connecting++
		if short != 'b' {
			t.Errorf("%s: --brokers has short %q, want -b", path, short)
		}
		// checkpoint list's --topic filters the input topics listed.
		if s, ok := flags["topic"]; ok && !strings.HasPrefix(path, "checkpoint") && s != 't' {
			t.Errorf("%s: --topic has short %q, want -t", path, s)
		}
	}
	if connecting < 5 {
		t.Fatalf("%d commands with --brokers: the walk missed some (%v)", connecting, byCmd)
	}
	for _, args := range [][]string{
		{"produce", "-b", "h:1", "-t", "in", "--data", "cli_test.go"},
		{"replay", "-b", "h:1", "-t", "in", "--learner", "perceptron"},
	} {
		var parsed cli
		p, err := kong.New(&parsed, options(context.Background(), &bytes.Buffer{})...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Parse(args); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}

// replay of a topic of indexed records refused nothing: --scale online
// and the other event-only flags were accepted and did nothing, as in
// eval. Detected (auto) or said (--input records), records refuse them;
// events take them.
func TestReplayRefusesEventFlagsOnRecords(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := execute(t, "gen", "sea", "--n", "300", "-b", b.Addr(), "-t", "sea", "--auto-create"); err != nil {
		t.Fatal(err)
	}
	base := []string{"replay", "-b", b.Addr(), "-t", "sea", "--learner", "perceptron"}
	for _, flags := range [][]string{{"--scale", "online"}, {"--input", "records", "--scale", "online"}, {"--key-field", "id"}} {
		_, err := execute(t, append(base, flags...)...)
		if err == nil || !strings.Contains(err.Error(), "indexed records") {
			t.Errorf("%v: %v", flags, err)
		}
	}
	if _, err := execute(t, base...); err != nil {
		t.Errorf("without them: %v", err)
	}
	if _, err := execute(t, "produce", "-b", b.Addr(), "-t", "elec", "--data", elec2, "--auto-create"); err != nil {
		t.Fatal(err)
	}
	if _, err := execute(t, "replay", "-b", b.Addr(), "-t", "elec", "--learner", "perceptron", "--label-field", "class", "--positive", "UP", "--scale", "online"); err != nil {
		t.Errorf("events with --scale online: %v", err)
	}
}

// features listed the label as one more feature, without a word, when the
// label field named no field of the records.
func TestFeaturesWarnsOfAMissingLabelField(t *testing.T) {
	out, err := execute(t, "features", "--data", elec2, "--show", "0")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`no record has the label field "label"`, "class (3000)", "--label-field"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = execute(t, "features", "--data", elec2, "--show", "0", "--label-field", "class")
	if err != nil || strings.Contains(out, "warning") || !strings.Contains(out, "27000 fields") {
		t.Errorf("with the label field: %v\n%s", err, out)
	}
}

// eval --test took a file of another feature space without a word, and
// scored the model there.
func TestEvalWarnsOfATestInAnotherSpace(t *testing.T) {
	warned := func(args ...string) string {
		return captureStderr(t, func() {
			if _, err := execute(t, append([]string{"eval", "--learner", "perceptron", "--kernel", "linear"}, args...)...); err != nil {
				t.Errorf("%v: %v", args, err)
			}
		})
	}
	if e := warned("--data", "../../testdata/a9a.gz", "--limit", "300", "--test", "../../testdata/usps-2000.gz", "--positive", "1"); !strings.Contains(e, "another feature space") {
		t.Errorf("a9a against USPS: no warning:\n%s", e)
	}
	if e := warned("--data", "../../testdata/a9a.gz", "--limit", "300", "--test", "../../testdata/a9a.t.gz"); strings.Contains(e, "warning") {
		t.Errorf("a9a against its test file: %s", e)
	}
	adult := []string{"--label-field", "income", "--positive", ">50K", "--data", "../../testdata/adult.train.3000.jsonl.gz"}
	if e := warned(append(adult, "--test", "../../testdata/adult.test.1000.jsonl.gz")...); strings.Contains(e, "warning") {
		t.Errorf("Adult against its test file: %s", e)
	}
	other := filepath.Join(t.TempDir(), "other.jsonl")
	var b strings.Builder
	for i := range 20 {
		fmt.Fprintf(&b, "{\"income\":\"%s\",\"Elevation\":%d}\n", []string{">50K", "<=50K"}[i%2], 2000+i)
	}
	if err := os.WriteFile(other, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if e := warned(append(adult, "--test", other)...); !strings.Contains(e, "different fields") || !strings.Contains(e, "Elevation (20)") || !strings.Contains(e, "education (3000)") {
		t.Errorf("Adult against another space: %s", e)
	}
}

// run --input auto against brokers it cannot reach waited out
// --connect-timeout, then suggested setting --input instead of naming
// the connection.
func TestRunNamesUnreachableBrokers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	code, _, errOut := runCLI(t, "run", "-b", addr, "-t", "in", "--group", "g", "--output-topic", "out", "--learner", "perceptron",
		"--connect-timeout", "1s", "--metrics-addr", "")
	if code == 0 || !strings.Contains(errOut, "cannot reach the brokers "+addr+" within --connect-timeout 1s") || strings.Contains(errOut, "set --input") {
		t.Errorf("exit %d:\n%s", code, errOut)
	}
}

// run with a label field no record has predicted every record from a
// model that learned nothing. Each is dead-lettered (missing_label) with
// a detail naming the field and the record's fields, until a label comes.
func TestRunDeadLettersRecordsWithoutTheLabelField(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"ev", "out", "ev.dlq"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := execute(t, "produce", "-b", b.Addr(), "-t", "ev", "--data", elec2, "--limit", "40"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := executeCtx(t, ctx, "run", "-b", b.Addr(), "-t", "ev", "--group", "g", "--output-topic", "out", "--learner", "perceptron",
			"--label-field", "klass", "--positive", "UP", "--log-level", "error", "--metrics-addr", "", "--flush-interval", "50ms")
		done <- err
	}()
	defer func() { cancel(); <-done }()
	rd := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b.Addr()}, Topic: "ev.dlq", Partition: 0, MaxWait: 100 * time.Millisecond})
	defer rd.Close()
	rctx, rcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer rcancel()
	for i := range 40 {
		m, err := rd.ReadMessage(rctx)
		if err != nil {
			t.Fatalf("dead letter %d: %v", i, err)
		}
		h := map[string]string{}
		for _, x := range m.Headers {
			h[x.Key] = string(x.Value)
		}
		if h["streamlearner.error"] != "missing_label" || !strings.Contains(h["streamlearner.error.detail"], `no label field "klass"`) ||
			!strings.Contains(h["streamlearner.error.detail"], "class") {
			t.Fatalf("dead letter %d: %v", i, h)
		}
	}
}

// replay of a topic whose records lack the label field printed "no
// labels" rows and exited 0; it fails, naming the field.
func TestReplayWithoutLabelsFails(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := execute(t, "produce", "-b", b.Addr(), "-t", "e", "--data", elec2, "--limit", "100", "--auto-create"); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t, "replay", "-b", b.Addr(), "-t", "e", "--learner", "perceptron", "--label-field", "klass", "--positive", "UP")
	if err == nil || !strings.Contains(err.Error(), `the label field "klass"`) || !strings.Contains(out, "no labels") {
		t.Errorf("%v\n%s", err, out)
	}
	if _, err := execute(t, "replay", "-b", b.Addr(), "-t", "e", "--learner", "perceptron", "--label-field", "class", "--positive", "UP"); err != nil {
		t.Errorf("with the label field: %v", err)
	}
}
