package replay

import (
	"errors"
	"fmt"
	"hash/fnv"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strconv"
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

// PlotOptions change how WritePlotWith draws.
type PlotOptions struct {
	// LogSupport draws the support panel on a log scale, for learners of
	// very different sizes (a Perceptron's thousands beside budgets of
	// tens). Default linear.
	LogSupport bool
}

// WritePlot is WritePlotWith with the default options.
func (r Report) WritePlot(w io.Writer, partition int, format string) error {
	return r.WritePlotWith(w, partition, format, PlotOptions{})
}

// Learners' support curves carry open glyphs in the learner's colour;
// detector alarms, drawn in black on the learner's rate curve, solid ones
// (one per detector), so the two never read alike.
var (
	learnerGlyphs = []draw.GlyphDrawer{draw.RingGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}}
	alarmGlyphs   = []draw.GlyphDrawer{draw.PyramidGlyph{}, draw.BoxGlyph{}, draw.CircleGlyph{}, draw.CrossGlyph{}}
)

// learnerPalette gives each learner its colour in every plot, whatever
// the order of the flags: the Perceptron is always the same blue.
var learnerPalette = map[string]color.RGBA{
	"perceptron":   {0x1f, 0x77, 0xb4, 0xff},
	"rbp":          {0xd6, 0x27, 0x28, 0xff},
	"lbp":          {0xff, 0x7f, 0x0e, 0xff},
	"forgetron":    {0x2c, 0xa0, 0x2c, 0xff},
	"projectron":   {0x94, 0x67, 0xbd, 0xff},
	"projectron++": {0x8c, 0x56, 0x4b, 0xff},
	"stoptron":     {0x7f, 0x7f, 0x7f, 0xff},
	"cks":          {0xbc, 0xbd, 0x22, 0xff},
	"spa":          {0x17, 0xbe, 0xcf, 0xff},
	"pa1":          {0xe3, 0x77, 0xc2, 0xff},
	"sop":          {0x39, 0x3b, 0x79, 0xff},
	"rbsop":        {0x63, 0x79, 0x39, 0xff},
	"lbsop":        {0x8c, 0x6d, 0x31, 0xff},
	"tighter0":     {0x84, 0x3c, 0x39, 0xff},
	"tighter":      {0x7b, 0x41, 0x73, 0xff},
	"tightest":     {0x31, 0x82, 0xbd, 0xff},
}

