package drift

import (
	"math"
	"testing"
)

// The sequence F F F F T T T T T T with δ = 0.1, λ = 2, worked by hand.
// x̄_t is the mean of the first t rounds; each round adds x − x̄ − δ.
//
// α = 1: rounds 1–4 add −0.1 each (m = −0.4 = M); then
// t=5 +0.7 (x̄ ⅕), t=6 +0.5667 (⅓), t=7 +0.4714 (3/7), t=8 +0.4 (½),
// t=9 +0.3444 (5/9), t=10 +0.3, so m − M is 0.7, 1.2667, 1.7381, 2.1381,
// 2.4825, 2.7825: λ is passed at t = 8, round 7.
//
// α = 0.9: m = −0.1, −0.19, −0.271, −0.3439 = M; then
// m5 = 0.9·m4 + 0.7 = 0.39049, m6 = 0.91811, m7 = 1.29773, m8 = 1.56795,
// m9 = 1.75560: m − M is 0.73439, 1.26201, 1.64163, 1.91185, 2.09950:
// the fading delays the crossing to t = 9, round 8.
func TestPageHinkleyByHand(t *testing.T) {
	seq := []bool{false, false, false, false, true, true, true, true, true, true}
	cases := []struct {
		alpha  float64
		min    int
		stats  []float64 // m − M after rounds 5.. (index 4..)
		detect int
	}{
		{1, 1, []float64{0.7, 1.26667, 1.73810, 2.13810}, 7},
		{0.9, 1, []float64{0.73439, 1.26201, 1.64163, 1.91185, 2.09950}, 8},
		// The crossing at round 7 waits for the 10th round.
		{1, 10, []float64{0.7, 1.26667, 1.73810, 2.13810, 2.48254, 2.78254}, 9},
	}
	for _, c := range cases {
		p := must(NewPageHinkley(PageHinkleyConfig{Delta: 0.1, Lambda: 2, Alpha: c.alpha, MinInstances: c.min}))
		detected := -1
		for i, x := range seq {
			if p.Add(x) {
				detected = i
				break
			}
			if i >= 4 && i-4 < len(c.stats) && math.Abs(p.Statistic()-c.stats[i-4]) > 1e-4 {
				t.Errorf("α=%g round %d: m−M = %.5f, want %.5f", c.alpha, i, p.Statistic(), c.stats[i-4])
			}
			if i < 4 && p.Statistic() != 0 {
				t.Errorf("α=%g round %d: m−M = %g while m only fell", c.alpha, i, p.Statistic())
			}
		}
		if detected != c.detect {
			t.Errorf("α=%g min=%d: detected at round %d, want %d", c.alpha, c.min, detected, c.detect)
		}
		if p.n != 0 || p.Statistic() != 0 {
			t.Errorf("α=%g: not reset after the detection", c.alpha)
		}
	}
}

// A falling mistake rate only pushes m_T down: 0.5 → 0.1 is not a drift.
func TestPageHinkleyIgnoresFalls(t *testing.T) {
	for seed := uint64(1); seed <= jumpSeeds; seed++ {
		det := Run(must(NewPageHinkley(PageHinkleyConfig{})), bernoulli(seed, 10000, []int{2000}, []float64{0.5, 0.1}))
		for _, p := range det {
			if p >= 2000 {
				t.Errorf("seed %d: detection at %d after the rate fell", seed, p)
			}
		}
	}
}

func TestPageHinkleyConfig(t *testing.T) {
	p := must(NewPageHinkley(PageHinkleyConfig{}))
	if c := p.Config(); c != (PageHinkleyConfig{Delta: 0.005, Lambda: 50, Alpha: 0.9999, MinInstances: 30}) {
		t.Errorf("defaults %+v", c)
	}
	for _, c := range []PageHinkleyConfig{
		{Delta: -1}, {Lambda: -1}, {Lambda: math.Inf(1)}, {Delta: math.NaN()},
		{Alpha: 1.01}, {Alpha: -0.5}, {MinInstances: -1},
	} {
		if _, err := NewPageHinkley(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
