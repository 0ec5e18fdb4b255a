package synth

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

// statN is large enough for 5-standard-error bounds to be tight, small
// enough for the tests to take well under a second.
const statN = 200_000

// within fails the test when got is more than 5 standard errors from want.
func within(t *testing.T, name string, got, want, se float64) {
	t.Helper()
	if math.Abs(got-want) > 5*se {
		t.Errorf("%s = %.6g, want %.6g ± %.3g (5 standard errors)", name, got, want, 5*se)
	}
}

func mustGauss(t *testing.T, cfg GaussConfig) []Point {
	t.Helper()
	pts, err := Gauss(cfg)
	if err != nil {
		t.Fatalf("Gauss(%+v): %v", cfg, err)
	}
	if len(pts) != cfg.N {
		t.Fatalf("Gauss(%+v) gave %d points, want %d", cfg, len(pts), cfg.N)
	}
	return pts
}

func mustCheckerboard(t *testing.T, cfg CheckerboardConfig) []Point {
	t.Helper()
	pts, err := Checkerboard(cfg)
	if err != nil {
		t.Fatalf("Checkerboard(%+v): %v", cfg, err)
	}
	if len(pts) != cfg.N {
		t.Fatalf("Checkerboard(%+v) gave %d points, want %d", cfg, len(pts), cfg.N)
	}
	return pts
}

func samePoints(a, b []Point) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Y != b[i].Y || len(a[i].X) != len(b[i].X) {
			return false
		}
		for j := range a[i].X {
			if math.Float64bits(a[i].X[j]) != math.Float64bits(b[i].X[j]) {
				return false
			}
		}
	}
	return true
}

func TestGaussStatistics(t *testing.T) {
	clean := mustGauss(t, GaussConfig{N: statN, Seed: 7})

	// Class balance.
	var pos int
	for _, p := range clean {
		if len(p.X) != 2 {
			t.Fatalf("point has %d features, want 2", len(p.X))
		}
		if p.Y == 1 {
			pos++
		} else if p.Y != -1 {
			t.Fatalf("label %d", p.Y)
		}
	}
	within(t, "fraction of class +1", float64(pos)/statN, 0.5, math.Sqrt(0.25/statN))

	// Per class moments: means (±1, ±1), variances (0.2, 2), no covariance.
	for _, class := range []int{1, -1} {
		var n, sx, sy float64
		for _, p := range clean {
			if p.Y == class {
				n++
				sx += p.X[0]
				sy += p.X[1]
			}
		}
		mx, my := sx/n, sy/n
		var vxx, vyy, vxy float64
		for _, p := range clean {
			if p.Y == class {
				dx, dy := p.X[0]-mx, p.X[1]-my
				vxx += dx * dx
				vyy += dy * dy
				vxy += dx * dy
			}
		}
		vxx /= n - 1
		vyy /= n - 1
		vxy /= n - 1
		c := float64(class)
		name := fmt.Sprintf("class %+d ", class)
		within(t, name+"mean x", mx, c, math.Sqrt(0.2/n))
		within(t, name+"mean y", my, c, math.Sqrt(2/n))
		// The sample variance of normal data has standard error
		// sigma^2 * sqrt(2/(n-1)); the sample covariance of independent
		// coordinates has sigma_x*sigma_y/sqrt(n).
		within(t, name+"var x", vxx, 0.2, 0.2*math.Sqrt(2/(n-1)))
		within(t, name+"var y", vyy, 2, 2*math.Sqrt(2/(n-1)))
		within(t, name+"cov xy", vxy, 0, math.Sqrt(0.2*2/n))
	}

	// Label noise: the flips use their own stream, so the Noise 0 run
	// with the same seed holds the same positions and the true classes.
	const noise = 0.1
	noisy := mustGauss(t, GaussConfig{N: statN, Noise: noise, Seed: 7})
	var flipped int
	for i := range noisy {
		if !samePoints(clean[i:i+1], []Point{{X: noisy[i].X, Y: clean[i].Y}}) {
			t.Fatalf("point %d moved when Noise changed: %v vs %v", i, clean[i].X, noisy[i].X)
		}
		if noisy[i].Y != clean[i].Y {
			flipped++
		}
	}
	within(t, "fraction flipped", float64(flipped)/statN, noise, math.Sqrt(noise*(1-noise)/statN))
}

