// Package pending keeps a partition's unlabeled records while their
// labels are on the way (a chargeback days after the payment, a review
// hours later): what is needed to learn a record when its label arrives,
// and to score the prediction that was emitted for it.
//
// The rules up front:
//   - A Store is bounded: at most Config.MaxRecords entries and
//     Config.MaxBytes bytes of entries and remembered keys (the oldest
//     put goes first, counted as evicted), and, with Config.MaxAge, none
//     older than that by record time (counted as expired). A key is at
//     most Config.MaxKeyBytes long: a caller refuses longer ones (KeyFits)
//     before it holds anything.
//   - Entries are kept in the order they were put; eviction and expiry
//     take them from the oldest end. Expiry stops at the first entry that
//     is young enough, so with record times out of order an old entry
//     behind a younger one waits for it: expiry is by arrival order, and
//     exact for streams whose times do not go back.
//   - A key held twice keeps the newer record (the older is counted as
//     replaced): a label then goes to the last record with that key.
//   - The store remembers the keys of the last MaxRecords records that
//     left without their label (evicted or expired), so that a label
//     arriving for one can say why it has no record (Gone); a label for a
//     key it never held, or held and already labeled, is unknown.
//   - Deterministic: the same calls in the same order give the same store,
//     and MarshalBinary encodes it in a form Unmarshal restores exactly
//     (order, counters and all), so it lives in the partition's snapshot.
//   - A Store owns the vectors put into it (callers give it copies) and
//     is not safe for concurrent use.
package pending

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// Config bounds a Store; zero values take the documented defaults.
type Config struct {
	// MaxRecords is the most records awaiting a label; default 100,000.
	// The store also remembers up to as many keys of records that left
	// unlabeled (see Gone).
	MaxRecords int
	// MaxAge, in the records' time unit (milliseconds for Kafka
	// timestamps), is how long a record waits for its label; 0 (default)
	// means until evicted.
	MaxAge int64
	// MaxBytes bounds what the held records and the remembered keys cost
	// (Cost: features, key, scores and bookkeeping); default 64 MiB. A
	// count alone does not bound memory: 1,000 records of 4,000 fields
	// and a 50 KB key hold about 100 MB. The newest record is held even
	// if it alone costs more.
	MaxBytes int64
	// MaxKeyBytes is the longest key a record may be held under; default
	// 1024. Keys are ids: a longer one is refused, not held (KeyFits).
	MaxKeyBytes int
}

// Defaults of Config.
const (
	DefaultMaxRecords  = 100_000
	DefaultMaxBytes    = 64 << 20
	DefaultMaxKeyBytes = 1024
)

// entryOverhead and goneOverhead are what an entry and a remembered key
// cost beyond their key, features and scores: the queue slot, the index
// map's entry, the slice headers (measured with BenchmarkMillionPending:
// about 230 bytes a record besides its features).
const (
	entryOverhead = 232
	goneOverhead  = 64
)

// Cost is what holding e under key costs, by the store's accounting.
func Cost(key string, e *Entry) int64 {
	return entryOverhead + int64(len(key)) + 12*int64(len(e.X.Idx)) + 16*int64(len(e.Scores))
}

// KeyFits reports whether a record may be held under key.
func (s *Store) KeyFits(key []byte) bool { return len(key) <= s.cfg.MaxKeyBytes }

// Entry is one record awaiting its label.
type Entry struct {
	X      sparse.Vector // the features as the model saw them
	Time   int64         // record time (ms)
	Offset int64         // where the record is in its partition
	// Predicted and Margin are the prediction that was emitted: ±1 (or a
	// class index) and its margin, to score against the label.
	Predicted int
	Margin    float64
	// Scores are every learner's own prediction when a model runs several
	// (challengers), in the model's learner order, and Champion the one
	// whose prediction was emitted; nil and 0 otherwise.
	Scores   []Score
	Champion int
}

// Score is one learner's prediction of a record: ±1 or a class index, and
// its margin.
type Score struct {
	Predicted int
	Margin    float64
}

