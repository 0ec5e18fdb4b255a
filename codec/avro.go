package codec

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/hamba/avro/v2"
)

// Avro payloads are read by a walk over the binary encoding that the
// writer schema guides, field by field into the event: hamba/avro parses
// and checks the schema, but its generic decoding builds a map and boxes
// every value (a dozen allocations and several microseconds for an Adult
// record, against none here; see BenchmarkAvroEvent).

type avroType uint8

const (
	avNull avroType = iota
	avBool
	avInt
	avLong
	avFloat
	avDouble
	avBytes
	avString
	avRecord
	avEnum
	avArray
	avMap
	avUnion
	avFixed
)

var avroTypeNames = [...]string{"null", "boolean", "int", "long", "float", "double", "bytes", "string", "record", "enum", "array", "map", "union", "fixed"}

// avroNode is one schema node, compiled. Named types are compiled once
// and shared, so a recursive schema is a cyclic graph.
type avroNode struct {
	t        avroType
	fields   []avroField // record
	items    *avroNode   // array items, map values
	branches []*avroNode // union
	symbols  [][]byte    // enum
	size     int         // fixed
	decimal  bool        // bytes or fixed with the decimal logical type
	scale    int         // decimal
	pow      float64     // decimal: 10^scale
	name     string      // named types, for errors
}

type avroField struct {
	name []byte
	node *avroNode
}

func compileAvro(text string) (*avroNode, error) {
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil, err
	}
	c := avroCompiler{named: map[string]*avroNode{}}
	n, err := c.node(s)
	if err != nil {
		return nil, err
	}
	if n.t != avRecord {
		return nil, fmt.Errorf("the schema is %s; an event is a record", avroTypeNames[n.t])
	}
	return n, nil
}

type avroCompiler struct{ named map[string]*avroNode }

func (c *avroCompiler) node(s avro.Schema) (*avroNode, error) {
	switch s := s.(type) {
	case *avro.RefSchema:
		return c.node(s.Schema())
	case *avro.NullSchema:
		return &avroNode{t: avNull}, nil
	case *avro.PrimitiveSchema:
		return primitiveNode(s)
	case *avro.RecordSchema:
		return c.record(s)
	case *avro.EnumSchema:
		return c.enum(s), nil
	case *avro.FixedSchema:
		return c.fixed(s), nil
	case *avro.ArraySchema:
		return c.container(avArray, s.Items())
	case *avro.MapSchema:
		return c.container(avMap, s.Values())
	case *avro.UnionSchema:
		return c.union(s)
	}
	return nil, fmt.Errorf("avro schema %s is not supported", s.Type())
}

// avroPrimitives are the node types of the primitive schemas.
var avroPrimitives = map[avro.Type]avroType{
	avro.Boolean: avBool, avro.Int: avInt, avro.Long: avLong, avro.Float: avFloat,
	avro.Double: avDouble, avro.Bytes: avBytes, avro.String: avString, avro.Null: avNull,
}

func primitiveNode(s *avro.PrimitiveSchema) (*avroNode, error) {
	t, ok := avroPrimitives[s.Type()]
	if !ok {
		return nil, fmt.Errorf("avro type %s is not supported", s.Type())
	}
	n := &avroNode{t: t}
	if t == avBytes {
		n.decimal, n.scale = avroDecimal(s.Logical())
	}
	n.pow = math.Pow10(n.scale)
	return n, nil
}

// avroDecimal says whether l is the decimal logical type, and its scale.
func avroDecimal(l avro.LogicalSchema) (decimal bool, scale int) {
	if d, ok := l.(*avro.DecimalLogicalSchema); ok {
		return true, d.Scale()
	}
	return false, 0
}

// record compiles a record once: its node is registered under its name
// before its fields, which may refer to it.
func (c *avroCompiler) record(s *avro.RecordSchema) (*avroNode, error) {
	if n, ok := c.named[s.FullName()]; ok {
		return n, nil
	}
	n := &avroNode{t: avRecord, name: s.FullName()}
	c.named[s.FullName()] = n
	for _, f := range s.Fields() {
		fn, err := c.node(f.Type())
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name(), err)
		}
		n.fields = append(n.fields, avroField{name: []byte(f.Name()), node: fn})
	}
	return n, nil
}

