// Package features turns named-field events (codec.Event) into the sparse
// vectors the learners take, by feature hashing, with an optional online
// scaler for numeric fields.
//
// # Hashing
//
// Every feature has a name: a numeric field's name ("age"), or a field's
// name and a value joined by a zero byte for categorical values and text
// tokens ("workclass\x00State-gov", "title\x00market"). Its index is
//
//	xxhash64(name) mod 2^HashBits
//
// where a field's name is read with '-' and '.' as '_' (the value is not
// touched): Avro and Protobuf cannot spell "education-num", so their
// schemas say "education_num", and produce fills that field from the
// JSON member "education-num". Both spellings must be one feature, or the
// same values would land on other indices, and the learners' sums over
// them (kept in index order) would add the same terms in another order:
// the margins would differ in their last bits. Names that differ only
// there (a-b, a.b, a_b) are one feature, as if their hashes had collided.
//
// with xxHash64 (seed 0) as github.com/cespare/xxhash/v2 computes it: a
// published, platform-independent function (the same bits on every
// machine, byte order and Go version), among the fastest non-cryptographic
// 64-bit hashes, and already in the module graph. The zero byte keeps
// "a"+"bc" and "ab"+"c" apart. Only a name or value that itself holds a
// zero byte (written \u0000 in JSON) can meet another feature's name:
// "a\x00b"+"c" and "a"+"b\x00c" are then one feature, as if their hashes
// had collided. Categorical values and tokens have value 1 per occurrence
// (a bag counts); numeric fields have their value. Features that land on one index
// are summed, as Vowpal Wabbit does; Collisions counts how many distinct
// names shared an index with another in a record.
//
// # Text
//
// A text field is split into tokens at every character that is not a
// Unicode letter or digit, lowercased (unicode.ToLower); each token is a
// feature of the field with its count. With NormalizeText the field's counts
// are divided by their Euclidean norm (after hashing), so that long and
// short texts weigh alike.
//
// # Online scaling
//
// With Scale set to ScaleOnline, each numeric field's value is standardized
// as (x − mean)/sd with the running mean and (population) standard deviation
// of that field's earlier values (Welford's algorithm), and only then are
// those statistics updated with x: a record is never scaled with statistics
// it contributed to, so prequential evaluation stays honest. Before a field
// has any spread (its first value, or all values equal) the scaled value is
// 0, as River's preprocessing.StandardScaler does. Statistics are kept per
// numeric field index, only for fields that occur, so missing values stay
// missing and sparse vectors stay sparse; categorical and text features are
// not scaled. The scaler's state is part of MarshalBinary.
//
// # Rules and snapshots
//
// Config.Rules is the version of these rules, kept in MarshalBinary: 2,
// the current one (names as above, strings typed by codec.TypeString), or
// 1, the rules before it (names hashed as spelled; every string its text),
// which a featurizer restored from a version 1 state keeps, so that a model
// saved before goes on with the features it learned. The codec's half of
// the rule is codec.EventConfig.StringsAsText, which a model sets for rules 1.
//
// # Ownership and determinism
//
// A Featurizer is not safe for concurrent use: Vector returns a vector
// backed by the featurizer's own buffers, valid until the next call, and
// allocates nothing once those buffers have grown (a new numeric field seen
// by the scaler allocates once). The output depends only on the event and,
// with scaling, on the events before it, in order.
package features

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

// DefaultHashBits is the hash space when Config.HashBits is 0: 2^18 =
// 262,144 indices, Vowpal Wabbit's default, few collisions for the tens of
// thousands of distinct values of typical event streams.
const DefaultHashBits = 18

// MaxHashBits bounds the space: 2^24 is codec's default largest index.
const MaxHashBits = 24

// Scale says how numeric fields are scaled.
type Scale uint8

const (
	// ScaleNone leaves values as they are.
	ScaleNone Scale = iota
	// ScaleOnline standardizes with the running statistics of earlier
	// records.
	ScaleOnline
)

func (s Scale) String() string {
	if s == ScaleOnline {
		return "online"
	}
	return "none"
}

// ParseScale reads "none" or "online".
func ParseScale(s string) (Scale, error) {
	switch s {
	case "", "none":
		return ScaleNone, nil
	case "online":
		return ScaleOnline, nil
	}
	return 0, fmt.Errorf("scale %q: want none or online", s)
}

