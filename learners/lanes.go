package learners

// Vector lanes across rows: mulCols computes several independent running
// sums at once, one per lane, each adding its terms in the same order as a
// plain loop. No sum is split or reassociated, so the results are the
// scalar code's bit for bit; only the number of sums in flight changes.
// With GOEXPERIMENT=simd on amd64 and a CPU with AVX-512, 32 columns go
// through four 8-lane registers at a time (lanes_simd.go); otherwise, and
// for the last columns, scalar code does six at a time. The two paths are
// tested against each other and against the plain sums.

// mulCols sets out[i] = Σ_j m[j·ld+i]·v[j] for i < len(out), summing in
// increasing j: column i of the matrix whose rows start every ld entries
// of m, times v. Reading columns keeps the lanes of a vector register in
// one row's contiguous entries.
func mulCols(m []float64, ld int, v, out []float64) {
	i := 0
	if useLanes && len(v) > 0 {
		i = mulColsLanes(m, ld, v, out)
	}
	mulColsScalar(m, ld, v, out, i)
}

// mulColsScalar does the columns of mulCols from i on, six at a time (then
// one): six additions in flight, and no register spills.
func mulColsScalar(m []float64, ld int, v, out []float64, i int) {
	n := len(out)
	for ; i+5 < n; i += 6 {
		var s0, s1, s2, s3, s4, s5 float64
		for j, x := range v {
			r := m[j*ld+i:][:6]
			s0 += r[0] * x
			s1 += r[1] * x
			s2 += r[2] * x
			s3 += r[3] * x
			s4 += r[4] * x
			s5 += r[5] * x
		}
		out[i], out[i+1], out[i+2], out[i+3], out[i+4], out[i+5] = s0, s1, s2, s3, s4, s5
	}
	for ; i < n; i++ {
		s := 0.0
		for j, x := range v {
			s += m[j*ld+i] * x
		}
		out[i] = s
	}
}
