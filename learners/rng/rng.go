// Package rng is the project's one source of randomness: a seeded PCG
// generator whose output is the same on every machine and Go release, and
// whose state can be saved and restored.
//
// Only PCG's Uint64 stream is specified by math/rand/v2; the algorithms of
// rand.Rand's helpers (IntN, Shuffle, NormFloat64) are not promised to stay
// the same, so this package derives everything from Uint64 itself.
// Learners keep a Source in their checkpointed state; experiments derive
// orders and seeds from one; synthetic data sets draw their points from one.
package rng

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// Source is a seeded generator. It is not safe for concurrent use.
type Source struct{ pcg *rand.PCG }

// New returns the generator for (seed, stream). Different streams with the
// same seed are independent sequences.
func New(seed, stream uint64) *Source { return &Source{rand.NewPCG(seed, stream)} }

// Uint64 returns 64 uniformly random bits.
func (s *Source) Uint64() uint64 { return s.pcg.Uint64() }

// Float64 returns a uniform float64 in [0, 1): a multiple of 2⁻⁵³ made
// from the top 53 bits of one draw, exact on every platform.
func (s *Source) Float64() float64 { return float64(s.pcg.Uint64()>>11) * 0x1p-53 }

// Uint64n returns a uniform integer in [0, n), n > 0, by Lemire's
// multiply-and-reject method, which is unbiased and usually costs one draw.
func (s *Source) Uint64n(n uint64) uint64 {
	if n == 0 {
		panic("rng: Uint64n(0)")
	}
	hi, lo := bits.Mul64(s.pcg.Uint64(), n)
	if lo < n {
		threshold := -n % n // 2⁶⁴ mod n
		for lo < threshold {
			hi, lo = bits.Mul64(s.pcg.Uint64(), n)
		}
	}
	return hi
}

// Intn returns a uniform integer in [0, n); it panics if n ≤ 0.
func (s *Source) Intn(n int) int {
	if n <= 0 {
		panic(fmt.Sprintf("rng: Intn(%d)", n))
	}
	return int(s.Uint64n(uint64(n)))
}

// Perm returns a uniformly random permutation of [0, n) (Fisher–Yates).
func (s *Source) Perm(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := s.Intn(i + 1)
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// MarshalBinary encodes the generator's state.
func (s *Source) MarshalBinary() ([]byte, error) { return s.pcg.MarshalBinary() }

// UnmarshalBinary restores a state written by MarshalBinary.
func (s *Source) UnmarshalBinary(b []byte) error {
	if err := s.pcg.UnmarshalBinary(b); err != nil {
		return fmt.Errorf("rng: restore state: %w", err)
	}
	return nil
}
