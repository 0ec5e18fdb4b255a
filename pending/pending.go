// Package pending keeps a partition's unlabeled records while their
// labels are on the way (a chargeback days after the payment, a review
// hours later): what is needed to learn a record when its label arrives,
// and to score the prediction that was emitted for it.
//
// The rules up front:
//   - A Store is bounded: at most Config.MaxRecords entries (the oldest
//     put goes first, counted as evicted) and, with Config.MaxAge, none
//     older than that by record time (counted as expired).
//   - Entries are kept in the order they were put; eviction and expiry
//     take them from the oldest end. Expiry stops at the first entry that
//     is young enough, so with record times out of order an old entry
//     behind a younger one waits for it: expiry is by arrival order, and
//     exact for streams whose times do not go back.
//   - A key held twice keeps the newer record (the older is counted as
//     replaced): a label then goes to the last record with that key.
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

	"github.com/streamlearner/streamlearner/sparse"
)

// Config bounds a Store; zero values take the documented defaults.
type Config struct {
	// MaxRecords is the most records awaiting a label; default 100,000.
	MaxRecords int
	// MaxAge, in the records' time unit (milliseconds for Kafka
	// timestamps), is how long a record waits for its label; 0 (default)
	// means until evicted.
	MaxAge int64
}

// Entry is one record awaiting its label.
type Entry struct {
	X      sparse.Vector // the features as the model saw them
	Time   int64         // record time (ms)
	Offset int64         // where the record is in its partition
	// Predicted and Margin are the prediction that was emitted: ±1 (or a
	// class index) and its margin, to score against the label.
	Predicted int
	Margin    float64
}

type item struct {
	key  string
	e    Entry
	live bool
}

// Counters say what became of the records that left without a label.
type Counters struct {
	Evicted, Expired, Replaced uint64
}

// Store is a bounded set of entries by key, in arrival order.
type Store struct {
	cfg   Config
	items []item         // arrival order from head on; dead ones are holes
	head  int            // first item that may be live
	index map[string]int // key → position in items
	live  int
	Counters
}

// New returns an empty store.
func New(cfg Config) (*Store, error) {
	if cfg.MaxRecords == 0 {
		cfg.MaxRecords = 100_000
	}
	if cfg.MaxRecords < 1 || cfg.MaxAge < 0 {
		return nil, fmt.Errorf("pending: max records %d, max age %d: want a positive count and a non-negative age", cfg.MaxRecords, cfg.MaxAge)
	}
	return &Store{cfg: cfg, index: map[string]int{}}, nil
}

// Config is the configuration in use, defaults filled in.
func (s *Store) Config() Config { return s.cfg }

// Len is the number of records awaiting a label.
func (s *Store) Len() int { return s.live }

// Put keeps e under key until Take, eviction or expiry. It reports
// whether the store evicted its oldest record to make room.
func (s *Store) Put(key string, e Entry) (evicted bool) {
	if i, ok := s.index[key]; ok {
		s.kill(i)
		s.Replaced++
	}
	if s.live >= s.cfg.MaxRecords {
		s.kill(s.oldest())
		s.Evicted++
		evicted = true
	}
	s.index[key] = len(s.items)
	s.items = append(s.items, item{key: key, e: e, live: true})
	s.live++
	return evicted
}

// Take removes and returns the record held under key.
func (s *Store) Take(key string) (Entry, bool) {
	i, ok := s.index[key]
	if !ok {
		return Entry{}, false
	}
	e := s.items[i].e
	s.kill(i)
	return e, true
}

// Expire drops the records older than now − MaxAge (none without a
// MaxAge), oldest arrival first, and returns how many went.
func (s *Store) Expire(now int64) int {
	if s.cfg.MaxAge == 0 {
		return 0
	}
	n := 0
	for s.live > 0 {
		i := s.oldest()
		if now-s.items[i].e.Time <= s.cfg.MaxAge {
			break
		}
		s.kill(i)
		s.Expired++
		n++
	}
	return n
}

