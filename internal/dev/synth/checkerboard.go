package synth

import (
	"fmt"
	"math"
	"strconv"
)

// CheckerboardConfig describes the NCheckerboard set of the Tighter
// Perceptron paper: points uniform on a Cells x Cells board of square cells
// of side CellSize, the board being [0, Cells*CellSize)^2, labelled +1 when
// floor(x/CellSize)+floor(y/CellSize) is even and -1 otherwise; then exactly
// round(Noise*N) distinct points, chosen uniformly at random, have their
// label switched.
//
// There are no implicit defaults: start from [DefaultCheckerboard] for the
// paper's settings. [CheckerboardConfig.Validate] rejects values out of
// range.
type CheckerboardConfig struct {
	// N is the number of points; it must be positive.
	N int
	// Cells is the number of cells along each side; it must be positive.
	Cells int
	// CellSize is the side of one cell; it must be positive and finite.
	CellSize float64
	// Noise is the fraction of labels switched, in [0, 1); the count is
	// math.Round(Noise*N), halves rounding away from zero. Zero gives the
	// noise-free set; the paper uses 0.15.
	Noise float64
	// Seed selects the random stream; any value is valid.
	Seed uint64
}

// DefaultCheckerboard returns the settings of the paper: 10000 points on a
// 4 x 4 board of unit cells with 15% of the labels switched, seed 0.
func DefaultCheckerboard() CheckerboardConfig {
	return CheckerboardConfig{N: 10000, Cells: 4, CellSize: 1, Noise: 0.15}
}

// Validate reports whether cfg can be generated.
func (cfg CheckerboardConfig) Validate() error {
	if cfg.N <= 0 {
		return fmt.Errorf("synth: checkerboard: N must be positive, got %d", cfg.N)
	}
	if cfg.Cells <= 0 {
		return fmt.Errorf("synth: checkerboard: Cells must be positive, got %d", cfg.Cells)
	}
	if !(cfg.CellSize > 0) || math.IsInf(cfg.CellSize, 0) {
		return fmt.Errorf("synth: checkerboard: CellSize must be positive and finite, got %v", cfg.CellSize)
	}
	if side := float64(cfg.Cells) * cfg.CellSize; math.IsInf(side, 0) {
		return fmt.Errorf("synth: checkerboard: board side Cells*CellSize = %d*%v overflows", cfg.Cells, cfg.CellSize)
	}
	if !(cfg.Noise >= 0 && cfg.Noise < 1) { // also rejects NaN
		return fmt.Errorf("synth: checkerboard: Noise must be in [0, 1), got %v", cfg.Noise)
	}
	return nil
}

// cellIndex returns floor(v/cellSize) for a coordinate on the board. The
// clamp only matters when the division rounds a coordinate just below the
// board's edge up to cells; it keeps such a point in the last cell, where
// it lies.
func cellIndex(v, cellSize float64, cells int) int {
	c := int(math.Floor(v / cellSize))
	return min(max(c, 0), cells-1)
}

// boardLabel is the noise-free checkerboard label of (x, y).
func boardLabel(x, y, cellSize float64, cells int) int {
	if (cellIndex(x, cellSize, cells)+cellIndex(y, cellSize, cells))%2 == 0 {
		return 1
	}
	return -1
}

// Checkerboard generates cfg.N points of the checkerboard set, each with
// two features.
//
// Positions come from one stream and the switched labels from another, so
// for a given Seed the positions are the same whatever Noise is, and Noise 0
// gives every point's board label.
func Checkerboard(cfg CheckerboardConfig) ([]Point, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	side := float64(cfg.Cells) * cfg.CellSize
	points := newSource(cfg.Seed, streamCheckPoints)

	xs := make([]float64, 2*cfg.N)
	pts := make([]Point, cfg.N)
	for i := range pts {
		// u < 1 - 2^-53 and rounding is monotone, so u*side < side.
		x := xs[2*i : 2*i+2 : 2*i+2]
		x[0] = points.Float64() * side
		x[1] = points.Float64() * side
		pts[i] = Point{X: x, Y: boardLabel(x[0], x[1], cfg.CellSize, cfg.Cells)}
	}

	switchLabels(pts, cfg.Noise, newSource(cfg.Seed, streamCheckFlips))
	return pts, nil
}

// switchLabels switches the labels of exactly round(noise·len(pts))
// distinct points, a uniformly random choice. Floyd's algorithm picks the
// k-subset of indices with exactly k draws, which makes the number of
// switched labels exact rather than only expected.
func switchLabels(pts []Point, noise float64, flips source) {
	n := len(pts)
	k := int(math.Round(noise * float64(n)))
	chosen := make([]bool, n)
	for j := n - k; j < n; j++ {
		t := int(flips.Uint64n(uint64(j) + 1))
		if chosen[t] {
			t = j
		}
		chosen[t] = true
		pts[t].Y = -pts[t].Y
	}
}

