package codec

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// Default limits, used for the zero fields of a Limits.
const (
	defaultMaxBytes    = 1 << 20
	defaultMaxIndex    = 1 << 24
	defaultMaxNonZeros = 1 << 16
	defaultMaxAbsValue = 1e15
)

// Limits bound what one record may cost, so that a bad producer cannot
// exhaust memory. The zero value takes every default.
type Limits struct {
	// MaxBytes is the largest message accepted, in bytes. Zero or negative
	// means 1 MiB (1<<20).
	MaxBytes int
	// MaxIndex is the largest feature index accepted. Zero means 1<<24,
	// which covers the usual hashed feature spaces; indices start at 0.
	MaxIndex uint32
	// MaxNonZeros is the largest number of features one record may list,
	// zeros included, since they are counted before being dropped. Zero or
	// negative means 1<<16.
	MaxNonZeros int
	// MaxAbsValue is the largest feature magnitude accepted; larger values
	// are refused with value_too_large. Zero or negative means 1e15: above
	// any count, amount or epoch-millisecond time a record plausibly
	// carries, and low enough that ‖x‖² of MaxNonZeros such values stays
	// finite. A value like 1e308 passes as a float but overflows every
	// kernel that squares it.
	MaxAbsValue float64
	// AllowEmpty accepts a record with no non-zero feature (LIBSVM files may
	// hold such lines). The default, false, rejects it with empty_features:
	// an empty vector carries nothing to learn or predict from.
	AllowEmpty bool
	// LabelOnly accepts a record that lists no feature at all — a JSON
	// record without "features" (or with an empty object), a LIBSVM line
	// of a label alone — and marks it Example.LabelOnly: how a label sent
	// after its record reads (delayed labels). A record whose features are
	// all zero is still empty_features. Default false. (Omitted from
	// JSON when false, so that configurations saved before it read the same.)
	LabelOnly bool `json:",omitempty"`
}

// WithDefaults returns l with its zero fields set to the defaults the
// decoders use.
func (l Limits) WithDefaults() Limits { return l.withDefaults() }

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = defaultMaxBytes
	}
	if l.MaxIndex == 0 {
		l.MaxIndex = defaultMaxIndex
	}
	if l.MaxNonZeros <= 0 {
		l.MaxNonZeros = defaultMaxNonZeros
	}
	if !(l.MaxAbsValue > 0) {
		l.MaxAbsValue = defaultMaxAbsValue
	}
	return l
}

// Example is one decoded record.
type Example struct {
	// X holds the features: indices strictly increasing, values finite and
	// non-zero. An empty X has nil slices.
	X sparse.Vector
	// Label is the canonical label token (see CanonicalLabel), or "" when the
	// record carries no label.
	Label string
	// LabelOnly marks a record that listed no feature, accepted as a label
	// message under Limits.LabelOnly (X is empty).
	LabelOnly bool
}

// Reason says, in a word fit for a metric label or a message header, why a
// record was rejected.
type Reason string

// The reasons a record can be rejected for. The package comment says when
// each one applies.
const (
	ReasonEmptyMessage    Reason = "empty_message"
	ReasonTooLarge        Reason = "too_large"
	ReasonInvalidUTF8     Reason = "invalid_utf8"
	ReasonInvalidJSON     Reason = "invalid_json"
	ReasonInvalidLIBSVM   Reason = "invalid_libsvm"
	ReasonBadLabel        Reason = "bad_label"
	ReasonNonFinite       Reason = "non_finite"
	ReasonBadIndex        Reason = "bad_index"
	ReasonIndexTooLarge   Reason = "index_too_large"
	ReasonDuplicateIndex  Reason = "duplicate_index"
	ReasonTooManyFeatures Reason = "too_many_features"
	ReasonEmptyFeatures   Reason = "empty_features"
	ReasonValueTooLarge   Reason = "value_too_large"
	ReasonMissingFeatures Reason = "missing_features"
	ReasonBadField        Reason = "bad_field"
	ReasonTooManyClasses  Reason = "too_many_classes"
	// The reasons of a label sent after its record (delayed labels),
	// reported by the model.
	ReasonLabelUnknown = Reason("label_unknown")
	ReasonLabelExpired = Reason("label_expired")
	ReasonLabelEvicted = Reason("label_evicted")
	ReasonLabelNoKey   = Reason("label_without_key")
	// ReasonKeyTooLarge: a record to hold for its label has a key longer
	// than the pending store takes (--pending-max-key-bytes).
	ReasonKeyTooLarge = Reason("key_too_large")
	// The reasons of records in the Confluent wire format (FramedDecoder).
	ReasonBadFraming     = Reason("bad_framing")
	ReasonUnknownSchema  = Reason("unknown_schema")
	ReasonSchemaMismatch = Reason("schema_mismatch")
	// ReasonSchemaTooLarge: the record's schema is larger than the service
	// takes from the registry (--schema-max-bytes).
	ReasonSchemaTooLarge = Reason("schema_too_large")
	// ReasonBadSchema: the registry answered the record's schema whole,
	// and it cannot be compiled (or, validated, could take unbounded
	// work): the compile error says why.
	ReasonBadSchema = Reason("bad_schema")
)