func (c *avroCompiler) enum(s *avro.EnumSchema) *avroNode {
	if n, ok := c.named[s.FullName()]; ok {
		return n
	}
	n := &avroNode{t: avEnum, name: s.FullName()}
	c.named[s.FullName()] = n
	for _, sym := range s.Symbols() {
		n.symbols = append(n.symbols, []byte(sym))
	}
	return n
}

func (c *avroCompiler) fixed(s *avro.FixedSchema) *avroNode {
	if n, ok := c.named[s.FullName()]; ok {
		return n
	}
	n := &avroNode{t: avFixed, size: s.Size(), name: s.FullName()}
	n.decimal, n.scale = avroDecimal(s.Logical())
	n.pow = math.Pow10(n.scale)
	c.named[s.FullName()] = n
	return n
}

// container compiles an array or a map of items.
func (c *avroCompiler) container(t avroType, items avro.Schema) (*avroNode, error) {
	it, err := c.node(items)
	if err != nil {
		return nil, err
	}
	return &avroNode{t: t, items: it}, nil
}

func (c *avroCompiler) union(s *avro.UnionSchema) (*avroNode, error) {
	n := &avroNode{t: avUnion}
	for _, b := range s.Types() {
		bn, err := c.node(b)
		if err != nil {
			return nil, err
		}
		n.branches = append(n.branches, bn)
	}
	return n, nil
}

// The binary encoding's primitives.

// long reads a zig-zag varint of at most 10 bytes.
func (w *walker) long() (int64, *Error) {
	var u uint64
	for shift := uint(0); shift < 70; shift += 7 {
		if w.at >= len(w.p) {
			return 0, w.truncated()
		}
		c := w.p[w.at]
		w.at++
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
	return 0, w.mismatch("a varint longer than 10 bytes")
}

// span reads n bytes.
func (w *walker) take(n int64) ([]byte, *Error) {
	if n < 0 {
		return nil, w.mismatch("a negative length %d", n)
	}
	if n > int64(len(w.p)-w.at) {
		return nil, w.truncated()
	}
	b := w.p[w.at : w.at+int(n)]
	w.at += int(n)
	return b, nil
}

func (w *walker) avroBytes() ([]byte, *Error) {
	n, err := w.long()
	if err != nil {
		return nil, err
	}
	return w.take(n)
}

// blockCount reads an array or map block's item count; a negative count
// is followed by the block's size in bytes.
func (w *walker) blockCount() (int64, *Error) {
	n, err := w.long()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		if n == math.MinInt64 {
			return 0, w.mismatch("a block count out of range")
		}
		n = -n
		if _, err := w.long(); err != nil {
			return 0, err
		}
	}
	// Every item takes a byte at least (null items none: bound them by
	// the field limit instead, which the caller counts).
	return n, nil
}

// avroRecord reads the top-level record.
func (w *walker) avroRecord(n *avroNode) *Error {
	for i := range n.fields {
		f := &n.fields[i]
		if err := w.avroValue(f.node, f.name, 1); err != nil {
			return err
		}
	}
	if w.at != len(w.p) {
		return w.mismatch("%d bytes left after the record (written with another schema?)", len(w.p)-w.at)
	}
	return nil
}

// avroValue reads the value of field name, as eventReader.value reads a
// JSON one.
func (w *walker) avroValue(n *avroNode, name []byte, depth int) *Error {
	label, key, kind := w.role(name)
	switch {
	case label:
		return w.avroLabel(n)
	case key:
		return w.avroKey(n)
	case kind == FieldIgnore:
		return w.avroSkip(n, depth)
	}
	return w.avroTyped(n, name, kind, depth)
}

