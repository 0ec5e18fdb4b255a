package drift

import (
	"math"
	"slices"
	"testing"
)

// noClock never tests for a cut, so that the histogram can be checked
// against every round inserted.
const noClock = math.MaxInt32

func rowLengths(a *ADWIN) []int {
	out := make([]int, len(a.rows))
	for i, r := range a.rows {
		out[i] = len(r)
	}
	return out
}

// With M = 5, row 0 takes a bucket per round and a row that reaches 6
// buckets hands its two oldest, merged, to the next row. Worked by hand:
// rounds 1–5 fill row 0; round 6 overflows it to 4 + one bucket of 2;
// every second round after that moves one more pair up; round 16
// overflows row 0 into a row 1 of 5, which overflows into row 2.
func TestADWINBucketsByHand(t *testing.T) {
	want := map[int][]int{
		1: {1}, 5: {5}, 6: {4, 1}, 7: {5, 1}, 8: {4, 2}, 11: {5, 3},
		14: {4, 5}, 15: {5, 5}, 16: {4, 4, 1},
	}
	a := must(NewADWIN(ADWINConfig{Clock: noClock}))
	for k := 1; k <= 16; k++ {
		a.Add(true)
		if a.Width() != int64(k) || a.total != float64(k) || a.Mean() != 1 || a.variance != 0 {
			t.Fatalf("after %d ones: width %d total %g mean %g variance %g", k, a.Width(), a.total, a.Mean(), a.variance)
		}
		if w, ok := want[k]; ok {
			if got := rowLengths(a); !slices.Equal(got, w) {
				t.Errorf("after %d ones: buckets per row %v, want %v", k, got, w)
			}
		}
	}
}

// 1,0,1,1,0,0: round 6 merges the first two rounds (1 and 0) into a
// bucket of total 1 and variance (1−½)² + (0−½)² = ½; the window's mean is
// 3/6 and its sum of squared deviations 6·¼ = 1.5.
func TestADWINVarianceByHand(t *testing.T) {
	a := must(NewADWIN(ADWINConfig{Clock: noClock}))
	for _, x := range []bool{true, false, true, true, false, false} {
		a.Add(x)
	}
	if got := rowLengths(a); !slices.Equal(got, []int{4, 1}) {
		t.Fatalf("buckets per row %v, want [4 1]", got)
	}
	if b := a.rows[1][0]; b.total != 1 || b.variance != 0.5 {
		t.Errorf("merged bucket %+v, want total 1 variance 0.5", b)
	}
	if a.Mean() != 0.5 || math.Abs(a.variance-1.5) > 1e-12 {
		t.Errorf("mean %g, sum of squared deviations %g; want 0.5, 1.5", a.Mean(), a.variance)
	}
}

// Every bucket, walked from the oldest, summarizes exactly its 2^row
// rounds: the totals and variances are those of the rounds themselves.
func TestADWINBucketsSummarizeTheirRounds(t *testing.T) {
	s := bernoulli(3, 3000, nil, []float64{0.3})
	a := must(NewADWIN(ADWINConfig{Clock: noClock}))
	for _, x := range s {
		a.Add(x)
	}
	pos := 0
	for i := len(a.rows) - 1; i >= 0; i-- {
		for _, b := range a.rows[i] {
			n := 1 << i
			total, ss := sumSS(s[pos : pos+n])
			if b.total != total || math.Abs(b.variance-ss) > 1e-9 {
				t.Errorf("bucket of rounds %d..%d: %+v, want total %g variance %g", pos, pos+n-1, b, total, ss)
			}
			pos += n
		}
	}
	if pos != len(s) {
		t.Errorf("buckets cover %d rounds, want %d", pos, len(s))
	}
	total, ss := sumSS(s)
	if a.total != total || math.Abs(a.variance-ss) > 1e-6 {
		t.Errorf("window total %g variance %g, want %g %g", a.total, a.variance, total, ss)
	}
}