// Reasons returns every Reason this package can report, so that metrics can
// register their label values up front. The slice is fresh on each call.
func Reasons() []Reason {
	return []Reason{
		ReasonEmptyMessage,
		ReasonTooLarge,
		ReasonInvalidUTF8,
		ReasonInvalidJSON,
		ReasonInvalidLIBSVM,
		ReasonBadLabel,
		ReasonNonFinite,
		ReasonBadIndex,
		ReasonIndexTooLarge,
		ReasonDuplicateIndex,
		ReasonTooManyFeatures,
		ReasonEmptyFeatures,
		ReasonMissingFeatures,
		ReasonValueTooLarge,
		ReasonBadField,
		ReasonTooManyClasses,
		ReasonLabelUnknown,
		ReasonLabelExpired,
		ReasonLabelEvicted,
		ReasonLabelNoKey,
		ReasonKeyTooLarge,
		ReasonBadFraming,
		ReasonUnknownSchema,
		ReasonSchemaMismatch,
		ReasonSchemaTooLarge,
		ReasonBadSchema,
	}
}

// Error is the error returned for a rejected record or label.
type Error struct {
	Reason Reason // machine-readable cause
	Detail string // what was wrong and where, for people

	unlisted bool // see Unlisted
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return "codec: " + string(e.Reason)
	}
	return "codec: " + string(e.Reason) + ": " + e.Detail
}

