package learners

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// rng is a learner's own random generator. Its state is part of the
// learner's encoded state, so a restored learner draws the same numbers as
// one that never stopped. Only PCG's Uint64 is used: math/rand/v2 promises
// that stream, not the algorithms of its helper methods.
type rng struct{ src *rand.PCG }

func newRNG(seed uint64) rng { return rng{rand.NewPCG(seed, 0xda3e39cb94b95bdb)} }

// intn returns a uniform integer in [0, n) by Lemire's multiply-and-reject
// method, which has no modulo bias.
func (r rng) intn(n int) int {
	if n <= 0 {
		panic(fmt.Sprintf("learners: intn(%d)", n))
	}
	un := uint64(n)
	hi, lo := bits.Mul64(r.src.Uint64(), un)
	if lo < un {
		thresh := -un % un
		for lo < thresh {
			hi, lo = bits.Mul64(r.src.Uint64(), un)
		}
	}
	return int(hi)
}

func (r rng) marshal() []byte {
	b, err := r.src.MarshalBinary()
	if err != nil { // PCG's MarshalBinary cannot fail
		panic(err)
	}
	return b
}

func (r rng) unmarshal(b []byte) error {
	if err := r.src.UnmarshalBinary(b); err != nil {
		return fmt.Errorf("random generator state: %w", err)
	}
	return nil
}
