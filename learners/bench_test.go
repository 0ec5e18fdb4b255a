package learners

import (
	"fmt"
	"math"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// BenchmarkRoundFullBudget measures one predict-then-learn round of each
// budget learner once its budget is full (steady state), on sparse
// 12-feature points: time and allocations per round.
func BenchmarkRoundFullBudget(b *testing.B) {
	xs, ys := stream(21, 20000)
	k := mustKernel(b, "rbf:gamma=0.5")
	for _, spec := range []string{"stoptron", "rbp", "lbp", "forgetron", "cks", "perceptron:max=100", "spa:lambda=0.5,max=100", "pa1:c=1,max=100"} {
		if spec == "stoptron" || spec == "rbp" || spec == "lbp" || spec == "forgetron" || spec == "cks" {
			spec += ":budget=100"
		}
		b.Run(spec, func(b *testing.B) {
			l := mustNew(b, spec, k, 1)
			for i := range 5000 {
				l.Round(xs[i], ys[i])
			}
			if l.Size() != 100 {
				b.Fatal(fmt.Sprintf("budget not full: %d", l.Size()))
			}
			b.ReportAllocs()
			i := 5000
			for b.Loop() {
				l.Round(xs[i], ys[i])
				if i++; i == len(xs) {
					i = 5000
				}
			}
		})
	}
}

// denseSet is B support vectors of d dense features (standard normal
// values) under an RBF kernel, and a query of the same kind.
func denseSet(b testing.TB, n, d int) (*supportSet, query) {
	r := rand.New(rand.NewPCG(5, 6))
	vec := func() sparse.Vector {
		x := make([]float64, d)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		return sparse.FromDense(x)
	}
	s := &supportSet{kern: mustKernel(b, "rbf:gamma=0.01")}
	for i := range n {
		s.add(s.newQuery(vec()), 1, 1, uint64(i))
	}
	if !s.dense {
		b.Fatal("dense vectors did not get the dense mirror")
	}
	return s, s.newQuery(vec())
}

// BenchmarkKernelRowDense is one kernel row on MNIST-sized dense input:
// 784 features, B=500 support vectors, RBF. It reports the rate of the
// B·d multiply-adds (2 flops each) it needs, in GFLOP/s, to set beside
// BenchmarkDotDense.
func BenchmarkKernelRowDense(b *testing.B) {
	const n, d = 500, 784
	s, q := denseSet(b, n, d)
	var row []float64
	cpu := cpuTime()
	for b.Loop() {
		row = s.row(q, row)
	}
	reportFlops(b, 2*n*d, cpu)
}

// reportFlops reports flops per iteration as GFLOP/s of wall-clock time
// and of the process's CPU time since cpu (cpu-GFLOP/s), which on a
// shared machine does not count the time other processes held the core.
func reportFlops(b *testing.B, flops float64, cpu time.Duration) {
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	b.ReportMetric(flops*float64(b.N)/(cpuTime()-cpu).Seconds()/1e9, "cpu-GFLOP/s")
}

// cpuTime returns the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// BenchmarkDotDense is the machine's plain dot product over the same
// B·d = 392,000 entries: two contiguous arrays, four independent
// accumulators (the best scalar code; it reorders the sum, which the
// learners may not). It reports GFLOP/s.
func BenchmarkDotDense(b *testing.B) {
	const size = 500 * 784
	r := rand.New(rand.NewPCG(7, 8))
	x, y := make([]float64, size), make([]float64, size)
	for i := range x {
		x[i], y[i] = r.NormFloat64(), r.NormFloat64()
	}
	sink := 0.0
	cpu := cpuTime()
	for b.Loop() {
		sink += dot4(x, y)
	}
	reportFlops(b, 2*size, cpu)
	if math.IsNaN(sink) {
		b.Fatal("NaN")
	}
}

func dot4(x, y []float64) float64 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+3 < len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// BenchmarkMulInverse is the Projectron's K⁻¹k at B = 100 and 500, on
// the path it takes (vector lanes over K⁻¹'s columns where the build and
// CPU have them, else six rows at a time): GFLOP/s of its B² multiply-adds.
func BenchmarkMulInverse(b *testing.B) {
	for _, n := range []int{100, 500} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, 3))
			g := newGram(0)
			for i := range n {
				row := make([]float64, i)
				for j := range row {
					row[j] = r.NormFloat64()
				}
				g.appendSym(row, 1)
			}
			v, out := make([]float64, n), make([]float64, n)
			for j := range v {
				v[j] = r.NormFloat64()
			}
			cpu := cpuTime()
			for b.Loop() {
				if useLanes {
					mulCols(g.data, g.stride, v, out)
				} else {
					mulRows(&g, v, out)
				}
			}
			reportFlops(b, 2*float64(n*n), cpu)
		})
	}
}

// BenchmarkKernelRowSparse is one kernel row on a9a-shaped input: B=100
// support vectors of 14 binary features out of 123, one per group of
// about nine columns (a9a one-hot encodes its attributes that way), RBF.
// It reports nanoseconds per support vector.
func BenchmarkKernelRowSparse(b *testing.B) {
	const n, groups, width = 100, 14, 9
	r := rand.New(rand.NewPCG(7, 8))
	vec := func() sparse.Vector {
		var v sparse.Vector
		for g := range groups {
			v.Idx = append(v.Idx, uint32(g*width+r.IntN(width)+1))
			v.Val = append(v.Val, 1)
		}
		return v
	}
	s := &supportSet{kern: mustKernel(b, "rbf:gamma=0.01")}
	for i := range n {
		s.add(s.newQuery(vec()), 1, 1, uint64(i))
	}
	if s.dense {
		b.Fatal("a9a-shaped vectors got the dense mirror")
	}
	qs := make([]query, 64)
	for i := range qs {
		qs[i] = s.newQuery(vec())
	}
	var row []float64
	i := 0
	for b.Loop() {
		row = s.row(qs[i%len(qs)], row)
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/sv")
}
