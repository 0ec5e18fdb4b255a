//go:build amd64 && !purego

package learners

import "golang.org/x/sys/cpu"

// useLanes: the CPU (and the OS, which must save the registers) has the
// AVX-512 the kernels of lanes_amd64.s are written for. With four lanes
// (AVX2) the same kernels measured no faster than the scalar code.
var useLanes = cpu.X86.HasAVX512F

// mulColsLanes does mulCols's columns 32 then 8 at a time in the assembly
// kernels, and the last few in an 8-lane block whose extra lanes are
// dropped, where the matrix has room for them (a gram's rows are padded:
// its stride is a power of two); it returns how many columns it did. Every
// kernel read is checked here first: m[j·ld+i+k] for j < len(v), k below
// the block's width.
func mulColsLanes(m []float64, ld int, v, out []float64) int {
	n, last := len(out), (len(v)-1)*ld
	fits := func(i, w int) bool { return last+i+w <= len(m) }
	i := 0
	for ; i+32 <= n && fits(i, 32); i += 32 {
		cols32(&m[i], ld, v, (*[32]float64)(out[i:i+32]))
	}
	for ; i+8 <= n && fits(i, 8); i += 8 {
		cols8(&m[i], ld, v, (*[8]float64)(out[i:i+8]))
	}
	if i < n && n-i < 8 && fits(i, 8) {
		// The scalar code reads a column's entries a row apart, a cache
		// line each: even four columns left to it took a tenth of the
		// lanes' time at B = 500.
		var t [8]float64
		cols8(&m[i], ld, v, &t)
		copy(out[i:], t[:n-i])
		i = n
	}
	return i
}

// addScaledLanes does addScaled's whole 8-lane blocks in assembly and
// returns how many entries it did; x is as long as y.
func addScaledLanes(y, x []float64, a float64) int {
	n := len(y) &^ 7
	if !useLanes || n == 0 {
		return 0
	}
	addScaled8(y[:n], y[:n], x[:n], a)
	return n
}

// subScaledLanes is addScaledLanes for subScaled; dst and x are as long
// as src.
func subScaledLanes(dst, src, x []float64, a float64) int {
	n := len(src) &^ 7
	if !useLanes || n == 0 {
		return 0
	}
	subScaled8(dst[:n], src[:n], x[:n], a)
	return n
}