// oldest is the position of the oldest live item; the store is not empty.
func (s *Store) oldest() int {
	for !s.items[s.head].live {
		s.head++
	}
	return s.head
}

// kill removes item i, and compacts once most of the slice is holes.
func (s *Store) kill(i int) {
	it := &s.items[i]
	delete(s.index, it.key)
	*it = item{}
	s.live--
	if s.live == 0 {
		s.items, s.head = s.items[:0], 0
		return
	}
	if len(s.items) > 64 && s.live < len(s.items)/4 {
		s.compact()
	}
}

func (s *Store) compact() {
	j := 0
	for _, it := range s.items[s.head:] {
		if it.live {
			s.items[j] = it
			s.index[it.key] = j
			j++
		}
	}
	clear(s.items[j:])
	s.items, s.head = s.items[:j], 0
}

const stateVersion = 1

// MarshalBinary encodes the store: configuration, counters and the live
// entries in arrival order.
func (s *Store) MarshalBinary() ([]byte, error) {
	b := []byte{stateVersion}
	for _, v := range []uint64{uint64(s.cfg.MaxRecords), uint64(s.cfg.MaxAge), s.Evicted, s.Expired, s.Replaced, uint64(s.live)} {
		b = binary.AppendUvarint(b, v)
	}
	for _, it := range s.items[s.head:] {
		if !it.live {
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(it.key)))
		b = append(b, it.key...)
		b = binary.AppendVarint(b, it.e.Time)
		b = binary.AppendVarint(b, it.e.Offset)
		b = binary.AppendVarint(b, int64(it.e.Predicted))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(it.e.Margin))
		b = binary.AppendUvarint(b, uint64(len(it.e.X.Idx)))
		for k, idx := range it.e.X.Idx {
			b = binary.AppendUvarint(b, uint64(idx))
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(it.e.X.Val[k]))
		}
	}
	return b, nil
}

var errTruncated = errors.New("pending state: truncated")

// Unmarshal restores a store from MarshalBinary's bytes.
func Unmarshal(b []byte) (*Store, error) {
	if len(b) == 0 || b[0] != stateVersion {
		return nil, errors.New("pending state: unknown version")
	}
	b = b[1:]
	bad := false
	uv := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			bad = true
			return 0
		}
		b = b[n:]
		return v
	}
	sv := func() int64 {
		v, n := binary.Varint(b)
		if n <= 0 {
			bad = true
			return 0
		}
		b = b[n:]
		return v
	}
	f64 := func() float64 {
		if len(b) < 8 {
			bad = true
			return 0
		}
		v := math.Float64frombits(binary.LittleEndian.Uint64(b))
		b = b[8:]
		return v
	}
	var h [6]uint64
	for i := range h {
		h[i] = uv()
	}
	if bad || h[0] > math.MaxInt32 || h[1] > math.MaxInt64 || h[5] > h[0] {
		return nil, errTruncated
	}
	s, err := New(Config{MaxRecords: int(h[0]), MaxAge: int64(h[1])})
	if err != nil {
		return nil, err
	}
	for range h[5] {
		kl := uv()
		if bad || kl > uint64(len(b)) {
			return nil, errTruncated
		}
		key := string(b[:kl])
		b = b[kl:]
		e := Entry{Time: sv(), Offset: sv(), Predicted: int(sv()), Margin: f64()}
		nnz := uv()
		if bad || nnz > uint64(len(b))/2 {
			return nil, errTruncated
		}
		e.X = sparse.Vector{Idx: make([]uint32, nnz), Val: make([]float64, nnz)}
		for k := range nnz {
			idx := uv()
			if idx > math.MaxUint32 {
				bad = true
			}
			e.X.Idx[k], e.X.Val[k] = uint32(idx), f64()
		}
		if bad {
			return nil, errTruncated
		}
		if _, dup := s.index[key]; dup {
			return nil, fmt.Errorf("pending state: key %q twice", key)
		}
		s.Put(key, e)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("pending state: %d bytes left over", len(b))
	}
	s.Evicted, s.Expired, s.Replaced = h[2], h[3], h[4]
	return s, nil
}
