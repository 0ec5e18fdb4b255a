package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// FieldKind says how a named field becomes features.
type FieldKind uint8

// The field kinds. FieldAuto is inference from the value; a decoded Field
// never has it.
const (
	FieldAuto FieldKind = iota
	FieldNumeric
	FieldCategorical
	FieldText
	FieldIgnore
)

var kindNames = [...]string{"auto", "numeric", "categorical", "text", "ignore"}

func (k FieldKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("FieldKind(%d)", k)
}

// ParseFieldKind reads a kind name: numeric, categorical, text or ignore.
func ParseFieldKind(s string) (FieldKind, error) {
	for k, n := range kindNames {
		if k > 0 && n == s {
			return FieldKind(k), nil
		}
	}
	return 0, fmt.Errorf("field kind %q: want numeric, categorical, text or ignore", s)
}

// ParseSchema reads "field:kind,field:kind" (as a --features flag gives
// it) into a schema. A field may appear once.
func ParseSchema(s string) (map[string]FieldKind, error) {
	out := map[string]FieldKind{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, item := range strings.Split(s, ",") {
		name, kind, ok := strings.Cut(strings.TrimSpace(item), ":")
		// The kind is after the last ':' so that field names may hold one.
		if i := strings.LastIndexByte(item, ':'); ok && i >= 0 {
			name, kind = strings.TrimSpace(item[:i]), strings.TrimSpace(item[i+1:])
		}
		if !ok || name == "" {
			return nil, fmt.Errorf("schema item %q: want field:kind", item)
		}
		k, err := ParseFieldKind(kind)
		if err != nil {
			return nil, fmt.Errorf("schema item %q: %w", item, err)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("schema: field %q given twice", name)
		}
		out[name] = k
	}
	return out, nil
}

// DefaultLabelField is the label field when EventConfig.LabelField is "".
const DefaultLabelField = "label"

// EventConfig says how to read events. The zero value reads the label from
// "label", carries no key, and infers every other field's kind.
type EventConfig struct {
	// LabelField names the label. Default "label".
	LabelField string
	// KeyField names the record id carried into predictions. Default "":
	// no key field (every field other than the label is a feature).
	KeyField string
	// Ignore lists fields that are not features.
	Ignore []string
	// Schema fixes the kind of the fields it names; the others are
	// inferred. FieldAuto entries are the same as absent ones.
	Schema map[string]FieldKind
	// Limits bound one message (MaxBytes) and the fields read
	// (MaxNonZeros). MaxIndex and AllowEmpty are the featurizer's business.
	Limits Limits
	// StringsAsText reads every string as its text (categorical, or text
	// by the schema; "" the category "field="), as the builds before the
	// one typing rule did (see TypeString), so that a model restored from
	// their snapshots sees the features it learned. Default false: the
	// typing rule.
	StringsAsText bool
}

// Field is one named field of an event, its name and text held by the
// Event (see Event.Name and Event.Text).
type Field struct {
	// Kind is FieldNumeric (Num holds the value), FieldCategorical (the
	// text is the category, or one token of a bag) or FieldText (the text
	// is free text).
	Kind FieldKind
	Num  float64
	name span
	text span
}

// span is a range of Event.buf.
type span struct{ off, n int32 }

// Event is one decoded named-field record. Its contents live in buffers
// that the next Decode into the same Event reuses, so decoding allocates
// nothing once they have grown; copy what must outlive it.
type Event struct {
	Fields []Field
	buf    []byte
	key    span
	label  span
	hasKey bool
	hasLab bool
	s      scratch
	kinds  kindCache
}

// Name is the field's (flattened) name.
func (e *Event) Name(f Field) []byte { return e.buf[f.name.off : f.name.off+f.name.n] }

// Text is a categorical or text field's text (nil for numeric fields).
func (e *Event) Text(f Field) []byte { return e.buf[f.text.off : f.text.off+f.text.n] }

// NameText is a categorical or text field's name, a zero byte and its
// text, as one slice: the name of a categorical feature (see package
// features), which the event already holds in one piece so that hashing it
// needs no copy.
func (e *Event) NameText(f Field) []byte { return e.buf[f.name.off : f.text.off+f.text.n] }

// Key is the record's key, or nil when it has none.
func (e *Event) Key() []byte {
	if !e.hasKey {
		return nil
	}
	return e.buf[e.key.off : e.key.off+e.key.n]
}

// Label is the canonical label token (see CanonicalLabel), or nil when the
// event is unlabeled.
func (e *Event) Label() []byte {
	if !e.hasLab {
		return nil
	}
	return e.buf[e.label.off : e.label.off+e.label.n]
}

// Reset empties the event, keeping its buffers.
func (e *Event) Reset() {
	e.Fields, e.buf = e.Fields[:0], e.buf[:0]
	e.hasKey, e.hasLab = false, false
}

// EventDecoder reads events as an EventConfig says. It is safe for
// concurrent use; each goroutine decodes into its own Event.
type EventDecoder struct {
	label, key string
	ignore     map[string]bool
	schema     map[string]FieldKind
	lookup     bool // ignore or schema is not empty
	literal    bool // EventConfig.StringsAsText
	lim        Limits
}

// NewEventDecoder checks cfg and prepares a decoder.
func NewEventDecoder(cfg EventConfig) (*EventDecoder, error) {
	d := &EventDecoder{label: cfg.LabelField, key: cfg.KeyField, ignore: map[string]bool{},
		schema: map[string]FieldKind{}, lim: cfg.Limits.withDefaults(), literal: cfg.StringsAsText}
	if d.label == "" {
		d.label = DefaultLabelField
	}
	if d.key == d.label {
		return nil, fmt.Errorf("events: the key field and the label field are both %q", d.key)
	}
	for _, f := range cfg.Ignore {
		if f == "" {
			return nil, errors.New("events: an ignored field has an empty name")
		}
		d.ignore[f] = true
	}
	names := make([]string, 0, len(cfg.Schema))
	for f := range cfg.Schema {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		k := cfg.Schema[f]
		if k > FieldIgnore {
			return nil, fmt.Errorf("events: field %q: invalid kind %d", f, k)
		}
		if f == d.label || (f == d.key && d.key != "") {
			return nil, fmt.Errorf("events: field %q is the label or key field and cannot have a feature kind", f)
		}
		if k != FieldAuto {
			d.schema[f] = k
		}
	}
	d.lookup = len(d.ignore) > 0 || len(d.schema) > 0
	return d, nil
}

// Decode reads one message into ev (which it resets first). Every error it
// returns is an *Error; ev is then unusable until the next Decode.
func (d *EventDecoder) Decode(b []byte, ev *Event) error {
	ev.Reset()
	if err := precheck(b, d.lim); err != nil {
		return err
	}
	ev.s.ents, ev.s.names = ev.s.ents[:0], ev.s.names[:0]
	ev.s.labelSeen, ev.s.keySeen = false, false
	ev.kinds.start(d)
	r := eventReader{jsonDecoder: jsonDecoder{b: b, lim: d.lim, s: &ev.s}, dec: d, ev: ev}
	if err := r.record(); err != nil {
		return err
	}
	return nil
}

// eventReader is one Decode's state: the JSON cursor, the event being
// filled and the flattened name of the current field (in ev.buf, from
// nameAt).
type eventReader struct {
	jsonDecoder
	dec *EventDecoder
	ev  *Event
}

func (r *eventReader) record() *Error {
	r.skipWS()
	if r.peek() != '{' {
		_, n := utf8.DecodeRune(r.b[r.i:])
		return errorf(ReasonInvalidJSON, "top level is not an object: it starts with %s", quote(r.b[r.i:r.i+n]))
	}
	if err := r.object(nil, 1); err != nil {
		return err
	}
	r.skipWS()
	if r.i < len(r.b) {
		return errorf(ReasonInvalidJSON, "offset %d: unexpected data after the event object", r.i)
	}
	return nil
}

// open steps into the container at the cursor, which sits inside depth
// containers, and reports whether it is empty (then also closed).
func (r *eventReader) open(depth int, closer byte) (empty bool, err *Error) {
	if depth > maxDepth {
		return false, errorf(ReasonInvalidJSON, "offset %d: nesting deeper than %d levels", r.i, maxDepth)
	}
	r.i++
	r.skipWS()
	if r.peek() == closer {
		r.i++
		return true, nil
	}
	return false, nil
}

// object reads the object at the cursor; its members are fields named
// prefix + "." + key (just key at the top level).
func (r *eventReader) object(prefix []byte, depth int) *Error {
	if empty, err := r.open(depth, '}'); empty || err != nil {
		return err
	}
	for {
		if r.peek() != '"' {
			return r.unexpected("a string key")
		}
		start, end, esc, err := r.scanString()
		if err != nil {
			return err
		}
		// A top-level key without escapes is its own name, in the input;
		// any other name is built in a scratch buffer (an unescaped key
		// lives in the unescape buffer, which the value overwrites).
		name := r.b[start:end:end]
		if esc {
			name = r.s.name(prefix, r.unescape(name))
		} else if prefix != nil {
			name = r.s.name(prefix, name)
		}
		if err := r.colon(); err != nil {
			return err
		}
		if err := r.value(name, depth); err != nil {
			return err
		}
		more, err := r.afterMember()
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
}

// value reads the value of field name, which sits inside depth containers.
func (r *eventReader) value(name []byte, depth int) *Error {
	d, at := r.dec, r.i
	if string(name) == d.label {
		if r.s.labelSeen {
			return errorf(ReasonInvalidJSON, "offset %d: label field %q appears twice", at, d.label)
		}
		return r.label()
	}
	if d.key != "" && string(name) == d.key {
		return r.key()
	}
	kind := FieldAuto
	if d.lookup {
		kind = r.ev.kinds.kind(name)
	}
	if kind == FieldIgnore {
		return r.skipValue(depth)
	}
	switch c := r.peek(); c {
	case 'n':
		return r.literal("null")
	case 't', 'f':
		v, word := 0.0, falseBytes
		if c == 't' {
			v, word = 1, trueBytes
		}
		if err := r.literal(string(word)); err != nil {
			return err
		}
		if kind == FieldAuto || kind == FieldNumeric {
			return r.addNum(name, v)
		}
		return r.addText(name, kind, word)
	case '"':
		s, err := r.stringValue()
		if err != nil {
			return err
		}
		err, ok := r.str(name, kind, s)
		if !ok {
			return errorf(ReasonBadField, "offset %d: field %s is numeric but holds the string %s", at, quote(name), quote(s))
		}
		return err
	case '{':
		if kind != FieldAuto {
			return errorf(ReasonBadField, "offset %d: field %s is %s but holds an object", at, quote(name), kind)
		}
		return r.object(name, depth+1)
	case '[':
		return r.array(name, kind, depth+1)
	default:
		if c != '-' && !isDigit(c) {
			return r.unexpected("a value")
		}
		v, start, end, ok, err := r.number()
		if err != nil {
			return err
		}
		if !ok {
			return errorf(ReasonNonFinite, "offset %d: field %s: value %s overflows float64", at, quote(name), quote(r.b[start:end]))
		}
		if kind == FieldAuto || kind == FieldNumeric {
			return r.addNum(name, v)
		}
		return r.addText(name, kind, r.b[start:end])
	}
}

// The outcomes of TypeString.
const (
	StringText    = iota // a category, or text by the schema
	StringNumber         // numeric
	StringBoolean        // numeric 1 or 0 (categorical "true"/"false")
	StringMissing        // no feature
)

// TypeString is the typing rule that every event format shares (JSON, CSV,
// Avro, Protobuf, JSON Schema), applied to a field's string value s. A
// string that is a JSON number (and finite) is that number, as a CSV
// cell is: "2" and 2 are one value, so a file written by any CSV writer
// (which cannot tell them apart) gives the features of the JSON it was
// written from. "true" and "false" in any case are booleans and "" is a
// missing value, for the same reason (Python writes True, and None as
// ""). Anything else is text. A field given a kind by the schema takes its
// string as that kind says: categorical keeps a number's text as written,
// text tokenizes it. v is the value of a number or boolean.
func TypeString(s []byte) (outcome int, v float64) {
	if len(s) == 0 {
		return StringMissing, 0
	}
	switch c := s[0] | 0x20; {
	case c == 't' || c == 'f':
		if len(s) == 4 && strings.EqualFold(string(s), "true") {
			return StringBoolean, 1
		}
		if len(s) == 5 && strings.EqualFold(string(s), "false") {
			return StringBoolean, 0
		}
		return StringText, 0
	case s[0] != '-' && !isDigit(s[0]):
		return StringText, 0
	}
	if !isNumberLiteral(s) {
		return StringText, 0
	}
	if v, ok := parseNumber(s); ok {
		return StringNumber, v
	}
	return StringText, 0
}

// mayBeTyped reports whether a string starting with c may be something
// other than text to TypeString: a number, true or false.
func mayBeTyped(c byte) bool {
	return c == '-' || isDigit(c) || c|0x20 == 't' || c|0x20 == 'f'
}

// isNumberLiteral reports whether s is exactly a JSON number.
func isNumberLiteral(s []byte) bool {
	end, want := numberEnd(s, 0)
	return want == "" && end == len(s)
}

// str adds field name's string value s as TypeString and the field's kind
// say. ok is false, and nothing is added, when the kind is numeric and s
// is not a number: the caller says where.
func (r *eventReader) str(name []byte, kind FieldKind, s []byte) (err *Error, ok bool) {
	if kind == FieldAuto && len(s) > 0 && !mayBeTyped(s[0]) {
		// Most strings are words: text at once, without TypeString's call.
		return r.addText(name, FieldCategorical, s), true
	}
	if r.dec.literal {
		switch kind {
		case FieldAuto, FieldCategorical:
			return r.addText(name, FieldCategorical, s), true
		case FieldText:
			return r.addText(name, FieldText, s), true
		}
		return nil, false
	}
	t, v := TypeString(s)
	switch {
	case t == StringMissing:
		return nil, true
	case kind == FieldText:
		return r.addText(name, FieldText, s), true
	case t == StringBoolean && kind == FieldCategorical:
		// The word, as a boolean declared categorical gives it.
		w := falseBytes
		if v == 1 {
			w = trueBytes
		}
		return r.addText(name, FieldCategorical, w), true
	case t == StringText && kind == FieldNumeric:
		return nil, false
	case t == StringText || kind == FieldCategorical:
		return r.addText(name, FieldCategorical, s), true
	}
	return r.addNum(name, v), true
}

// array reads an array: strings are tokens of the field itself, anything
// else is field name.i.
func (r *eventReader) array(name []byte, kind FieldKind, depth int) *Error {
	if empty, err := r.open(depth, ']'); empty || err != nil {
		return err
	}
	for i := 0; ; i++ {
		if r.peek() == '"' {
			at := r.i
			s, err := r.stringValue()
			if err != nil {
				return err
			}
			switch kind {
			case FieldAuto, FieldCategorical:
				err = r.addText(name, FieldCategorical, s)
			case FieldText:
				err = r.addText(name, FieldText, s)
			default:
				err = errorf(ReasonBadField, "offset %d: field %s is numeric but holds a string", at, quote(name))
			}
			if err != nil {
				return err
			}
		} else {
			var idx [20]byte
			elem := r.s.name(name, strconv.AppendInt(idx[:0], int64(i), 10))
			if err := r.value(elem, depth); err != nil {
				return err
			}
		}
		r.skipWS()
		switch r.peek() {
		case ',':
			r.i++
			r.skipWS()
			continue
		case ']':
			r.i++
			return nil
		}
		return r.unexpected("',' or ']'")
	}
}

// count refuses a field beyond the limit. It is small enough to be inlined
// into every field's path; the error is built out of line.
func (r *eventReader) count() *Error {
	if len(r.ev.Fields) >= r.lim.MaxNonZeros {
		return r.tooMany()
	}
	return nil
}

// tooLarge is the error of a numeric field over Limits.MaxAbsValue, built
// out of line so that addNum stays small.
func (r *eventReader) tooLarge(name []byte, v float64) *Error {
	return errorf(ReasonValueTooLarge, "offset %d: field %s: |%g| exceeds the limit %g", r.i, quote(name), v, r.lim.MaxAbsValue)
}

func (r *eventReader) tooMany() *Error {
	return errorf(ReasonTooManyFeatures, "offset %d: more than %d fields", r.i, r.lim.MaxNonZeros)
}

func (r *eventReader) put(b []byte) span {
	s := span{int32(len(r.ev.buf)), int32(len(b))}
	r.ev.buf = append(r.ev.buf, b...)
	return s
}

func (r *eventReader) addNum(name []byte, v float64) *Error {
	if err := r.count(); err != nil {
		return err
	}
	if !(math.Abs(v) <= r.lim.MaxAbsValue) {
		return r.tooLarge(name, v)
	}
	r.ev.Fields = append(r.ev.Fields, Field{Kind: FieldNumeric, Num: v, name: r.put(name)})
	return nil
}

// addText stores name, a zero byte and text in one piece (see NameText).
func (r *eventReader) addText(name []byte, kind FieldKind, text []byte) *Error {
	if err := r.count(); err != nil {
		return err
	}
	buf := r.ev.buf
	off := len(buf)
	buf = append(append(append(buf, name...), 0), text...)
	r.ev.buf = buf
	r.ev.Fields = append(r.ev.Fields, Field{Kind: kind, name: span{int32(off), int32(len(name))},
		text: span{int32(off + len(name) + 1), int32(len(text))}})
	return nil
}

func (r *eventReader) label() *Error {
	r.s.labelSeen = true
	at := r.i
	switch c := r.peek(); c {
	case '"':
		s, err := r.stringValue()
		if err != nil {
			return err
		}
		if len(s) == 0 {
			return errorf(ReasonBadLabel, "offset %d: label is an empty string", at)
		}
		r.ev.label, r.ev.hasLab = r.put(s), true
		return nil
	case 't', 'f':
		word := falseBytes
		if c == 't' {
			word = trueBytes
		}
		if err := r.literal(string(word)); err != nil {
			return err
		}
		r.ev.label, r.ev.hasLab = r.put(word), true
		return nil
	case 'n':
		return r.literal("null")
	case '{', '[':
		if err := r.skipValue(1); err != nil {
			return err
		}
		return errorf(ReasonBadLabel, "offset %d: label is %s; want a number, a boolean, a string or null", at, kindOf(c))
	}
	if c := r.peek(); c != '-' && !isDigit(c) {
		return r.unexpected("a value")
	}
	v, start, end, ok, err := r.number()
	if err != nil {
		return err
	}
	if !ok {
		return errorf(ReasonBadLabel, "offset %d: label %s overflows float64", at, quote(r.b[start:end]))
	}
	if v == 0 {
		v = 0 // -0 is written "0"
	}
	off := len(r.ev.buf)
	r.ev.buf = strconv.AppendFloat(r.ev.buf, v, 'g', -1, 64)
	r.ev.label, r.ev.hasLab = span{int32(off), int32(len(r.ev.buf) - off)}, true
	return nil
}

func (r *eventReader) key() *Error {
	if r.s.keySeen {
		return errorf(ReasonInvalidJSON, "offset %d: key field %q appears twice", r.i, r.dec.key)
	}
	r.s.keySeen = true
	at := r.i
	switch c := r.peek(); {
	case c == '"':
		s, err := r.stringValue()
		if err != nil {
			return err
		}
		r.ev.key, r.ev.hasKey = r.put(s), true
		return nil
	case c == 'n':
		return r.literal("null")
	case c == '-' || isDigit(c):
		start, end, err := r.scanNumber()
		if err != nil {
			return err
		}
		r.ev.key, r.ev.hasKey = r.put(r.b[start:end]), true
		return nil
	case c == 't' || c == 'f' || c == '{' || c == '[':
		if err := r.skipValue(1); err != nil {
			return err
		}
		return errorf(ReasonBadField, "offset %d: key field %q is %s; want a string or a number", at, r.dec.key, kindOf(c))
	}
	return r.unexpected("a value")
}

// eventScratchName builds prefix.key into the scratch name stack.
func (s *scratch) name(prefix, key []byte) []byte {
	if prefix == nil {
		off := len(s.names)
		s.names = append(s.names, key...)
		return s.names[off:len(s.names):len(s.names)]
	}
	off := len(s.names)
	s.names = append(s.names, prefix...)
	s.names = append(s.names, '.')
	s.names = append(s.names, key...)
	return s.names[off:len(s.names):len(s.names)]
}

var trueBytes, falseBytes = []byte("true"), []byte("false")

// FieldKinds lists the schema kinds by name, for help texts.
func FieldKinds() []string { return slices.Clone(kindNames[1:]) }

// Eight bytes at a time: a byte of ones, and the high bit of each byte.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainString steps over the string at the cursor when it holds no escape
// and no control byte, testing eight bytes at a time for '"', '\\' and
// bytes below 0x20 (the byte scan of scanString was a quarter of an
// event's cost), and returns the extent of its contents. ok is false, the
// cursor unmoved, when it meets a '\\' or a control byte first: scanString
// then reads (or refuses) the string.
func (r *eventReader) plainString() (start, end int, ok bool) {
	b := r.b
	i := r.i + 1
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		q, s := w^('"'*ones), w^('\\'*ones)
		// (x - ones) &^ x flags x's zero bytes and (w - 0x20·ones) &^ w
		// the bytes of w below 0x20; a flag can be false only above a true
		// one (a borrow), so the lowest flag is the first special byte.
		if m := ((q-ones)&^q | (s-ones)&^s | (w-0x20*ones)&^w) & highs; m != 0 {
			i += bits.TrailingZeros64(m) / 8
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' {
			start, r.i = r.i+1, i+1
			return start, i, true
		} else if c == '\\' || c < 0x20 {
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// scanString is jsonDecoder.scanString with plainString's fast path, for
// every string of an event but those in skipped values.
func (r *eventReader) scanString() (start, end int, esc bool, err *Error) {
	if start, end, ok := r.plainString(); ok {
		return start, end, false, nil
	}
	return r.jsonDecoder.scanString()
}

// stringValue is jsonDecoder.stringValue with plainString's fast path.
func (r *eventReader) stringValue() ([]byte, *Error) {
	if start, end, ok := r.plainString(); ok {
		return r.b[start:end], nil
	}
	return r.jsonDecoder.stringValue()
}

// number reads the number at the cursor and returns its value and extent.
// The short decimals that fastFloat converts (at most 15 digits, no
// exponent) are checked and converted in one pass with fastFloat's
// arithmetic, so the bits are the same; any other number goes through
// scanNumber and parseNumber. ok is false when it overflows float64.
func (r *eventReader) number() (v float64, start, end int, ok bool, err *Error) {
	b, i := r.b, r.i
	start = i
	if i < len(b) && b[i] == '-' {
		i++
	}
	first := i
	var m uint64
	for ; i < len(b) && isDigit(b[i]); i++ {
		m = m*10 + uint64(b[i]-'0')
	}
	nd, frac := i-first, 0
	if i < len(b) && b[i] == '.' {
		i++
		f0 := i
		for ; i < len(b) && isDigit(b[i]); i++ {
			m = m*10 + uint64(b[i]-'0')
		}
		frac = i - f0
		if frac == 0 {
			nd = 0 // "1." is not JSON: let scanNumber say so
		}
	}
	// The grammar's leading zeros and exponents, and long mantissas (which
	// may also have wrapped m), are left to the general path.
	if nd == 0 || nd > 1 && b[first] == '0' || nd+frac > 15 || i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if start, end, err = r.scanNumber(); err != nil {
			return 0, 0, 0, false, err
		}
		v, ok = parseNumber(b[start:end])
		return v, start, end, ok, nil
	}
	v = float64(m)
	if frac > 0 {
		v /= pow10[frac]
	}
	if start != first {
		v = -v
	}
	r.i = i
	return v, start, i, true, nil
}

// colon is jsonDecoder.colon, at once when no blank surrounds the ':' (a
// producer's compact JSON): the blank tests around every key and value
// were a tenth of an event's cost.
func (r *eventReader) colon() *Error {
	if i := r.i; i+1 < len(r.b) && r.b[i] == ':' && r.b[i+1] > ' ' {
		r.i = i + 1
		return nil
	}
	return r.jsonDecoder.colon()
}

// afterMember is jsonDecoder.afterMember, at once for a ',' that no blank
// surrounds.
func (r *eventReader) afterMember() (more bool, err *Error) {
	if i := r.i; i+1 < len(r.b) && r.b[i] == ',' && r.b[i+1] > ' ' {
		r.i = i + 1
		return true, nil
	}
	return r.jsonDecoder.afterMember()
}

// kindOf is the kind that the ignore list and the schema give field name.
func (d *EventDecoder) kindOf(name []byte) FieldKind {
	if d.ignore[string(name)] {
		return FieldIgnore
	}
	if k, ok := d.schema[string(name)]; ok {
		return k
	}
	return FieldAuto
}

// kindCache remembers, for the n-th field of a record whose kind was
// looked up, its name and the kind that EventDecoder.kindOf gave it. The
// events of a stream repeat their fields in one order, so one comparison
// with the name seen at that place in the last record replaces two map
// lookups, which made an Adult record with an ignore list and a schema
// half as slow again to decode.
type kindCache struct {
	dec   *EventDecoder
	n     int // lookups in this record so far
	slots []kindSlot
}

type kindSlot struct {
	name []byte
	kind FieldKind
}

// maxKindSlots bounds the names remembered for a record.
const maxKindSlots = 256

// start begins a record decoded by d; a cache filled by another decoder is
// forgotten.
func (c *kindCache) start(d *EventDecoder) {
	if c.dec != d {
		c.dec, c.slots = d, c.slots[:0]
	}
	c.n = 0
}

// kind is c.dec.kindOf(name), from the cache when the record's n-th
// lookup has the name that it had last time.
func (c *kindCache) kind(name []byte) FieldKind {
	n := c.n
	c.n++
	if n < len(c.slots) && string(c.slots[n].name) == string(name) {
		return c.slots[n].kind
	}
	k := c.dec.kindOf(name)
	if n < len(c.slots) {
		c.slots[n] = kindSlot{append(c.slots[n].name[:0], name...), k}
	} else if n == len(c.slots) && n < maxKindSlots {
		c.slots = append(c.slots, kindSlot{append([]byte(nil), name...), k})
	}
	return k
}
