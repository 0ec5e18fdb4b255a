package main

import (
	"strings"
	"testing"
	"time"

	"github.com/streamlearner/streamlearner/pipeline"
)

// TestDemoProgressFits80Columns: the live line fits a default terminal
// even with large numbers, and shows each partition in order.
func TestDemoProgressFits80Columns(t *testing.T) {
	m := pipeline.NewMetrics(nil)
	m.Produced.Add(40000)
	for p, l := range []string{"0", "1", "2", "3"} {
		m.Predicted.WithLabelValues(l).Add(10000)
		m.WindowRate.WithLabelValues(l).Set(0.1 + float64(p)/100)
		m.Support.WithLabelValues(l).Set(20870 + float64(p))
	}
	line := progressLine(123456*time.Millisecond, m)
	for _, s := range []string{progressHeader, line} {
		if n := len([]rune(s)); n > 80 {
			t.Errorf("%d columns: %q", n, s)
		}
	}
	if !strings.Contains(line, "10.0  11.0  12.0  13.0") || !strings.Contains(line, "20870 20871 20872 20873") || !strings.Contains(line, "40000") {
		t.Errorf("line %q", line)
	}
	for _, l := range strings.Split(driftLegend, "\n") {
		if len([]rune(l)) > 80 {
			t.Errorf("legend line of %d columns: %q", len([]rune(l)), l)
		}
	}
}
