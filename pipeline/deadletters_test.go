package pipeline

import (
	"slices"
	"testing"

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