// Config says how to featurize. The zero value takes the defaults.
type Config struct {
	// HashBits is b in the 2^b indices, 1 to MaxHashBits. Default
	// DefaultHashBits (18).
	HashBits int
	// NormalizeText divides each text field's term counts by their
	// Euclidean norm. Default false: raw counts.
	NormalizeText bool
	// Scale is ScaleNone (the default) or ScaleOnline.
	Scale Scale
	// AllowEmpty accepts an event with no non-zero feature. Default false:
	// it is refused with codec reason empty_features, as records are.
	AllowEmpty bool
	// Rules is the version of the rules (see the package comment): 0 or
	// RulesCurrent (2), or RulesSpelled (1) for a model saved before them.
	// Default RulesCurrent.
	Rules int
}

// The versions of the featurization rules.
const (
	// RulesSpelled hashes field names as spelled (and the codec reads every
	// string as its text): the builds before RulesCurrent.
	RulesSpelled = 1
	// RulesCurrent reads '-' and '.' in field names as '_' (and the codec
	// types strings by codec.TypeString).
	RulesCurrent = 2
)

func (c Config) withDefaults() Config {
	if c.HashBits == 0 {
		c.HashBits = DefaultHashBits
	}
	if c.Rules == 0 {
		c.Rules = RulesCurrent
	}
	return c
}

// Validate reports a configuration that cannot be used.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.HashBits < 1 || c.HashBits > MaxHashBits {
		return fmt.Errorf("features: hash bits %d: want 1 to %d", c.HashBits, MaxHashBits)
	}
	if c.Scale > ScaleOnline {
		return fmt.Errorf("features: invalid scale %d", c.Scale)
	}
	if c.Rules < RulesSpelled || c.Rules > RulesCurrent {
		return fmt.Errorf("features: rules %d: want %d or %d", c.Rules, RulesSpelled, RulesCurrent)
	}
	return nil
}

// entry is one feature before sorting: its value and the 64-bit hash of
// its name rotated right by HashBits (see Featurizer.entry), so that one
// comparison orders by index and then by hash, and equal keys are equal
// names.
type entry struct {
	key uint64
	val float64
}

// Featurizer hashes events into vectors. See the package comment.
type Featurizer struct {
	cfg     Config
	mask    uint64
	bits    int  // HashBits
	spelled bool // RulesSpelled

	ents []entry
	key  []byte // name + 0 + value, hashed
	tok  []byte // a lowercased token
	idx  []uint32
	val  []float64

	collisions int
	frozen     bool

	// The online scaler: slot per numeric field index.
	slot map[uint32]int
	n    []uint64
	mean []float64
	m2   []float64

	// undo journals the scaler updates of the last Vector call, so that a
	// record the model then refuses leaves the statistics as they were;
	// slots is the slot count before that call.
	undo  []undo
	slots int
}

// undo is a slot's statistics before an update.
type undo struct {
	s    int
	n    uint64
	mean float64
	m2   float64
}

// New checks cfg and returns a Featurizer.
func New(cfg Config) (*Featurizer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Featurizer{cfg: cfg, mask: 1<<cfg.HashBits - 1, bits: cfg.HashBits, spelled: cfg.Rules == RulesSpelled,
		slot: map[uint32]int{}}, nil
}

// Config returns the configuration in use, defaults filled in.
func (f *Featurizer) Config() Config { return f.cfg }

// Hash is the 64-bit hash of a feature name under the current rules: the
// field's name, '-' and '.' read as '_', alone for numeric fields, then
// "\x00" + value for categorical values and tokens (value nil). Its low
// HashBits bits are the index.
func Hash(name, value []byte, categorical bool) uint64 {
	key := canonical(nil, name, len(name))
	if categorical {
		key = append(append(key, 0), value...)
	}
	return xxhash.Sum64(key)
}

// Name is a field's name as the current rules hash it ('-' and '.' read
// as '_'): two fields of one Name are one feature.
func Name(field []byte) string { return string(canonical(nil, field, len(field))) }

// canonical appends b to dst with '-' and '.' in its first n bytes (the
// field's name) read as '_'.
func canonical(dst, b []byte, n int) []byte {
	off := len(dst)
	dst = append(dst, b...)
	for i, c := range dst[off : off+n] {
		if c == '-' || c == '.' {
			dst[off+i] = '_'
		}
	}
	return dst
}

