package autolearn

import (
	"encoding"
	"encoding/binary"

	"fmt"
	"math"
	"strconv"

	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/drift"
	"github.com/streamlearner/streamlearner/learners/rng"
)

// The encoded state:
//
//	magic "SLAU" | version (uvarint) | spec (string) | kernel given (string)
//	| seed | generator (bytes) | counters | scaler | history | losers
//	| candidates: count, then each its number, point, counters, work
//	  counters, parent, vote weight and learner state (bytes,
//	  learners.Unmarshal's)
//	| reopens | drift detector (bytes, drift.Marshal's; empty: none)
//	| whether a group dropped its first primal candidates (from version 6)
//	| whether the scaler centres, then each feature's count of rounds
//	  present and the dense features (from version 7)
//	| each candidate's recent mistakes (float), then the bench: count,
//	  then each as a candidate and its recent mistakes (from version 8)
//
// Version 1 ended with the candidates: it decodes with no reopening yet
// and a fresh detector. Versions 1 and 2 had no work counters: they
// decode with none spent yet. Versions 1 to 3 had no parents: no
// candidate was grown from another. Versions 1 to 4 had no vote weights:
// every candidate decodes as a newborn of the vote (equal weights).
// Versions 1 to 5 had no C in a point: a candidate's is read from its
// learner's spec. Versions 1 to 6 had no centring: their scaler goes
// on scaling without it, as it did. Versions 1 to 7 had no bench and no
// recent mistakes: they decode with an empty bench and none counted.
// Integers are uvarints, floats their 8 bytes little-endian, strings and
// byte sections a uvarint length and the bytes.
const (
	magic   = "SLAU"
	version = 8
)

// errCorrupt is wrapped by every error of malformed state.
var errCorrupt = learners.ErrCorrupt

type enc struct{ b []byte }

func (e *enc) u(v uint64)     { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) f(v float64)    { e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v)) }
func (e *enc) bytes(p []byte) { e.u(uint64(len(p))); e.b = append(e.b, p...) }
func (e *enc) str(s string)   { e.u(uint64(len(s))); e.b = append(e.b, s...) }
func (e *enc) flag(v bool)    { e.u(map[bool]uint64{false: 0, true: 1}[v]) }
func (e *enc) point(p point, v uint64) {
	e.str(p.learner)
	e.u(uint64(p.budget))
	e.str(p.kernel.String())
	e.flag(p.scale)
	if v >= 6 {
		e.f(p.c)
	}
}
func (d *dec) point(v uint64) (p point) {
	p = point{learner: d.str(), budget: int(d.u()), kernel: d.kernel(), scale: d.flag()}
	if v >= 6 {
		if p.c = d.f(); !(p.c >= 0 && p.c <= math.MaxFloat64) {
			d.failf("C %v", p.c)
		}
	}
	return p
}
func (d *dec) flag() bool       { return d.u() == 1 }
func (d *dec) str() string      { return string(d.bytes()) }
func (d *dec) fail(what string) { d.failf("%s", what) }
func (d *dec) failf(f string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: auto: "+f, append([]any{errCorrupt}, a...)...)
	}
}

type dec struct {
	b   []byte
	err error
}

