package synth

import (
	"fmt"
	"math"
)

// ShiftsSuffix is appended to a generated LIBSVM file's name to name its
// sidecar, a [ShiftsFile] in JSON.
const ShiftsSuffix = ".shifts.json"

// ShiftsFile is the sidecar that tells an evaluation where a generated
// file's concept changed, written as
//
//	{"generator":"sea","n":50000,"shifts":[12500,25000,37500],
//	 "segments":[{"start":0,"concept":"theta=8"},...]}
//
// with the meaning of [Stream]'s fields; shifts is [] when there is none.
type ShiftsFile struct {
	Generator string        `json:"generator"`
	N         int64         `json:"n"`
	Shifts    []int64       `json:"shifts"`
	Segments  []SegmentInfo `json:"segments"`
}

// SegmentInfo describes one concept of a drifting stream.
type SegmentInfo struct {
	// Start is where the concept takes over: the position of its first
	// point after an abrupt shift, the centre of the transition window
	// after a gradual one; 0 for the first concept.
	Start int64 `json:"start"`
	// Concept names the concept's parameters, such as "theta=8".
	Concept string `json:"concept"`
}

// Stream is a generated drifting stream.
//
// Shifts are the official shift positions, those an evaluation should
// measure recovery from: for abrupt drifts they equal Shifts(Points), for
// gradual drifts they are the centres of the transition windows (where
// Shifts(Points) would list every back-and-forth between two concepts).
// Segments[k] describes the concept with Segment k; Segments[k].Start is
// Shifts[k-1] for k ≥ 1. A stream whose only drift is continuous (the
// rotating hyperplane without redraws, the gradually rotating
// checkerboard) has one segment and no shifts.
type Stream struct {
	Points   []Point
	Shifts   []int64
	Segments []SegmentInfo
}

// Shifts returns the positions, in generation order, of the points whose
// Segment differs from their predecessor's. For a stream with abrupt
// shifts these are its shift points; an empty result is a non-nil slice,
// so that it encodes as [] in JSON.
func Shifts(pts []Point) []int64 {
	out := []int64{}
	for i := 1; i < len(pts); i++ {
		if pts[i].Segment != pts[i-1].Segment {
			out = append(out, int64(i))
		}
	}
	return out
}

// evenShifts returns the k positions that cut n points into k+1 segments
// whose lengths differ by at most one: floor(j*n/(k+1)) for j = 1..k.
func evenShifts(n, k int) []int64 {
	out := make([]int64, k)
	for j := range out {
		out[j] = int64(j+1) * int64(n) / int64(k+1)
	}
	return out
}

// segmentInfos pairs shift positions with concept names: names[0] for the
// first segment, names[j] for the one starting at shifts[j-1].
func segmentInfos(shifts []int64, names []string) []SegmentInfo {
	out := make([]SegmentInfo, len(names))
	for j, name := range names {
		out[j].Concept = name
		if j > 0 {
			out[j].Start = shifts[j-1]
		}
	}
	return out
}

// validateShifts checks a count of evenly spaced shifts against n points:
// every segment must hold at least one point.
func validateShifts(set string, n, shifts int) error {
	if shifts < 0 {
		return fmt.Errorf("synth: %s: Shifts must be non-negative, got %d", set, shifts)
	}
	if shifts >= n {
		return fmt.Errorf("synth: %s: %d shifts need more than %d points", set, shifts, n)
	}
	return nil
}

// validateNoise checks a label-flip probability.
func validateNoise(set string, noise float64) error {
	if !(noise >= 0 && noise < 1) { // also rejects NaN
		return fmt.Errorf("synth: %s: Noise must be in [0, 1), got %v", set, noise)
	}
	return nil
}

