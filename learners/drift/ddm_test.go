package drift

import (
	"math"
	"testing"
)

// p_i is the mistake fraction so far and s_i = √(p_i(1−p_i)/i):
// after F: 0, 0; F T: ½, √(¼/2); F T F: ⅓, √(2/27); F T F F: ¼, √(3/64).
func TestDDMPAndSByHand(t *testing.T) {
	d := must(NewDDM(DDMConfig{}))
	want := []struct{ p, s float64 }{
		{0, 0}, {0.5, math.Sqrt(0.125)}, {1.0 / 3, math.Sqrt(2.0 / 27)}, {0.25, math.Sqrt(3.0 / 64)},
	}
	for i, x := range []bool{false, true, false, false} {
		d.Add(x)
		if math.Abs(d.p-want[i].p) > 1e-15 || math.Abs(d.s-want[i].s) > 1e-15 {
			t.Errorf("i=%d: p %g s %g, want %g %g", i+1, d.p, d.s, want[i].p, want[i].s)
		}
	}
}

// With MinInstances = 4, worked by hand (p+s to 4 places):
//
//	i  x  p      s      p+s     min (p_min, s_min)   warn > / drift >
//	4  F  .2500  .2165  .4665   set (.25, .2165)     .6830 / .8995
//	5  F  .2000  .1789  .3789   set (.20, .1789)     .5578 / .7367
//	6  T  .3333  .1925  .5258   —                    no
//	7  T  .4286  .1870  .6156   —                    warning
//	8  T  .5000  .1768  .6768   —                    warning
//	9  T  .5556  .1656  .7212   —                    warning
//	10 T  .6000  .1549  .7549   —                    drift
func TestDDMWarningAndDriftByHand(t *testing.T) {
	d := must(NewDDM(DDMConfig{MinInstances: 4}))
	seq := []bool{false, true, false, false, false, true, true, true, true, true}
	for i, x := range seq {
		drift := d.Add(x)
		wantWarn, wantDrift := i >= 6 && i <= 8, i == 9
		if drift != wantDrift || d.InWarning() != wantWarn {
			t.Errorf("round %d: drift %v warning %v, want %v %v (p %.4f s %.4f)", i, drift, d.InWarning(), wantDrift, wantWarn, d.p, d.s)
		}
	}
	if d.n != 0 || d.errors != 0 || !math.IsInf(d.psMin, 1) {
		t.Errorf("not reset after the drift: %+v", d)
	}
}

// On a clean jump DDM passes through the warning zone first. The zone is
// s_min wide in p + s; with the minimum set after hundreds of rounds at
// 0.1 (s_min ≥ √(0.09/2000) ≈ 0.0067) and one round moving p by at most
// 1/i ≤ 1/2000, crossing it takes over 10 rounds: at least 5 are required.
func TestDDMWarningPrecedesDrift(t *testing.T) {
	for seed := uint64(1); seed <= jumpSeeds; seed++ {
		d := must(NewDDM(DDMConfig{}))
		s := bernoulli(seed, 4000, []int{2000}, []float64{0.1, 0.5})
		warned := 0
		for i, x := range s {
			drift := d.Add(x)
			if i < 2000 {
				continue
			}
			if drift {
				if warned < 5 {
					t.Errorf("seed %d: drift at %d after %d warning rounds", seed, i, warned)
				}
				break
			}
			if d.InWarning() {
				warned++
			} else {
				warned = 0
			}
		}
	}
}

func TestDDMConfig(t *testing.T) {
	d := must(NewDDM(DDMConfig{}))
	if c := d.Config(); c != (DDMConfig{MinInstances: 30, WarningLevel: 2, DriftLevel: 3}) {
		t.Errorf("defaults %+v", c)
	}
	for _, c := range []DDMConfig{
		{MinInstances: -1}, {WarningLevel: -2}, {DriftLevel: math.Inf(1)}, {WarningLevel: math.NaN()},
		{WarningLevel: 3}, {WarningLevel: 4, DriftLevel: 3.5}, {DriftLevel: 1.5},
	} {
		if _, err := NewDDM(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