func (d *dec) u() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("truncated")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) f() float64 {
	if d.err != nil || len(d.b) < 8 {
		d.fail("truncated")
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

func (d *dec) bytes() []byte {
	n := d.u()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail("truncated")
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

// count reads a length of items of at least min bytes each.
func (d *dec) count(min int) int {
	n := d.u()
	if d.err == nil && n > uint64(len(d.b)/min) {
		d.fail("count exceeds the data")
		return 0
	}
	return int(n)
}

func (d *dec) kernel() learners.Kernel {
	s := d.str()
	if d.err != nil {
		return learners.Kernel{}
	}
	k, err := learners.ParseKernel(s)
	if err != nil {
		d.failf("kernel: %v", err)
	}
	return k
}

// MarshalBinary encodes the whole search: every candidate's learner and
// the search's state.
func (a *Auto) MarshalBinary() ([]byte, error) { return a.AppendBinary(nil) }

// AppendBinary appends MarshalBinary's bytes to b, each candidate's
// learner encoded in place (a snapshot then holds one buffer, not each
// candidate's beside it, copied).
func (a *Auto) AppendBinary(b []byte) ([]byte, error) { return a.appendVersion(b, version) }

// appendVersion appends the state in format version v (tests write the
// older ones, to check that they still decode).
func (a *Auto) appendVersion(b []byte, v uint64) ([]byte, error) {
	e := &enc{b: append(b, magic...)}
	e.u(v)
	e.str(a.spec)
	e.str(a.kernel.String())
	e.u(a.seed)
	g, err := a.src.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("auto: %w", err)
	}
	e.bytes(g)
	for _, v := range []uint64{uint64(a.champion), a.nextID, a.labeled, a.rounds, a.nnz, uint64(a.maxIdx),
		uint64(map[bool]int{false: 0, true: 1}[a.halving]), a.rungEnd, a.rungLen, a.switches} {
		e.u(v)
	}
	e.u(uint64(len(a.stats)))
	for _, v := range a.stats {
		e.f(v)
	}
	e.u(uint64(len(a.history)))
	for _, h := range a.history {
		e.u(h.After)
		e.str(h.Name)
	}
	e.u(uint64(len(a.losers)))
	for _, l := range a.losers {
		e.str(l)
	}
	e.u(uint64(len(a.cands)))
	for _, c := range a.cands {
		if err := e.cand(c, v); err != nil {
			return nil, err
		}
	}
	if v < 2 {
		return e.b, nil
	}
	e.u(a.reopens)
	var w []byte
	if a.watch != nil {
		if w, err = drift.Marshal(a.watch); err != nil {
			return nil, fmt.Errorf("auto: %w", err)
		}
	}
	e.bytes(w)
	if v >= 6 {
		e.flag(a.primalDropped)
	}
	if v >= 7 {
		e.centring(a)
	}
	if v >= 8 {
		for _, c := range a.cands {
			e.f(c.recent)
		}
		e.u(uint64(len(a.bench)))
		for _, c := range a.bench {
			if err := e.cand(c, v); err != nil {
				return nil, err
			}
			e.f(c.recent)
		}
	}
	return e.b, nil
}

// cand appends candidate c in format v: its number, point, counters
// (work from format 3, parent from 4, vote weight from 5), then its
// learner.
func (e *enc) cand(c *cand, v uint64) error {
	e.u(c.id)
	e.point(c.pt, v)
	for _, n := range []uint64{c.born, c.total, c.rung, c.from, c.mine, c.champ} {
		e.u(n)
	}
	if v >= 3 {
		for _, n := range []uint64{c.spent, c.rungWork, c.mineWork, c.champWork} {
			e.u(n)
		}
	}
	if v >= 4 {
		e.u(c.parent)
	}
	if v >= 5 {
		e.f(c.w)
	}
	var err error
	if ap, ok := c.l.(encoding.BinaryAppender); ok {
		e.b, err = learners.AppendSized(e.b, ap.AppendBinary)
	} else {
		var l []byte
		l, err = c.l.MarshalBinary()
		e.bytes(l)
	}
	if err != nil {
		return fmt.Errorf("auto: candidate %s: %w", c.name, err)
	}
	return nil
}

// Unmarshal restores a search from MarshalBinary's bytes; it continues
// with bit-identical margins and the same choices.
func Unmarshal(b []byte) (*Auto, error) {
	if len(b) < len(magic) || string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: not an auto state", errCorrupt)
	}
	d := &dec{b: b[len(magic):]}
	a, v, err := d.head()
	if err != nil {
		return nil, err
	}
	champion := a.readBook(d)
	n := d.count(8)
	for range n {
		c, err := d.readCand(v)
		if err != nil {
			return nil, err
		}
		a.cands = append(a.cands, c)
	}
	var w []byte
	if v >= 2 {
		a.reopens = d.u()
		w = d.bytes()
	}
	if v >= 6 {
		a.primalDropped = d.flag()
	}
	if v >= 7 {
		d.centring(a)
	}
	if v >= 8 {
		for _, c := range a.cands {
			c.recent = d.recent()
		}
		n := d.count(8)
		for range n {
			c, err := d.readCand(v)
			if err != nil {
				return nil, err
			}
			if c.pt.budget != 0 {
				return nil, fmt.Errorf("%w: auto: benched candidate %s has a budget", errCorrupt, c.name)
			}
			c.recent = d.recent()
			a.bench = append(a.bench, c)
		}
	}
	if d.err == nil {
		if err := a.restoreWatch(w); err != nil {
			return nil, err
		}
	}
	switch {
	case d.err != nil:
		return nil, d.err
	case len(d.b) != 0:
		return nil, fmt.Errorf("%w: auto: %d trailing bytes", errCorrupt, len(d.b))
	case len(a.cands) == 0 || champion >= uint64(len(a.cands)):
		return nil, fmt.Errorf("%w: auto: champion %d of %d candidates", errCorrupt, champion, len(a.cands))
	case a.rungLen == 0 || a.rungLen > 1<<62:
		return nil, fmt.Errorf("%w: auto: rung length %d", errCorrupt, a.rungLen)
	}
	a.champion = int(champion)
	return a, nil
}

// head reads the state's format version, then the search's configuration,
// kernel, seed and random source, into a search without candidates.
func (d *dec) head() (*Auto, uint64, error) {
	v := d.u()
	if d.err == nil && (v < 1 || v > version) {
		return nil, 0, fmt.Errorf("auto state format version %d not supported (this build reads 1 to %d)", v, version)
	}
	spec := d.str()
	k := d.kernel()
	seed := d.u()
	g := d.bytes()
	if d.err != nil {
		return nil, 0, d.err
	}
	sp, err := learners.ParseSpec(spec)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: auto: %v", errCorrupt, err)
	}
	cfg, err := Parse(sp)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	a := &Auto{cfg: cfg, spec: cfg.Spec(), kernel: k, seed: seed, src: rng.New(0, 0)}
	if err := a.src.UnmarshalBinary(g); err != nil {
		return nil, 0, fmt.Errorf("%w: auto: %v", errCorrupt, err)
	}
	return a, v, nil
}

