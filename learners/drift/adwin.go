package drift

import (
	"fmt"
	"math"
)

// ADWINConfig parameterizes ADWIN. The zero value is the default detector;
// every zero field takes its default.
type ADWINConfig struct {
	// Delta is the confidence δ ∈ (0, 1): a smaller δ cuts less often, on
	// stationary data and after real changes alike. Default 0.002.
	Delta float64
	// Buckets is M, the buckets kept per row of the exponential histogram
	// before the two oldest merge into the next row. Memory and the number
	// of cut points tested grow with M; so does the resolution of the cut.
	// Default 5.
	Buckets int
	// Clock is how many rounds pass between cut tests. A test costs
	// O(M·log n), so testing every round would dominate; the delay this adds
	// to a detection is below Clock rounds. Default 32.
	Clock int
	// MinSubWindow is the fewest rounds each side of a cut must hold: a cut
	// that leaves fewer is not tested, since so short a side says nothing
	// about its mean. Default 5.
	MinSubWindow int
}

// The ADWIN defaults: δ = 0.002, M = 5, a cut test every 32 rounds and
// sub-windows of at least 5 rounds.
const (
	DefaultADWINDelta        = 0.002
	DefaultADWINBuckets      = 5
	DefaultADWINClock        = 32
	DefaultADWINMinSubWindow = 5
)

// Validate rejects a configuration no detector can run with. Zero fields
// are valid: they mean the default.
func (c ADWINConfig) Validate() error {
	if c.Delta != 0 && !(c.Delta > 0 && c.Delta < 1) {
		return fmt.Errorf("adwin: delta=%g is not in (0, 1)", c.Delta)
	}
	// Beyond a thousand buckets a row the histogram stops being a
	// compression and every cut test scans thousands of candidates.
	if c.Buckets < 0 || c.Buckets > 1000 {
		return fmt.Errorf("adwin: buckets=%d is not in [1, 1000]", c.Buckets)
	}
	if err := nonNegative("adwin", "clock", c.Clock); err != nil {
		return err
	}
	return nonNegative("adwin", "min-window", c.MinSubWindow)
}

func (c ADWINConfig) withDefaults() ADWINConfig {
	orDefault(&c.Delta, DefaultADWINDelta)
	orDefault(&c.Buckets, DefaultADWINBuckets)
	orDefault(&c.Clock, DefaultADWINClock)
	orDefault(&c.MinSubWindow, DefaultADWINMinSubWindow)
	return c
}

// bucket summarizes 2^row consecutive rounds: their sum and the sum of
// squared deviations from their own mean, from which merged and split
// variances follow exactly.
type bucket struct {
	total, variance float64
}

// ADWIN is ADWIN2 (Bifet & Gavaldà 2007): a window of recent rounds,
// stored as an exponential histogram, that drops its oldest part whenever
// some split into an older and a newer sub-window shows means that differ
// by more than ε_cut.
type ADWIN struct {
	cfg ADWINConfig
	// rows[i] holds the buckets of 2^i rounds, oldest first; rows with a
	// higher index are older. A row has at most cfg.Buckets buckets between
	// calls; only the last is never empty.
	rows     [][]bucket
	width    int64   // rounds in the window
	total    float64 // their sum
	variance float64 // their sum of squared deviations from the window mean
	time     int64   // rounds seen, for the clock
}

// NewADWIN returns an empty ADWIN detector.
func NewADWIN(cfg ADWINConfig) (*ADWIN, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &ADWIN{cfg: cfg.withDefaults()}, nil
}

// Name is "adwin".
func (a *ADWIN) Name() string { return "adwin" }

// Config is the configuration in use, defaults filled in.
func (a *ADWIN) Config() ADWINConfig { return a.cfg }

// Width is the number of rounds in the current window.
func (a *ADWIN) Width() int64 { return a.width }

// Mean is the mistake rate over the current window; 0 for an empty one.
func (a *ADWIN) Mean() float64 {
	if a.width == 0 {
		return 0
	}
	return a.total / float64(a.width)
}

// Add puts the round into the window and, on every Clock-th round, drops
// the oldest buckets for as long as a cut is found. It reports whether any
// were dropped.
func (a *ADWIN) Add(mistake bool) bool {
	x := 0.0
	if mistake {
		x = 1
	}
	a.insert(x)
	a.time++
	if a.time%int64(a.cfg.Clock) != 0 || a.width < 2*int64(a.cfg.MinSubWindow) {
		return false
	}
	cut := false
	for a.findCut() {
		a.dropOldest()
		cut = true
	}
	return cut
}

