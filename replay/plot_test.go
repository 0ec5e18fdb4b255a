package replay

import (
	"bytes"
	"image/png"
	"strings"
	"testing"
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
