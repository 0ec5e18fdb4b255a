package synth

import (
	"fmt"
	"math"
	"strconv"
)

// SEAConfig describes the SEA concepts stream of Street and Kim, "A
// streaming ensemble algorithm (SEA) for large-scale classification", KDD
// 2001: three features uniform on [0, 10), of which only the first two
// matter; a point is +1 when x1 + x2 ≤ θ and -1 otherwise, θ taking the
// values of Thresholds in turn over Shifts+1 consecutive segments of equal
// length; then each label is flipped independently with probability Noise.
//
// There are no implicit defaults: start from [DefaultSEA].
type SEAConfig struct {
	// N is the number of points; it must be positive.
	N int
	// Shifts is the number of concept changes, 0 ≤ Shifts < N; the stream
	// is cut into Shifts+1 segments whose lengths differ by at most one.
	// The paper uses 3.
	Shifts int
	// Thresholds are the θ of the concepts, cycled when there are fewer
	// than Shifts+1; at least one, each finite. The paper's are 8, 9, 7
	// and 9.5.
	Thresholds []float64
	// Noise is the label-flip probability, in [0, 1); the paper uses 0.1.
	Noise float64
	// Seed selects the random stream; any value is valid.
	Seed uint64
}

// DefaultSEA returns the paper's settings: 50000 points in four concepts
// θ = 8, 9, 7, 9.5, 10% label noise, seed 0.
func DefaultSEA() SEAConfig {
	return SEAConfig{N: 50000, Shifts: 3, Thresholds: []float64{8, 9, 7, 9.5}, Noise: 0.1}
}

// Validate reports whether cfg can be generated.
func (cfg SEAConfig) Validate() error {
	if cfg.N <= 0 {
		return fmt.Errorf("synth: sea: N must be positive, got %d", cfg.N)
	}
	if err := validateShifts("sea", cfg.N, cfg.Shifts); err != nil {
		return err
	}
	if len(cfg.Thresholds) == 0 {
		return fmt.Errorf("synth: sea: no threshold given")
	}
	for _, t := range cfg.Thresholds {
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return fmt.Errorf("synth: sea: threshold %v is not finite", t)
		}
	}
	return validateNoise("sea", cfg.Noise)
}

// SEA generates the stream. Segment k uses Thresholds[k mod
// len(Thresholds)]. As in [Gauss], positions and flips come from separate
// streams, so Noise 0 with the same Seed gives every point's true label.
func SEA(cfg SEAConfig) (Stream, error) {
	if err := cfg.Validate(); err != nil {
		return Stream{}, err
	}
	shifts := evenShifts(cfg.N, cfg.Shifts)
	names := make([]string, cfg.Shifts+1)
	for k := range names {
		names[k] = "theta=" + strconv.FormatFloat(cfg.Thresholds[k%len(cfg.Thresholds)], 'g', -1, 64)
	}
	points := newSource(cfg.Seed, streamSEAPoints)
	flips := newSource(cfg.Seed, streamSEAFlips)
	xs := make([]float64, 3*cfg.N)
	pts := make([]Point, cfg.N)
	seg := 0
	for i := range pts {
		for seg < len(shifts) && int64(i) >= shifts[seg] {
			seg++
		}
		x := xs[3*i : 3*i+3 : 3*i+3]
		for j := range x {
			x[j] = float64(points.Float64() * 10)
		}
		y := -1
		if x[0]+x[1] <= cfg.Thresholds[seg%len(cfg.Thresholds)] {
			y = 1
		}
		if flips.Float64() < cfg.Noise {
			y = -y
		}
		pts[i] = Point{X: x, Y: y, Segment: seg}
	}
	return Stream{Points: pts, Shifts: shifts, Segments: segmentInfos(shifts, names)}, nil
}