// insert adds one value as a new bucket of row 0 and restores the
// histogram's invariant.
func (a *ADWIN) insert(x float64) {
	if a.width > 0 {
		// Welford's update of the sum of squared deviations, in the form
		// for merging a one-element set into the window.
		n := float64(a.width)
		d := x - a.total/n
		a.variance += n * d * d / (n + 1)
	}
	a.width++
	a.total += x
	if len(a.rows) == 0 {
		a.rows = append(a.rows, a.newRow())
	}
	a.rows[0] = append(a.rows[0], bucket{total: x})
	a.compress()
}

func (a *ADWIN) newRow() []bucket { return make([]bucket, 0, a.cfg.Buckets+1) }

// compress merges the two oldest buckets of any row that holds M+1 into
// one bucket of the next row, which becomes that row's newest: everything
// already there is older. Only a row that just received a bucket can
// overflow, so the cascade stops at the first row that does not.
func (a *ADWIN) compress() {
	for i := 0; i < len(a.rows) && len(a.rows[i]) > a.cfg.Buckets; i++ {
		if i+1 == len(a.rows) {
			a.rows = append(a.rows, a.newRow())
		}
		row := a.rows[i]
		b0, b1 := row[0], row[1]
		n := math.Ldexp(1, i) // rounds in each bucket of row i
		d := b0.total/n - b1.total/n
		merged := bucket{
			total:    b0.total + b1.total,
			variance: b0.variance + b1.variance + n*d*d/2,
		}
		a.rows[i] = append(row[:0], row[2:]...)
		a.rows[i+1] = append(a.rows[i+1], merged)
	}
}

// dropOldest removes the oldest bucket and takes it out of the window's
// statistics.
func (a *ADWIN) dropOldest() {
	last := len(a.rows) - 1
	row := a.rows[last]
	b := row[0]
	n1 := math.Ldexp(1, last)
	a.width -= int64(n1)
	a.total -= b.total
	if a.width == 0 {
		a.total, a.variance = 0, 0
	} else {
		// The merge formula run backwards: the window was the union of b
		// and what remains.
		n := float64(a.width)
		d := b.total/n1 - a.total/n
		a.variance -= b.variance + n1*n*d*d/(n1+n)
		if a.variance < 0 {
			// Rounding in long runs of additions and removals.
			a.variance = 0
		}
	}
	a.rows[last] = append(row[:0], row[1:]...)
	// With M = 1 the rows below can be empty too; the oldest row must
	// hold a bucket for the next drop.
	for len(a.rows) > 0 && len(a.rows[len(a.rows)-1]) == 0 {
		a.rows = a.rows[:len(a.rows)-1]
	}
}

// findCut scans every split of the window at a bucket boundary, oldest
// first, and reports whether one passes the cut test.
func (a *ADWIN) findCut() bool {
	n := float64(a.width)
	minLen := float64(a.cfg.MinSubWindow)
	// ln(2/δ') with δ' = δ/ln n, the correction for testing about ln n
	// cuts at once. ln n is held at 1 or more so that the tiny windows a
	// MinSubWindow of 1 allows never get δ' > δ.
	logTerm := math.Log(2 * math.Max(math.Log(n), 1) / a.cfg.Delta)
	varW := math.Max(a.variance/n, 0)
	var n0, u0 float64
	n1, u1 := n, a.total
	for i := len(a.rows) - 1; i >= 0; i-- {
		size := math.Ldexp(1, i)
		for k, b := range a.rows[i] {
			if i == 0 && k == len(a.rows[i])-1 {
				return false // the newest bucket: no newer side remains
			}
			n0 += size
			n1 -= size
			u0 += b.total
			u1 -= b.total
			if n0 < minLen || n1 < minLen {
				continue
			}
			// 1/m is the harmonic-mean term 1/n0 + 1/n1 with each side
			// shortened by the minimum length, as in MOA: a side only
			// just long enough to be tested counts as one round.
			invM := 1/(n0-minLen+1) + 1/(n1-minLen+1)
			eps := math.Sqrt(2*invM*varW*logTerm) + 2.0/3.0*invM*logTerm
			if math.Abs(u0/n0-u1/n1) > eps {
				return true
			}
		}
	}
	return false
}

// buckets is the number of buckets held: the detector's memory.
func (a *ADWIN) buckets() int {
	c := 0
	for _, r := range a.rows {
		c += len(r)
	}
	return c
}
