package synth

import (
	"math"

	"github.com/streamlearner/streamlearner/learners/rng"
)

// Stream selectors passed as the second PCG seed word. Each data set and
// each purpose (placing points, choosing label flips) gets its own stream,
// so that changing Noise never moves a point and the two data sets never
// share draws for the same Seed.
const (
	streamGaussPoints = 0x6761757373707473 // "gausspts"
	streamGaussFlips  = 0x67617573666c6970 // "gausflip"
	streamCheckPoints = 0x636865636b707473 // "checkpts"
	streamCheckFlips  = 0x636865636b666c70 // "checkflp"

	// The drifting Gauss set and the rotating checkerboard reuse their
	// stationary sets' streams, so that without drift they place the same
	// points; gradual Gauss drifts pick concepts from a stream of their own.
	streamGaussConcept = 0x676175736370636e // "gauscpcn"

	streamSEAPoints = 0x736561706f696e74 // "seapoint"
	streamSEAFlips  = 0x736561666c697073 // "seaflips"
	streamHypPoints = 0x687970706f696e74 // "hyppoint"
	streamHypDrift  = 0x6879706472696674 // "hypdrift"
	streamHypFlips  = 0x687970666c697073 // "hypflips"
)

// source is the generator every draw comes from.
type source = *rng.Source

func newSource(seed, stream uint64) source { return rng.New(seed, stream) }

// normalPair returns two independent standard normal deviates by
// Marsaglia's polar method, chosen over Box–Muller because it needs no sine
// or cosine, only a square root (correctly rounded everywhere) and log.
func normalPair(src source) (float64, float64) {
	for {
		// 2*uniform is exact, so the subtraction is the only rounding.
		u := float64(2*src.Float64()) - 1
		v := float64(2*src.Float64()) - 1
		s := float64(u*u) + float64(v*v)
		if s > 0 && s < 1 {
			f := math.Sqrt(float64(-2*logPos(s)) / s)
			return float64(u * f), float64(v * f)
		}
	}
}

// logPos returns the natural logarithm of a positive finite x. It is the
// FreeBSD/fdlibm algorithm that Go's portable math.log uses, copied here
// because math.Log is assembly on some architectures (amd64, s390x), so its
// last bit may differ between machines (and on amd64 it is even wrong for
// subnormal inputs, golang/go#56600; normalPair never passes one, as
// s >= 2^-104). Every product is wrapped in an
// explicit conversion, which the Go specification says prevents fusing it
// into a multiply-add; the result is therefore the same everywhere and
// within one ulp of the true logarithm.
func logPos(x float64) float64 {
	const (
		ln2Hi = 6.93147180369123816490e-01 // 3fe62e42 fee00000
		ln2Lo = 1.90821492927058770002e-10 // 3dea39ef 35793c76
		l1    = 6.666666666666735130e-01   // 3FE55555 55555593
		l2    = 3.999999999940941908e-01   // 3FD99999 9997FA04
		l3    = 2.857142874366239149e-01   // 3FD24924 94229359
		l4    = 2.222219843214978396e-01   // 3FCC71C5 1D8E78AF
		l5    = 1.818357216161805012e-01   // 3FC74664 96CB03DE
		l6    = 1.531383769920937332e-01   // 3FC39A09 D078C69F
		l7    = 1.479819860511658591e-01   // 3FC2F112 DF3E5244
	)

	// Reduce x to f1 * 2^k with f1 in [sqrt(2)/2, sqrt(2)).
	f1, ki := math.Frexp(x)
	if f1 < math.Sqrt2/2 {
		f1 *= 2
		ki--
	}
	f := f1 - 1
	k := float64(ki)

	s := f / (2 + f)
	s2 := float64(s * s)
	s4 := float64(s2 * s2)
	t1 := float64(s2 * (l1 + float64(s4*(l3+float64(s4*(l5+float64(s4*l7)))))))
	t2 := float64(s4 * (l2 + float64(s4*(l4+float64(s4*l6)))))
	r := t1 + t2
	hfsq := float64(0.5 * f * f)
	return float64(k*ln2Hi) - ((hfsq - (float64(s*(hfsq+r)) + float64(k*ln2Lo))) - f)
}