// hashNamed hashes b, a feature name whose first n bytes are the field's
// name, under the featurizer's rules; in place when the name has no byte to
// read otherwise (Adult's "age"), else in a copy.
func (f *Featurizer) hashNamed(b []byte, n int) uint64 {
	if !f.spelled {
		for _, c := range b[:n] {
			if c == '-' || c == '.' {
				f.key = canonical(f.key[:0], b, n)
				return xxhash.Sum64(f.key)
			}
		}
	}
	return xxhash.Sum64(b)
}

// hash is the hash of a categorical name and value (a token) under the
// featurizer's rules: they are copied into one buffer, which is faster
// for short names than a Digest.
func (f *Featurizer) hash(name, value []byte) uint64 {
	if f.spelled {
		f.key = append(f.key[:0], name...)
	} else {
		f.key = canonical(f.key[:0], name, len(name))
	}
	f.key = append(append(f.key, 0), value...)
	return xxhash.Sum64(f.key)
}

// entry makes the entry of a feature whose name hashes to h: its key puts
// the index (h's low HashBits bits) above the rest of h. Sorting by key is
// sorting by index, then by h (h's low bits are equal within an index).
func (f *Featurizer) entry(h uint64, v float64) entry {
	return entry{bits.RotateLeft64(h, -f.bits), v}
}

// index is the index of an entry's key.
func (f *Featurizer) index(key uint64) uint32 { return uint32(key >> (64 - f.bits)) }

// Index is the index of a feature name in a space of 2^bits.
func Index(name, value []byte, categorical bool, bits int) uint32 {
	return uint32(Hash(name, value, categorical) & (1<<bits - 1))
}

// Vector featurizes ev. The vector's slices belong to the Featurizer and
// are overwritten by the next call. With ScaleOnline it also updates the
// scaler with ev's numeric fields; Rollback, until the next Vector call,
// undoes them, so that a record refused after it was featurized (by the
// kernel, the label, the model) changes no statistic.
// The errors are *codec.Error values: empty_features, when the event has no
// non-zero feature and AllowEmpty is false, and value_too_large, when a
// value would make the scaler's statistics overflow (the statistics are
// then as they were before the call).
func (f *Featurizer) Vector(ev *codec.Event) (sparse.Vector, error) {
	f.ents = f.ents[:0]
	f.Commit() // the previous record's updates stand
	f.slots = len(f.n)
	for _, fl := range ev.Fields {
		switch fl.Kind {
		case codec.FieldNumeric:
			name := ev.Name(fl)
			h := f.hashNamed(name, len(name))
			v := fl.Num
			if f.cfg.Scale == ScaleOnline {
				var ok bool
				if v, ok = f.scale(uint32(h&f.mask), v); !ok {
					f.Rollback()
					return sparse.Vector{}, &codec.Error{Reason: codec.ReasonValueTooLarge, Detail: fmt.Sprintf("field %q: value %g overflows the online scaler's statistics", ev.Name(fl), fl.Num)}
				}
			}
			f.ents = append(f.ents, f.entry(h, v))
		case codec.FieldCategorical:
			// The event holds name, 0, value in one piece: hashed in place
			// when the name needs no other reading.
			f.ents = append(f.ents, f.entry(f.hashNamed(ev.NameText(fl), len(ev.Name(fl))), 1))
		case codec.FieldText:
			f.text(ev.Name(fl), ev.Text(fl))
		}
	}
	v := f.finish()
	if len(v.Idx) == 0 && !f.cfg.AllowEmpty {
		return v, &codec.Error{Reason: codec.ReasonEmptyFeatures, Detail: fmt.Sprintf("event has no non-zero feature (%d fields)", len(ev.Fields))}
	}
	return v, nil
}

// Collisions is the number of features of the last Vector call that shared
// an index with a feature of another name.
func (f *Featurizer) Collisions() int { return f.collisions }

