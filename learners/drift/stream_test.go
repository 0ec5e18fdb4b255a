package drift

import (
	"fmt"
	"testing"

	"github.com/streamlearner/streamlearner/learners/rng"
)

// bernoulli draws n mistakes whose rate is rates[0] before changes[0],
// rates[k] from changes[k-1] on.
func bernoulli(seed uint64, n int, changes []int, rates []float64) []bool {
	if len(rates) != len(changes)+1 {
		panic("bernoulli: one rate per segment")
	}
	r := rng.New(seed, 0xd81f7)
	out := make([]bool, n)
	k := 0
	for i := range out {
		for k < len(changes) && i >= changes[k] {
			k++
		}
		out[i] = r.Float64() < rates[k]
	}
	return out
}

// must unwraps a constructor's result; the tests build only valid
// detectors, so an error is a bug worth a panic.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func mustNew(t testing.TB, spec string) Detector {
	t.Helper()
	d, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const jumpSeeds = 20

// The error rate jumps from 0.1 to 0.5 at round 2000. Each bound is worked
// out from the detector's rule, not read off a run:
//
//   - adwin, 200 rounds: with n₀ ≈ 2000 rounds at 0.1 and n₁ = k at 0.5,
//     σ²_W ≈ 0.1 and ln(2/δ') ≈ 8.9, ε ≈ √(2·0.1·8.9/(k−4)) + 5.9/(k−4),
//     which is 0.36 < 0.4 at k = 44 and 0.20 at k = 100, where the newest
//     side's mean has a standard error of 0.05; the clock adds under 32
//     rounds and the bucket boundaries a few more. Before the change ADWIN
//     is tested 62 times; δ bounds each test's false-cut probability, so
//     20 streams allow 20·62·0.002 ≈ 2.5 false alarms there: at most 3.
//   - ddm, 400 rounds: if the minimum p + s was set after 300 or more
//     rounds at 0.1, s_min ≤ √(0.09/300) ≈ 0.017 and a drift needs p to
//     rise about 3·s_min ≈ 0.05 above p_min; k rounds at 0.5 raise p by
//     0.4k/(2000+k), which is 0.05 at k ≈ 290, and the minimum may lie a
//     little below 0.1.
//   - page-hinkley, 200 rounds: after the change each round adds
//     0.5 − x̄ − δ ≈ 0.37 on average (x̄ rises from 0.1 to 0.12) with a
//     standard deviation of 0.5, so m_T climbs λ = 50 above its minimum in
//     about 135 rounds, ±3.5 standard deviations (√135·0.5 ≈ 6 in m, 16
//     rounds) well inside 200. Before the change m_T is a walk with
//     standard deviation 0.3·√2000 ≈ 13 and negative drift: an excursion
//     of 50 is a 3.7σ event, so no false alarm is allowed there.
func TestDetectsJump(t *testing.T) {
	cases := []struct {
		spec          string
		bound         int64
		maxEarlyTotal int // false alarms before the change, summed over seeds
	}{
		{"adwin", 200, 3},
		{"ddm", 400, -1}, // DDM's early alarms are tested on stationary streams
		{"page-hinkley", 200, 0},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			early, later := 0, 0
			var delays []int64
			for seed := uint64(1); seed <= jumpSeeds; seed++ {
				det := Run(mustNew(t, c.spec), bernoulli(seed, 4000, []int{2000}, []float64{0.1, 0.5}))
				m := Evaluate([]int64{2000}, det, c.bound)
				if m.Missed != 0 {
					t.Errorf("seed %d: change at 2000 not detected within %d rounds; detections %v", seed, c.bound, det)
				}
				for _, p := range det {
					if p < 2000 {
						early++
					} else if p > 2000+m.Delays[0] {
						later++
					}
				}
				delays = append(delays, m.Delays[0])
			}
			if c.maxEarlyTotal >= 0 && early > c.maxEarlyTotal {
				t.Errorf("%d false alarms before the change over %d seeds, want ≤ %d", early, jumpSeeds, c.maxEarlyTotal)
			}
			t.Logf("delays over %d seeds: %v; detections before the change: %d, after the first one: %d", jumpSeeds, delays, early, later)
		})
	}
}