func errorf(r Reason, format string, args ...any) *Error {
	return &Error{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// maxQuoted bounds how much of the input an error detail repeats, so that a
// detail stays readable and fits in a message header.
const maxQuoted = 32

// quote renders an input fragment for an error detail, shortened to
// maxQuoted bytes on a rune boundary.
func quote(b []byte) string {
	if len(b) <= maxQuoted {
		return strconv.Quote(string(b))
	}
	n := maxQuoted
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return strconv.Quote(string(b[:n])) + "..."
}

func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// firstNonBlank returns the position of the first byte that is not blank, or
// len(b).
func firstNonBlank(b []byte) int {
	i := 0
	for i < len(b) && isBlank(b[i]) {
		i++
	}
	return i
}

// precheck runs the message-level checks shared by both formats, in their
// documented order. lim must have its defaults filled in.
func precheck(b []byte, lim Limits) *Error {
	if firstNonBlank(b) == len(b) {
		if len(b) == 0 {
			return errorf(ReasonEmptyMessage, "message has no bytes")
		}
		return errorf(ReasonEmptyMessage, "message holds only blanks (%d bytes)", len(b))
	}
	if len(b) > lim.MaxBytes {
		return errorf(ReasonTooLarge, "message has %d bytes, limit is %d", len(b), lim.MaxBytes)
	}
	if !utf8.Valid(b) {
		return errorf(ReasonInvalidUTF8, "message is not valid UTF-8 (first bad byte at offset %d)", firstInvalidUTF8(b))
	}
	return nil
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// Decode decodes one message, JSON when its first non-blank byte is '{' and
// LIBSVM otherwise. Every error it returns is an *Error.
func Decode(b []byte, lim Limits) (Example, error) {
	ex, err := decode(b, lim.withDefaults(), nil)
	if err != nil {
		return Example{}, err
	}
	return ex, nil
}

// decode is Decode with lim's defaults filled in, a LIBSVM record read
// with s (nil: a pooled scratch).
func decode(b []byte, lim Limits, s *scratch) (Example, *Error) {
	if k := firstNonBlank(b); k == len(b) || b[k] != '{' {
		if s != nil {
			return decodeLIBSVM(b, lim, s)
		}
		s = getScratch()
		ex, err := decodeLIBSVM(b, lim, s)
		putScratch(s)
		return ex, err
	}
	if err := precheck(b, lim); err != nil {
		return Example{}, err
	}
	ex, err := decodeJSON(b, lim, s) // nil s: a pooled scratch, fresh arrays
	if err == nil {
		err = checkValues(ex, lim)
	}
	if err != nil {
		return Example{}, err
	}
	return ex, nil
}

// DecodeJSON decodes one JSON record. Every error it returns is an *Error.
func DecodeJSON(b []byte, lim Limits) (Example, error) {
	lim = lim.withDefaults()
	if err := precheck(b, lim); err != nil {
		return Example{}, err
	}
	ex, err := decodeJSON(b, lim, nil)
	if err == nil {
		err = checkValues(ex, lim)
	}
	if err != nil {
		return Example{}, err
	}
	return ex, nil
}

// DecodeLIBSVM decodes one LIBSVM line. Every error it returns is an *Error.
func DecodeLIBSVM(line []byte, lim Limits) (Example, error) {
	s := getScratch()
	ex, err := decodeLIBSVM(line, lim.withDefaults(), s)
	putScratch(s)
	if err != nil {
		return Example{}, err
	}
	return ex, nil
}

// A Decoder decodes records one after another as Decode does, but cuts
// the vectors of LIBSVM records out of arrays it keeps and reuses after
// Reset, where Decode allocates two arrays for each: a reader that is done
// with a run of records before it decodes the next run allocates nothing
// in the steady state, whether the records are LIBSVM lines or JSON
// objects. A Decoder is not safe for concurrent use.
type Decoder struct {
	lim Limits
	s   scratch
	// keep bounds the entries (and keep*4 the string bytes) kept across
	// a Reset; 0: maxPooledEntries (and 64 KiB).
	keep int
}

// NewDecoder returns a Decoder under lim (zero fields take the defaults),
// for runs of records: its storage grows in steps of a few hundred a9a
// records.
func NewDecoder(lim Limits) *Decoder {
	return &Decoder{lim: lim.withDefaults(), s: scratch{arena: &arena{}}}
}

// recordKeep is the most entries a record Decoder keeps across a Reset:
// a larger record's storage is dropped, as Decode would drop it.
const recordKeep = 1024

// NewRecordDecoder returns a Decoder for one record at a time, Reset
// before each: its storage is the size of the records it has read, up to
// recordKeep entries, so that a Decoder for each of hundreds of
// partitions costs a few hundred bytes, not a run's arena.
func NewRecordDecoder(lim Limits) *Decoder {
	return &Decoder{lim: lim.withDefaults(), s: scratch{arena: &arena{min: 1, keep: recordKeep}}, keep: recordKeep}
}

// Decode decodes b as Decode does. The vector it returns, like every
// vector decoded since the last Reset, is valid until the next Reset; the
// caller copies what it keeps longer (sparse.Vector.Clone).
func (d *Decoder) Decode(b []byte) (Example, error) {
	ex, err := decode(b, d.lim, &d.s)
	if err != nil {
		return Example{}, err
	}
	return ex, nil
}

// Reset lets the next records reuse the storage of every vector decoded so
// far. Storage grown for a huge record is dropped, as the pool drops it.
func (d *Decoder) Reset() {
	d.s.arena.reset()
	keep, keepBytes := maxPooledEntries, 1<<16
	if d.keep > 0 {
		keep, keepBytes = d.keep, 4*d.keep
	}
	if cap(d.s.ents) > keep || cap(d.s.idx) > keep {
		d.s.ents, d.s.idx, d.s.val = nil, nil, nil
	}
	if cap(d.s.buf) > keepBytes {
		d.s.buf = nil
	}
}

// checkValues refuses a feature whose magnitude exceeds lim.MaxAbsValue.
func checkValues(ex Example, lim Limits) *Error {
	for i, v := range ex.X.Val {
		if math.Abs(v) > lim.MaxAbsValue {
			return errorf(ReasonValueTooLarge, "feature %d: |%g| exceeds the limit %g", ex.X.Idx[i], v, lim.MaxAbsValue)
		}
	}
	return nil
}

// entry is one feature as read, before sorting and dropping zeros.
type entry struct {
	idx uint32
	val float64
}

// scratch holds the buffers a decoder needs while it reads a record; they
// are pooled so that a decode allocates little more than its result.
type scratch struct {
	ents []entry
	buf  []byte // unescaped JSON strings

	// For events: flattened field names, and the label and key seen.
	names              []byte
	labelSeen, keySeen bool
	// For protobuf events: occurrences of each field of the messages
	// being read.
	counts []int32

	// For LIBSVM records: the entries read, in a pooled scratch, before
	// they are copied into the vector's own arrays.
	idx []uint32
	val []float64
	// arena, a Decoder's, holds the vectors' entries; nil (a pooled
	// scratch): each vector gets arrays of its own.
	arena *arena
}

// arena hands out runs of entries from arrays that vectors share, each
// run capped so that an append to one vector cannot reach the next.
type arena struct {
	idx []uint32
	val []float64
	// min is the fewest entries allocated at once, keep the most kept
	// across a reset; 0: minArena, maxArena.
	min, keep int
}

// minArena is the fewest entries an arena allocates at once: a few
// hundred a9a records.
const minArena = 4096

// maxArena bounds the entries an arena keeps across a reset: more is the
// trace of a huge record, not of the usual run.
const maxArena = 1 << 20

// room returns the next n entries of the arena to write, without taking
// them: vector(k) then cuts the first k as a vector. When the arrays are
// full it moves to new ones twice as large; the vectors already cut keep
// the old ones alive until they are dropped.
func (a *arena) room(n int) ([]uint32, []float64) {
	k := len(a.idx)
	if k+n > cap(a.idx) {
		c := max(2*cap(a.idx), n, cmp.Or(a.min, minArena))
		a.idx, a.val = make([]uint32, 0, c), make([]float64, 0, c)
		k = 0
	}
	return a.idx[k : k+n], a.val[k : k+n]
}

// vector cuts the next n entries (n > 0) as a vector, capped so that an
// append to it cannot reach the next one.
func (a *arena) vector(n int) sparse.Vector {
	a.room(n)
	k := len(a.idx)
	a.idx, a.val = a.idx[:k+n], a.val[:k+n]
	return sparse.Vector{Idx: a.idx[k : k+n : k+n], Val: a.val[k : k+n : k+n]}
}

func (a *arena) reset() {
	if cap(a.idx) > cmp.Or(a.keep, maxArena) {
		a.idx, a.val = nil, nil
	}
	a.idx, a.val = a.idx[:0], a.val[:0]
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// maxPooledEntries keeps a rare huge record from pinning its buffer in the
// pool for good.
const maxPooledEntries = 1 << 14

func getScratch() *scratch {
	s := scratchPool.Get().(*scratch)
	s.ents = s.ents[:0]
	s.buf = s.buf[:0]
	return s
}

func putScratch(s *scratch) {
	if cap(s.ents) > maxPooledEntries || cap(s.idx) > maxPooledEntries || cap(s.buf) > 1<<16 {
		return
	}
	scratchPool.Put(s)
}

// finish turns the entries read into a validated vector: it sorts them when
// they came out of order, rejects duplicates, drops zeros and applies
// AllowEmpty. sorted says whether the entries are already in increasing
// index order without repeats.
func finish(ents []entry, sorted bool, lim Limits) (sparse.Vector, *Error) {
	return finishIn(ents, sorted, lim, nil)
}

// finishIn is finish with the vector's storage from a (fresh arrays when a
// is nil).
func finishIn(ents []entry, sorted bool, lim Limits, a *arena) (sparse.Vector, *Error) {
	if !sorted {
		sortEntries(ents)
		for k := 1; k < len(ents); k++ {
			if ents[k].idx == ents[k-1].idx {
				return sparse.Vector{}, errorf(ReasonDuplicateIndex, "feature %d appears more than once", ents[k].idx)
			}
		}
	}
	n := 0
	for _, e := range ents {
		if e.val != 0 {
			n++
		}
	}
	if n == 0 {
		if !lim.AllowEmpty && !(lim.LabelOnly && len(ents) == 0) {
			if len(ents) == 0 {
				return sparse.Vector{}, errorf(ReasonEmptyFeatures, "record lists no feature")
			}
			return sparse.Vector{}, errorf(ReasonEmptyFeatures, "all %d features of the record are zero", len(ents))
		}
		return sparse.Vector{}, nil
	}
	var v sparse.Vector
	if a != nil {
		v = a.vector(n)
	} else {
		v = sparse.Vector{Idx: make([]uint32, n), Val: make([]float64, n)}
	}
	k := 0
	for _, e := range ents {
		if e.val != 0 {
			v.Idx[k] = e.idx
			v.Val[k] = e.val
			k++
		}
	}
	return v, nil
}

func sortEntries(ents []entry) {
	slices.SortFunc(ents, func(a, b entry) int { return cmp.Compare(a.idx, b.idx) })
}