// gradualConcept decides which concept point i is drawn from when a drift
// from concept k-1 to concept k is centred on shifts[k-1] and spread over
// width points: before the window the old concept, after it the new one,
// and inside it the new one with probability rising linearly from 1/(2w)
// to 1-1/(2w). u is a uniform draw in [0, 1) made for every point, so that
// the choice depends on width only through the threshold.
func gradualConcept(i int64, shifts []int64, width int, u float64) int {
	k := 0
	for k < len(shifts) && i >= shifts[k]-int64(width/2) {
		k++
	}
	// Now every window up to k-1 has started at or before i.
	if k == 0 {
		return 0
	}
	start := shifts[k-1] - int64(width/2)
	if pos := i - start; pos < int64(width) {
		if float64(u*float64(width)) < float64(pos)+0.5 {
			return k
		}
		return k - 1
	}
	return k
}

// validateWidth checks gradual transition windows: they must not overlap
// and must lie inside the stream.
func validateWidth(set string, n, width int, shifts []int64) error {
	if width < 0 {
		return fmt.Errorf("synth: %s: Width must be non-negative, got %d", set, width)
	}
	prevEnd := int64(0)
	for _, c := range shifts {
		start := c - int64(width/2)
		if start < prevEnd {
			return fmt.Errorf("synth: %s: transition windows of %d points overlap (or start before the stream) around position %d", set, width, c)
		}
		prevEnd = start + int64(width)
	}
	if prevEnd > int64(n) {
		return fmt.Errorf("synth: %s: the last transition window of %d points ends after the %d points", set, width, n)
	}
	return nil
}

// sincosDeg returns the sine and cosine of deg degrees, bit for bit the
// same on every platform. The angle is first reduced to [-45°, 45°] plus a
// whole number of quarter turns, which is exact in degrees, so that
// multiples of 90° give exact 0 and ±1 and the polynomial works on a small
// argument.
func sincosDeg(deg float64) (sin, cos float64) {
	q := math.Round(deg / 90)
	r := deg - float64(q*90) // exact for |deg| < 2^46
	s, c := sincosSmall(float64(r * (math.Pi / 180)))
	switch int64(math.Mod(q, 4)+4) % 4 {
	case 0:
		return s, c
	case 1:
		return c, -s
	case 2:
		return -s, -c
	default:
		return -c, s
	}
}

// sincosSmall returns sin and cos of |x| ≤ π/4 with the Cephes polynomials
// that Go's portable math.Sincos uses, every product rounded explicitly so
// that no compiler fuses it into a multiply-add (math.Sincos is not
// protected that way, nor free of assembly on every architecture).
func sincosSmall(x float64) (sin, cos float64) {
	const (
		s0 = 1.58962301576546568060e-10  // 0x3de5d8fd1fd19ccd
		s1 = -2.50507477628578072866e-8  // 0xbe5ae5e5a9291f5d
		s2 = 2.75573136213857245213e-6   // 0x3ec71de3567d48a1
		s3 = -1.98412698295895385996e-4  // 0xbf2a01a019bfdf03
		s4 = 8.33333333332211858878e-3   // 0x3f8111111110f7d0
		s5 = -1.66666666666666307295e-1  // 0xbfc5555555555548
		c0 = -1.13585365213876817300e-11 // 0xbda8fa49a0861a9b
		c1 = 2.08757008419747316778e-9   // 0x3e21ee9d7b4e3f05
		c2 = -2.75573141792967388112e-7  // 0xbe927e4f7eac4bc6
		c3 = 2.48015872888517045348e-5   // 0x3efa01a019c844f5
		c4 = -1.38888888888730564116e-3  // 0xbf56c16c16c14f91
		c5 = 4.16666666666665929218e-2   // 0x3fa555555555554b
	)
	zz := float64(x * x)
	ps, pc := s0, c0
	for _, k := range [...][2]float64{{s1, c1}, {s2, c2}, {s3, c3}, {s4, c4}, {s5, c5}} {
		ps = float64(ps*zz) + k[0]
		pc = float64(pc*zz) + k[1]
	}
	sin = x + float64(float64(x*zz)*ps)
	cos = 1.0 - float64(0.5*zz) + float64(float64(zz*zz)*pc)
	return sin, cos
}