const (
	stationarySeeds  = 10
	stationaryRounds = 100_000
)

// On 100,000 rounds at a constant rate of 0.2 every detection is a false
// alarm. The bounds:
//
//   - adwin: the cut test runs 100,000/32 = 3125 times, each with a
//     false-cut probability of at most δ = 0.002, so on average at most
//     6.25 a stream.
//   - ddm: it has no confidence parameter; it signals when p climbs two
//     s_min above the lowest p + s. The running mean's standardized
//     excursions grow like √(2 ln ln i) (the law of the iterated
//     logarithm), 2.2 at i = 10⁵, so a swing of 2 from a low to a high
//     happens, but slowly: a few a stream. Allowed: 2 on average, 4 in any
//     stream.
//   - page-hinkley: between resets m_T − M_T is a CUSUM whose steps have
//     variance σ² = 0.16 and a drift between −δ and 0 (the fading pulls
//     m_T back towards 0, cancelling −δ after ~1/(1−α) = 10⁴ rounds). A
//     driftless CUSUM takes λ²/σ² ≈ 15,600 rounds on average to reach
//     λ = 50, so at most 6.4 alarms a stream on average; any one stream
//     may see twice that. Without fading (α = 1) the drift stays −δ and
//     the mean run length is (σ²/2δ²)(e^{2δλ/σ²} − 1 − 2δλ/σ²) ≈ 59,600
//     (Siegmund's approximation), 1.7 alarms a stream; allowed twice that
//     on average, and a stream with 6 (Poisson tail 0.4%).
//
// The per-stream bounds for adwin and page-hinkley are twice the mean.
func TestStationaryFalseAlarms(t *testing.T) {
	cases := []struct {
		spec        string
		meanBound   float64
		streamBound int
	}{
		{"adwin", 6.25, 12},
		{"ddm", 2, 4},
		{"page-hinkley", 6.4, 13},
		{"page-hinkley:alpha=1", 2 * 1.7, 6},
	}
	streams := make([][]bool, stationarySeeds)
	for i := range streams {
		streams[i] = bernoulli(uint64(100+i), stationaryRounds, nil, []float64{0.2})
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			total := 0
			var counts []int
			for i, s := range streams {
				n := len(Run(mustNew(t, c.spec), s))
				if n > c.streamBound {
					t.Errorf("stream %d: %d false alarms, want ≤ %d", i, n, c.streamBound)
				}
				total += n
				counts = append(counts, n)
			}
			if mean := float64(total) / float64(len(streams)); mean > c.meanBound {
				t.Errorf("%.2f false alarms a stream on average, want ≤ %g", mean, c.meanBound)
			}
			t.Logf("false alarms per %d-round stream: %v", stationaryRounds, counts)
		})
	}
}

// Several changes in a row, up and down: the detectors that see rises find
// each rise, and Page-Hinkley ignores the fall.
func TestSeveralChanges(t *testing.T) {
	changes := []int{3000, 6000, 9000}
	rates := []float64{0.1, 0.4, 0.1, 0.45}
	for _, spec := range Defaults() {
		for seed := uint64(1); seed <= 5; seed++ {
			det := Run(mustNew(t, spec), bernoulli(seed, 12000, changes, rates))
			m := Evaluate([]int64{3000, 9000}, det, 500)
			if m.Missed != 0 {
				t.Errorf("%s seed %d: delays %v, detections %v", spec, seed, m.Delays, det)
			}
			if spec == Defaults()[2] {
				for _, p := range det {
					if p >= 6000 && p < 9000 {
						t.Errorf("%s seed %d: detection at %d, after the rate fell", spec, seed, p)
					}
				}
			}
		}
	}
}

func ExampleRun() {
	d, _ := New("page-hinkley:lambda=5,min-instances=1")
	mistakes := make([]bool, 40)
	for i := 20; i < 40; i++ {
		mistakes[i] = true
	}
	fmt.Println(Run(d, mistakes))
	// Output: [25]
}
