// Package selection keeps the champion among a partition's learners: every
// learner predicts, then learns, every labeled record; the service emits
// the champion's prediction; the champion is the learner with the lowest
// mistake rate over the last Window labeled records, and a challenger
// replaces it only when it beats it by more than Margin (hysteresis, so
// that two learners of nearly equal rates do not trade places on every
// record).
//
// The rules up front:
//   - The first learner (the one named by --learner) is the champion until
//     the window is full: before that the rates rest on too few records
//     to choose by.
//   - After each labeled record, the best learner is the one with the
//     fewest mistakes in the window, ties to the first listed. It becomes
//     champion when its rate is lower than the champion's by more than
//     Margin; a tie with the champion never switches.
//   - With a drift detector, the detector watches the champion's mistakes.
//     When it fires, the window is emptied — the records before the drift
//     are stale for every learner — and as soon as it holds
//     Window/10 records (at least 30, at most Window) the best learner over
//     them becomes champion without the margin (ties keep the champion);
//     then the ordinary rule resumes once the window is full again.
//   - A Selector is pure and deterministic: the same mistakes in the same
//     order give the same champions; its state (window, counts, champion,
//     detector) is encoded with MarshalBinary and continues exactly.
//   - At most 64 learners (a round's mistakes are one bit each).
package selection

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/streamlearner/streamlearner/learners/drift"
)

// MaxLearners is the most learners one Selector compares.
const MaxLearners = 64

// Config configures a Selector; zero values take the documented defaults.
type Config struct {
	// Window is the number of latest labeled records the mistake rates
	// are measured over; default 2000.
	Window int `json:"window"`
	// Margin is how much lower (absolute, in mistake rate) a challenger's
	// rate must be to replace the champion; default 0.01 (zero takes the
	// default: for no hysteresis give a tiny margin such as 1e-9, below
	// one record in any window). Negative is an error.
	Margin float64 `json:"margin"`
	// Detector, if set, is a drift detector spec (see drift.New: adwin,
	// ddm, page-hinkley with parameters) that watches the champion's
	// mistakes and forces a re-selection when it fires.
	Detector string `json:"detector,omitempty"`
}

func (c Config) withDefaults() (Config, error) {
	if c.Window == 0 {
		c.Window = 2000
	}
	if c.Margin == 0 {
		c.Margin = 0.01
	}
	switch {
	case c.Window < 1:
		return c, fmt.Errorf("selection window %d: want at least 1", c.Window)
	case !(c.Margin >= 0 && c.Margin < 1):
		return c, fmt.Errorf("selection margin %v: want 0 ≤ margin < 1", c.Margin)
	}
	return c, nil
}

// Selector chooses the champion of n learners. Not safe for concurrent use.
type Selector struct {
	cfg      Config
	n        int
	ring     []uint64 // one word per record of the window: bit i = learner i erred
	next     int      // where the next record goes once the ring is full
	counts   []int    // mistakes in the window, per learner
	champion int
	switches uint64
	det      drift.Detector
	// fresh is set from a drift alarm until the quick re-selection.
	fresh bool
}

// quick is how many records after a drift alarm the re-selection waits.
func (s *Selector) quick() int { return min(s.cfg.Window, max(30, s.cfg.Window/10)) }

// New returns a Selector over n learners, the first of them champion.
func New(cfg Config, n int) (*Selector, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if n < 1 || n > MaxLearners {
		return nil, fmt.Errorf("selection over %d learners: want 1 to %d", n, MaxLearners)
	}
	s := &Selector{cfg: cfg, n: n, counts: make([]int, n), ring: make([]uint64, 0, min(cfg.Window, 1<<16))}
	if cfg.Detector != "" {
		if s.det, err = drift.New(cfg.Detector); err != nil {
			return nil, fmt.Errorf("selection detector: %w", err)
		}
	}
	return s, nil
}

// Config is the configuration in use, defaults filled in.
func (s *Selector) Config() Config { return s.cfg }

// Champion is the learner whose predictions are emitted.
func (s *Selector) Champion() int { return s.champion }

// Switches counts the champion changes so far.
func (s *Selector) Switches() uint64 { return s.switches }

// Rate is learner i's mistake rate over the window (0 before any record).
func (s *Selector) Rate(i int) float64 {
	if len(s.ring) == 0 {
		return 0
	}
	return float64(s.counts[i]) / float64(len(s.ring))
}