func TestGaussPrefix(t *testing.T) {
	long := mustGauss(t, GaussConfig{N: 1000, Noise: 0.1, Seed: 3})
	short := mustGauss(t, GaussConfig{N: 10, Noise: 0.1, Seed: 3})
	if !samePoints(short, long[:10]) {
		t.Errorf("a 10-point run is not a prefix of a 1000-point run with the same seed")
	}
}

func TestCheckerboardStatistics(t *testing.T) {
	cfg := CheckerboardConfig{N: statN, Cells: 4, CellSize: 1, Seed: 11}
	clean := mustCheckerboard(t, cfg)
	cells := cfg.Cells * cfg.Cells
	counts := make([]int, cells)
	var fx, fy float64 // offsets within a cell, in cell units
	for i, p := range clean {
		if len(p.X) != 2 {
			t.Fatalf("point %d has %d features, want 2", i, len(p.X))
		}
		x, y := p.X[0], p.X[1]
		side := float64(cfg.Cells) * cfg.CellSize
		if !(x >= 0 && x < side && y >= 0 && y < side) {
			t.Fatalf("point %d = (%v, %v) outside [0, %v)^2", i, x, y, side)
		}
		cx, cy := int(math.Floor(x/cfg.CellSize)), int(math.Floor(y/cfg.CellSize))
		want := -1
		if (cx+cy)%2 == 0 {
			want = 1
		}
		if p.Y != want {
			t.Fatalf("noise-free point %d = (%v, %v) has label %d, board parity says %d", i, x, y, p.Y, want)
		}
		counts[cx*cfg.Cells+cy]++
		fx += x/cfg.CellSize - float64(cx)
		fy += y/cfg.CellSize - float64(cy)
	}
	p := 1 / float64(cells)
	for c, n := range counts {
		within(t, fmt.Sprintf("count in cell %d", c), float64(n), statN*p, math.Sqrt(statN*p*(1-p)))
	}
	// Uniform within cells: a Uniform[0,1) offset has variance 1/12.
	within(t, "mean x offset in cell", fx/statN, 0.5, math.Sqrt(1.0/12/statN))
	within(t, "mean y offset in cell", fy/statN, 0.5, math.Sqrt(1.0/12/statN))

	for _, noise := range []float64{0.15, 0.5, 0.999} {
		cfg.Noise = noise
		noisy := mustCheckerboard(t, cfg)
		var switched int
		for i := range noisy {
			if !samePoints([]Point{{X: noisy[i].X}}, []Point{{X: clean[i].X}}) {
				t.Fatalf("Noise %v: point %d moved when Noise changed", noise, i)
			}
			if noisy[i].Y != clean[i].Y {
				switched++
			}
		}
		if want := int(math.Round(noise * statN)); switched != want {
			t.Errorf("Noise %v: %d labels switched, want exactly %d", noise, switched, want)
		}
	}
}

// TestCheckerboardFlipsUniform checks that the switched points are a
// uniform choice: over many seeds each index is switched about k/N of the
// time.
func TestCheckerboardFlipsUniform(t *testing.T) {
	const n, runs = 20, 20000
	cfg := CheckerboardConfig{N: n, Cells: 2, CellSize: 1, Noise: 0.15}
	k := math.Round(cfg.Noise * n) // 3
	hits := make([]int, n)
	for s := range uint64(runs) {
		cfg.Seed = s
		cfg.Noise = 0
		clean := mustCheckerboard(t, cfg)
		cfg.Noise = 0.15
		noisy := mustCheckerboard(t, cfg)
		for i := range noisy {
			if noisy[i].Y != clean[i].Y {
				hits[i]++
			}
		}
	}
	p := k / n
	for i, h := range hits {
		within(t, fmt.Sprintf("switch rate of index %d", i), float64(h)/runs, p, math.Sqrt(p*(1-p)/runs))
	}
}