// Left says why a record left the store without its label.
type Left uint8

const (
	// LeftEvicted: the store was full and the record was the oldest.
	LeftEvicted Left = 1 + iota
	// LeftExpired: the record was older than MaxAge.
	LeftExpired
)

func (l Left) String() string {
	switch l {
	case LeftEvicted:
		return "evicted"
	case LeftExpired:
		return "expired"
	}
	return "unknown"
}

// Counters say what became of the records that left without a label.
type Counters struct {
	Evicted, Expired, Replaced uint64
}

// Store is a bounded set of entries by key, in arrival order.
type Store struct {
	cfg  Config
	q    queue[Entry]
	gone queue[Left] // keys of records that left unlabeled, oldest first
	// bytes is what the held entries and remembered keys cost, goneBytes
	// the remembered keys' share.
	bytes, goneBytes int64
	Counters
}

// New returns an empty store.
func New(cfg Config) (*Store, error) {
	if cfg.MaxRecords == 0 {
		cfg.MaxRecords = DefaultMaxRecords
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxKeyBytes == 0 {
		cfg.MaxKeyBytes = DefaultMaxKeyBytes
	}
	if cfg.MaxRecords < 1 || cfg.MaxAge < 0 || cfg.MaxBytes < 1 || cfg.MaxKeyBytes < 1 {
		return nil, fmt.Errorf("pending: max records %d, max age %d, max bytes %d, max key bytes %d: want positive bounds and a non-negative age",
			cfg.MaxRecords, cfg.MaxAge, cfg.MaxBytes, cfg.MaxKeyBytes)
	}
	return &Store{cfg: cfg, q: newQueue[Entry](), gone: newQueue[Left]()}, nil
}

// Bytes is what the held records and remembered keys cost (see Cost).
func (s *Store) Bytes() int64 { return s.bytes }

// Config is the configuration in use, defaults filled in.
func (s *Store) Config() Config { return s.cfg }

// Len is the number of records awaiting a label.
func (s *Store) Len() int { return s.q.len() }

// Put keeps e under key until Take, eviction or expiry. It reports
// whether the store evicted its oldest record to make room.
func (s *Store) Put(key string, e Entry) (evicted bool) {
	if old, ok := s.q.take(key); ok {
		s.bytes -= Cost(key, &old)
		s.Replaced++
	}
	s.forget(key)
	cost := Cost(key, &e)
	for s.q.len() > 0 && (s.q.len() >= s.cfg.MaxRecords || s.bytes-s.goneBytes+cost > s.cfg.MaxBytes) {
		k, old := s.q.pop()
		s.bytes -= Cost(k, &old)
		s.left(k, LeftEvicted)
		s.Evicted++
		evicted = true
	}
	s.q.put(key, e)
	s.bytes += cost
	s.trimGone()
	return evicted
}

// trimGone forgets the oldest remembered keys while the store is over its
// byte bound: they only name why a late label finds nothing, and held
// records come first.
func (s *Store) trimGone() {
	for s.gone.len() > 0 && s.bytes > s.cfg.MaxBytes {
		k, _ := s.gone.pop()
		s.bytes -= goneOverhead + int64(len(k))
		s.goneBytes -= goneOverhead + int64(len(k))
	}
}

// forget drops key from the remembered keys.
func (s *Store) forget(key string) {
	if _, ok := s.gone.take(key); ok {
		s.bytes -= goneOverhead + int64(len(key))
		s.goneBytes -= goneOverhead + int64(len(key))
	}
}

// Peek returns the record held under key, leaving it there; the entry is
// valid until the next call that changes the store.
func (s *Store) Peek(key string) (*Entry, bool) { return s.q.get(key) }

// Take removes and returns the record held under key.
func (s *Store) Take(key string) (Entry, bool) {
	e, ok := s.q.take(key)
	if ok {
		s.bytes -= Cost(key, &e)
	}
	return e, ok
}

// Gone says whether key's record left the store without its label, and
// why; only the last MaxRecords such keys are remembered.
func (s *Store) Gone(key string) (Left, bool) {
	l, ok := s.gone.get(key)
	if !ok {
		return 0, false
	}
	return *l, true
}

func (s *Store) left(key string, why Left) {
	s.forget(key)
	if s.gone.len() >= s.cfg.MaxRecords {
		k, _ := s.gone.pop()
		s.bytes -= goneOverhead + int64(len(k))
		s.goneBytes -= goneOverhead + int64(len(k))
	}
	s.gone.put(key, why)
	s.bytes += goneOverhead + int64(len(key))
	s.goneBytes += goneOverhead + int64(len(key))
}

// Expire drops the records older than now − MaxAge (none without a
// MaxAge), oldest arrival first, and returns how many went.
func (s *Store) Expire(now int64) int {
	if s.cfg.MaxAge == 0 {
		return 0
	}
	n := 0
	for s.q.len() > 0 && now-s.q.front().v.Time > s.cfg.MaxAge {
		k, old := s.q.pop()
		s.bytes -= Cost(k, &old)
		s.left(k, LeftExpired)
		s.Expired++
		n++
	}
	s.trimGone()
	return n
}

// stateVersion 2 adds the byte bounds after version 1's header; version 1
// states (without them) are read with the default bounds.
const stateVersion = 2

// MarshalBinary encodes the store: configuration, counters, the live
// entries in arrival order, then the remembered keys in order.
func (s *Store) MarshalBinary() ([]byte, error) { return s.AppendBinary(nil) }

// AppendBinary appends MarshalBinary's bytes to b. A full store encodes to
// about its byte bound: written into the snapshot's own buffer, it is not
// grown in a buffer of its own and then copied.
func (s *Store) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, stateVersion)
	for _, v := range []uint64{uint64(s.cfg.MaxRecords), uint64(s.cfg.MaxAge), s.Evicted, s.Expired, s.Replaced, uint64(s.q.len()), uint64(s.gone.len()),
		uint64(s.cfg.MaxBytes), uint64(s.cfg.MaxKeyBytes)} {
		b = binary.AppendUvarint(b, v)
	}
	s.q.each(func(key string, e *Entry) {
		b = binary.AppendUvarint(b, uint64(len(key)))
		b = append(b, key...)
		b = binary.AppendVarint(b, e.Time)
		b = binary.AppendVarint(b, e.Offset)
		b = binary.AppendVarint(b, int64(e.Predicted))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.Margin))
		b = binary.AppendUvarint(b, uint64(len(e.Scores)))
		if len(e.Scores) > 0 {
			b = binary.AppendUvarint(b, uint64(e.Champion))
		}
		for _, sc := range e.Scores {
			b = binary.AppendVarint(b, int64(sc.Predicted))
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(sc.Margin))
		}
		b = binary.AppendUvarint(b, uint64(len(e.X.Idx)))
		for k, idx := range e.X.Idx {
			b = binary.AppendUvarint(b, uint64(idx))
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(e.X.Val[k]))
		}
	})
	s.gone.each(func(key string, l *Left) {
		b = binary.AppendUvarint(b, uint64(len(key)))
		b = append(b, key...)
		b = append(b, byte(*l))
	})
	return b, nil
}

