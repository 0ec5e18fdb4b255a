package synth

import (
	"fmt"
	"math"
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

	// Floyd's algorithm picks a uniformly random k-subset of the N indices
	// with exactly k draws, which makes the number of switched labels exact
	// rather than only expected.
	k := int(math.Round(cfg.Noise * float64(cfg.N)))
	flips := newSource(cfg.Seed, streamCheckFlips)
	chosen := make([]bool, cfg.N)
	for j := cfg.N - k; j < cfg.N; j++ {
		t := int(flips.Uint64n(uint64(j) + 1))
		if chosen[t] {
			t = j
		}
		chosen[t] = true
		pts[t].Y = -pts[t].Y
	}
	return pts, nil
}