func TestCheckerboardOtherBoard(t *testing.T) {
	cfg := CheckerboardConfig{N: 5000, Cells: 3, CellSize: 0.7, Noise: 0.2, Seed: 5}
	pts := mustCheckerboard(t, cfg)
	side := 3 * 0.7
	var disagree int
	for i, p := range pts {
		x, y := p.X[0], p.X[1]
		if !(x >= 0 && x < side && y >= 0 && y < side) {
			t.Fatalf("point %d = (%v, %v) outside [0, %v)^2", i, x, y, side)
		}
		if p.Y != boardLabel(x, y, cfg.CellSize, cfg.Cells) {
			disagree++
		}
	}
	if want := int(math.Round(0.2 * 5000)); disagree != want {
		t.Errorf("%d labels disagree with the board, want %d", disagree, want)
	}
}

func TestCellIndexClamp(t *testing.T) {
	// Just below the edge of a 3-cell board of side 0.1, the division may
	// round up to 3; the point still belongs to the last cell.
	side := 3 * 0.1
	x := math.Nextafter(side, 0)
	if got := cellIndex(x, 0.1, 3); got != 2 {
		t.Errorf("cellIndex(%v, 0.1, 3) = %d, want 2", x, got)
	}
	if got := cellIndex(0, 0.1, 3); got != 0 {
		t.Errorf("cellIndex(0, 0.1, 3) = %d, want 0", got)
	}
}

func TestSeeds(t *testing.T) {
	g := GaussConfig{N: 1000, Noise: 0.1, Seed: 1}
	c := CheckerboardConfig{N: 1000, Cells: 4, CellSize: 1, Noise: 0.15, Seed: 1}
	if !samePoints(mustGauss(t, g), mustGauss(t, g)) {
		t.Error("Gauss: same seed gave different points")
	}
	if !samePoints(mustCheckerboard(t, c), mustCheckerboard(t, c)) {
		t.Error("Checkerboard: same seed gave different points")
	}
	g2, c2 := g, c
	g2.Seed, c2.Seed = 2, 2
	if samePoints(mustGauss(t, g), mustGauss(t, g2)) {
		t.Error("Gauss: seeds 1 and 2 gave the same points")
	}
	if samePoints(mustCheckerboard(t, c), mustCheckerboard(t, c2)) {
		t.Error("Checkerboard: seeds 1 and 2 gave the same points")
	}
	// Seed 0 (the default) must be an ordinary stream, not a degenerate one.
	g2.Seed, c2.Seed = 0, 0
	if samePoints(mustGauss(t, g), mustGauss(t, g2)) {
		t.Error("Gauss: seeds 1 and 0 gave the same points")
	}
	if samePoints(mustCheckerboard(t, c), mustCheckerboard(t, c2)) {
		t.Error("Checkerboard: seeds 1 and 0 gave the same points")
	}
}

func TestNoAliasing(t *testing.T) {
	pts := mustGauss(t, GaussConfig{N: 3, Seed: 1})
	before := pts[1].X[0]
	_ = append(pts[0].X, 42)
	if pts[1].X[0] != before {
		t.Error("appending to one point's features overwrote the next point")
	}
}