// avroTyped reads a field's value of node n, split by the node's type.
func (w *walker) avroTyped(n *avroNode, name []byte, kind FieldKind, depth int) *Error {
	switch n.t {
	case avNull:
		return nil
	case avBool:
		return w.avroBool(name, kind)
	case avInt, avLong, avFloat, avDouble:
		return w.avroNumber(n, name, kind)
	case avBytes, avFixed:
		return w.avroBinary(n, name, kind)
	case avString:
		s, err := w.avroBytes()
		if err != nil {
			return err
		}
		return w.text(name, kind, s)
	case avEnum:
		sym, err := w.avroSymbol(n)
		if err != nil {
			return err
		}
		return w.token(name, kind, sym)
	case avRecord:
		return w.avroFields(n, name, kind, depth)
	case avMap:
		return w.avroMap(n, name, kind, depth)
	case avArray:
		return w.avroArray(n, name, kind, depth)
	case avUnion:
		b, err := w.avroBranch(n)
		if err != nil {
			return err
		}
		return w.avroTyped(b, name, kind, depth)
	}
	return w.mismatch("unknown node")
}

func (w *walker) avroBool(name []byte, kind FieldKind) *Error {
	if w.at >= len(w.p) {
		return w.truncated()
	}
	c := w.p[w.at]
	w.at++
	if c > 1 {
		return w.mismatch("a boolean byte 0x%02x", c)
	}
	return w.boolean(name, kind, c == 1)
}

// avroNumber reads an int, long, float or double field, with the text a
// categorical or text field takes.
func (w *walker) avroNumber(n *avroNode, name []byte, kind FieldKind) *Error {
	if n.t == avFloat || n.t == avDouble {
		v, prec, err := w.avroFloat(n)
		if err != nil {
			return err
		}
		return w.number(name, kind, v, strconv.AppendFloat(w.num[:0], v, 'g', -1, prec))
	}
	v, err := w.long()
	if err != nil {
		return err
	}
	if n.t == avInt && int64(int32(v)) != v {
		return w.mismatch("field %s: an int out of range", quote(name))
	}
	return w.number(name, kind, float64(v), strconv.AppendInt(w.num[:0], v, 10))
}

// avroBinary reads a bytes or fixed field: a number with the decimal
// logical type, a category otherwise.
func (w *walker) avroBinary(n *avroNode, name []byte, kind FieldKind) *Error {
	b, err := w.avroFixedOrBytes(n)
	if err != nil {
		return err
	}
	if n.decimal {
		v := decimalValue(b, n.pow)
		return w.number(name, kind, v, strconv.AppendFloat(w.num[:0], v, 'g', -1, 64))
	}
	if kind == FieldNumeric {
		return errorf(ReasonBadField, "payload byte %d: field %s is numeric but holds bytes", w.at, quote(name))
	}
	return w.addText(name, FieldCategorical, b)
}