// Observe records one labeled record's mistakes, bit i set when learner i
// erred, and returns the champion for the records that follow and whether
// it changed.
func (s *Selector) Observe(mistakes uint64) (champion int, switched bool) {
	mistakes &= 1<<s.n - 1
	if len(s.ring) < s.cfg.Window {
		s.ring = append(s.ring, mistakes)
	} else {
		old := s.ring[s.next]
		for w := old; w != 0; w &= w - 1 {
			s.counts[bits.TrailingZeros64(w)]--
		}
		s.ring[s.next] = mistakes
		s.next = (s.next + 1) % s.cfg.Window
	}
	for w := mistakes; w != 0; w &= w - 1 {
		s.counts[bits.TrailingZeros64(w)]++
	}
	best := 0
	for i, c := range s.counts {
		if c < s.counts[best] {
			best = i
		}
	}
	prev := s.champion
	alarm := s.det != nil && s.det.Add(mistakes&(1<<s.champion) != 0)
	switch {
	case alarm:
		s.ring, s.next, s.fresh = s.ring[:0], 0, true
		clear(s.counts)
	case s.fresh && len(s.ring) >= s.quick():
		s.fresh = false
		if s.counts[best] < s.counts[s.champion] {
			s.champion = best
		}
	case !s.fresh && len(s.ring) == s.cfg.Window:
		if d := s.counts[s.champion] - s.counts[best]; d > 0 && float64(d)/float64(len(s.ring)) > s.cfg.Margin {
			s.champion = best
		}
	}
	if s.champion != prev {
		s.switches++
		return s.champion, true
	}
	return s.champion, false
}

const stateVersion = 1

// MarshalBinary encodes the selector's whole state with its configuration.
func (s *Selector) MarshalBinary() ([]byte, error) {
	b := []byte{stateVersion}
	b = binary.AppendUvarint(b, uint64(s.n))
	b = binary.AppendUvarint(b, uint64(s.cfg.Window))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s.cfg.Margin))
	b = binary.AppendUvarint(b, uint64(len(s.cfg.Detector)))
	b = append(b, s.cfg.Detector...)
	fresh := uint64(0)
	if s.fresh {
		fresh = 1
	}
	for _, v := range []uint64{uint64(s.champion), s.switches, uint64(s.next), uint64(len(s.ring)), fresh} {
		b = binary.AppendUvarint(b, v)
	}
	for _, w := range s.ring {
		b = binary.AppendUvarint(b, w)
	}
	if s.det != nil {
		d, err := drift.Marshal(s.det)
		if err != nil {
			return nil, err
		}
		b = append(b, d...)
	}
	return b, nil
}

// Unmarshal restores a Selector from MarshalBinary's bytes.
func Unmarshal(b []byte) (*Selector, error) {
	bad := func(what string) (*Selector, error) { return nil, fmt.Errorf("selection state: %s", what) }
	if len(b) == 0 || b[0] != stateVersion {
		return bad("unknown version")
	}
	b = b[1:]
	uv := func() uint64 {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			b = nil
			return 1 << 63
		}
		b = b[k:]
		return v
	}
	n, window := uv(), uv()
	if len(b) < 8 || n < 1 || n > MaxLearners || window < 1 || window > 1<<30 {
		return bad("header")
	}
	margin := math.Float64frombits(binary.LittleEndian.Uint64(b))
	b = b[8:]
	dl := uv()
	if dl > uint64(len(b)) {
		return bad("detector spec")
	}
	cfg := Config{Window: int(window), Margin: margin, Detector: string(b[:dl])}
	b = b[dl:]
	s, err := New(cfg, int(n))
	if err != nil {
		return nil, fmt.Errorf("selection state: %w", err)
	}
	champion, switches, next, length, fresh := uv(), uv(), uv(), uv(), uv()
	if fresh > 1 || champion >= n || length > window || (length < window && next != 0) || (length == window && next >= window) {
		return bad("window")
	}
	s.champion, s.switches, s.next, s.fresh = int(champion), switches, int(next), fresh == 1
	for range length {
		if b == nil {
			return bad("truncated")
		}
		w := uv()
		if b == nil || w>>n != 0 {
			return bad("window record")
		}
		s.ring = append(s.ring, w)
		for x := w; x != 0; x &= x - 1 {
			s.counts[bits.TrailingZeros64(x)]++
		}
	}
	if s.det != nil {
		if s.det, err = drift.Unmarshal(b); err != nil {
			return nil, fmt.Errorf("selection state: %w", err)
		}
	} else if len(b) != 0 {
		return bad("trailing bytes")
	}
	return s, nil
}

// Name is how reports name a selection over learners named names:
// "select(A|B|…)".
func Name(names []string) string { return "select(" + strings.Join(names, "|") + ")" }

// Parse reads "window=2000,margin=0.01" (either key may be left out).
func Parse(spec string) (Config, error) {
	var c Config
	if spec == "" {
		return c, nil
	}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return c, fmt.Errorf("selection %q: want key=value pairs (window=2000,margin=0.01)", spec)
		}
		var err error
		switch k {
		case "window":
			c.Window, err = strconv.Atoi(v)
		case "margin":
			c.Margin, err = strconv.ParseFloat(v, 64)
		default:
			return c, fmt.Errorf("selection %q: unknown key %q (window, margin)", spec, k)
		}
		if err != nil {
			return c, fmt.Errorf("selection %q: %s: %w", spec, k, err)
		}
	}
	_, err := c.withDefaults()
	return c, err
}
