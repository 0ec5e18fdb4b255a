package pipeline

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/streamlearner/streamlearner/model"
)

// With an auto learner the service emits what the model offline emits,
// counts each change of the configuration it chose as a champion switch,
// and its champion gauge names that configuration.
func TestAutoLearnerChampionMetrics(t *testing.T) {
	b := startBroker(t, "in", "out", "in.dlq")
	msgs := a9aTopic(t, b, 2000)
	cfg := testConfig(t, b, "auto:rung=50,window=300,width=8")
	cfg.Metrics = NewMetrics(nil)
	runMember(t, cfg)
	byOffset := predictionsByOffset(t, b, len(msgs))
	twin, err := model.New(cfg.ModelConfig(0))
	if err != nil {
		t.Fatal(err)
	}
	first, changes := twin.SearchChampion(), 0
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
	}
	mt := cfg.Metrics
	waitFor(t, "the champion's metrics", 10*time.Second, func() bool {
		return testutil.ToFloat64(mt.ChampionSwitches.WithLabelValues("0")) == float64(changes)
	})
	if changes == 0 || testutil.ToFloat64(mt.Champion.WithLabelValues("0", twin.SearchChampion())) != 1 {
		t.Fatalf("%d changes; %s's champion gauge %v", changes, twin.SearchChampion(), testutil.ToFloat64(mt.Champion.WithLabelValues("0", twin.SearchChampion())))
	}
	if first != twin.SearchChampion() && mt.Champion.DeleteLabelValues("0", first) {
		t.Fatalf("the first champion %s keeps its gauge", first)
	}
}
