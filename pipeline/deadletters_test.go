package pipeline

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/model"
)

// TestDeadLettersStartAtZeroForEveryReason: an assigned partition exports
// a dead-letter series for each reason its configuration can report
// before any bad record, so a rate over them reads 0 rather than "no
// data"; reasons it cannot report (delayed labels without them, many
// classes without them, the other input format's) get no series.
func TestDeadLettersStartAtZeroForEveryReason(t *testing.T) {
	records, events := Config{}, Config{Model: model.Config{Events: true, Classes: []string{"auto"}}, LabelTopic: "labels"}
	for _, c := range []struct {
		cfg       Config
		with, not []codec.Reason
	}{
		{records, []codec.Reason{codec.ReasonInvalidLIBSVM, codec.ReasonMissingFeatures, codec.ReasonNonFinite, ReasonOutputRefused},
			[]codec.Reason{codec.ReasonBadField, codec.ReasonTooManyClasses, codec.ReasonLabelUnknown, codec.ReasonKeyTooLarge}},
		{events, []codec.Reason{codec.ReasonBadField, codec.ReasonTooManyClasses, codec.ReasonLabelUnknown, codec.ReasonKeyTooLarge, codec.ReasonValueTooLarge},
			[]codec.Reason{codec.ReasonInvalidLIBSVM, codec.ReasonMissingFeatures, codec.ReasonDuplicateIndex}},
	} {
		m := NewMetrics(nil)
		m.assigned("3", c.cfg.Reasons())
		if n, want := testutil.CollectAndCount(m.DeadLetters), len(c.cfg.Reasons()); n != want || want < 10 || want >= len(Reasons()) {
			t.Fatalf("%d dead-letter series, want %d of %d", n, want, len(Reasons()))
		}
		for _, r := range c.cfg.Reasons() {
			if v := testutil.ToFloat64(m.DeadLetters.WithLabelValues("3", string(r))); v != 0 {
				t.Errorf("%s: %v", r, v)
			}
		}
		for _, r := range c.with {
			if !slices.Contains(c.cfg.Reasons(), r) {
				t.Errorf("events=%v: no series for %s", c.cfg.Model.Events, r)
			}
		}
		for _, r := range c.not {
			if slices.Contains(c.cfg.Reasons(), r) {
				t.Errorf("events=%v: a series for %s, which it cannot report", c.cfg.Model.Events, r)
			}
		}
	}
}

// TestDeadLetterZerosAreNoSeries: the reasons a partition shows at 0 are
// no series of their own until a record is dead-lettered with one (as
// series, 3.5 MB of heap at 1,024 partitions); then that reason shows
// once, with its count, not beside its zero.
func TestDeadLetterZerosAreNoSeries(t *testing.T) {
	m := NewMetrics(nil)
	reasons := (&Config{}).Reasons()
	m.assigned("3", reasons)
	m.assigned("4", reasons)
	if n := len(m.DeadLetters.two); n != 0 {
		t.Fatalf("%d partitions hold dead-letter series before any dead letter, want 0", n)
	}
	m.DeadLetters.WithLabelValues("3", string(reasons[0])).Inc()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.DeadLetters)
	fams, err := reg.Gather() // refuses a series shown twice
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]float64{}
	for _, mf := range fams {
		for _, s := range mf.GetMetric() {
			lv := s.GetLabel()
			seen[lv[0].GetValue()+"/"+lv[1].GetValue()] = s.GetCounter().GetValue()
		}
	}
	if len(seen) != 2*len(reasons) {
		t.Errorf("%d dead-letter series shown, want %d", len(seen), 2*len(reasons))
	}
	if v := seen["3/"+string(reasons[0])]; v != 1 {
		t.Errorf("partition 3, %s: %v, want 1", reasons[0], v)
	}
	if v, ok := seen["4/"+string(reasons[0])]; !ok || v != 0 {
		t.Errorf("partition 4, %s: %v (shown: %v), want 0", reasons[0], v, ok)
	}
}