var errTruncated = errors.New("pending state: truncated")

// Unmarshal restores a store from MarshalBinary's bytes.
func Unmarshal(b []byte) (*Store, error) {
	if len(b) == 0 || b[0] < 1 || b[0] > stateVersion {
		return nil, errors.New("pending state: unknown version")
	}
	r := &stateReader{b: b[1:]}
	h, err := r.header(b[0])
	if err != nil {
		return nil, err
	}
	s, err := New(Config{MaxRecords: int(h[0]), MaxAge: int64(h[1]), MaxBytes: int64(h[7]), MaxKeyBytes: int(h[8])})
	if err != nil {
		return nil, err
	}
	// Room for every entry and remembered key at once: a store grown one
	// entry at a time allocated about twice what it holds, at every
	// restore and at the check of every snapshot. The counts are bounded
	// by what the bytes can hold (an entry takes at least 14 bytes, a
	// remembered key 2), so a damaged count allocates no more than that.
	s.q.reserve(int(min(h[5], uint64(len(r.b)/14))))
	s.gone.reserve(int(min(h[6], uint64(len(r.b)/2))))
	for range h[5] {
		if err := r.entry(s); err != nil {
			return nil, err
		}
	}
	for range h[6] {
		if err := r.gone(s); err != nil {
			return nil, err
		}
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("pending state: %d bytes left over", len(r.b))
	}
	s.Evicted, s.Expired, s.Replaced = h[2], h[3], h[4]
	return s, nil
}

