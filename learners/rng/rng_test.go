package rng

import (
	"math"
	"slices"
	"testing"
)

func TestIntnIsUniform(t *testing.T) {
	s := New(42, 1)
	const n, draws = 7, 70000
	var counts [n]int
	for range draws {
		counts[s.Intn(n)]++
	}
	chi2 := 0.0
	for _, c := range counts {
		d := float64(c) - draws/n
		chi2 += d * d / (draws / n)
	}
	// 6 degrees of freedom: P(χ² > 22.5) ≈ 0.001.
	if chi2 > 22.5 {
		t.Fatalf("χ² = %.1f over counts %v", chi2, counts)
	}
}

func TestPermIsAPermutationAndSeeded(t *testing.T) {
	a, b, c := New(1, 2).Perm(1000), New(1, 2).Perm(1000), New(2, 2).Perm(1000)
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Fatal("Perm is not a function of the seed")
	}
	sorted := slices.Sorted(slices.Values(a))
	for i, v := range sorted {
		if v != i {
			t.Fatalf("not a permutation: %d at %d", v, i)
		}
	}
	// Every position should receive element 0 about equally often.
	counts := make([]int, 5)
	for seed := range uint64(50000) {
		counts[slices.Index(New(seed, 0).Perm(5), 0)]++
	}
	for i, c := range counts {
		if c < 9500 || c > 10500 {
			t.Fatalf("element 0 at position %d in %d of 50000 perms", i, c)
		}
	}
}

func TestStateRoundTrip(t *testing.T) {
	s := New(9, 9)
	s.Uint64()
	b, _ := s.MarshalBinary()
	want := s.Uint64()
	r := New(0, 0)
	if err := r.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if got := r.Uint64(); got != want {
		t.Fatalf("restored generator drew %d, want %d", got, want)
	}
	if err := r.UnmarshalBinary([]byte("junk")); err == nil {
		t.Fatal("junk state accepted")
	}
}

func TestGolden(t *testing.T) {
	// Pins the stream so that a change of algorithm cannot pass unnoticed:
	// orders, RBP removals and synthetic data all depend on it.
	s := New(1, 1)
	got := []int{s.Intn(10), s.Intn(10), s.Intn(1000), s.Intn(1 << 40)}
	if want := []int{9, 1, 863, 1003853759541}; !slices.Equal(got, want) {
		t.Fatalf("stream changed: %v, want %v", got, want)
	}
}

func TestUint64nRange(t *testing.T) {
	s := New(4, 5)
	for _, n := range []uint64{1, 2, 3, 7, 1 << 40, math.MaxUint64} {
		for range 1000 {
			if v := s.Uint64n(n); v >= n {
				t.Fatalf("Uint64n(%d) = %d", n, v)
			}
		}
	}
}

func TestFloat64Range(t *testing.T) {
	s := New(8, 9)
	sum := 0.0
	for range 100000 {
		u := s.Float64()
		if !(u >= 0 && u < 1) {
			t.Fatalf("Float64() = %v", u)
		}
		sum += u
	}
	if mean := sum / 100000; math.Abs(mean-0.5) > 5*math.Sqrt(1.0/12/100000) {
		t.Fatalf("mean %v", mean)
	}
}
