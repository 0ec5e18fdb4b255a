package codec

import (
	"math"
	"strconv"
)

const (
	indexOK = iota
	indexBad
	indexTooLarge
)

// parseIndex reads a feature index: decimal digits only, leading zeros
// allowed. It reports indexTooLarge for any value above max, however many
// digits it has, and never overflows.
func parseIndex(s []byte, max uint32) (uint32, int) {
	if len(s) == 0 {
		return 0, indexBad
	}
	var v uint64
	big := false
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, indexBad
		}
		if !big {
			// v <= max < 2^32 here, so this cannot overflow.
			v = v*10 + uint64(c-'0')
			big = v > uint64(max)
		}
	}
	if big {
		return 0, indexTooLarge
	}
	return uint32(v), indexOK
}

// pow10 holds the powers of ten that float64 represents exactly and that
// fastFloat may divide by.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// fastFloat converts the common short decimals, [+-]?digits[.digits] with
// at most 15 digits in all, without strconv: the digits then form an
// integer below 2^53 and the power of ten is exact, so one division rounds
// correctly and gives what strconv.ParseFloat gives. ok is false for any
// other form; the caller then falls back to strconv.
func fastFloat(b []byte) (v float64, ok bool) {
	v, end, ok := fastDecimal(b, 0)
	return v, ok && end == len(b)
}

// fastDecimal is fastFloat on the longest prefix of b[i:] of that form: it
// stops at the first byte that cannot continue the number and returns
// where, so that a tokenizer can convert a value in the pass that finds its
// end. ok is false when the prefix has no digit or too many.
func fastDecimal(b []byte, i int) (v float64, end int, ok bool) {
	neg := false
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	var m uint64
	nd, frac := 0, -1
	for ; i < len(b); i++ {
		c := b[i]
		if d := c - '0'; d <= 9 {
			m = m*10 + uint64(d)
			nd++
			if frac >= 0 {
				frac++
			}
		} else if c == '.' && frac < 0 {
			frac = 0
		} else {
			break
		}
	}
	if nd == 0 || nd > 15 {
		return 0, i, false
	}
	v = float64(m)
	if frac > 0 {
		v /= pow10[frac]
	}
	if neg {
		v = -v
	}
	return v, i, true
}

// parseNumber converts a number that already matched the JSON grammar. ok is
// false when it overflows float64; an underflow gives zero (or a
// subnormal), as in encoding/json.
func parseNumber(b []byte) (float64, bool) {
	if v, ok := fastFloat(b); ok {
		return v, true
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

// Outcomes of parseLIBSVMValue.
const (
	valueOK = iota
	valueSyntax
	valueNonFinite
)

// parseLIBSVMValue converts a LIBSVM feature value: strconv.ParseFloat
// syntax without Go's "_" digit separators, which no data file means.
func parseLIBSVMValue(b []byte) (float64, int) {
	if v, ok := fastFloat(b); ok {
		return v, valueOK
	}
	for _, c := range b {
		if c == '_' {
			return 0, valueSyntax
		}
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		if e, ok := err.(*strconv.NumError); ok && e.Err == strconv.ErrRange {
			return 0, valueNonFinite
		}
		return 0, valueSyntax
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, valueNonFinite
	}
	return v, valueOK
}

// numericLabel returns the canonical token of a label that is a finite
// number (strconv.ParseFloat syntax, without "_" separators), and false for
// anything else. The usual binary labels skip strconv and allocate nothing.
func numericLabel[T string | []byte](tok T) (string, bool) {
	switch string(tok) {
	case "1", "+1", "1.0":
		return "1", true
	case "-1", "-1.0":
		return "-1", true
	case "0", "+0", "-0", "0.0":
		return "0", true
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] == '_' {
			return "", false
		}
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return "", false
	}
	return formatLabel(v), true
}

// formatLabel writes a numeric label canonically. -0 is written "0": as a
// class it is the same as 0.
func formatLabel(v float64) string {
	switch v {
	case 0:
		return "0"
	case 1:
		return "1"
	case -1:
		return "-1"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
