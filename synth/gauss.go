package synth

import (
	"fmt"
	"math"
)

// GaussConfig describes the Projectron paper's two-Gaussian set: class +1
// is drawn from N((1,1), diag(0.2, 2)) and class -1 from N((-1,-1),
// diag(0.2, 2)), where the diagonal entries are variances; each point's
// class is +1 or -1 with probability 1/2, and each label is then flipped
// independently with probability Noise.
//
// There are no implicit defaults: start from [DefaultGauss] for the paper's
// settings. [GaussConfig.Validate] rejects values out of range.
type GaussConfig struct {
	// N is the number of points; it must be positive.
	N int
	// Noise is the label-flip probability, in [0, 1). Zero means
	// noise-free labels; the paper uses 0.1.
	Noise float64
	// Seed selects the random stream; any value is valid.
	Seed uint64
}

// DefaultGauss returns the settings of the paper: 10000 points, 10% label
// noise, seed 0.
func DefaultGauss() GaussConfig {
	return GaussConfig{N: 10000, Noise: 0.1}
}

// Validate reports whether cfg can be generated.
func (cfg GaussConfig) Validate() error {
	if cfg.N <= 0 {
		return fmt.Errorf("synth: gauss: N must be positive, got %d", cfg.N)
	}
	if !(cfg.Noise >= 0 && cfg.Noise < 1) { // also rejects NaN
		return fmt.Errorf("synth: gauss: Noise must be in [0, 1), got %v", cfg.Noise)
	}
	return nil
}

// Gauss generates cfg.N points of the two-Gaussian set, each with two
// features.
//
// Point i depends only on Seed and on draws made for points 0..i, so a
// shorter run is a prefix of a longer one with the same Seed and Noise; and
// because the flips come from their own stream, generating with Noise 0 and
// the same Seed recovers every point's position and true class.
func Gauss(cfg GaussConfig) ([]Point, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var (
		sdX = math.Sqrt(0.2)
		sdY = math.Sqrt(2)
	)
	points := newSource(cfg.Seed, streamGaussPoints)
	flips := newSource(cfg.Seed, streamGaussFlips)

	// One backing array keeps the data compact; the capacity limits stop
	// an append to one point from overwriting the next.
	xs := make([]float64, 2*cfg.N)
	pts := make([]Point, cfg.N)
	for i := range pts {
		y, mean := 1, 1.0
		if points.Uint64()>>63 == 1 {
			y, mean = -1, -1.0
		}
		z1, z2 := normalPair(points)
		x := xs[2*i : 2*i+2 : 2*i+2]
		x[0] = mean + float64(sdX*z1)
		x[1] = mean + float64(sdY*z2)
		// A flip draw is made for every point, whatever Noise is, so that
		// which points flip depends on Noise only through the threshold.
		if flips.Float64() < cfg.Noise {
			y = -y
		}
		pts[i] = Point{X: x, Y: y}
	}
	return pts, nil
}
