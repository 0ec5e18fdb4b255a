package codec

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// Format is how the records of a topic are written: plain JSON events, or
// events framed in the Confluent wire format (a zero byte, a 4-byte
// big-endian schema id, then the payload) with their schema kept in a
// Schema Registry.
type Format uint8

// The formats. FormatRegistry takes a framed record of any schema type
// (what --input auto settles on when a registry is configured).
const (
	FormatJSON Format = iota
	FormatAvro
	FormatProtobuf
	FormatJSONSchema
	FormatRegistry
)

var formatNames = [...]string{"events", "avro", "protobuf", "json-schema", "registry"}

func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", f)
}

// Framed reports whether records of the format carry the wire format's
// header and need a schema source.
func (f Format) Framed() bool { return f != FormatJSON }

// ParseFormat reads a format name as String writes it.
func ParseFormat(s string) (Format, error) {
	for f, n := range formatNames {
		if n == s {
			return Format(f), nil
		}
	}
	return 0, fmt.Errorf("format %q: want events, avro, protobuf, json-schema or registry", s)
}

// SchemaType is the type a registry gives a schema.
type SchemaType uint8

// The schema types, by the registry's names (AVRO is the registry's
// default when a schema has none).
const (
	SchemaAvro SchemaType = iota
	SchemaProtobuf
	SchemaJSON
)

var schemaTypeNames = [...]string{"AVRO", "PROTOBUF", "JSON"}

func (t SchemaType) String() string {
	if int(t) < len(schemaTypeNames) {
		return schemaTypeNames[t]
	}
	return fmt.Sprintf("SchemaType(%d)", t)
}

// ParseSchemaType reads a registry's schemaType ("" is AVRO).
func ParseSchemaType(s string) (SchemaType, error) {
	if s == "" {
		return SchemaAvro, nil
	}
	for t, n := range schemaTypeNames {
		if n == s {
			return SchemaType(t), nil
		}
	}
	return 0, fmt.Errorf("schema type %q: want AVRO, PROTOBUF or JSON", s)
}

// fits says which schema types a format takes.
func (f Format) fits(t SchemaType) bool {
	switch f {
	case FormatAvro:
		return t == SchemaAvro
	case FormatProtobuf:
		return t == SchemaProtobuf
	case FormatJSONSchema:
		return t == SchemaJSON
	}
	return f == FormatRegistry
}

// Schema is a registered schema made ready to decode with. It is
// immutable, so one Schema serves every partition's decoder at once.
type Schema struct {
	ID   uint32
	Type SchemaType
	avro *avroNode
	pb   *protoFile
	json *jsonSchema // with SchemaOptions.ValidateJSON
}

// SchemaOptions are how CompileSchemaWith prepares a schema.
type SchemaOptions struct {
	// ValidateJSON compiles a JSON Schema so that each payload is
	// validated against it: one that does not follow it is
	// schema_mismatch. Off, as Confluent's deserializer by default
	// (json.fail.invalid.schema=false), payloads are only read.
	ValidateJSON bool
}

// CompileSchema prepares a schema as a registry returns it: its type and
// text, and (Protobuf) the text of the files it imports, by import path.
// Imports of google/protobuf/*.proto need no text.
func CompileSchema(id uint32, typ SchemaType, text string, imports map[string]string) (*Schema, error) {
	return CompileSchemaWith(id, typ, text, imports, SchemaOptions{})
}

// CompileSchemaWith is CompileSchema with options. The imports of a JSON
// Schema are the schemas it references, by the name its $ref uses.
func CompileSchemaWith(id uint32, typ SchemaType, text string, imports map[string]string, opts SchemaOptions) (*Schema, error) {
	s := &Schema{ID: id, Type: typ}
	var err error
	switch typ {
	case SchemaAvro:
		s.avro, err = compileAvro(text)
	case SchemaProtobuf:
		s.pb, err = compileProto(text, imports)
	case SchemaJSON:
		// The payload is read as a JSON event, validated only when asked.
		// The text must be JSON: anything else (an empty answer) is not a
		// schema.
		switch {
		case !json.Valid([]byte(text)):
			err = errors.New("the schema is not a JSON value")
		case opts.ValidateJSON:
			s.json, err = compileJSONSchema(text, imports)
		}
	default:
		err = fmt.Errorf("unknown schema type %d", typ)
	}
	if err != nil {
		return nil, fmt.Errorf("schema %d (%s): %w", id, typ, err)
	}
	return s, nil
}