// text adds the tokens of one text field.
func (f *Featurizer) text(name, s []byte) {
	start := len(f.ents)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRune(s[i:])
		if !isWord(r) {
			i += n
			continue
		}
		f.tok = f.tok[:0]
		for i < len(s) {
			r, n = utf8.DecodeRune(s[i:])
			if !isWord(r) {
				break
			}
			f.tok = utf8.AppendRune(f.tok, unicode.ToLower(r))
			i += n
		}
		f.ents = append(f.ents, f.entry(f.hash(name, f.tok), 1))
	}
	if !f.cfg.NormalizeText || len(f.ents) == start {
		return
	}
	// The norm of the field's hashed count vector: counts per index.
	seg := f.ents[start:]
	sortEntries(seg)
	sq, run := 0.0, 0.0
	for k, e := range seg {
		run += e.val
		if k == len(seg)-1 || f.index(seg[k+1].key) != f.index(e.key) {
			sq += run * run
			run = 0
		}
	}
	inv := 1 / math.Sqrt(sq)
	for k := range seg {
		seg[k].val *= inv
	}
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// sortEntries orders by key: by index, then hash. Records have tens of
// fields: a plain insertion sort beats the generic sort's comparator calls
// there.
func sortEntries(es []entry) {
	if len(es) <= 32 {
		for i := 1; i < len(es); i++ {
			e := es[i]
			j := i
			for ; j > 0 && e.key < es[j-1].key; j-- {
				es[j] = es[j-1]
			}
			es[j] = e
		}
		return
	}
	slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(a.key, b.key) })
}

// finish sorts the entries, sums those on one index, counts collisions and
// drops zeros.
func (f *Featurizer) finish() sparse.Vector {
	sortEntries(f.ents)
	f.idx, f.val, f.collisions = f.idx[:0], f.val[:0], 0
	for k := 0; k < len(f.ents); {
		idx := f.index(f.ents[k].key)
		sum, names := 0.0, 0
		var last uint64
		for ; k < len(f.ents) && f.index(f.ents[k].key) == idx; k++ {
			sum += f.ents[k].val
			if names == 0 || f.ents[k].key != last {
				names++
				last = f.ents[k].key
			}
		}
		if names > 1 {
			f.collisions += names
		}
		if sum != 0 {
			f.idx = append(f.idx, idx)
			f.val = append(f.val, sum)
		}
	}
	if len(f.idx) == 0 {
		return sparse.Vector{}
	}
	return sparse.Vector{Idx: f.idx, Val: f.val}
}

// Freeze stops (true) or resumes (false) the scaler's updates: a frozen
// featurizer scales with the statistics it has and learns nothing, as a
// test set needs.
func (f *Featurizer) Freeze(on bool) { f.frozen = on }

// scale standardizes x with the statistics of index i so far, then adds x
// to them (Welford), journaling what it changes. ok is false, and nothing
// changes, when the new statistics would not be finite: a snapshot of them
// could not be restored, and every later value of the field would scale
// to 0.
func (f *Featurizer) scale(i uint32, x float64) (z float64, ok bool) {
	s, known := f.slot[i]
	if known && f.n[s] > 0 && f.m2[s] > 0 {
		z = (x - f.mean[s]) / math.Sqrt(f.m2[s]/float64(f.n[s]))
	}
	if f.frozen {
		return z, true
	}
	var n uint64
	var mean, m2 float64
	if known {
		n, mean, m2 = f.n[s], f.mean[s], f.m2[s]
	}
	n++
	d := x - mean
	mean += d / float64(n)
	m2 += d * (x - mean)
	if math.IsNaN(mean) || math.IsInf(mean, 0) || math.IsNaN(m2) || math.IsInf(m2, 0) || math.IsNaN(z) || math.IsInf(z, 0) {
		return 0, false
	}
	if !known {
		s = len(f.n)
		f.slot[i] = s
		f.n, f.mean, f.m2 = append(f.n, 0), append(f.mean, 0), append(f.m2, 0)
	}
	f.undo = append(f.undo, undo{s: s, n: f.n[s], mean: f.mean[s], m2: f.m2[s]})
	f.n[s], f.mean[s], f.m2[s] = n, mean, m2
	return z, true
}

// Commit keeps the scaler updates of the last Vector call (as the next
// Vector call does), the fields it added included: Rollback then has
// nothing to undo.
func (f *Featurizer) Commit() { f.undo, f.slots = f.undo[:0], len(f.n) }

