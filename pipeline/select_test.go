package pipeline

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/internal/replay"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/selection"
)

// With challengers the service emits the champion's predictions, names
// the learner behind each, switches when a challenger is better by the
// margin over the window, counts every learner's own mistakes, and plays
// exactly the partition model offline.
func TestChampionAndChallengers(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	msgs := a9aTopic(t, b, 3000)

	// A learner that stops after its first support vector, against one
	// that keeps learning.
	cfg := testConfig(t, b, "stoptron:budget=1")
	wide, _ := learners.ParseKernel("rbf:gamma=0.05")
	cfg.Model.Challengers = []model.Candidate{{Learner: "perceptron:max=300", Kernel: wide}}
	cfg.Model.Select = selection.Config{Window: 300, Margin: 0.02}
	cfg.Metrics = NewMetrics(nil)
	runMember(t, cfg)
	byOffset := predictionsByOffset(t, b, len(msgs))
	twin, err := model.New(cfg.ModelConfig(0))
	if err != nil {
		t.Fatal(err)
	}
	switchedAt := int64(-1)
	var mistakes [2]float64
	for off := range int64(len(msgs)) {
		want, err := twin.Step(msgs[off].Value)
		if err != nil {
			t.Fatal(err)
		}
		p := byOffset[off]
		if p.Margin != want.Margin || p.Learner != want.Learner {
			t.Fatalf("offset %d: %s gave %v, offline %s gave %v", off, p.Learner, p.Margin, want.Learner, want.Margin)
		}
		for i := range mistakes {
			if want.Mistakes&(1<<i) != 0 {
				mistakes[i]++
			}
		}
		if want.Switched && switchedAt < 0 {
			switchedAt = off
		}
	}
	if switchedAt < 299 || byOffset[int64(len(msgs)-1)].Learner != twin.CandidateName(1) {
		t.Fatalf("switched at %d, last prediction by %s: the better learner should take over after the window", switchedAt, byOffset[int64(len(msgs)-1)].Learner)
	}
	mt := cfg.Metrics
	waitFor(t, "the learners' metrics", 10*time.Second, func() bool {
		return testutil.ToFloat64(mt.LearnerMistakes.WithLabelValues("0", twin.CandidateName(1))) == mistakes[1]
	})
	if got := testutil.ToFloat64(mt.LearnerMistakes.WithLabelValues("0", twin.CandidateName(0))); got != mistakes[0] {
		t.Fatalf("first learner's mistakes %v, offline %v", got, mistakes[0])
	}
	if got := testutil.ToFloat64(mt.ChampionSwitches.WithLabelValues("0")); got != float64(twin.Selector().Switches()) || got < 1 {
		t.Fatalf("switches %v, offline %d", got, twin.Selector().Switches())
	}
	if got := testutil.ToFloat64(mt.Champion.WithLabelValues("0", twin.CandidateName(twin.Champion()))); got != 1 {
		t.Fatalf("champion gauge %v", got)
	}
	// replay --select over the same topic plays the same selector: its
	// selection row made the service's mistakes, with its switches.
	var served uint64
	for _, p := range byOffset {
		if p.Mistake != nil && *p.Mistake {
			served++
		}
	}
	sel := cfg.Model.Select
	rep, err := replay.Run(context.Background(), replay.Source{Conn: cfg.Conn, Topic: "in"},
		replay.Config{Learners: []string{cfg.Model.Learner}, Challengers: cfg.Model.Challengers, Select: &sel, Kernel: cfg.Model.Kernel, Seed: cfg.Model.Seed, Detectors: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	rows := rep.Partitions[0].Learners
	last := rows[len(rows)-1]
	if !last.Selector || last.Mistakes != served || last.Switches != twin.Selector().Switches() {
		t.Fatalf("replay's selection row %+v; the service made %d mistakes and %d switches", last, served, twin.Selector().Switches())
	}
}

// a9aTopic writes the first n records of a9a to partition 0 of "in" as
// JSON records and returns the messages.
func a9aTopic(t *testing.T, b *embedded.Broker, n int) []kafka.Message {
	t.Helper()
	set, err := dataset.Load(context.Background(), "../testdata/a9a.gz", dataset.Options{Limit: n})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []kafka.Message
	for i := range set.Len() {
		msgs = append(msgs, kafka.Message{Value: codec.AppendJSON(nil, codec.Example{X: set.X[i], Label: strconv.Itoa(set.Y[i])})})
	}
	produce(t, b, "in", msgs, toPartition(0))
	return msgs
}

// predictionsByOffset reads n predictions from "out", by input offset.
func predictionsByOffset(t *testing.T, b *embedded.Broker, n int) map[int64]codec.Prediction {
	t.Helper()
	preds := readTopic(t, b, "out", n, 60*time.Second)
	if len(preds) != n {
		t.Fatalf("%d predictions for %d records", len(preds), n)
	}
	byOffset := map[int64]codec.Prediction{}
	for _, r := range preds {
		p, _ := codec.DecodePrediction(r.msg.Value)
		byOffset[p.Offset] = p
	}
	return byOffset
}
