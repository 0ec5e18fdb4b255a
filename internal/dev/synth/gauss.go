package synth

import (
	"fmt"
	"math"
	"strconv"
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
	// The stationary set is the drifting one without drift: one loop
	// serves both, and TestGolden pins that nothing moved.
	s, err := GaussDrift(GaussDriftConfig{N: cfg.N, Noise: cfg.Noise, Seed: cfg.Seed})
	return s.Points, err
}

// GaussDriftConfig describes the two-Gaussian set of [GaussConfig] with
// concept drift: at each of Shifts evenly spaced positions both class means
// rotate about the origin by Angle degrees, so that concept k has class +1
// centred on R(k·Angle)(1, 1) and class -1 on the opposite point. The
// variances stay 0.2 along the first axis and 2 along the second.
//
// With Width 0 the change is abrupt. With Width w > 0 it is gradual: over
// the w points centred on a shift position the probability of drawing a
// point from the new concept rises linearly from 0 to 1.
type GaussDriftConfig struct {
	// N is the number of points; it must be positive.
	N int
	// Noise is the label-flip probability, in [0, 1).
	Noise float64
	// Seed selects the random stream; any value is valid.
	Seed uint64
	// Shifts is the number of concept changes, 0 ≤ Shifts < N, at
	// floor(j·N/(Shifts+1)) for j = 1..Shifts.
	Shifts int
	// Angle is the rotation at each shift, in degrees; finite. The gen
	// command's default is 90.
	Angle float64
	// Width is the length of each gradual transition window; 0 makes
	// shifts abrupt. Windows must not overlap nor reach beyond the stream.
	Width int
}

// Validate reports whether cfg can be generated.
func (cfg GaussDriftConfig) Validate() error {
	if err := (GaussConfig{N: cfg.N, Noise: cfg.Noise}).Validate(); err != nil {
		return err
	}
	if err := validateShifts("gauss", cfg.N, cfg.Shifts); err != nil {
		return err
	}
	if math.IsNaN(cfg.Angle) || math.IsInf(cfg.Angle, 0) {
		return fmt.Errorf("synth: gauss: Angle must be finite, got %v", cfg.Angle)
	}
	return validateWidth("gauss", cfg.N, cfg.Width, evenShifts(cfg.N, cfg.Shifts))
}

// GaussDrift generates the drifting stream. It draws classes, offsets and
// flips exactly as [Gauss] does, the concept choices of gradual drifts
// coming from a stream of their own, so with Shifts 0 it returns Gauss's
// points bit for bit, and the rotation only moves the centres.
//
// Stream.Shifts are the shift positions (the window centres when Width >
// 0); a point's Segment is the concept it was drawn from.
func GaussDrift(cfg GaussDriftConfig) (Stream, error) {
	if err := cfg.Validate(); err != nil {
		return Stream{}, err
	}
	shifts := evenShifts(cfg.N, cfg.Shifts)
	names := make([]string, cfg.Shifts+1)
	mx := make([]float64, cfg.Shifts+1)
	my := make([]float64, cfg.Shifts+1)
	for k := range names {
		deg := float64(float64(k) * cfg.Angle)
		names[k] = "angle=" + strconv.FormatFloat(deg, 'g', -1, 64)
		s, c := sincosDeg(deg)
		mx[k], my[k] = c-s, s+c // R(deg)·(1, 1)
	}
	var (
		sdX = math.Sqrt(0.2)
		sdY = math.Sqrt(2)
	)
	points := newSource(cfg.Seed, streamGaussPoints)
	flips := newSource(cfg.Seed, streamGaussFlips)
	concepts := newSource(cfg.Seed, streamGaussConcept)

	// One backing array keeps the data compact; the capacity limits stop
	// an append to one point from overwriting the next.
	xs := make([]float64, 2*cfg.N)
	pts := make([]Point, cfg.N)
	for i := range pts {
		y, sign := 1, 1.0
		if points.Uint64()>>63 == 1 {
			y, sign = -1, -1.0
		}
		z1, z2 := normalPair(points)
		k := gradualConcept(int64(i), shifts, cfg.Width, concepts.Float64())
		x := xs[2*i : 2*i+2 : 2*i+2]
		x[0] = float64(sign*mx[k]) + float64(sdX*z1)
		x[1] = float64(sign*my[k]) + float64(sdY*z2)
		// A flip draw is made for every point, whatever Noise is, so that
		// which points flip depends on Noise only through the threshold.
		if flips.Float64() < cfg.Noise {
			y = -y
		}
		pts[i] = Point{X: x, Y: y, Segment: k}
	}
	return Stream{Points: pts, Shifts: shifts, Segments: segmentInfos(shifts, names)}, nil
}
