package synth

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// checkStream checks what every drifting stream promises: n points, shifts
// where the config puts them, segment descriptions that start there, and
// (for abrupt drifts) Segment changing exactly at the shifts.
func checkStream(t *testing.T, name string, s Stream, n int, wantShifts []int64, abrupt bool) {
	t.Helper()
	if len(s.Points) != n {
		t.Fatalf("%s: %d points, want %d", name, len(s.Points), n)
	}
	if !slices.Equal(s.Shifts, wantShifts) {
		t.Fatalf("%s: shifts %v, want %v", name, s.Shifts, wantShifts)
	}
	if len(s.Segments) != len(wantShifts)+1 || s.Segments[0].Start != 0 {
		t.Fatalf("%s: segments %+v for shifts %v", name, s.Segments, wantShifts)
	}
	for k, sh := range wantShifts {
		if s.Segments[k+1].Start != sh || s.Segments[k+1].Concept == "" {
			t.Fatalf("%s: segment %d = %+v, want start %d", name, k+1, s.Segments[k+1], sh)
		}
	}
	if abrupt {
		if got := Shifts(s.Points); !slices.Equal(got, wantShifts) {
			t.Fatalf("%s: Shifts(points) = %v, want %v", name, got, wantShifts)
		}
		for i, p := range s.Points {
			want := 0
			for _, sh := range wantShifts {
				if sh <= int64(i) {
					want++
				}
			}
			if p.Segment != want {
				t.Fatalf("%s: point %d in segment %d, want %d", name, i, p.Segment, want)
			}
		}
	}
}

func TestShiftsHelper(t *testing.T) {
	pts := []Point{{Segment: 0}, {Segment: 0}, {Segment: 1}, {Segment: 1}, {Segment: 0}, {Segment: 2}}
	if got := Shifts(pts); !slices.Equal(got, []int64{2, 4, 5}) {
		t.Errorf("Shifts = %v, want [2 4 5]", got)
	}
	if got := Shifts(nil); got == nil || len(got) != 0 {
		t.Errorf("Shifts(nil) = %#v, want an empty non-nil slice", got)
	}
	if got := evenShifts(10, 3); !slices.Equal(got, []int64{2, 5, 7}) {
		t.Errorf("evenShifts(10, 3) = %v", got)
	}
}