// TestGolden pins the first points for seed 1 with the papers' settings.
// A failure means the generated data changed: results produced before the
// change can no longer be reproduced, so fix the code, not these values.
func TestGolden(t *testing.T) {
	gcfg := DefaultGauss()
	gcfg.Seed = 1
	wantGauss := []Point{
		{X: []float64{1.8448523614281327, 0.1831362092327874}, Y: 1},
		{X: []float64{-0.3675988152487025, -1.0109939593659063}, Y: -1},
		{X: []float64{0.9025110865254609, -1.1623372944388093}, Y: 1},
	}
	if got := mustGauss(t, gcfg)[:3]; !samePoints(got, wantGauss) {
		t.Errorf("Gauss seed 1 first points:\n got %v\nwant %v", got, wantGauss)
	}

	ccfg := DefaultCheckerboard()
	ccfg.Seed = 1
	wantCheck := []Point{
		{X: []float64{1.8425748577609298, 0.33060911124735126}, Y: -1},
		{X: []float64{0.0589084529772399, 0.4023355369577035}, Y: 1},
		{X: []float64{1.9735303784564797, 2.8300089739325673}, Y: 1}, // switched
	}
	if got := mustCheckerboard(t, ccfg)[:3]; !samePoints(got, wantCheck) {
		t.Errorf("Checkerboard seed 1 first points:\n got %v\nwant %v", got, wantCheck)
	}
}

func TestDefaults(t *testing.T) {
	if g := DefaultGauss(); g.N != 10000 || g.Noise != 0.1 {
		t.Errorf("DefaultGauss() = %+v", g)
	}
	if c := DefaultCheckerboard(); c.N != 10000 || c.Cells != 4 || c.CellSize != 1 || c.Noise != 0.15 {
		t.Errorf("DefaultCheckerboard() = %+v", c)
	}
	if err := DefaultGauss().Validate(); err != nil {
		t.Error(err)
	}
	if err := DefaultCheckerboard().Validate(); err != nil {
		t.Error(err)
	}
}

func TestInvalidConfigs(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, cfg := range []GaussConfig{
		{},
		{N: 0, Noise: 0.1},
		{N: -5},
		{N: 10, Noise: -0.1},
		{N: 10, Noise: 1},
		{N: 10, Noise: nan},
		{N: 10, Noise: inf},
	} {
		if _, err := Gauss(cfg); err == nil {
			t.Errorf("Gauss(%+v) succeeded, want an error", cfg)
		}
	}
	for _, cfg := range []CheckerboardConfig{
		{},
		{N: 0, Cells: 4, CellSize: 1},
		{N: 10, Cells: 0, CellSize: 1},
		{N: 10, Cells: -1, CellSize: 1},
		{N: 10, Cells: 4, CellSize: 0},
		{N: 10, Cells: 4, CellSize: -1},
		{N: 10, Cells: 4, CellSize: nan},
		{N: 10, Cells: 4, CellSize: inf},
		{N: 10, Cells: 4, CellSize: math.MaxFloat64},
		{N: 10, Cells: 4, CellSize: 1, Noise: -0.01},
		{N: 10, Cells: 4, CellSize: 1, Noise: 1},
		{N: 10, Cells: 4, CellSize: 1, Noise: nan},
	} {
		if _, err := Checkerboard(cfg); err == nil {
			t.Errorf("Checkerboard(%+v) succeeded, want an error", cfg)
		}
	}
}

// parseLIBSVM is a strict reader for what WriteLIBSVM produces: dense,
// 1-based, consecutive indices.
func parseLIBSVM(data string) ([]Point, error) {
	var pts []Point
	sc := bufio.NewScanner(strings.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		fields := strings.Split(sc.Text(), " ")
		var p Point
		switch fields[0] {
		case "+1":
			p.Y = 1
		case "-1":
			p.Y = -1
		default:
			return nil, fmt.Errorf("line %d: label %q", line, fields[0])
		}
		for j, f := range fields[1:] {
			idx, val, ok := strings.Cut(f, ":")
			if !ok {
				return nil, fmt.Errorf("line %d: field %q", line, f)
			}
			if idx != strconv.Itoa(j+1) {
				return nil, fmt.Errorf("line %d: index %q, want %d", line, idx, j+1)
			}
			v, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			p.X = append(p.X, v)
		}
		pts = append(pts, p)
	}
	return pts, sc.Err()
}

