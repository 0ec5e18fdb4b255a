package drift

import (
	"slices"
	"testing"
)

func TestEvaluate(t *testing.T) {
	cases := []struct {
		name            string
		known, detected []int64
		maxDelay        int64
		delays          []int64
		falseAlarms     int
		missed          int
		meanDelay       float64
	}{
		{name: "nothing"},
		{name: "only false alarms", detected: []int64{5, 9}, falseAlarms: 2},
		{name: "only missed", known: []int64{10, 20}, delays: []int64{-1, -1}, missed: 2},
		{name: "exact hit counts as delay 0", known: []int64{10}, detected: []int64{10}, delays: []int64{0}},
		{
			name:  "each change its first detection; extra ones and early ones are false alarms",
			known: []int64{100, 200}, detected: []int64{50, 130, 140, 210},
			delays: []int64{30, 10}, falseAlarms: 2, meanDelay: 20,
		},
		{
			name:  "a detection past the next change belongs to that change",
			known: []int64{100, 200}, detected: []int64{250},
			delays: []int64{-1, 50}, missed: 1, meanDelay: 50,
		},
		{
			name:  "maxDelay: too late is missed and a false alarm",
			known: []int64{100, 200}, detected: []int64{161, 220}, maxDelay: 60,
			delays: []int64{-1, 20}, missed: 1, falseAlarms: 1, meanDelay: 20,
		},
		{
			name:  "maxDelay is inclusive",
			known: []int64{100}, detected: []int64{160}, maxDelay: 60,
			delays: []int64{60}, meanDelay: 60,
		},
		{
			name:  "unsorted input, repeated known point",
			known: []int64{200, 100, 200}, detected: []int64{205, 101},
			delays: []int64{1, 5}, meanDelay: 3,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			known := slices.Clone(c.known)
			m := Evaluate(c.known, c.detected, c.maxDelay)
			if !slices.Equal(c.known, known) {
				t.Errorf("input modified: %v", c.known)
			}
			if !slices.Equal(m.Delays, c.delays) && !(len(m.Delays) == 0 && len(c.delays) == 0) {
				t.Errorf("delays %v, want %v", m.Delays, c.delays)
			}
			if m.FalseAlarms != c.falseAlarms || m.Missed != c.missed || m.MeanDelay != c.meanDelay {
				t.Errorf("false alarms %d missed %d mean delay %g, want %d %d %g", m.FalseAlarms, m.Missed, m.MeanDelay, c.falseAlarms, c.missed, c.meanDelay)
			}
			if len(m.Known) != len(m.Delays) || !slices.IsSorted(m.Known) || !slices.IsSorted(m.Detected) {
				t.Errorf("known %v detected %v delays %v", m.Known, m.Detected, m.Delays)
			}
		})
	}
}
