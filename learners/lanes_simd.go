//go:build goexperiment.simd && amd64

package learners

import "simd/archsimd"

// useLanes: the CPU has the 8-lane registers mulColsLanes is written for.
// With 4 lanes (AVX2) it measured no faster than the scalar code.
var useLanes = archsimd.X86.AVX512()

// mulColsLanes does mulCols's columns in blocks of 32, then of 8, then
// the last few in a partly filled register, and returns how many it did
// (all of them). Each lane's sum is a Mul then an Add, two roundings, as
// Go's scalar `s += a * x` on amd64 (never a fused multiply-add, which
// would round once and change the bits). The scalar code reads a column's
// entries a row apart, a cache line each: even four columns left to it
// took a tenth of the lanes' time at B = 500.
func mulColsLanes(m []float64, ld int, v, out []float64) int {
	n := len(out)
	i := 0
	for ; i+32 <= n; i += 32 {
		var a0, a1, a2, a3 archsimd.Float64x8
		for j, x := range v {
			r := m[j*ld+i:][:32]
			b := archsimd.BroadcastFloat64x8(x)
			a0 = a0.Add(archsimd.LoadFloat64x8Slice(r[0:]).Mul(b))
			a1 = a1.Add(archsimd.LoadFloat64x8Slice(r[8:]).Mul(b))
			a2 = a2.Add(archsimd.LoadFloat64x8Slice(r[16:]).Mul(b))
			a3 = a3.Add(archsimd.LoadFloat64x8Slice(r[24:]).Mul(b))
		}
		a0.StoreSlice(out[i:])
		a1.StoreSlice(out[i+8:])
		a2.StoreSlice(out[i+16:])
		a3.StoreSlice(out[i+24:])
	}
	for ; i+8 <= n; i += 8 {
		var a0 archsimd.Float64x8
		for j, x := range v {
			a0 = a0.Add(archsimd.LoadFloat64x8Slice(m[j*ld+i:][:8]).Mul(archsimd.BroadcastFloat64x8(x)))
		}
		a0.StoreSlice(out[i:])
	}
	if rest := n - i; rest > 0 {
		var a0 archsimd.Float64x8
		for j, x := range v {
			a0 = a0.Add(archsimd.LoadFloat64x8SlicePart(m[j*ld+i:][:rest]).Mul(archsimd.BroadcastFloat64x8(x)))
		}
		a0.StoreSlicePart(out[i:])
		i = n
	}
	// The compiler does not yet clear the registers' upper halves after
	// AVX-512 code, and the SSE code that follows (math.Exp's assembly,
	// in every RBF kernel row) then ran 30 times slower: 11 % of an
	// eval's samples instead of 0.4 %.
	archsimd.ClearAVXUpperBits()
	return i
}