// learnerColor is a learner's colour by its name (the spec before ':');
// a name the palette does not know gets one of plotutil's by its hash, so
// it too keeps its colour from plot to plot.
func learnerColor(spec string) color.Color {
	name, _, _ := strings.Cut(spec, ":")
	if c, ok := learnerPalette[name]; ok {
		return c
	}
	if strings.HasPrefix(spec, "select(") {
		return color.Black
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return plotutil.Color(int(h.Sum32() % 7))
}

// markersPerCurve is how many glyphs mark each learner's support curve, so
// learners with equal budgets, whose curves coincide, stay apart.
const markersPerCurve = 8

// WritePlotWith draws one partition of the report: the windowed mistake
// rate (in percent, as the tables print it) of each learner over the
// stream, with the known shifts as dashed lines and the drift detectors'
// alarms as glyphs on each learner's curve (like Fig. 5 of Cavallanti,
// Cesa-Bianchi and Gentile), and the support size below on the same
// rounds. The legend sits to the right of both panels, off the curves.
// format is "svg" or "png".
func (r Report) WritePlotWith(w io.Writer, partition int, format string, opt PlotOptions) error {
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
	pp := newPanels(r, pr, opt)
	n := len(pr.Learners)
	for i, l := range pr.Learners {
		if err := pp.addLearner(l, i, n); err != nil {
			return err
		}
	}
	if err := pp.addChampions(pr.Learners); err != nil {
		return err
	}
	// Detector glyphs in the legend, in black as on the curves.
	if len(pr.Learners[0].Detectors) > 0 {
		for k, d := range pr.Learners[0].Detectors {
			pp.legend.Add("alarm: "+d.Name, glyphThumb{draw.GlyphStyle{Color: color.Black, Shape: alarmGlyphs[k%len(alarmGlyphs)], Radius: vg.Points(4)}})
		}
	}
	pp.rate.Y.Max = max(pp.maxRate*1.1, 5)
	pp.support.Y.Max = max(pp.maxSupport*1.1, 1)
	if pp.log {
		pp.support.Y.Max = max(pp.maxSupport*2, 10)
	}
	if err := pp.addShifts(pr.Shifts); err != nil {
		return err
	}
	return pp.draw(w, format)
}

// panels is a partition's plot as WritePlotWith builds it: the rate panel
// above the support panel, their legend, and the largest values drawn,
// which set the axes.
type panels struct {
	rate, support *plot.Plot
	legend        plot.Legend
	log           bool // the support panel's scale
	// window and rounds decide which rates count in maxRate.
	window, rounds      int64
	maxRate, maxSupport float64
}

// newPanels sets up the two panels' titles and axes.
func newPanels(r Report, pr *PartitionReport, opt PlotOptions) *panels {
	rate, support := plot.New(), plot.New()
	rate.Title.Text = fmt.Sprintf("%s partition %d: mistakes over the last %d labeled records", r.Topic, pr.Partition, r.Window)
	rate.Y.Label.Text = "windowed mistakes %"
	rate.Y.Min = 0
	support.X.Label.Text = "records"
	support.Y.Label.Text = "support vectors"
	support.Y.Min = 0
	if !opt.LogSupport {
		// Budgets of tens beside a Perceptron's thousands lie flat at 0
		// on a linear axis: a log scale shows both.
		lo, hi := math.Inf(1), 0.0
		for _, l := range pr.Learners {
			if l.Support > 0 {
				lo, hi = min(lo, float64(l.Support)), max(hi, float64(l.Support))
			}
		}
		opt.LogSupport = hi > 10*lo
	}
	if opt.LogSupport {
		support.Y.Label.Text = "support vectors (log)"
		support.Y.Scale = plot.LogScale{}
		support.Y.Tick.Marker = withinTicks{plot.LogTicks{Prec: -1}}
		support.Y.Min = 1
	}
	ticks := roundTicks{}
	for _, p := range []*plot.Plot{rate, support} {
		p.X.Min, p.X.Max = 0, float64(pr.Rounds)
		p.X.Tick.Marker = ticks
		p.Add(plotter.NewGrid())
	}
	legend := plot.NewLegend()
	legend.Top = true
	legend.Left = true
	return &panels{rate: rate, support: support, legend: legend, log: opt.LogSupport, window: int64(r.Window), rounds: pr.Rounds}
}

// curves are learner l's rate and support curves.
func (pp *panels) curves(l LearnerReport) (rates, sizes plotter.XYs) {
	rates, sizes = make(plotter.XYs, len(l.Trace)), make(plotter.XYs, len(l.Trace))
	for j, t := range l.Trace {
		rates[j] = plotter.XY{X: float64(t.Round), Y: 100 * t.WindowRate}
		sizes[j] = plotter.XY{X: float64(t.Round), Y: float64(t.Support)}
		if pp.log {
			sizes[j].Y = max(sizes[j].Y, 1) // log(0) is off the axis
		}
		// The first rounds' rates (100 % after one mistake) would
		// squash the rest of the plot: scale to full windows' rates.
		if t.Round >= pp.window || pp.rounds < 2*pp.window {
			pp.maxRate = max(pp.maxRate, 100*t.WindowRate)
		}
		pp.maxSupport = max(pp.maxSupport, float64(t.Support))
	}
	return rates, sizes
}

// addLearner draws learner i of n: its curves on both panels, the
// glyphs on its support curve, its legend entry and its detectors'
// alarms on its rate curve.
func (pp *panels) addLearner(l LearnerReport, i, n int) error {
	rates, sizes := pp.curves(l)
	style := draw.LineStyle{Color: learnerColor(l.Spec), Dashes: plotutil.Dashes(i),
		// Earlier learners are drawn wider, so a later one drawn over
		// an identical curve leaves the earlier one visible beside it.
		Width: vg.Points(1 + 0.8*float64(n-1-i))}
	glyph := draw.GlyphStyle{Color: learnerColor(l.Spec), Shape: learnerGlyphs[i%len(learnerGlyphs)], Radius: vg.Points(3)}
	var entry []plot.Thumbnailer
	for _, s := range []struct {
		p   *plot.Plot
		xys plotter.XYs
	}{{pp.rate, rates}, {pp.support, sizes}} {
		line, err := plotter.NewLine(s.xys)
		if err != nil {
			return fmt.Errorf("plot %s: %w", l.Spec, err)
		}
		line.LineStyle = style
		s.p.Add(line)
		if s.p == pp.rate {
			entry = append(entry, line)
		}
	}
	marks, err := plotter.NewScatter(staggered(sizes, i, n))
	if err != nil {
		return fmt.Errorf("plot %s: %w", l.Spec, err)
	}
	marks.GlyphStyle = glyph
	pp.support.Add(marks)
	entry = append(entry, marks)
	pp.legend.Add(l.Spec, entry...)
	return pp.addAlarms(l, rates)
}

// addAlarms draws learner l's detectors' alarms on its rate curve.
func (pp *panels) addAlarms(l LearnerReport, rates plotter.XYs) error {
	for k, d := range l.Detectors {
		if len(d.Detected) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(d.Detected))
		for j, round := range d.Detected {
			pts[j] = plotter.XY{X: float64(round), Y: rateAt(rates, round)}
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return fmt.Errorf("plot %s alarms: %w", l.Spec, err)
		}
		// Black, as in the legend: the shape says which detector, the
		// curve it sits on which learner.
		sc.GlyphStyle = draw.GlyphStyle{Color: color.Black, Shape: alarmGlyphs[k%len(alarmGlyphs)], Radius: vg.Points(4)}
		pp.rate.Add(sc)
	}
	return nil
}

