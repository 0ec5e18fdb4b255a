package codec

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// randomValue draws a finite non-zero value from the shapes real data and
// awkward corners take: small integers, short decimals, pixel intensities,
// arbitrary bit patterns and subnormals.
func randomValue(r *rand.Rand) float64 {
	for {
		var v float64
		switch r.IntN(6) {
		case 0:
			v = float64(r.IntN(21) - 10)
		case 1:
			v = float64(r.IntN(2_000_001)-1_000_000) / 1000
		case 2:
			v = float64(r.IntN(256)) / 255
		case 3:
			v = math.Float64frombits(r.Uint64())
		case 4:
			v = math.Float64frombits(r.Uint64() & (1<<52 - 1)) // subnormal
		default:
			v = r.NormFloat64() * math.Pow(10, float64(r.IntN(41)-20))
		}
		if v != 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
			return v
		}
	}
}

func randomVector(r *rand.Rand, maxIndex uint32) sparse.Vector {
	n := r.IntN(40)
	if r.IntN(10) == 0 {
		n = 0
	}
	seen := map[uint32]bool{}
	var v sparse.Vector
	for len(v.Idx) < n {
		var i uint32
		switch r.IntN(3) {
		case 0:
			i = uint32(r.IntN(130))
		case 1:
			i = uint32(r.Int64N(int64(maxIndex) + 1))
		default:
			i = maxIndex - uint32(r.IntN(3))
		}
		if !seen[i] {
			seen[i] = true
			v.Idx = append(v.Idx, i)
		}
	}
	slices.Sort(v.Idx)
	for range v.Idx {
		v.Val = append(v.Val, randomValue(r))
	}
	return v
}

func randomNumericLabel(r *rand.Rand) string {
	switch r.IntN(4) {
	case 0:
		return []string{"1", "-1", "0"}[r.IntN(3)]
	case 1:
		return formatLabel(float64(r.IntN(100)))
	default:
		return formatLabel(randomValue(r))
	}
}

func randomLabel(r *rand.Rand) string {
	switch r.IntN(6) {
	case 0:
		return ""
	case 1:
		return []string{"true", "false"}[r.IntN(2)]
	case 2:
		return []string{"cat", "1.0", "-0", "NaN", "a\"b\\c", "\x00\x1f\x7f", "é😀\u2028", " padded "}[r.IntN(8)]
	case 3:
		var sb strings.Builder
		for range 1 + r.IntN(12) {
			switch r.IntN(3) {
			case 0:
				sb.WriteByte(byte(r.IntN(0x80)))
			case 1:
				sb.WriteRune(rune(0x80 + r.IntN(0xD800-0x80)))
			default:
				sb.WriteRune(rune(0xE000 + r.IntN(0x110000-0xE000)))
			}
		}
		return sb.String()
	default:
		return randomNumericLabel(r)
	}
}

func TestRoundTripJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	lim := Limits{MaxIndex: math.MaxUint32, AllowEmpty: true, MaxAbsValue: math.MaxFloat64}
	for range 5000 {
		ex := Example{X: randomVector(r, lim.MaxIndex), Label: randomLabel(r)}
		b := AppendJSON(nil, ex)
		for _, decode := range []func([]byte, Limits) (Example, error){Decode, DecodeJSON} {
			got, err := decode(b, lim)
			if err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if !sameExample(got, ex) {
				t.Fatalf("%s: got %+v, want %+v", b, got, ex)
			}
		}
	}
}

func TestRoundTripLIBSVM(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	lim := Limits{MaxIndex: math.MaxUint32, AllowEmpty: true, MaxAbsValue: math.MaxFloat64}
	for range 5000 {
		ex := Example{X: randomVector(r, lim.MaxIndex)}
		if r.IntN(5) > 0 || ex.X.Len() == 0 {
			ex.Label = randomNumericLabel(r)
		}
		b := AppendLIBSVM(nil, ex)
		if r.IntN(2) == 0 {
			b = append(b, "\r\n"...)
		}
		for _, decode := range []func([]byte, Limits) (Example, error){Decode, DecodeLIBSVM} {
			got, err := decode(b, lim)
			if err != nil {
				t.Fatalf("%q: %v", b, err)
			}
			if !sameExample(got, ex) {
				t.Fatalf("%q: got %+v, want %+v", b, got, ex)
			}
		}
	}
}

// TestFastFloat checks the strconv-free path against strconv on the forms it
// claims, where it must agree bit for bit.
func TestFastFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	check := func(s string) {
		got, ok := fastFloat([]byte(s))
		want, err := parseFloatRef(s)
		if ok && (err != nil || math.Float64bits(got) != math.Float64bits(want)) {
			t.Fatalf("fastFloat(%q) = %v, strconv gives %v, %v", s, got, want, err)
		}
	}
	for _, s := range []string{"0", "-0", "1", "+1", ".5", "5.", "0.1", "0.3", "123456789012345", "1234567890.12345", "0.000000000000001", "9007199254740993", "-999999999999999"} {
		check(s)
	}
	for range 200000 {
		digits := 1 + r.IntN(17)
		var sb strings.Builder
		if r.IntN(2) == 0 {
			sb.WriteByte('-')
		}
		dot := r.IntN(digits + 1)
		for k := range digits {
			if k == dot && r.IntN(2) == 0 {
				sb.WriteByte('.')
			}
			sb.WriteByte(byte('0' + r.IntN(10)))
		}
		check(sb.String())
	}
}