// SchemaSource gives the compiled schema of an id. It must not block:
// whoever feeds a decoder fetches schemas beforehand (package schemareg
// waits for a registry that is down), so that a decoder stays pure.
type SchemaSource interface {
	// Schema returns the schema of id, an error wrapping ErrUnknownSchema
	// when the registry does not have it, or any other error when it is
	// not at hand (not fetched yet).
	Schema(id uint32) (*Schema, error)
}

// ErrUnknownSchema marks a schema id that the registry does not know (or
// a schema source does not hold): the record is a dead letter.
var ErrUnknownSchema = errors.New("unknown schema")

// ErrSchemaTooLarge marks a schema id whose schema is larger than the
// service takes: the record is a dead letter (schema_too_large).
var ErrSchemaTooLarge = errors.New("schema too large")

// ErrBadSchema marks a schema id whose schema, answered whole, cannot be
// compiled: the record is a dead letter (bad_schema).
var ErrBadSchema = errors.New("schema cannot be used")

// StaticSchemas is a SchemaSource of schemas known up front (the schema of
// an Avro object container file, a --schema file).
type StaticSchemas map[uint32]*Schema

// Schema implements SchemaSource.
func (s StaticSchemas) Schema(id uint32) (*Schema, error) {
	if sc, ok := s[id]; ok {
		return sc, nil
	}
	return nil, fmt.Errorf("schema id %d: %w", id, ErrUnknownSchema)
}

// wireHeader is the magic byte and the schema id.
const wireHeader = 5

// Frame splits a framed record into its schema id and payload; a record
// without the wire format's header is bad_framing.
func Frame(b []byte) (id uint32, payload []byte, err error) {
	if len(b) < wireHeader || b[0] != 0 {
		return 0, nil, badFraming(b)
	}
	return binary.BigEndian.Uint32(b[1:5]), b[wireHeader:], nil
}

func badFraming(b []byte) *Error {
	switch {
	case len(b) == 0:
		return errorf(ReasonEmptyMessage, "message has no bytes")
	case b[0] != 0:
		return errorf(ReasonBadFraming, "no wire-format header: the first byte is 0x%02x, not the magic byte 0 (is the topic plain JSON? then --input events)", b[0])
	}
	return errorf(ReasonBadFraming, "message has %d bytes: shorter than the wire format's 5-byte header", len(b))
}

// AppendFrame appends the wire format's header for schema id to dst.
func AppendFrame(dst []byte, id uint32) []byte {
	return binary.BigEndian.AppendUint32(append(dst, 0), id)
}

// FramedDecoder reads records in the wire format into events, as
// EventDecoder reads JSON ones, with the same EventConfig: the same values
// give the same fields, whatever the format (see the package comment).
type FramedDecoder struct {
	ev     *EventDecoder
	format Format
	src    SchemaSource
}

// NewFramedDecoder prepares a decoder of format f (not FormatJSON) whose
// schemas come from src.
func NewFramedDecoder(cfg EventConfig, f Format, src SchemaSource) (*FramedDecoder, error) {
	if !f.Framed() || int(f) >= len(formatNames) {
		return nil, fmt.Errorf("framed decoder: format %s is not framed", f)
	}
	if src == nil {
		return nil, errors.New("framed decoder: no schema source (a schema registry)")
	}
	ev, err := NewEventDecoder(cfg)
	if err != nil {
		return nil, err
	}
	return &FramedDecoder{ev: ev, format: f, src: src}, nil
}

// Format is the decoder's format.
func (d *FramedDecoder) Format() Format { return d.format }

