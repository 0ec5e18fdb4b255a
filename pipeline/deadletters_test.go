package pipeline

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestDeadLettersStartAtZeroForEveryReason: an assigned partition exports
// a dead-letter series for each reason before any bad record, so a rate
// over them reads 0 rather than "no data".
func TestDeadLettersStartAtZeroForEveryReason(t *testing.T) {
	m := NewMetrics(nil)
	m.assigned("3")
	if n, want := testutil.CollectAndCount(m.DeadLetters), len(Reasons()); n != want || want < 10 {
		t.Fatalf("%d dead-letter series, want %d", n, want)
	}
	for _, r := range Reasons() {
		if v := testutil.ToFloat64(m.DeadLetters.WithLabelValues("3", string(r))); v != 0 {
			t.Errorf("%s: %v", r, v)
		}
	}
}
