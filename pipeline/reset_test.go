package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	kafka "github.com/segmentio/kafka-go"
)

// TestResetOffsetsRewindsOnce: --reset-offsets earliest plays a partition
// again from its start with a new model (so the predictions repeat the
// first run's, margin for margin), is kept in the commits' metadata, and a
// member restarted with the same value goes on from where the group
// stands instead of rewinding again.
func TestResetOffsetsRewindsOnce(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	toOne := kafka.BalancerFunc(func(kafka.Message, ...int) int { return 1 })
	msgs := make([]kafka.Message, 40)
	for i := range msgs {
		y := 1 - 2*(i%2)
		msgs[i] = kafka.Message{Value: fmt.Appendf(nil, `{"label": %d, "features": {"1": %d, "%d": 1}}`, y, y, 2+i%5)}
	}
	produce(t, b, "in", msgs, toOne)
	cl := &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}}
	committed := func() (int64, string) {
		resp, err := cl.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: "g", Topics: map[string][]int{"in": {1}}})
		if err != nil || len(resp.Topics["in"]) != 1 {
			return -1, ""
		}
		return resp.Topics["in"][0].CommittedOffset, resp.Topics["in"][0].Metadata
	}
	serve := func(reset string, want int, resets float64) []record {
		t.Helper()
		cfg := testConfig(t, b, "perceptron")
		cfg.CheckpointInterval, cfg.ResetOffsets = 100*time.Millisecond, reset
		cfg.Metrics = NewMetrics(nil)
		stop, _ := runMember(t, cfg)
		out := readTopic(t, b, "out", want, 30*time.Second)
		waitFor(t, "the commit", 10*time.Second, func() bool { off, _ := committed(); return off == int64(len(msgs)) })
		// Long enough for a wrongly repeated rewind to show in the output.
		time.Sleep(500 * time.Millisecond)
		stop()
		out = readTopic(t, b, "out", want+1, 2*time.Second)
		if len(out) != want {
			t.Fatalf("--reset-offsets %q: %d predictions in the output topic, want %d", reset, len(out), want)
		}
		if got := testutil.ToFloat64(cfg.Metrics.ModelResets.WithLabelValues("reset_offsets")); got != resets {
			t.Errorf("--reset-offsets %q: %v partitions reset, want %v", reset, got, resets)
		}
		slices.SortFunc(out, func(a, b record) int { return int(a.offset - b.offset) })
		return out
	}
	first := serve("", len(msgs), 0)
	if _, meta := committed(); strings.Contains(meta, resetTag) {
		t.Fatalf("metadata %q names a reset that was not asked for", meta)
	}
	again := serve("earliest", 2*len(msgs), 4)
	if _, meta := committed(); !strings.HasSuffix(meta, resetTag+"earliest") {
		t.Fatalf("metadata %q after a reset does not record it", meta)
	}
	for i, r := range again[len(msgs):] {
		if string(r.msg.Value) != string(first[i].msg.Value) {
			t.Fatalf("replayed prediction %d is %s, the first run's %s: the rewind did not start a new model", i, r.msg.Value, first[i].msg.Value)
		}
	}
	// The same value again: nothing is replayed.
	serve("earliest", 2*len(msgs), 0)
}

func TestResetOffsetsValidation(t *testing.T) {
	b := startBroker(t)
	for spec, want := range map[string]string{
		"yesterday":            "--reset-offsets",
		"-5":                   "",
		"earliest":             "",
		"2026-01-02T15:04:05Z": "",
	} {
		cfg := testConfig(t, b, "perceptron")
		cfg.ResetOffsets = spec
		err := cfg.Validate()
		if (err != nil) != (want != "") || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("--reset-offsets %s: %v", spec, err)
		}
		cfg.DelayedLabels, cfg.LabelTopic = true, "labels"
		if err := cfg.Validate(); (err != nil) != (spec == "-5" || spec == "yesterday") {
			t.Errorf("--reset-offsets %s with a label topic: %v", spec, err)
		}
	}
}

func TestMetaCarriesTheReset(t *testing.T) {
	for _, c := range []struct{ snap, reset string }{
		{"in/1/0000000003/00000000000000000007", ""},
		{"in/1/0000000003/00000000000000000007", "earliest"},
		{"", "2026-01-02T15:04:05Z"},
		{"", ""},
		{"in/1/0000000003/00000000000000000007", "-5"},
	} {
		s, r := splitMeta(joinMeta(c.snap, c.reset))
		if s != c.snap || r != c.reset {
			t.Errorf("joinMeta(%q, %q) reads back as %q, %q", c.snap, c.reset, s, r)
		}
	}
}