// readBook reads the search's counters, its scaler's statistics, its
// changes of champion and its losers. It returns the champion's index,
// which Unmarshal checks once the candidates are read.
func (a *Auto) readBook(d *dec) (champion uint64) {
	var halving, maxIdx uint64
	for _, p := range []*uint64{&champion, &a.nextID, &a.labeled, &a.rounds, &a.nnz, &maxIdx, &halving, &a.rungEnd, &a.rungLen, &a.switches} {
		*p = d.u()
	}
	a.maxIdx, a.halving = uint32(min(maxIdx, math.MaxUint32)), halving == 1
	a.stats = make([]float64, d.count(8))
	for i := range a.stats {
		a.stats[i] = d.f()
	}
	if len(a.stats)%2 != 0 {
		d.fail("scaler statistics")
	}
	a.history = make([]Change, d.count(2))
	for i := range a.history {
		a.history[i] = Change{After: d.u(), Name: d.str()}
	}
	a.losers = make([]string, d.count(1))
	for i := range a.losers {
		a.losers[i] = d.str()
	}
	return champion
}

// readCand reads a candidate of a state of format v: its counters (work
// from format 3, parent from 4, vote weight from 5), then its learner.
func (d *dec) readCand(v uint64) (*cand, error) {
	c := &cand{id: d.u(), pt: d.point(v)}
	for _, p := range []*uint64{&c.born, &c.total, &c.rung, &c.from, &c.mine, &c.champ} {
		*p = d.u()
	}
	if v >= 3 {
		for _, p := range []*uint64{&c.spent, &c.rungWork, &c.mineWork, &c.champWork} {
			*p = d.u()
		}
	}
	if v >= 4 {
		c.parent = d.u()
	}
	if v >= 5 {
		if c.w = d.f(); !(c.w >= 0 && c.w <= 1) {
			d.failf("vote weight %v", c.w)
		}
	}
	state := d.bytes()
	if d.err != nil {
		return nil, d.err
	}
	l, err := learners.Unmarshal(state)
	if err != nil {
		return nil, fmt.Errorf("auto: candidate %d: %w", c.id, err)
	}
	if _, isAuto := l.(*Auto); isAuto {
		return nil, fmt.Errorf("%w: auto: a candidate is itself auto", errCorrupt)
	}
	if v < 6 && hasC(c.pt.learner) {
		c.pt.c = learnerC(l)
	}
	c.l, c.name = l, c.pt.String()
	return c, nil
}

