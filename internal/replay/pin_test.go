package replay

import (
	"bytes"
	"testing"

	"github.com/streamlearner/streamlearner/internal/golden"
	"github.com/streamlearner/streamlearner/learners/autolearn"
	"github.com/streamlearner/streamlearner/learners/drift"
	"github.com/streamlearner/streamlearner/learners/prequential"
)

// pinnedReport holds every case the table and the plot print: partitions
// without records, a learner without labels, recoveries missed, bounded
// and counted, detectors with alarms, a selection row, an auto learner's
// champions and candidates, delayed labels and a many-class summary.
func pinnedReport() Report {
	n := func(v int64) *int64 { return &v }
	trace := func(scale float64, support int) []TracePoint {
		var tr []TracePoint
		for r := int64(50); r <= 1000; r += 50 {
			tr = append(tr, TracePoint{Round: r, Offset: r, WindowRate: scale * float64(r%300) / 1000, Support: support * int(r) / 1000})
		}
		return tr
	}
	dets := []DetectorReport{
		{Name: "ddm", Match: drift.Match{Known: []int64{400, 800}, Detected: []int64{420, 650, 830}, FalseAlarms: 1}},
		{Name: "adwin", Match: drift.Match{Known: []int64{400, 800}, Detected: []int64{450}, Missed: 1}},
	}
	learnersOf := []LearnerReport{
		{Spec: "perceptron", Rounds: 1000, Mistakes: 120, Summary: prequential.Summary{Labeled: 1000, MistakeRate: 0.12, BaselineRate: 0.5, Kappa: 0.76}, Support: 900,
			Segments:  []SegmentStats{{MistakeRate: 0.1}, {MistakeRate: 0.15}, {MistakeRate: 0.11}},
			Recovery:  []Recovery{{ShiftRound: 400, Records: n(37)}, {ShiftRound: 800, Records: nil}},
			Detectors: dets, Trace: trace(1, 900)},
		{Spec: "rbp:budget=20", Rounds: 1000, Mistakes: 200, Summary: prequential.Summary{Labeled: 1000, MistakeRate: 0.2, BaselineRate: 0.5, Kappa: 0.6}, Support: 20,
			Segments:  []SegmentStats{{MistakeRate: 0.2}, {MistakeRate: 0.25}},
			Recovery:  []Recovery{{ShiftRound: 400, Records: n(60), AtMost: true}, {ShiftRound: 800, Records: n(12)}},
			Detectors: dets, Trace: trace(1.5, 20)},
		{Spec: "auto:rung=20", Rounds: 1000, Mistakes: 150, Summary: prequential.Summary{Labeled: 1000, MistakeRate: 0.15, BaselineRate: 0.5, Kappa: 0.7}, Support: 40,
			Detectors: dets, Trace: trace(1.2, 40), Reopens: 2,
			Champions: []ChampionChange{{Round: 300, From: 301, Name: "rbp:budget=50"},
				{Round: 700, From: 701, Name: "lbp:budget=60", Why: &autolearn.Why{Rule: "duel", Over: 200, Mistakes: 20, RunnerUp: "rbp:budget=50", RunnerUpMistakes: 31}}},
			ChampionChanges: 2,
			Candidates:      []autolearn.Status{{Name: "rbp:budget=50", Born: 10, Labeled: 990, Mistakes: 30, Rate: 0.3, Support: 50}, {Name: "lbp:budget=60", Born: 300, Labeled: 700, Mistakes: 20, Rate: 0.2, Champion: true, Support: 60}}},
		{Spec: "select", Selector: true, Rounds: 1000, Mistakes: 130, Summary: prequential.Summary{Labeled: 1000, MistakeRate: 0.13, BaselineRate: 0.5, Kappa: 0.74}, Support: 960,
			Switches: 3, Champion: 2, Detectors: dets, Trace: trace(1.1, 960)},
	}
	full := PartitionReport{Partition: 1, Rounds: 1000, LastOffset: 999, Shifts: []Shift{{Round: 400, Offset: 400}, {Round: 800, Offset: 800}},
		Learners: learnersOf}
	nolabels := PartitionReport{Partition: 2, Rounds: 10, Learners: []LearnerReport{{Spec: "perceptron", Rounds: 10, Support: 0}}}
	return Report{Topic: "pinned", Window: 100, RecoveryWindow: 50,
		Partitions: []PartitionReport{{Partition: 0}, full, nolabels, {Partition: 3}},
		Learners: []Summary{
			{Spec: "perceptron", Labels: &DelayedLabels{Held: 10, Late: 8, Pending: 2, Refused: map[string]int64{"label_unknown": 1, "label_expired": 3}}},
			{Spec: "rbp:budget=20", Summary: prequential.Summary{Classes: []string{"a", "b", "c"}, Confusion: [][]uint64{{5, 1, 0}, {2, 6, 1}, {0, 0, 7}},
				Unanswered: []uint64{1, 0, 0}, Accuracy: 0.78, MacroF1: 0.77}},
		}}
}

// TestWriteTablePinned pins the table byte for byte.
func TestWriteTablePinned(t *testing.T) {
	var b bytes.Buffer
	if err := pinnedReport().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "table.golden", b.Bytes())
}

// TestWritePlotPinned pins the SVG drawing, on both support scales, byte
// for byte.
func TestWritePlotPinned(t *testing.T) {
	for name, opt := range map[string]PlotOptions{"plot_linear.svg.golden": {}, "plot_log.svg.golden": {LogSupport: true}} {
		rep := pinnedReport()
		// Supports within tenfold, so the default stays linear.
		rep.Partitions[1].Learners = rep.Partitions[1].Learners[1:3]
		var b bytes.Buffer
		if err := rep.WritePlotWith(&b, 1, "svg", opt); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, name, b.Bytes())
	}
}
