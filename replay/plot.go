package replay

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PlotFormat is the image format for a file name: "svg" or "png".
func PlotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg", ".png":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("plot %s: the name must end in .svg or .png", path)
	}
}

// WritePlot draws one partition of the report: the windowed mistake rate
// of each learner over the stream with the known shifts as dashed lines
// (like Fig. 5 of Cavallanti, Cesa-Bianchi and Gentile), and the support
// size below on the same rounds. format is "svg" or "png".
func (r Report) WritePlot(w io.Writer, partition int, format string) error {
	var pr *PartitionReport
	for i := range r.Partitions {
		if r.Partitions[i].Partition == partition {
			pr = &r.Partitions[i]
		}
	}
	if pr == nil {
		return fmt.Errorf("plot: the report has no partition %d", partition)
	}
	if len(pr.Learners) == 0 || pr.Rounds == 0 {
		return errors.New("plot: nothing was replayed")
	}
	rate, support := plot.New(), plot.New()
	rate.Title.Text = fmt.Sprintf("%s partition %d: mistake rate over the last %d labeled records", r.Topic, partition, r.Window)
	rate.Y.Label.Text = "windowed mistake rate"
	rate.Y.Min = 0
	support.X.Label.Text = "records"
	support.Y.Label.Text = "support vectors"
	support.Y.Min = 0
	for _, p := range []*plot.Plot{rate, support} {
		p.X.Min, p.X.Max = 0, float64(pr.Rounds)
		p.Legend.Top = true
		p.Add(plotter.NewGrid())
	}

	var maxRate, maxSupport float64
	for i, l := range pr.Learners {
		rates, sizes := make(plotter.XYs, len(l.Trace)), make(plotter.XYs, len(l.Trace))
		for j, t := range l.Trace {
			rates[j] = plotter.XY{X: float64(t.Round), Y: t.WindowRate}
			sizes[j] = plotter.XY{X: float64(t.Round), Y: float64(t.Support)}
			maxRate = max(maxRate, t.WindowRate)
			maxSupport = max(maxSupport, float64(t.Support))
		}
		for _, s := range []struct {
			p   *plot.Plot
			xys plotter.XYs
		}{{rate, rates}, {support, sizes}} {
			line, err := plotter.NewLine(s.xys)
			if err != nil {
				return fmt.Errorf("plot %s: %w", l.Spec, err)
			}
			line.Color = plotutil.Color(i)
			line.Dashes = plotutil.Dashes(i / len(plotutil.DefaultColors))
			s.p.Add(line)
			if s.p == rate {
				s.p.Legend.Add(l.Spec, line)
			}
		}
	}
	rate.Y.Max = max(maxRate*1.1, 0.05)
	support.Y.Max = max(maxSupport*1.1, 1)
	for _, sh := range pr.Shifts {
		for _, p := range []*plot.Plot{rate, support} {
			mark, err := plotter.NewLine(plotter.XYs{{X: float64(sh.Round), Y: 0}, {X: float64(sh.Round), Y: p.Y.Max}})
			if err != nil {
				return fmt.Errorf("plot shift: %w", err)
			}
			mark.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			mark.Width = vg.Points(0.8)
			p.Add(mark)
		}
	}

	const width, height = 24 * vg.Centimeter, 16 * vg.Centimeter
	c, err := draw.NewFormattedCanvas(width, height, format)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Millimeter, PadY: 3 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	plots := [][]*plot.Plot{{rate}, {support}}
	canvases := plot.Align(plots, tiles, draw.New(c))
	rate.Draw(canvases[0][0])
	support.Draw(canvases[1][0])
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("plot: write: %w", err)
	}
	return nil
}