// addChampions marks an auto learner's changes of champion, as stars on
// its curve.
func (pp *panels) addChampions(ls []LearnerReport) error {
	champGlyph := draw.GlyphStyle{Color: color.Black, Shape: draw.PlusGlyph{}, Radius: vg.Points(5)}
	changes := false
	for _, l := range ls {
		if len(l.Champions) == 0 {
			continue
		}
		rates := make(plotter.XYs, len(l.Trace))
		for j, t := range l.Trace {
			rates[j] = plotter.XY{X: float64(t.Round), Y: 100 * t.WindowRate}
		}
		pts := make(plotter.XYs, len(l.Champions))
		for j, c := range l.Champions {
			pts[j] = plotter.XY{X: float64(c.Round), Y: rateAt(rates, c.Round)}
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return fmt.Errorf("plot %s changes of champion: %w", l.Spec, err)
		}
		sc.GlyphStyle = champGlyph
		pp.rate.Add(sc)
		changes = true
	}
	if changes {
		pp.legend.Add("change of champion (auto)", glyphThumb{champGlyph})
	}
	return nil
}

// addShifts draws the known shifts as dashed lines across both panels,
// once their axes are set.
func (pp *panels) addShifts(shifts []Shift) error {
	shiftStyle := draw.LineStyle{Color: color.Black, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
	for _, sh := range shifts {
		for _, p := range []*plot.Plot{pp.rate, pp.support} {
			mark, err := plotter.NewLine(plotter.XYs{{X: float64(sh.Round), Y: p.Y.Min}, {X: float64(sh.Round), Y: p.Y.Max}})
			if err != nil {
				return fmt.Errorf("plot shift: %w", err)
			}
			mark.LineStyle = shiftStyle
			p.Add(mark)
		}
	}
	if len(shifts) > 0 {
		mark, _ := plotter.NewLine(plotter.XYs{{}, {X: 1}})
		mark.LineStyle = shiftStyle
		pp.legend.Add("known shift", mark)
	}
	return nil
}

// draw lays the panels out one above the other, the legend to their
// right, and writes the image.
func (pp *panels) draw(w io.Writer, format string) error {
	const width, height, legendWidth = 28 * vg.Centimeter, 16 * vg.Centimeter, 6 * vg.Centimeter
	c, err := draw.NewFormattedCanvas(width, height, format)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	dc := draw.New(c)
	area := draw.Crop(dc, 0, -legendWidth, 0, 0)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Millimeter, PadY: 3 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	canvases := plot.Align([][]*plot.Plot{{pp.rate}, {pp.support}}, tiles, area)
	pp.rate.Draw(canvases[0][0])
	pp.support.Draw(canvases[1][0])
	pp.legend.Draw(draw.Crop(dc, width-legendWidth, 0, 0, -8*vg.Millimeter))
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("plot: write: %w", err)
	}
	return nil
}

// staggered picks markersPerCurve points of xys, learner i of n offset by
// i/n of the spacing, so the glyphs of coinciding curves do not overlap.
func staggered(xys plotter.XYs, i, n int) plotter.XYs {
	if len(xys) == 0 {
		return plotter.XYs{}
	}
	var out plotter.XYs
	step := float64(len(xys)) / markersPerCurve
	for k := range markersPerCurve {
		j := int((float64(k) + (float64(i)+0.5)/float64(n)) * step)
		if j < len(xys) {
			out = append(out, xys[j])
		}
	}
	return out
}

// rateAt is the curve's value at a round: the last trace point at or
// before it.
func rateAt(xys plotter.XYs, round int64) float64 {
	v := 0.0
	for _, p := range xys {
		if p.X > float64(round) {
			break
		}
		v = p.Y
	}
	return v
}

// withinTicks drops the ticks another marker puts outside the axis range:
// plot.LogTicks labels the next power of ten beyond it, and plot.Align
// then pads every panel for a label that is never drawn.
type withinTicks struct{ plot.Ticker }

func (w withinTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range w.Ticker.Ticks(lo, hi) {
		if t.Value >= lo && t.Value <= hi {
			out = append(out, t)
		}
	}
	return out
}

// glyphThumb draws a glyph as a legend entry.
type glyphThumb struct{ style draw.GlyphStyle }

func (g glyphThumb) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(g.style, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: (c.Min.Y + c.Max.Y) / 2})
}

// roundTicks labels the record axis every 1, 2 or 5 × 10^k records, about
// ten labels, written 2.5k or 1.2M rather than 2500 or 1.2e+06.
type roundTicks struct{}

func (roundTicks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if span <= 0 {
		return nil
	}
	step := math.Pow(10, math.Floor(math.Log10(span/10)))
	for _, m := range []float64{1, 2, 5, 10} {
		if span/(m*step) <= 10 {
			step *= m
			break
		}
	}
	step = max(step, 1)
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step/1e6; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: compactCount(v)})
		for k := 1; k < 5; k++ { // unlabeled minor ticks
			if m := v + float64(k)*step/5; m < hi {
				ticks = append(ticks, plot.Tick{Value: m})
			}
		}
	}
	return ticks
}

// compactCount writes a count as 750, 2.5k or 1.2M.
func compactCount(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