// Decode reads one framed record into ev, resetting it first. Errors are
// *Error but for a schema that src does not have at hand (none of
// ErrUnknownSchema, ErrSchemaTooLarge, ErrBadSchema), which is returned as it is: the
// caller fetches it and tries again.
func (d *FramedDecoder) Decode(b []byte, ev *Event) error {
	ev.Reset()
	if len(b) > d.ev.lim.MaxBytes {
		return errorf(ReasonTooLarge, "message has %d bytes, limit is %d", len(b), d.ev.lim.MaxBytes)
	}
	id, payload, err := Frame(b)
	if err != nil {
		return err
	}
	s, err := d.src.Schema(id)
	if err != nil {
		switch {
		case errors.Is(err, ErrUnknownSchema):
			return errorf(ReasonUnknownSchema, "%v", err)
		case errors.Is(err, ErrSchemaTooLarge):
			return errorf(ReasonSchemaTooLarge, "%v", err)
		case errors.Is(err, ErrBadSchema):
			return errorf(ReasonBadSchema, "%v", err)
		}
		return err
	}
	return d.DecodePayload(s, payload, ev)
}

// DecodePayload reads a payload written with schema s (the wire header
// already taken off, or none: an object container file's datum) into ev.
func (d *FramedDecoder) DecodePayload(s *Schema, payload []byte, ev *Event) error {
	ev.Reset()
	if !d.format.fits(s.Type) {
		return errorf(ReasonSchemaMismatch, "schema %d is %s, the input is %s", s.ID, s.Type, d.format)
	}
	if s.Type == SchemaJSON {
		if err := d.ev.Decode(payload, ev); err != nil {
			return err
		}
		if s.json != nil {
			return validateJSON(s, payload)
		}
		return nil
	}
	ev.s.ents, ev.s.names = ev.s.ents[:0], ev.s.names[:0]
	ev.s.labelSeen, ev.s.keySeen = false, false
	ev.s.counts = ev.s.counts[:0]
	ev.kinds.start(d.ev)
	w := walker{eventReader: eventReader{jsonDecoder: jsonDecoder{lim: d.ev.lim, s: &ev.s}, dec: d.ev, ev: ev}, p: payload}
	var err *Error
	if s.avro != nil {
		err = w.avroRecord(s.avro)
	} else {
		err = w.protoTop(s.pb)
	}
	if err != nil {
		return err
	}
	return nil
}

// walker reads a binary payload into an event with the field rules of
// eventReader, whose adders it shares: the payload is p, the cursor i.
type walker struct {
	eventReader
	p   []byte
	at  int
	num [32]byte
}

// mismatch is a payload that does not follow its schema.
func (w *walker) mismatch(format string, args ...any) *Error {
	return errorf(ReasonSchemaMismatch, "payload byte %d: "+format, append([]any{w.at}, args...)...)
}

func (w *walker) truncated() *Error {
	return w.mismatch("the payload ends inside a value (%d bytes; truncated, or written with another schema)", len(w.p))
}

// role is what a field name is to the decoder: the label, the key, or a
// feature of a kind.
func (w *walker) role(name []byte) (label, key bool, kind FieldKind) {
	d := w.dec
	if string(name) == d.label {
		return true, false, FieldAuto
	}
	if d.key != "" && string(name) == d.key {
		return false, true, FieldAuto
	}
	if d.lookup {
		return false, false, w.ev.kinds.kind(name)
	}
	return false, false, FieldAuto
}

// The typed adders: a value of a binary format, taken as its JSON
// counterpart would be (see eventReader.value).

func (w *walker) number(name []byte, kind FieldKind, v float64, text []byte) *Error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return errorf(ReasonNonFinite, "payload byte %d: field %s is %v", w.at, quote(name), v)
	}
	if kind == FieldAuto || kind == FieldNumeric {
		return w.addNum(name, v)
	}
	return w.addText(name, kind, text)
}

