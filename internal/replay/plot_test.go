package replay

import (
	"bytes"
	"fmt"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
)

func flipReport(t *testing.T) Report {
	t.Helper()
	cfg := Config{Learners: []string{"perceptron", "stoptron:budget=1"}, Kernel: linear(t), Window: 5,
		Detectors: []string{}, ShiftOffsets: []int64{110}}
	s, err := NewStream(cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	s.Play(flipStream())
	return Assemble("flips", cfg, []PartitionReport{s.Report()})
}

func TestPlotRendersBothFormats(t *testing.T) {
	rep := flipReport(t)
	var svg bytes.Buffer
	if err := rep.WritePlot(&svg, 2, "svg"); err != nil {
		t.Fatal(err)
	}
	out := svg.String()
	if !strings.HasPrefix(strings.TrimSpace(out), "<?xml") || !strings.Contains(out, "<svg") {
		t.Fatalf("not an SVG document: %.80q", out)
	}
	// Both learners are in the legend, and the title names the topic.
	for _, want := range []string{"perceptron", "stoptron:budget=1", "flips partition 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	var buf bytes.Buffer
	if err := rep.WritePlot(&buf, 2, "png"); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("PNG does not decode: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 400 {
		t.Fatalf("PNG is %v", b)
	}
}

func TestPlotErrors(t *testing.T) {
	rep := flipReport(t)
	if err := rep.WritePlot(&bytes.Buffer{}, 7, "svg"); err == nil {
		t.Fatal("a partition that is not in the report was plotted")
	}
	if _, err := PlotFormat("out.pdf"); err == nil {
		t.Fatal(".pdf accepted")
	}
	if f, err := PlotFormat("a/B.PNG"); err != nil || f != "png" {
		t.Fatalf("PlotFormat(B.PNG) = %q, %v", f, err)
	}
}

// TestPlotLegendAndAxes: the legend names the shifts and each detector's
// alarms beside the learners, the rate axis is in percent as the tables
// are, the record axis reads 2k rather than 2000, and the log-scale
// support panel renders.
func TestPlotLegendAndAxes(t *testing.T) {
	cfg := Config{Learners: []string{"perceptron", "stoptron:budget=1"}, Kernel: linear(t), Window: 5,
		Detectors: []string{"ddm", "adwin"}, ShiftOffsets: []int64{110}}
	s, err := NewStream(cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	s.Play(flipStream())
	rep := Assemble("flips", cfg, []PartitionReport{s.Report()})
	for _, opt := range []PlotOptions{{}, {LogSupport: true}} {
		var svg bytes.Buffer
		if err := rep.WritePlotWith(&svg, 2, "svg", opt); err != nil {
			t.Fatal(err)
		}
		out := svg.String()
		for _, want := range []string{"known shift", "alarm: ddm", "alarm: adwin", "windowed mistakes %", "perceptron"} {
			if !strings.Contains(out, want) {
				t.Errorf("%+v: SVG lacks %q", opt, want)
			}
		}
		if opt.LogSupport != strings.Contains(out, "support vectors (log)") {
			t.Errorf("%+v: log scale label", opt)
		}
	}
}

func TestRoundTicks(t *testing.T) {
	var labels []string
	for _, tk := range (roundTicks{}).Ticks(0, 10000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if strings.Join(labels, " ") != "0 1k 2k 3k 4k 5k 6k 7k 8k 9k 10k" {
		t.Errorf("labels %v", labels)
	}
	for v, want := range map[float64]string{750: "750", 2500: "2.5k", 1.2e6: "1.2M"} {
		if got := compactCount(v); got != want {
			t.Errorf("compactCount(%v) = %q, want %q", v, got, want)
		}
	}
	// Coinciding curves get their glyphs at different rounds.
	xys := make(plotter.XYs, 100)
	for i := range xys {
		xys[i].X = float64(i)
	}
	a, b := staggered(xys, 0, 2), staggered(xys, 1, 2)
	if len(a) != markersPerCurve || len(b) != markersPerCurve || a[0].X == b[0].X {
		t.Errorf("staggered %v %v", a, b)
	}
}

// TestPlotColoursAndScale: a learner has its colour whatever the flag
// order (red was RBP in one plot, the Perceptron in another); alarms are
// drawn in black, as the legend shows them; a support panel whose learners
// differ more than tenfold is drawn on a log scale by itself.
func TestPlotColoursAndScale(t *testing.T) {
	if learnerColor("rbp:budget=100") != learnerColor("rbp:budget=500") || learnerColor("rbp") == learnerColor("perceptron") ||
		learnerColor("mystery:x=1") != learnerColor("mystery:x=2") {
		t.Fatal("colours are not the learners'")
	}
	report := func(specs ...string) Report {
		pr := PartitionReport{Partition: 0, Rounds: 100}
		for i, s := range specs {
			support := 10 * (i + 1)
			if s == "perceptron" {
				support = 900
			}
			pr.Learners = append(pr.Learners, LearnerReport{Spec: s, Support: support,
				Trace: []TracePoint{{Round: 50, WindowRate: 0.2, Support: support / 2}, {Round: 100, WindowRate: 0.1, Support: support}}})
		}
		return Report{Topic: "t", Window: 10, Partitions: []PartitionReport{pr}}
	}
	stroke := func(c color.Color) string {
		r, g, b, _ := c.RGBA()
		return fmt.Sprintf("stroke:#%02X%02X%02X", r>>8, g>>8, b>>8)
	}
	for _, specs := range [][]string{{"perceptron", "rbp:budget=100"}, {"rbp:budget=100", "perceptron"}} {
		var svg bytes.Buffer
		if err := report(specs...).WritePlot(&svg, 0, "svg"); err != nil {
			t.Fatal(err)
		}
		out := svg.String()
		if !strings.Contains(out, stroke(learnerPalette["perceptron"])) || !strings.Contains(out, stroke(learnerPalette["rbp"])) {
			t.Errorf("%v: the learners' colours are not drawn", specs)
		}
		if !strings.Contains(out, "support vectors (log)") {
			t.Errorf("%v: 900 support vectors beside 10 on a linear scale", specs)
		}
	}
	var svg bytes.Buffer
	report("rbp:budget=100", "lbp:budget=100").WritePlot(&svg, 0, "svg")
	if strings.Contains(svg.String(), "support vectors (log)") {
		t.Error("a log scale for supports within tenfold")
	}
}

// An auto learner's changes of champion are in the report and marked on
// the plot.
func TestPlotMarksChangesOfChampion(t *testing.T) {
	cfg := Config{Learners: []string{"auto:rung=20,window=60,width=6"}, Kernel: linear(t), Window: 20, Detectors: []string{}}
	s, err := NewStream(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	var recs []Record
	for range 20 {
		recs = append(recs, flipStream()...)
	}
	for i := range recs {
		recs[i].Offset = int64(i)
	}
	s.Play(recs)
	rep := Assemble("flips", cfg, []PartitionReport{s.Report()})
	if len(rep.Partitions[0].Learners[0].Champions) == 0 {
		t.Fatal("no change of champion in the report")
	}
	var svg bytes.Buffer
	if err := rep.WritePlot(&svg, 0, "svg"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg.String(), "change of champion (auto)") {
		t.Fatal("the plot does not mark the changes of champion")
	}
}