// stateReader reads a state's values in turn. A value cut short sets bad
// and reads as zero, so that a run of reads is checked once, at its end.
type stateReader struct {
	b   []byte
	bad bool
}

func (r *stateReader) uv() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) sv() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) f64() float64 {
	if len(r.b) < 8 {
		r.bad = true
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

func (r *stateReader) key() string {
	kl := r.uv()
	if r.bad || kl > uint64(len(r.b)) {
		r.bad = true
		return ""
	}
	k := string(r.b[:kl])
	r.b = r.b[kl:]
	return k
}

// header reads the header of format version: the bounds, the counters
// and how many entries and remembered keys follow, as AppendBinary
// writes them (format 1 has no byte bounds).
func (r *stateReader) header(version byte) (h [9]uint64, err error) {
	n := 7
	if version >= 2 {
		n = 9
	}
	for i := range n {
		h[i] = r.uv()
	}
	if r.bad || h[0] == 0 || h[0] > math.MaxInt32 || h[1] > math.MaxInt64 || h[5] > h[0] || h[6] > h[0] || h[7] > math.MaxInt64 || h[8] > math.MaxInt32 ||
		(version >= 2 && (h[7] == 0 || h[8] == 0)) {
		return h, errTruncated
	}
	return h, nil
}

// entry reads a held record into s.
func (r *stateReader) entry(s *Store) error {
	k := r.key()
	e := Entry{Time: r.sv(), Offset: r.sv(), Predicted: int(r.sv()), Margin: r.f64()}
	ns := r.uv()
	if r.bad || ns > uint64(len(r.b))/9 {
		return errTruncated
	}
	if ns > 0 {
		e.Champion = int(r.uv())
		if e.Champion >= int(ns) {
			return fmt.Errorf("pending state: champion %d of %d scores", e.Champion, ns)
		}
	}
	for range ns {
		e.Scores = append(e.Scores, Score{Predicted: int(r.sv()), Margin: r.f64()})
	}
	nnz := r.uv()
	if r.bad || nnz > uint64(len(r.b))/2 {
		return errTruncated
	}
	e.X = sparse.Vector{Idx: make([]uint32, nnz), Val: make([]float64, nnz)}
	for j := range nnz {
		idx := r.uv()
		if idx > math.MaxUint32 {
			r.bad = true
		}
		e.X.Idx[j], e.X.Val[j] = uint32(idx), r.f64()
	}
	if r.bad {
		return errTruncated
	}
	if _, dup := s.q.get(k); dup {
		return fmt.Errorf("pending state: key %q twice", k)
	}
	s.q.put(k, e)
	s.bytes += Cost(k, &e)
	return nil
}

// gone reads a remembered key, and why its record left, into s.
func (r *stateReader) gone(s *Store) error {
	k := r.key()
	if r.bad || len(r.b) < 1 {
		return errTruncated
	}
	l := Left(r.b[0])
	r.b = r.b[1:]
	if l != LeftEvicted && l != LeftExpired {
		return fmt.Errorf("pending state: key %q left for reason %d", k, l)
	}
	if _, dup := s.gone.get(k); dup {
		return fmt.Errorf("pending state: remembered key %q twice", k)
	}
	s.gone.put(k, l)
	s.bytes += goneOverhead + int64(len(k))
	s.goneBytes += goneOverhead + int64(len(k))
	return nil
}