func TestSEA(t *testing.T) {
	cfg := SEAConfig{N: statN, Shifts: 3, Thresholds: []float64{8, 9, 7, 9.5}, Seed: 3}
	clean, err := SEA(cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkStream(t, "sea", clean, statN, []int64{statN / 4, statN / 2, 3 * statN / 4}, true)
	pos := make([]float64, 4)
	var sum3 float64
	for i, p := range clean.Points {
		theta := cfg.Thresholds[p.Segment]
		for _, v := range p.X {
			if !(v >= 0 && v < 10) {
				t.Fatalf("point %d feature %v outside [0, 10)", i, v)
			}
		}
		if want := map[bool]int{true: 1, false: -1}[p.X[0]+p.X[1] <= theta]; p.Y != want {
			t.Fatalf("noise-free point %d %v in segment %d (theta %v) has label %d", i, p.X, p.Segment, theta, p.Y)
		}
		if p.Y == 1 {
			pos[p.Segment]++
		}
		sum3 += p.X[2]
	}
	// For θ ≤ 10, P(x1 + x2 ≤ θ) = θ²/200 with x1, x2 uniform on [0, 10).
	m := float64(statN / 4)
	for k, theta := range cfg.Thresholds {
		p := theta * theta / 200
		within(t, fmt.Sprintf("segment %d fraction of +1", k), pos[k]/m, p, math.Sqrt(p*(1-p)/m))
	}
	within(t, "mean of the irrelevant feature", sum3/statN, 5, math.Sqrt(100.0/12/statN))

	cfg.Noise = 0.1
	noisy, err := SEA(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var flipped int
	for i := range noisy.Points {
		if !slices.Equal(noisy.Points[i].X, clean.Points[i].X) || noisy.Points[i].Segment != clean.Points[i].Segment {
			t.Fatalf("point %d moved when Noise changed", i)
		}
		if noisy.Points[i].Y != clean.Points[i].Y {
			flipped++
		}
	}
	within(t, "fraction flipped", float64(flipped)/statN, 0.1, math.Sqrt(0.1*0.9/statN))

	// Fewer thresholds than concepts: they are cycled.
	cyc, err := SEA(SEAConfig{N: 1000, Shifts: 4, Thresholds: []float64{2, 8}})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range []string{"theta=2", "theta=8", "theta=2", "theta=8", "theta=2"} {
		if cyc.Segments[k].Concept != want {
			t.Errorf("segment %d concept %q, want %q", k, cyc.Segments[k].Concept, want)
		}
	}
}

func TestHyperplane(t *testing.T) {
	cfg := HyperplaneConfig{N: statN, Dim: 5, DriftFeatures: 2, Mag: 0.001, Reverse: 0.1, Shifts: 2, Seed: 4}
	var ws [][]float64
	clean, err := hyperplane(cfg, func(i int, w []float64) {
		if i != len(ws) {
			t.Fatalf("observed point %d after %d", i, len(ws))
		}
		ws = append(ws, slices.Clone(w))
	})
	if err != nil {
		t.Fatal(err)
	}
	shifts := []int64{statN / 3, 2 * statN / 3}
	checkStream(t, "hyperplane", clean, statN, shifts, true)

	var pos, reversals, steps int
	for i, p := range clean.Points {
		w := ws[i]
		var dot, sum float64
		for j, x := range p.X {
			if !(x >= 0 && x < 1) {
				t.Fatalf("point %d feature %v outside [0, 1)", i, x)
			}
			dot += w[j] * x
			sum += w[j]
		}
		if want := map[bool]int{true: 1, false: -1}[dot >= sum/2]; p.Y != want && math.Abs(dot-sum/2) > 1e-12 {
			t.Fatalf("noise-free point %d: label %d, weights say %d", i, p.Y, want)
		}
		if p.Y == 1 {
			pos++
		}
		if i == 0 {
			continue
		}
		redraw := slices.Contains(shifts, int64(i))
		for j := range w {
			d := w[j] - ws[i-1][j]
			switch {
			case redraw:
				if d == 0 {
					t.Fatalf("weight %d not redrawn at shift %d", j, i)
				}
			case j < cfg.DriftFeatures:
				if math.Abs(math.Abs(d)-cfg.Mag) > 1e-12 {
					t.Fatalf("drifting weight %d moved by %v at %d", j, d, i)
				}
			case d != 0:
				t.Fatalf("fixed weight %d moved at %d", j, i)
			}
		}
		// A reversal shows as a change of sign between two successive moves.
		if i >= 2 && !redraw && !slices.Contains(shifts, int64(i-1)) {
			for j := range cfg.DriftFeatures {
				steps++
				if (w[j]-ws[i-1][j])*(ws[i-1][j]-ws[i-2][j]) < 0 {
					reversals++
				}
			}
		}
	}
	// Σ w_i (x_i − ½) is symmetric about 0 whatever the weights.
	within(t, "fraction of +1", float64(pos)/statN, 0.5, math.Sqrt(0.25/statN))
	within(t, "reversal rate", float64(reversals)/float64(steps), 0.1, math.Sqrt(0.1*0.9/float64(steps)))

	cfg.Noise = 0.05
	noisy, err := Hyperplane(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var flipped int
	for i := range noisy.Points {
		if noisy.Points[i].Y != clean.Points[i].Y {
			flipped++
		}
	}
	within(t, "fraction flipped", float64(flipped)/statN, 0.05, math.Sqrt(0.05*0.95/statN))

	// Without redraws the drift is only gradual: one segment, no shifts.
	cfg.Shifts = 0
	cfg.N = 1000
	g, err := Hyperplane(cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkStream(t, "gradual hyperplane", g, 1000, []int64{}, true)
}

func TestGaussDriftWithoutShifts(t *testing.T) {
	// Gauss is GaussDrift without shifts, pinned by TestGolden; here only
	// the stream's shape.
	s, err := GaussDrift(GaussDriftConfig{N: 5000, Noise: 0.1, Seed: 8, Angle: 90})
	if err != nil {
		t.Fatal(err)
	}
	checkStream(t, "gauss", s, 5000, []int64{}, true)
	if s.Segments[0].Concept != "angle=0" {
		t.Errorf("segments %+v", s.Segments)
	}
}

func TestGaussDriftAbrupt(t *testing.T) {
	cfg := GaussDriftConfig{N: statN, Seed: 9, Shifts: 3, Angle: 90}
	s, err := GaussDrift(cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkStream(t, "gauss", s, statN, []int64{statN / 4, statN / 2, 3 * statN / 4}, true)
	// Class +1 means: (1,1), then rotated by 90° each time.
	wantMean := [][2]float64{{1, 1}, {-1, 1}, {-1, -1}, {1, -1}}
	for k, want := range wantMean {
		var n, sx, sy float64
		for _, p := range s.Points {
			if p.Segment == k && p.Y == 1 {
				n++
				sx += p.X[0]
				sy += p.X[1]
			}
		}
		within(t, fmt.Sprintf("segment %d class +1 mean x", k), sx/n, want[0], math.Sqrt(0.2/n))
		within(t, fmt.Sprintf("segment %d class +1 mean y", k), sy/n, want[1], math.Sqrt(2/n))
	}
}

func TestGaussDriftGradual(t *testing.T) {
	const n, width = statN, 40000
	cfg := GaussDriftConfig{N: n, Seed: 10, Shifts: 1, Angle: 45, Width: width}
	s, err := GaussDrift(cfg)
	if err != nil {
		t.Fatal(err)
	}
	centre := int64(n / 2)
	checkStream(t, "gradual gauss", s, n, []int64{centre}, false)
	start := int(centre) - width/2
	for i, p := range s.Points {
		if (i < start && p.Segment != 0) || (i >= start+width && p.Segment != 1) {
			t.Fatalf("point %d outside the window in segment %d", i, p.Segment)
		}
	}
	// In each quarter of the window the new concept's share should be the
	// mean of the linear ramp over it: 1/8, 3/8, 5/8, 7/8.
	q := width / 4
	prev := -1.0
	for j := range 4 {
		var newer int
		for _, p := range s.Points[start+j*q : start+(j+1)*q] {
			newer += p.Segment
		}
		got, want := float64(newer)/float64(q), (2*float64(j)+1)/8
		within(t, fmt.Sprintf("new-concept share in quarter %d", j), got, want, math.Sqrt(want*(1-want)/float64(q)))
		if got <= prev {
			t.Errorf("new-concept share does not rise: %v after %v", got, prev)
		}
		prev = got
	}
	// A point's Segment is the concept it was drawn from: the class +1
	// points of each concept, inside the window, are centred on its mean.
	s45, c45 := math.Sincos(math.Pi / 4)
	for k, want := range [][2]float64{{1, 1}, {c45 - s45, s45 + c45}} {
		var m, sx, sy float64
		for _, p := range s.Points[start : start+width] {
			if p.Segment == k && p.Y == 1 {
				m++
				sx += p.X[0]
				sy += p.X[1]
			}
		}
		within(t, fmt.Sprintf("window concept %d mean x", k), sx/m, want[0], math.Sqrt(0.2/m))
		within(t, fmt.Sprintf("window concept %d mean y", k), sy/m, want[1], math.Sqrt(2/m))
	}
}

func TestGradualConceptEdges(t *testing.T) {
	shifts := []int64{10, 20}
	for i := range int64(30) {
		for _, u := range []float64{0, 0.5, math.Nextafter(1, 0)} {
			k := gradualConcept(i, shifts, 4, u)
			switch {
			case i < 8:
				if k != 0 {
					t.Fatalf("i=%d u=%v: concept %d before the first window", i, u, k)
				}
			case i >= 12 && i < 18:
				if k != 1 {
					t.Fatalf("i=%d u=%v: concept %d between windows", i, u, k)
				}
			case i >= 22:
				if k != 2 {
					t.Fatalf("i=%d u=%v: concept %d after the last window", i, u, k)
				}
			}
		}
	}
	// Width 0 is abrupt.
	for i := range int64(30) {
		want := 0
		if i >= 10 {
			want++
		}
		if i >= 20 {
			want++
		}
		if k := gradualConcept(i, shifts, 0, 0); k != want {
			t.Fatalf("abrupt: point %d in concept %d, want %d", i, k, want)
		}
	}
}

// checkerParity is the test's own rotated-checkerboard label, with the
// standard library's trigonometry; near reports points too close to a cell
// edge for the two computations to be compared.
func checkerParity(x, y, deg, centre, cell float64) (label int, near bool) {
	s, c := math.Sincos(deg * math.Pi / 180)
	dx, dy := x-centre, y-centre
	u := (centre + dx*c + dy*s) / cell
	v := (centre - dx*s + dy*c) / cell
	near = math.Abs(u-math.Round(u)) < 1e-9 || math.Abs(v-math.Round(v)) < 1e-9
	if (int64(math.Floor(u))+int64(math.Floor(v)))&1 == 0 {
		return 1, near
	}
	return -1, near
}

func TestRotatingCheckerboard(t *testing.T) {
	const n = statN
	base := RotatingCheckerboardConfig{N: n, Cells: 4, CellSize: 0.5, Seed: 12, Rotation: 90}
	flat := mustCheckerboard(t, CheckerboardConfig{N: n, Cells: 4, CellSize: 0.5, Seed: 12})
	for _, shifts := range []int{0, 3} {
		cfg := base
		cfg.Shifts = shifts
		s, err := RotatingCheckerboard(cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := evenShifts(n, shifts)
		checkStream(t, fmt.Sprintf("checkerboard shifts=%d", shifts), s, n, want, true)
		var pos, near, changed int
		for i, p := range s.Points {
			if !slices.Equal(p.X, flat[i].X) {
				t.Fatalf("point %d placed differently from Checkerboard", i)
			}
			deg := 90 * float64(i) / (n - 1)
			if shifts > 0 {
				deg = 90 * float64(p.Segment) / float64(shifts)
			}
			label, isNear := checkerParity(p.X[0], p.X[1], deg, 1, 0.5)
			if isNear {
				near++
				continue
			}
			if p.Y != label {
				t.Fatalf("shifts=%d: point %d %v at %v° has label %d, parity says %d", shifts, i, p.X, deg, p.Y, label)
			}
			if p.Y == 1 {
				pos++
			}
			if p.Y != flat[i].Y {
				changed++
			}
		}
		if near > 10 {
			t.Errorf("%d points near cell edges: the check is too loose", near)
		}
		// The turned pattern is not exactly balanced on the board, but
		// nearly; and the rotation must have changed many labels.
		if f := float64(pos) / n; math.Abs(f-0.5) > 0.02 {
			t.Errorf("shifts=%d: fraction of +1 = %v", shifts, f)
		}
		if changed < n/10 {
			t.Errorf("shifts=%d: rotation changed only %d labels", shifts, changed)
		}
	}
	// Noise switches exactly round(Noise·N) labels.
	cfg := base
	clean, _ := RotatingCheckerboard(cfg)
	cfg.Noise = 0.15
	noisy, err := RotatingCheckerboard(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var switched int
	for i := range noisy.Points {
		if noisy.Points[i].Y != clean.Points[i].Y {
			switched++
		}
	}
	if want := int(math.Round(0.15 * n)); switched != want {
		t.Errorf("%d labels switched, want %d", switched, want)
	}
}

func TestSincosDeg(t *testing.T) {
	for _, c := range []struct{ deg, s, c float64 }{{0, 0, 1}, {90, 1, 0}, {180, 0, -1}, {-90, -1, 0}, {270, -1, 0}, {450, 1, 0}, {-360, 0, 1}} {
		if s, co := sincosDeg(c.deg); s != c.s || co != c.c {
			t.Errorf("sincosDeg(%v) = %v, %v; want %v, %v", c.deg, s, co, c.s, c.c)
		}
	}
	src := newSource(5, 6)
	for range 100000 {
		deg := float64(src.Float64()*4000) - 2000
		s, c := sincosDeg(deg)
		ws, wc := math.Sincos(deg * math.Pi / 180)
		// math.Sincos reduces in radians after an inexact conversion, so
		// the two may differ by a few units in the last place.
		if math.Abs(s-ws) > 1e-13 || math.Abs(c-wc) > 1e-13 {
			t.Fatalf("sincosDeg(%v) = %v, %v; math.Sincos gives %v, %v", deg, s, c, ws, wc)
		}
	}
}

func TestDriftDeterminism(t *testing.T) {
	gens := map[string]func(seed uint64) (Stream, error){
		"sea": func(seed uint64) (Stream, error) {
			c := DefaultSEA()
			c.N, c.Seed = 2000, seed
			return SEA(c)
		},
		"hyperplane": func(seed uint64) (Stream, error) {
			c := DefaultHyperplane()
			c.N, c.Seed, c.Shifts = 2000, seed, 1
			return Hyperplane(c)
		},
		"gauss": func(seed uint64) (Stream, error) {
			return GaussDrift(GaussDriftConfig{N: 2000, Noise: 0.1, Seed: seed, Shifts: 2, Angle: 30, Width: 100})
		},
		"checkerboard": func(seed uint64) (Stream, error) {
			return RotatingCheckerboard(RotatingCheckerboardConfig{N: 2000, Cells: 4, CellSize: 1, Noise: 0.1, Seed: seed, Rotation: 90})
		},
	}
	samePts := func(a, b []Point) bool {
		if !samePoints(a, b) {
			return false
		}
		for i := range a {
			if a[i].Segment != b[i].Segment {
				return false
			}
		}
		return true
	}
	for name, gen := range gens {
		a, err := gen(1)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := gen(1)
		c, _ := gen(2)
		if !samePts(a.Points, b.Points) {
			t.Errorf("%s: same seed, different points", name)
		}
		if samePts(a.Points, c.Points) {
			t.Errorf("%s: seeds 1 and 2 gave the same points", name)
		}
	}
}

func TestDriftInvalidConfigs(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, cfg := range []SEAConfig{
		{},
		{N: 10, Thresholds: nil},
		{N: 10, Shifts: -1, Thresholds: []float64{8}},
		{N: 10, Shifts: 10, Thresholds: []float64{8}},
		{N: 10, Thresholds: []float64{nan}},
		{N: 10, Thresholds: []float64{8, inf}},
		{N: 10, Thresholds: []float64{8}, Noise: 1},
	} {
		if _, err := SEA(cfg); err == nil {
			t.Errorf("SEA(%+v) succeeded", cfg)
		}
	}
	ok := DefaultHyperplane()
	for _, mod := range []func(*HyperplaneConfig){
		func(c *HyperplaneConfig) { c.N = 0 },
		func(c *HyperplaneConfig) { c.Dim = 0 },
		func(c *HyperplaneConfig) { c.DriftFeatures = 11 },
		func(c *HyperplaneConfig) { c.DriftFeatures = -1 },
		func(c *HyperplaneConfig) { c.Mag = -0.1 },
		func(c *HyperplaneConfig) { c.Mag = nan },
		func(c *HyperplaneConfig) { c.Reverse = 1.5 },
		func(c *HyperplaneConfig) { c.Shifts = c.N },
		func(c *HyperplaneConfig) { c.Noise = -0.1 },
	} {
		cfg := ok
		mod(&cfg)
		if _, err := Hyperplane(cfg); err == nil {
			t.Errorf("Hyperplane(%+v) succeeded", cfg)
		}
	}
	for _, cfg := range []GaussDriftConfig{
		{},
		{N: 10, Shifts: -1},
		{N: 10, Shifts: 10},
		{N: 10, Shifts: 1, Angle: nan},
		{N: 10, Noise: 1},
		{N: 100, Shifts: 1, Width: -1},
		{N: 100, Shifts: 1, Width: 101}, // beyond the stream
		{N: 100, Shifts: 3, Width: 30},  // windows overlap
		{N: 100, Shifts: 1, Angle: 1, Width: 102},
	} {
		if _, err := GaussDrift(cfg); err == nil {
			t.Errorf("GaussDrift(%+v) succeeded", cfg)
		}
	}
	if _, err := GaussDrift(GaussDriftConfig{N: 100, Shifts: 3, Width: 25}); err != nil {
		t.Errorf("windows that just touch rejected: %v", err)
	}
	for _, cfg := range []RotatingCheckerboardConfig{
		{},
		{N: 10, Cells: 4, CellSize: 1, Rotation: inf},
		{N: 10, Cells: 4, CellSize: 1, Shifts: 10},
		{N: 10, Cells: 0, CellSize: 1},
		{N: 10, Cells: 4, CellSize: 1, Noise: 1},
	} {
		if _, err := RotatingCheckerboard(cfg); err == nil {
			t.Errorf("RotatingCheckerboard(%+v) succeeded", cfg)
		}
	}
}

func TestChunks(t *testing.T) {
	// Class counts: 3 ×5, 1 ×4, 2 ×4 (ties with 1, after it), 7 ×1.
	labels := []string{"3", "1", "2", "3", "1", "2", "3", "7", "1", "2", "3", "1", "2", "3"}
	if got := FrequentClasses(labels); !slices.Equal(got, []string{"3", "1", "2", "7"}) {
		t.Fatalf("FrequentClasses = %v", got)
	}
	c, err := Chunks(labels, ChunksConfig{Chunks: 4})
	if err != nil {
		t.Fatal(err)
	}
	// 14 records in 4 chunks: 3, 4, 3, 4 (cuts at 3, 7, 10).
	if !slices.Equal(c.Shifts, []int64{3, 7, 10}) {
		t.Fatalf("shifts %v", c.Shifts)
	}
	wantTargets := [][]string{{"3"}, {"1"}, {"2"}, {"7"}}
	for k, tg := range c.Targets {
		if !slices.Equal(tg, wantTargets[k]) {
			t.Fatalf("targets %v, want %v", c.Targets, wantTargets)
		}
	}
	for i, l := range labels {
		seg := 0
		for _, s := range c.Shifts {
			if int64(i) >= s {
				seg++
			}
		}
		want := -1
		if slices.Contains(wantTargets[seg], l) {
			want = 1
		}
		if c.Segment[i] != seg || c.Y[i] != want {
			t.Fatalf("record %d (class %s): segment %d label %d, want %d %d", i, l, c.Segment[i], c.Y[i], seg, want)
		}
	}
	if c.Segments[2].Concept != "target=2" || c.Segments[2].Start != 7 {
		t.Errorf("segment 2 = %+v", c.Segments[2])
	}

	// Groups, cycled over more chunks than targets.
	c, err = Chunks(labels, ChunksConfig{Chunks: 3, Targets: [][]string{{"1", "3"}, {"2"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Targets[2], []string{"1", "3"}) || c.Segments[0].Concept != "target=1+3" {
		t.Fatalf("cycled targets %v, segments %+v", c.Targets, c.Segments)
	}
	for i, l := range labels {
		inFirst := l == "1" || l == "3"
		want := map[bool]int{true: 1, false: -1}[(c.Segment[i] != 1 && inFirst) || (c.Segment[i] == 1 && l == "2")]
		if c.Y[i] != want {
			t.Fatalf("record %d (class %s, chunk %d): label %d, want %d", i, l, c.Segment[i], c.Y[i], want)
		}
	}

	// One chunk: no shift. Fewer classes than chunks: defaults cycle.
	c, err = Chunks([]string{"a", "b", "a", "b"}, ChunksConfig{Chunks: 4})
	if err != nil || len(c.Shifts) != 3 || !slices.Equal(c.Targets[2], []string{"a"}) {
		t.Fatalf("%v %+v", err, c)
	}
	c, err = Chunks(labels, ChunksConfig{Chunks: 1})
	if err != nil || len(c.Shifts) != 0 || len(c.Segments) != 1 {
		t.Fatalf("%v %+v", err, c)
	}

	for name, cfg := range map[string]ChunksConfig{
		"no chunks":      {},
		"too many":       {Chunks: 15},
		"empty target":   {Chunks: 2, Targets: [][]string{{"1"}, {}}},
		"empty class":    {Chunks: 2, Targets: [][]string{{""}}},
		"unknown class":  {Chunks: 2, Targets: [][]string{{"1"}, {"9"}}},
		"unknown in grp": {Chunks: 2, Targets: [][]string{{"1", "x"}}},
	} {
		if _, err := Chunks(labels, cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := Chunks([]string{"1", ""}, ChunksConfig{Chunks: 1}); err == nil {
		t.Error("unlabeled record accepted")
	}
}

func TestChunksMultiLabel(t *testing.T) {
	// Stories with several topics: +1 when any topic is the chunk's target.
	labels := []string{"earn", "acq,earn", "grain", "crude,grain", "acq", "earn,crude", "grain", "acq"}
	// Counts: earn 3, acq 3, grain 3, crude 2; ties in byte order.
	if got := FrequentClasses(labels); !slices.Equal(got, []string{"acq", "earn", "grain", "crude"}) {
		t.Fatalf("FrequentClasses = %v", got)
	}
	c, err := Chunks(labels, ChunksConfig{Chunks: 2, Targets: [][]string{{"earn"}, {"crude"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 1, -1, -1, -1, 1, -1, -1}; !slices.Equal(c.Y, want) {
		t.Fatalf("labels %v, want %v", c.Y, want)
	}
	if _, err := Chunks(labels, ChunksConfig{Chunks: 2, Targets: [][]string{{"acq,earn"}}}); err == nil {
		t.Fatal("a target naming a label list, not a class, was accepted")
	}
}

func TestCompareLabels(t *testing.T) {
	got := []string{"b", "10", "9", "a", "-1", "2.5"}
	slices.SortFunc(got, compareLabels)
	if want := []string{"-1", "2.5", "9", "10", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("sorted %v, want %v", got, want)
	}
}