// Rollback undoes the scaler updates of the last Vector call, unless
// Commit kept them, and forgets the fields it added: the record it
// featurized was refused, and must change nothing.
func (f *Featurizer) Rollback() {
	for k := len(f.undo) - 1; k >= 0; k-- {
		u := f.undo[k]
		f.n[u.s], f.mean[u.s], f.m2[u.s] = u.n, u.mean, u.m2
	}
	f.undo = f.undo[:0]
	if len(f.n) > f.slots {
		for i, s := range f.slot {
			if s >= f.slots {
				delete(f.slot, i)
			}
		}
		f.n, f.mean, f.m2 = f.n[:f.slots], f.mean[:f.slots], f.m2[:f.slots]
	}
}

// ScalerFields is the number of numeric field indices the scaler tracks.
func (f *Featurizer) ScalerFields() int { return len(f.n) }

// MarshalBinary encodes the configuration and the scaler statistics
// (exact float bits), in index order so that equal states encode alike.
// Its first byte is the rules' version (Config.Rules): a featurizer of
// rules 1 writes the bytes the builds before rules 2 wrote.
func (f *Featurizer) MarshalBinary() ([]byte, error) {
	b := []byte{byte(f.cfg.Rules), byte(f.cfg.HashBits), byte(f.cfg.Scale), 0}
	if f.cfg.NormalizeText {
		b[3] |= 1
	}
	if f.cfg.AllowEmpty {
		b[3] |= 2
	}
	keys := make([]uint32, 0, len(f.slot))
	for i := range f.slot {
		keys = append(keys, i)
	}
	slices.Sort(keys)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, i := range keys {
		s := f.slot[i]
		b = binary.AppendUvarint(b, uint64(i))
		b = binary.AppendUvarint(b, f.n[s])
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f.mean[s]))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f.m2[s]))
	}
	return b, nil
}

// Unmarshal rebuilds a Featurizer from MarshalBinary's output.
func Unmarshal(b []byte) (*Featurizer, error) {
	if len(b) < 5 {
		return nil, errors.New("featurizer state: truncated")
	}
	if b[0] < RulesSpelled || b[0] > RulesCurrent {
		return nil, fmt.Errorf("featurizer state: format version %d not supported (this build reads %d and %d)", b[0], RulesSpelled, RulesCurrent)
	}
	if b[3]&^3 != 0 {
		return nil, fmt.Errorf("featurizer state: unknown flags %#x", b[3])
	}
	f, err := New(Config{HashBits: int(b[1]), Scale: Scale(b[2]), NormalizeText: b[3]&1 != 0, AllowEmpty: b[3]&2 != 0, Rules: int(b[0])})
	if err != nil {
		return nil, fmt.Errorf("featurizer state: %w", err)
	}
	b = b[4:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errors.New("featurizer state: bad scaler size")
	}
	b = b[k:]
	prev := int64(-1)
	for range n {
		i, k1 := binary.Uvarint(b)
		if k1 <= 0 {
			return nil, errors.New("featurizer state: truncated")
		}
		b = b[k1:]
		cnt, k2 := binary.Uvarint(b)
		if k2 <= 0 || len(b[k2:]) < 16 {
			return nil, errors.New("featurizer state: truncated")
		}
		b = b[k2:]
		mean := math.Float64frombits(binary.LittleEndian.Uint64(b))
		m2 := math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
		b = b[16:]
		if int64(i) <= prev || i > f.mask || math.IsNaN(mean) || math.IsInf(mean, 0) || !(m2 >= 0) || math.IsInf(m2, 0) {
			return nil, fmt.Errorf("featurizer state: bad scaler entry for index %d", i)
		}
		prev = int64(i)
		f.slot[uint32(i)] = len(f.n)
		f.n, f.mean, f.m2 = append(f.n, cnt), append(f.mean, mean), append(f.m2, m2)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("featurizer state: %d trailing bytes", len(b))
	}
	return f, nil
}

// Tokens splits text as the featurizer does (lowercased runs of letters and
// digits), for displays and tests.
func Tokens(s []byte) []string {
	var out []string
	var tok []byte
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRune(s[i:])
		i += n
		if isWord(r) {
			tok = utf8.AppendRune(tok, unicode.ToLower(r))
			continue
		}
		if len(tok) > 0 {
			out, tok = append(out, string(tok)), tok[:0]
		}
	}
	if len(tok) > 0 {
		out = append(out, string(tok))
	}
	return out
}
