package pipeline

import (
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners/rng"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

// With an auto learner the service emits what the model offline emits,
// counts each change of the configuration it chose as a champion switch,
// and each reopening of its search, and its champion gauge names that
// configuration. The labels flip at record 1,500, a shift of the target.
func TestAutoLearnerChampionMetrics(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	msgs := boardTopic(t, b, 2400, 1500)
	cfg := testConfig(t, b, "auto:rung=50,window=300,width=8")
	cfg.Metrics = NewMetrics(nil)
	runMember(t, cfg)
	byOffset := predictionsByOffset(t, b, len(msgs))
	twin, err := model.New(cfg.ModelConfig(0))
	if err != nil {
		t.Fatal(err)
	}
	first, changes, reopens := twin.SearchChampion(), 0, 0
	for off := range int64(len(msgs)) {
		want, err := twin.Step(msgs[off].Value)
		if err != nil {
			t.Fatal(err)
		}
		if p := byOffset[off]; p.Margin != want.Margin {
			t.Fatalf("offset %d: margin %v, offline %v", off, p.Margin, want.Margin)
		}
		if want.SearchTo != "" {
			changes++
		}
		if want.SearchReopened {
			reopens++
		}
	}
	mt := cfg.Metrics
	waitFor(t, "the champion's metrics", 10*time.Second, func() bool {
		return testutil.ToFloat64(mt.ChampionSwitches.WithLabelValues("0")) == float64(changes)
	})
	if got := testutil.ToFloat64(mt.SearchReopens.WithLabelValues("0")); reopens == 0 || got != float64(reopens) {
		t.Fatalf("reopenings: %v counted, %d offline (want at least one, at the shift)", got, reopens)
	}
	if changes == 0 || testutil.ToFloat64(mt.Champion.WithLabelValues("0", twin.SearchChampion())) != 1 {
		t.Fatalf("%d changes; %s's champion gauge %v", changes, twin.SearchChampion(), testutil.ToFloat64(mt.Champion.WithLabelValues("0", twin.SearchChampion())))
	}
	if first != twin.SearchChampion() && mt.Champion.DeleteLabelValues("0", first) {
		t.Fatalf("the first champion %s keeps its gauge", first)
	}
}

// boardTopic writes n points uniform in [0, 10)², labeled by a 4×4
// checkerboard whose labels all flip from record at on, to "in".
func boardTopic(t *testing.T, b *embedded.Broker, n, at int) []kafka.Message {
	t.Helper()
	src := rng.New(1, 7)
	var msgs []kafka.Message
	for i := range n {
		u, v := src.Float64()*10, src.Float64()*10
		y := 1
		if (int(u*0.4)+int(v*0.4))%2 == 1 {
			y = -1
		}
		if i >= at {
			y = -y
		}
		x := sparse.Vector{Idx: []uint32{1, 2}, Val: []float64{u, v}}
		msgs = append(msgs, kafka.Message{Value: codec.AppendJSON(nil, codec.Example{X: x, Label: strconv.Itoa(y)})})
	}
	produce(t, b, "in", msgs, toPartition(0))
	return msgs
}