func TestWriteLIBSVMRoundTrip(t *testing.T) {
	sets := map[string][]Point{
		"gauss":        mustGauss(t, GaussConfig{N: 2000, Noise: 0.1, Seed: 9}),
		"checkerboard": mustCheckerboard(t, CheckerboardConfig{N: 2000, Cells: 4, CellSize: 1, Noise: 0.15, Seed: 9}),
		"edge values": {
			{X: []float64{0, math.Copysign(0, -1), 1e-300, 5e-324, -math.MaxFloat64}, Y: 1},
			{X: []float64{0.1, 1.0 / 3, 123456789.125, -4.5, 1e21}, Y: -1},
			{X: nil, Y: 1},
		},
	}
	for name, pts := range sets {
		var buf bytes.Buffer
		if err := WriteLIBSVM(&buf, pts); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := parseLIBSVM(buf.String())
		if err != nil {
			t.Fatalf("%s: parse: %v", name, err)
		}
		if !samePoints(got, pts) {
			t.Errorf("%s: points changed in a LIBSVM round trip", name)
		}
	}
}

func TestWriteLIBSVMFormat(t *testing.T) {
	pts := []Point{
		{X: []float64{0.123, -4.5}, Y: 1},
		{X: []float64{0, 2}, Y: -1},
	}
	var buf bytes.Buffer
	if err := WriteLIBSVM(&buf, pts); err != nil {
		t.Fatal(err)
	}
	if want := "+1 1:0.123 2:-4.5\n-1 1:0 2:2\n"; buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

func TestWriteLIBSVMInvalid(t *testing.T) {
	for name, pts := range map[string][]Point{
		"label 0":   {{X: []float64{1}, Y: 1}, {X: []float64{1}, Y: 0}},
		"label 2":   {{X: []float64{1}, Y: 2}},
		"NaN":       {{X: []float64{1, math.NaN()}, Y: 1}},
		"+Inf":      {{X: []float64{math.Inf(1)}, Y: -1}},
		"-Inf last": {{X: []float64{1}, Y: 1}, {X: []float64{math.Inf(-1)}, Y: -1}},
	} {
		var buf bytes.Buffer
		if err := WriteLIBSVM(&buf, pts); err == nil {
			t.Errorf("%s: no error", name)
		}
		if buf.Len() != 0 {
			t.Errorf("%s: wrote %q before failing", name, buf.String())
		}
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

func TestWriteLIBSVMWriteError(t *testing.T) {
	sentinel := errors.New("disk full")
	pts := mustGauss(t, GaussConfig{N: 5000, Seed: 1}) // more than a buffer
	err := WriteLIBSVM(failWriter{sentinel}, pts)
	if !errors.Is(err, sentinel) {
		t.Errorf("got %v, want an error wrapping %v", err, sentinel)
	}
	err = WriteLIBSVM(failWriter{sentinel}, pts[:1]) // fails only at Flush
	if !errors.Is(err, sentinel) {
		t.Errorf("got %v, want an error wrapping %v", err, sentinel)
	}
}

func TestLogPos(t *testing.T) {
	// logPos must agree with math.Log to within one ulp (math.Log may be
	// assembly that rounds differently) over the range normalPair uses,
	// [2^-104, 1). Subnormals are left out: amd64's math.Log mishandles
	// them (golang/go#56600).
	src := newSource(1, 2)
	check := func(x float64) {
		got, want := logPos(x), math.Log(x)
		if ulp := math.Abs(math.Nextafter(want, 0) - want); math.Abs(got-want) > ulp {
			t.Fatalf("logPos(%v) = %v, math.Log = %v", x, got, want)
		}
	}
	for range 100000 {
		u := src.Float64()
		if u > 0 {
			check(u)
			check(u * u * u)
		}
	}
	for _, x := range []float64{1, 0.5, math.Sqrt2 / 2, math.Nextafter(1, 0), 0x1p-104, 0x1p-1022, 2, math.E} {
		check(x)
	}
	if logPos(1) != 0 {
		t.Errorf("logPos(1) = %v, want 0", logPos(1))
	}
}
