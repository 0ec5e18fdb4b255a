package synth

import (
	"fmt"
	"math"
	"strconv"
)

// HyperplaneConfig describes the rotating hyperplane of Hulten, Spencer and
// Domingos, "Mining time-changing data streams", KDD 2001, as MOA generates
// it: Dim features uniform on [0, 1); a point is +1 when Σ w_i x_i ≥
// ½ Σ w_i and -1 otherwise; after each point every one of the first
// DriftFeatures weights moves by Mag in its direction s_i = ±1, and that
// direction reverses with probability Reverse. Initial weights are uniform
// on [0, 1) and directions +1. At Shifts evenly spaced positions all
// weights are redrawn, an abrupt change on top of the gradual one. Each
// label is then flipped independently with probability Noise.
//
// There are no implicit defaults: start from [DefaultHyperplane].
type HyperplaneConfig struct {
	// N is the number of points; it must be positive.
	N int
	// Dim is the number of features; it must be positive. Default 10.
	Dim int
	// DriftFeatures is how many weights (the first ones) drift, in
	// [0, Dim]. Default 2.
	DriftFeatures int
	// Mag is how far a drifting weight moves per point; finite and
	// non-negative. Default 0.001.
	Mag float64
	// Reverse is the probability that a drifting weight's direction
	// reverses after a point, in [0, 1]. Default 0.1.
	Reverse float64
	// Shifts is the number of evenly spaced positions at which all weights
	// are redrawn, 0 ≤ Shifts < N. Default 0: the drift is only gradual
	// and the stream has no shift points.
	Shifts int
	// Noise is the label-flip probability, in [0, 1). Default 0.05.
	Noise float64
	// Seed selects the random stream; any value is valid.
	Seed uint64
}

// DefaultHyperplane returns 10000 points with 10 features, 2 of them
// drifting by 0.001 per point with 10% direction reversals, no redraws,
// 5% label noise, seed 0.
func DefaultHyperplane() HyperplaneConfig {
	return HyperplaneConfig{N: 10000, Dim: 10, DriftFeatures: 2, Mag: 0.001, Reverse: 0.1, Noise: 0.05}
}

// Validate reports whether cfg can be generated.
func (cfg HyperplaneConfig) Validate() error {
	if cfg.N <= 0 {
		return fmt.Errorf("synth: hyperplane: N must be positive, got %d", cfg.N)
	}
	if cfg.Dim <= 0 {
		return fmt.Errorf("synth: hyperplane: Dim must be positive, got %d", cfg.Dim)
	}
	if cfg.DriftFeatures < 0 || cfg.DriftFeatures > cfg.Dim {
		return fmt.Errorf("synth: hyperplane: DriftFeatures must be in [0, %d], got %d", cfg.Dim, cfg.DriftFeatures)
	}
	if !(cfg.Mag >= 0) || math.IsInf(cfg.Mag, 0) {
		return fmt.Errorf("synth: hyperplane: Mag must be non-negative and finite, got %v", cfg.Mag)
	}
	if !(cfg.Reverse >= 0 && cfg.Reverse <= 1) {
		return fmt.Errorf("synth: hyperplane: Reverse must be in [0, 1], got %v", cfg.Reverse)
	}
	if err := validateShifts("hyperplane", cfg.N, cfg.Shifts); err != nil {
		return err
	}
	return validateNoise("hyperplane", cfg.Noise)
}

// Hyperplane generates the stream. Point positions, weight moves and label
// flips come from three streams, so the positions do not depend on how the
// weights drift, nor the true labels on Noise.
func Hyperplane(cfg HyperplaneConfig) (Stream, error) {
	return hyperplane(cfg, nil)
}

// hyperplane is Hyperplane with a hook that sees the weights each point is
// labelled with, for tests.
func hyperplane(cfg HyperplaneConfig, observe func(i int, w []float64)) (Stream, error) {
	if err := cfg.Validate(); err != nil {
		return Stream{}, err
	}
	shifts := evenShifts(cfg.N, cfg.Shifts)
	names := make([]string, cfg.Shifts+1)
	for k := range names {
		names[k] = "weights=" + strconv.Itoa(k)
	}
	points := newSource(cfg.Seed, streamHypPoints)
	drift := newSource(cfg.Seed, streamHypDrift)
	flips := newSource(cfg.Seed, streamHypFlips)

	w := make([]float64, cfg.Dim)
	dir := make([]float64, cfg.DriftFeatures)
	for j := range w {
		w[j] = drift.Float64()
	}
	for j := range dir {
		dir[j] = 1
	}
	xs := make([]float64, cfg.Dim*cfg.N)
	pts := make([]Point, cfg.N)
	seg := 0
	for i := range pts {
		if seg < len(shifts) && int64(i) == shifts[seg] {
			seg++
			for j := range w {
				w[j] = drift.Float64()
			}
		}
		if observe != nil {
			observe(i, w)
		}
		x := xs[cfg.Dim*i : cfg.Dim*(i+1) : cfg.Dim*(i+1)]
		var dot, sum float64
		for j := range x {
			x[j] = points.Float64()
			dot += float64(w[j] * x[j])
			sum += w[j]
		}
		y := -1
		if dot >= float64(0.5*sum) {
			y = 1
		}
		if flips.Float64() < cfg.Noise {
			y = -y
		}
		pts[i] = Point{X: x, Y: y, Segment: seg}
		for j := range dir {
			w[j] += float64(dir[j] * cfg.Mag)
			if drift.Float64() < cfg.Reverse {
				dir[j] = -dir[j]
			}
		}
	}
	return Stream{Points: pts, Shifts: shifts, Segments: segmentInfos(shifts, names)}, nil
}