// RotatingCheckerboardConfig describes Elwell and Polikar's rotating
// checkerboard ("Incremental learning of concept drift in nonstationary
// environments", IEEE TNN 2011) on the board of [CheckerboardConfig]:
// points are uniform on the board as in [Checkerboard], but the pattern,
// extended beyond the board, turns about the board's centre as the stream
// goes on, by Rotation degrees in all. A point is +1 when its cell in the
// pattern's own coordinates has an even index sum. Exactly
// round(Noise·N) labels are then switched, as in Checkerboard.
//
// With Shifts 0 the rotation is gradual: point i sees the pattern turned
// by Rotation·i/(N−1), and the stream has one segment and no shift points.
// With Shifts K > 0 it is abrupt: the stream is cut into K+1 segments of
// equal length and segment k sees the pattern turned by Rotation·k/K.
type RotatingCheckerboardConfig struct {
	// N is the number of points; it must be positive.
	N int
	// Cells is the number of cells along each side; it must be positive.
	Cells int
	// CellSize is the side of one cell; it must be positive and finite.
	CellSize float64
	// Noise is the fraction of labels switched, in [0, 1).
	Noise float64
	// Seed selects the random stream; any value is valid.
	Seed uint64
	// Rotation is the total rotation over the stream, in degrees
	// (counter-clockwise); finite. The gen command's default is 90.
	Rotation float64
	// Shifts is 0 for a gradual rotation, or the number K of abrupt
	// steps, 0 ≤ K < N.
	Shifts int
}

// Validate reports whether cfg can be generated.
func (cfg RotatingCheckerboardConfig) Validate() error {
	if err := (CheckerboardConfig{N: cfg.N, Cells: cfg.Cells, CellSize: cfg.CellSize, Noise: cfg.Noise}).Validate(); err != nil {
		return err
	}
	if math.IsNaN(cfg.Rotation) || math.IsInf(cfg.Rotation, 0) {
		return fmt.Errorf("synth: checkerboard: Rotation must be finite, got %v", cfg.Rotation)
	}
	return validateShifts("checkerboard", cfg.N, cfg.Shifts)
}

// RotatingCheckerboard generates the stream. Positions come from the same
// stream as [Checkerboard]'s, so for a given Seed the two place the same
// points; only the labels differ.
func RotatingCheckerboard(cfg RotatingCheckerboardConfig) (Stream, error) {
	if err := cfg.Validate(); err != nil {
		return Stream{}, err
	}
	side := float64(cfg.Cells) * cfg.CellSize
	centre := float64(side / 2)
	shifts := evenShifts(cfg.N, cfg.Shifts)
	var names []string
	if cfg.Shifts == 0 {
		names = []string{"rotation=0.." + strconv.FormatFloat(cfg.Rotation, 'g', -1, 64)}
	} else {
		for k := 0; k <= cfg.Shifts; k++ {
			names = append(names, "angle="+strconv.FormatFloat(stepAngle(cfg.Rotation, k, cfg.Shifts), 'g', -1, 64))
		}
	}
	points := newSource(cfg.Seed, streamCheckPoints)
	xs := make([]float64, 2*cfg.N)
	pts := make([]Point, cfg.N)
	seg := 0
	sin, cos := sincosDeg(0)
	for i := range pts {
		if cfg.Shifts == 0 {
			if cfg.N > 1 {
				sin, cos = sincosDeg(stepAngle(cfg.Rotation, i, cfg.N-1))
			}
		} else if seg < len(shifts) && int64(i) == shifts[seg] {
			seg++
			sin, cos = sincosDeg(stepAngle(cfg.Rotation, seg, cfg.Shifts))
		}
		x := xs[2*i : 2*i+2 : 2*i+2]
		x[0] = points.Float64() * side
		x[1] = points.Float64() * side
		pts[i] = Point{X: x, Y: rotatedLabel(x[0]-centre, x[1]-centre, sin, cos, centre, cfg.CellSize), Segment: seg}
	}
	switchLabels(pts, cfg.Noise, newSource(cfg.Seed, streamCheckFlips))
	return Stream{Points: pts, Shifts: shifts, Segments: segmentInfos(shifts, names)}, nil
}

// stepAngle is total·k/steps, rounded once after the product.
func stepAngle(total float64, k, steps int) float64 {
	return float64(total*float64(k)) / float64(steps)
}

// rotatedLabel is the label of the point at (dx, dy) from the centre of a
// pattern turned by the angle whose sine and cosine are given: the point
// is turned back by that angle into the pattern's own coordinates, where
// cells are aligned with the axes and the board starts at the origin.
// Cells are not clamped to the board: corners of the turned pattern lie
// outside it.
func rotatedLabel(dx, dy, sin, cos, centre, cellSize float64) int {
	u := centre + float64(dx*cos) + float64(dy*sin)
	v := centre - float64(dx*sin) + float64(dy*cos)
	cu := int64(math.Floor(u / cellSize))
	cv := int64(math.Floor(v / cellSize))
	if (cu+cv)&1 == 0 {
		return 1
	}
	return -1
}