func (w *walker) boolean(name []byte, kind FieldKind, v bool) *Error {
	f, word := 0.0, falseBytes
	if v {
		f, word = 1, trueBytes
	}
	if kind == FieldAuto || kind == FieldNumeric {
		return w.addNum(name, f)
	}
	return w.addText(name, kind, word)
}

// text takes a string field's value by the typing rule (TypeString).
func (w *walker) text(name []byte, kind FieldKind, s []byte) *Error {
	if !utf8.Valid(s) {
		return errorf(ReasonInvalidUTF8, "payload byte %d: field %s: a string that is not valid UTF-8", w.at, quote(name))
	}
	err, ok := w.str(name, kind, s)
	if !ok {
		return errorf(ReasonBadField, "payload byte %d: field %s is numeric but holds the string %s", w.at, quote(name), quote(s))
	}
	return err
}

// token takes a string as its text, untyped: an element of a list of
// strings (a bag of tokens, as a JSON array of strings) or an enum's
// symbol, which is a name.
func (w *walker) token(name []byte, kind FieldKind, s []byte) *Error {
	if !utf8.Valid(s) {
		return errorf(ReasonInvalidUTF8, "payload byte %d: field %s: a string that is not valid UTF-8", w.at, quote(name))
	}
	switch kind {
	case FieldAuto, FieldCategorical:
		return w.addText(name, FieldCategorical, s)
	case FieldText:
		return w.addText(name, FieldText, s)
	}
	return errorf(ReasonBadField, "payload byte %d: field %s is numeric but holds a string", w.at, quote(name))
}

// container checks that a record, map or message may be flattened under
// name: only fields of no given kind are.
func (w *walker) container(name []byte, kind FieldKind, what string, depth int) *Error {
	if depth > maxDepth {
		return w.mismatch("nesting deeper than %d levels", maxDepth)
	}
	if kind != FieldAuto {
		return errorf(ReasonBadField, "payload byte %d: field %s is %s but holds %s", w.at, quote(name), kind, what)
	}
	return nil
}

// The label, as the JSON rules take it.

func (w *walker) labelText(s []byte) *Error {
	if len(s) == 0 {
		return errorf(ReasonBadLabel, "payload byte %d: label is an empty string", w.at)
	}
	if !utf8.Valid(s) {
		return errorf(ReasonBadLabel, "payload byte %d: label is not valid UTF-8", w.at)
	}
	w.ev.label, w.ev.hasLab = w.put(s), true
	return nil
}

func (w *walker) labelBool(v bool) *Error {
	word := falseBytes
	if v {
		word = trueBytes
	}
	w.ev.label, w.ev.hasLab = w.put(word), true
	return nil
}

func (w *walker) labelNum(v float64) *Error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return errorf(ReasonBadLabel, "payload byte %d: label is %v", w.at, v)
	}
	if v == 0 {
		v = 0 // -0 is written "0"
	}
	off := len(w.ev.buf)
	w.ev.buf = strconv.AppendFloat(w.ev.buf, v, 'g', -1, 64)
	w.ev.label, w.ev.hasLab = span{int32(off), int32(len(w.ev.buf) - off)}, true
	return nil
}

func (w *walker) badLabel(what string) *Error {
	return errorf(ReasonBadLabel, "payload byte %d: label is %s; want a number, a boolean, a string or null", w.at, what)
}

// keyText sets the key (a string, or a number's text).
func (w *walker) keyText(s []byte) *Error {
	if !utf8.Valid(s) {
		return errorf(ReasonBadField, "payload byte %d: key field %q is not valid UTF-8", w.at, w.dec.key)
	}
	w.ev.key, w.ev.hasKey = w.put(s), true
	return nil
}

func (w *walker) badKey(what string) *Error {
	return errorf(ReasonBadField, "payload byte %d: key field %q is %s; want a string or a number", w.at, w.dec.key, what)
}

// index is name.i, in the scratch names.
func (w *walker) index(name []byte, i int) []byte {
	return w.s.name(name, strconv.AppendInt(w.num[:0], int64(i), 10))
}