// avroFields reads a nested record's fields, each under name.
func (w *walker) avroFields(n *avroNode, name []byte, kind FieldKind, depth int) *Error {
	if err := w.container(name, kind, "a record", depth); err != nil {
		return err
	}
	for i := range n.fields {
		f := &n.fields[i]
		if err := w.avroValue(f.node, w.s.name(name, f.name), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// avroMap reads a map's blocks, each value under name.key.
func (w *walker) avroMap(n *avroNode, name []byte, kind FieldKind, depth int) *Error {
	if err := w.container(name, kind, "a map", depth); err != nil {
		return err
	}
	for items := 0; ; {
		c, err := w.blockCount()
		if err != nil || c == 0 {
			return err
		}
		for ; c > 0; c-- {
			if items++; items > w.lim.MaxNonZeros {
				return w.tooMany()
			}
			k, err := w.avroBytes()
			if err != nil {
				return err
			}
			if err := w.avroValue(n.items, w.s.name(name, k), depth+1); err != nil {
				return err
			}
		}
	}
}

// avroArray reads an array's blocks.
func (w *walker) avroArray(n *avroNode, name []byte, kind FieldKind, depth int) *Error {
	if depth > maxDepth {
		return w.mismatch("nesting deeper than %d levels", maxDepth)
	}
	i := 0
	for {
		c, err := w.blockCount()
		if err != nil || c == 0 {
			return err
		}
		for ; c > 0; c-- {
			// Null items take no byte: the count bounds the loop.
			if i >= w.lim.MaxNonZeros {
				return w.tooMany()
			}
			if err := w.avroItem(n.items, name, kind, i, depth); err != nil {
				return err
			}
			i++
		}
	}
}

// avroItem reads item i of an array: strings are tokens of the field
// itself, as in JSON; other items are fields name.i.
func (w *walker) avroItem(it *avroNode, name []byte, kind FieldKind, i, depth int) *Error {
	if it.t == avUnion {
		var err *Error
		if it, err = w.avroBranch(it); err != nil {
			return err
		}
	}
	if it.t != avString && it.t != avEnum {
		return w.avroValue(it, w.index(name, i), depth+1)
	}
	s, err := w.avroText(it)
	if err != nil {
		return err
	}
	return w.token(name, kind, s)
}

func (w *walker) avroFloat(n *avroNode) (v float64, prec int, err *Error) {
	if n.t == avFloat {
		if len(w.p)-w.at < 4 {
			return 0, 0, w.truncated()
		}
		v = float64(math.Float32frombits(binary.LittleEndian.Uint32(w.p[w.at:])))
		w.at += 4
		return v, 32, nil
	}
	if len(w.p)-w.at < 8 {
		return 0, 0, w.truncated()
	}
	v = math.Float64frombits(binary.LittleEndian.Uint64(w.p[w.at:]))
	w.at += 8
	return v, 64, nil
}

func (w *walker) avroFixedOrBytes(n *avroNode) ([]byte, *Error) {
	if n.t == avFixed {
		return w.take(int64(n.size))
	}
	return w.avroBytes()
}

func (w *walker) avroSymbol(n *avroNode) ([]byte, *Error) {
	i, err := w.long()
	if err != nil {
		return nil, err
	}
	if i < 0 || i >= int64(len(n.symbols)) {
		return nil, w.mismatch("enum %s: symbol %d of %d", n.name, i, len(n.symbols))
	}
	return n.symbols[i], nil
}

func (w *walker) avroBranch(n *avroNode) (*avroNode, *Error) {
	i, err := w.long()
	if err != nil {
		return nil, err
	}
	if i < 0 || i >= int64(len(n.branches)) {
		return nil, w.mismatch("union branch %d of %d", i, len(n.branches))
	}
	return n.branches[i], nil
}

// decimalValue is a decimal's two's-complement big-endian unscaled value
// over 10^scale.
func decimalValue(b []byte, pow float64) float64 {
	if len(b) <= 8 {
		var u uint64
		for _, c := range b {
			u = u<<8 | uint64(c)
		}
		if len(b) > 0 && len(b) < 8 && b[0]&0x80 != 0 {
			u |= ^uint64(0) << (8 * len(b)) // sign-extend
		}
		return float64(int64(u)) / pow
	}
	v := new(big.Int).SetBytes(b)
	if b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	f, _ := new(big.Float).SetInt(v).Float64()
	return f / pow
}

// avroResolved follows a union's branches to the value's own type.
func (w *walker) avroResolved(n *avroNode) (*avroNode, *Error) {
	for n.t == avUnion {
		var err *Error
		if n, err = w.avroBranch(n); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// avroText reads a string's bytes or an enum's symbol.
func (w *walker) avroText(n *avroNode) ([]byte, *Error) {
	if n.t == avEnum {
		return w.avroSymbol(n)
	}
	return w.avroBytes()
}

// avroScalar is the label's or the key's value: its type once a union's
// branches are followed, and what was read of it.
type avroScalar struct {
	t    avroType
	b    bool    // avBool
	i    int64   // avInt, avLong
	f    float64 // avFloat, avDouble
	prec int     // f's: 32 or 64 bits
	s    []byte  // avString, avEnum
}

// avroLabelOrKey reads the label's or the key's value: a null, boolean,
// number, string or enum symbol. A value of another type is stepped
// over, for the caller to refuse by its type.
func (w *walker) avroLabelOrKey(n *avroNode) (v avroScalar, err *Error) {
	if n, err = w.avroResolved(n); err != nil {
		return v, err
	}
	v.t = n.t
	switch n.t {
	case avNull:
	case avBool:
		if w.at >= len(w.p) {
			return v, w.truncated()
		}
		v.b = w.p[w.at] == 1
		w.at++
	case avInt, avLong:
		v.i, err = w.long()
	case avFloat, avDouble:
		v.f, v.prec, err = w.avroFloat(n)
	case avString, avEnum:
		v.s, err = w.avroText(n)
	default:
		err = w.avroSkip(n, 1)
	}
	return v, err
}

// avroLabel reads the label field's value.
func (w *walker) avroLabel(n *avroNode) *Error {
	if w.s.labelSeen {
		return errorf(ReasonBadLabel, "payload byte %d: label field %q appears twice", w.at, w.dec.label)
	}
	w.s.labelSeen = true
	v, err := w.avroLabelOrKey(n)
	if err != nil {
		return err
	}
	switch v.t {
	case avNull:
		return nil
	case avBool:
		return w.labelBool(v.b)
	case avInt, avLong:
		return w.labelNum(float64(v.i))
	case avFloat, avDouble:
		return w.labelNum(v.f)
	case avString, avEnum:
		return w.labelText(v.s)
	}
	return w.badLabel("an avro " + avroTypeNames[v.t])
}

// avroKey reads the key field's value; a number is keyed by its text.
func (w *walker) avroKey(n *avroNode) *Error {
	if w.s.keySeen {
		return w.badKey("given twice")
	}
	w.s.keySeen = true
	v, err := w.avroLabelOrKey(n)
	if err != nil {
		return err
	}
	switch v.t {
	case avNull:
		return nil
	case avInt, avLong:
		return w.keyText(strconv.AppendInt(w.num[:0], v.i, 10))
	case avFloat, avDouble:
		return w.keyText(strconv.AppendFloat(w.num[:0], v.f, 'g', -1, v.prec))
	case avString, avEnum:
		return w.keyText(v.s)
	}
	return w.badKey("an avro " + avroTypeNames[v.t])
}

// avroSkip steps over a value.
func (w *walker) avroSkip(n *avroNode, depth int) *Error {
	if depth > maxDepth {
		return w.mismatch("nesting deeper than %d levels", maxDepth)
	}
	switch n.t {
	case avNull:
		return nil
	case avBool:
		_, err := w.take(1)
		return err
	case avInt, avLong, avEnum:
		_, err := w.long()
		return err
	case avFloat:
		_, err := w.take(4)
		return err
	case avDouble:
		_, err := w.take(8)
		return err
	case avBytes, avString:
		_, err := w.avroBytes()
		return err
	case avFixed:
		_, err := w.take(int64(n.size))
		return err
	case avRecord:
		for i := range n.fields {
			if err := w.avroSkip(n.fields[i].node, depth+1); err != nil {
				return err
			}
		}
		return nil
	case avUnion:
		b, err := w.avroBranch(n)
		if err != nil {
			return err
		}
		return w.avroSkip(b, depth)
	case avArray, avMap:
		for items := 0; ; {
			c, err := w.blockCount()
			if err != nil || c == 0 {
				return err
			}
			for ; c > 0; c-- {
				if items++; items > w.lim.MaxNonZeros {
					return w.tooMany()
				}
				if n.t == avMap {
					if _, err := w.avroBytes(); err != nil {
						return err
					}
				}
				if err := w.avroSkip(n.items, depth+1); err != nil {
					return err
				}
			}
		}
	}
	return w.mismatch("unknown node")
}

// AvroDatumLen is the length of the datum of Avro schema s that b starts
// with: how an object container file's block, a run of data without
// lengths, is cut into records. Array and map items count against lim's
// MaxNonZeros, as they do when decoded. A block that ends inside the datum,
// or that does not follow s, is a schema_mismatch.
func (s *Schema) AvroDatumLen(b []byte, lim Limits) (int, error) {
	if s.avro == nil {
		return 0, fmt.Errorf("schema %d is %s, not Avro", s.ID, s.Type)
	}
	w := walker{eventReader: eventReader{jsonDecoder: jsonDecoder{lim: lim.withDefaults()}}, p: b}
	if err := w.avroSkip(s.avro, 0); err != nil {
		return 0, err
	}
	return w.at, nil
}