// recent reads a candidate's discounted count of recent mistakes: finite,
// not negative.
func (d *dec) recent() float64 {
	r := d.f()
	if !(r >= 0 && r <= math.MaxFloat64) {
		d.failf("recent mistakes %v", r)
	}
	return r
}

// centring appends whether a's scaler centres, its counts of rounds
// present and its dense features.
func (e *enc) centring(a *Auto) {
	e.flag(a.centre)
	e.u(uint64(len(a.seen)))
	for _, n := range a.seen {
		e.u(n)
	}
	e.u(uint64(len(a.dense)))
	for _, j := range a.dense {
		e.u(uint64(j))
	}
}

// centring reads what enc.centring wrote: counts no larger than the
// rounds played, dense features increasing, each of them counted.
func (d *dec) centring(a *Auto) {
	a.centre = d.flag()
	a.seen = make([]uint64, d.count(1))
	for i := range a.seen {
		if a.seen[i] = d.u(); a.seen[i] > a.rounds {
			d.failf("feature %d present in %d of %d rounds", i, a.seen[i], a.rounds)
		}
	}
	a.dense = make([]uint32, d.count(1))
	for i := range a.dense {
		j := d.u()
		if j >= uint64(len(a.seen)) || (i > 0 && uint32(j) <= a.dense[i-1]) {
			d.failf("dense feature %d", j)
		}
		a.dense[i] = uint32(j)
	}
}

// learnerC is the C in l's canonical spec: a state from before C was
// searched takes it from there (the learner's default, 1, for PA-I).
func learnerC(l learners.Learner) float64 {
	sp, err := learners.ParseSpec(l.Spec())
	if err != nil {
		return 0
	}
	c, err := strconv.ParseFloat(sp.Params["c"], 64)
	if err != nil {
		return 0
	}
	return c
}

// restoreWatch sets the drift detector from its encoding w, or a fresh
// one from the configuration when w is empty (a version 1 state).
func (a *Auto) restoreWatch(w []byte) error {
	switch {
	case a.cfg.Drift == "none" && len(w) == 0:
		return nil
	case a.cfg.Drift == "none":
		return fmt.Errorf("%w: auto: a drift detector with drift=none", errCorrupt)
	case len(w) == 0:
		d, err := drift.New(a.cfg.Drift)
		if err != nil {
			return fmt.Errorf("auto: %w", err)
		}
		a.watch = d
		return nil
	}
	d, err := drift.Unmarshal(w)
	if err != nil {
		return fmt.Errorf("%w: auto: %v", errCorrupt, err)
	}
	if d.Name() != a.cfg.Drift {
		return fmt.Errorf("%w: auto: detector %s with drift=%s", errCorrupt, d.Name(), a.cfg.Drift)
	}
	a.watch = d
	return nil
}