func sumSS(xs []bool) (total, ss float64) {
	for _, x := range xs {
		if x {
			total++
		}
	}
	mean := total / float64(len(xs))
	for _, x := range xs {
		d := -mean
		if x {
			d = 1 - mean
		}
		ss += d * d
	}
	return total, ss
}

// Through cuts as well: after every round no row holds more than M
// buckets, and the buckets add up to the window.
func TestADWINInvariants(t *testing.T) {
	for _, m := range []int{1, 2, 5} {
		s := bernoulli(4, 20000, []int{5000, 10000, 15000}, []float64{0.1, 0.6, 0.2, 0.7})
		a := must(NewADWIN(ADWINConfig{Buckets: m}))
		for r, x := range s {
			a.Add(x)
			var width int64
			var total float64
			for i, row := range a.rows {
				if len(row) > m || len(row) == 0 && i == len(a.rows)-1 {
					t.Fatalf("M=%d round %d: row %d holds %d buckets", m, r, i, len(row))
				}
				width += int64(len(row)) << i
				for _, b := range row {
					total += b.total
				}
			}
			if width != a.Width() || math.Abs(total-a.total) > 1e-9 || a.variance < 0 {
				t.Fatalf("M=%d round %d: buckets hold %d rounds, total %g; window %d, %g, variance %g", m, r, width, total, a.Width(), a.total, a.variance)
			}
		}
	}
}

// A window of n rounds needs rows up to ⌊log₂ n⌋ with at most M buckets
// each, and at least ⌈log₂(n/M + 1)⌉ rows: M·(2^r − 1) ≥ n.
func TestADWINMemoryIsLogarithmic(t *testing.T) {
	const m = 5
	a := must(NewADWIN(ADWINConfig{}))
	n := 0
	for _, target := range []int{1000, 10_000, 100_000, 1_000_000} {
		for ; n < target; n++ {
			a.Add(false) // a constant stream is never cut
		}
		if a.Width() != int64(n) {
			t.Fatalf("constant stream cut: width %d after %d rounds", a.Width(), n)
		}
		lg := math.Log2(float64(n))
		hi := m * (int(lg) + 1)
		lo := int(math.Ceil(math.Log2(float64(n)/m + 1)))
		if b := a.buckets(); b > hi || b < lo {
			t.Errorf("%d rounds: %d buckets, want %d..%d", n, b, lo, hi)
		}
	}
}

// After the rate jumps, the window sheds the old rounds: right after the
// first cut it is shorter than before, and 4000 rounds on its mean is
// within 4 standard errors of the new rate.
func TestADWINWindowShrinksAfterChange(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		a := must(NewADWIN(ADWINConfig{}))
		s := bernoulli(seed, 6000, []int{2000}, []float64{0.1, 0.5})
		for i, x := range s[:2000] {
			if a.Add(x) {
				t.Fatalf("seed %d: cut at %d, before the change", seed, i)
			}
		}
		before := a.Width()
		cut := false
		for _, x := range s[2000:] {
			if a.Add(x) && !cut {
				cut = true
				if a.Width() >= before {
					t.Errorf("seed %d: first cut left %d rounds of %d", seed, a.Width(), before)
				}
			}
		}
		se := math.Sqrt(0.25 / float64(a.Width()))
		if !cut || math.Abs(a.Mean()-0.5) > 4*se {
			t.Errorf("seed %d: cut %v; window of %d rounds at mean %g, want 0.5 ± %.3f", seed, cut, a.Width(), a.Mean(), 4*se)
		}
	}
}

func TestADWINConfig(t *testing.T) {
	a := must(NewADWIN(ADWINConfig{}))
	if c := a.Config(); c != (ADWINConfig{Delta: 0.002, Buckets: 5, Clock: 32, MinSubWindow: 5}) {
		t.Errorf("defaults %+v", c)
	}
	for _, c := range []ADWINConfig{
		{Delta: 1}, {Delta: -0.1}, {Delta: math.NaN()}, {Delta: 2},
		{Buckets: -1}, {Buckets: 1001}, {Clock: -1}, {MinSubWindow: -3},
	} {
		if _, err := NewADWIN(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
