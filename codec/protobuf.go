package codec

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	// The well-known types, for schemas sent as descriptors that import them.
	_ "google.golang.org/protobuf/types/known/durationpb"
	_ "google.golang.org/protobuf/types/known/timestamppb"
	_ "google.golang.org/protobuf/types/known/wrapperspb"
)

// Protobuf payloads are read, like Avro ones, by a walk over the wire
// encoding (protowire) that the message descriptor guides: the descriptor
// comes from the registry's .proto text through protocompile (or from a
// base64 FileDescriptorProto, which some serializers register), and the
// walk fills the event directly, without building a dynamic message.

// protoFile is a compiled .proto: its top-level messages, each with its
// nested ones, as the wire format's message indexes address them.
type protoFile struct {
	msgs []*protoMsg
	desc []protoreflect.MessageDescriptor // the top-level messages, for encoding
}

type protoMsg struct {
	name   string
	fields []protoField
	byNum  map[protowire.Number]int
	dense  []int16 // field index + 1 by number, for numbers below 256
	nested []*protoMsg
	wkt    wellKnown
}

type wellKnown uint8

const (
	wktNone    wellKnown = iota
	wktTime              // Timestamp, Duration: one number, seconds + nanos/1e9
	wktWrapper           // DoubleValue, StringValue...: the value itself
)

type protoField struct {
	name     []byte
	kind     protoreflect.Kind
	list     bool
	implicit bool // proto3 without presence: absent means the default
	msg      *protoMsg
	enum     map[int32][]byte // enum value names by number
	enumDef  []byte           // the enum's default (first) value's name
	mapKey   *protoField
	mapVal   *protoField
}

const protoMain = "schema.proto"

func compileProto(text string, imports map[string]string) (*protoFile, error) {
	fd, err := protoDescriptor(text, imports)
	if err != nil {
		return nil, err
	}
	c := protoCompiler{done: map[protoreflect.FullName]*protoMsg{}}
	pf := &protoFile{}
	for i := 0; i < fd.Messages().Len(); i++ {
		pf.msgs = append(pf.msgs, c.msg(fd.Messages().Get(i)))
		pf.desc = append(pf.desc, fd.Messages().Get(i))
	}
	if len(pf.msgs) == 0 {
		return nil, fmt.Errorf("the schema declares no message")
	}
	return pf, nil
}

// protoDescriptor reads .proto text, or a base64 FileDescriptorProto.
func protoDescriptor(text string, imports map[string]string) (protoreflect.FileDescriptor, error) {
	srcs := map[string]string{protoMain: text}
	for k, v := range imports {
		srcs[k] = v
	}
	comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(srcs)})}
	files, err := comp.Compile(context.Background(), protoMain)
	if err == nil {
		return files[0], nil
	}
	raw, berr := base64.StdEncoding.DecodeString(strings.TrimSpace(text))
	if berr != nil {
		return nil, err
	}
	var fdp descriptorpb.FileDescriptorProto
	if perr := proto.Unmarshal(raw, &fdp); perr != nil {
		return nil, err
	}
	fd, derr := protodesc.NewFile(&fdp, protoregistry.GlobalFiles)
	if derr != nil {
		return nil, fmt.Errorf("a base64 file descriptor: %w", derr)
	}
	return fd, nil
}

type protoCompiler struct {
	done map[protoreflect.FullName]*protoMsg
}

func (c *protoCompiler) msg(md protoreflect.MessageDescriptor) *protoMsg {
	if m, ok := c.done[md.FullName()]; ok {
		return m
	}
	m := &protoMsg{name: string(md.FullName()), byNum: map[protowire.Number]int{}}
	c.done[md.FullName()] = m
	switch md.FullName() {
	case "google.protobuf.Timestamp", "google.protobuf.Duration":
		m.wkt = wktTime
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
		"google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		m.wkt = wktWrapper
	}
	fs := md.Fields()
	for i := 0; i < fs.Len(); i++ {
		m.byNum[fs.Get(i).Number()] = i
		if n := int(fs.Get(i).Number()); n < 256 {
			if n >= len(m.dense) {
				m.dense = append(m.dense, make([]int16, n+1-len(m.dense))...)
			}
			m.dense[n] = int16(i + 1)
		}
		m.fields = append(m.fields, c.field(fs.Get(i)))
	}
	for i := 0; i < md.Messages().Len(); i++ {
		m.nested = append(m.nested, c.msg(md.Messages().Get(i)))
	}
	return m
}

func (c *protoCompiler) field(fd protoreflect.FieldDescriptor) protoField {
	f := protoField{name: []byte(fd.Name()), kind: fd.Kind(), list: fd.IsList(),
		implicit: !fd.HasPresence() && !fd.IsList() && !fd.IsMap()}
	if fd.IsMap() {
		k, v := c.field(fd.MapKey()), c.field(fd.MapValue())
		f.mapKey, f.mapVal = &k, &v
	}
	if md := fd.Message(); md != nil && !fd.IsMap() {
		f.msg = c.msg(md)
	}
	if ed := fd.Enum(); ed != nil {
		vs := ed.Values()
		f.enum = map[int32][]byte{}
		for i := vs.Len() - 1; i >= 0; i-- { // the first of aliases wins
			f.enum[int32(vs.Get(i).Number())] = []byte(vs.Get(i).Name())
		}
		if vs.Len() > 0 {
			f.enumDef = []byte(vs.Get(0).Name())
		}
	}
	return f
}

// field finds the field of number num.
func (m *protoMsg) field(num protowire.Number) (int, bool) {
	if int(num) < len(m.dense) && num >= 0 {
		i := int(m.dense[num]) - 1
		return i, i >= 0
	}
	i, ok := m.byNum[num]
	return i, ok
}

// protoTop reads the message indexes after the wire header, then the
// message they name.
func (w *walker) protoTop(pf *protoFile) *Error {
	n, err := w.varint()
	if err != nil {
		return err
	}
	count := protowire.DecodeZigZag(n)
	var m *protoMsg
	if count == 0 {
		m = pf.msgs[0]
	} else {
		if count < 0 || count > 64 {
			return w.mismatch("%d message indexes", count)
		}
		msgs := pf.msgs
		for j := int64(0); j < count; j++ {
			u, err := w.varint()
			if err != nil {
				return err
			}
			i := protowire.DecodeZigZag(u)
			if i < 0 || i >= int64(len(msgs)) {
				return w.mismatch("message index %d: the schema has %d messages there", i, len(msgs))
			}
			m = msgs[i]
			msgs = m.nested
		}
	}
	body := w.p[w.at:]
	w.p, w.at = body, 0
	return w.protoMessage(m, nil, 1)
}

func (w *walker) varint() (uint64, *Error) {
	v, n := protowire.ConsumeVarint(w.p[w.at:])
	if n < 0 {
		return 0, w.truncated()
	}
	w.at += n
	return v, nil
}

// protoMessage reads the message that is all of w.p, its fields named
// under prefix (nil at the top level).
func (w *walker) protoMessage(m *protoMsg, prefix []byte, depth int) *Error {
	if depth > maxDepth {
		return w.mismatch("nesting deeper than %d levels", maxDepth)
	}
	base := len(w.s.counts)
	for range m.fields {
		w.s.counts = append(w.s.counts, 0)
	}
	if err := w.protoFields(m, prefix, base, depth); err != nil {
		return err
	}
	w.s.counts = w.s.counts[:base]
	return nil
}

func (w *walker) protoFields(m *protoMsg, prefix []byte, base, depth int) *Error {
	for w.at < len(w.p) {
		num, typ, n := protowire.ConsumeTag(w.p[w.at:])
		if n < 0 {
			return w.mismatch("a bad field tag")
		}
		w.at += n
		fi, ok := m.field(num)
		if !ok {
			// A field of a newer schema: skipped, as protobuf readers do.
			n := protowire.ConsumeFieldValue(num, typ, w.p[w.at:])
			if n < 0 {
				return w.truncated()
			}
			w.at += n
			continue
		}
		f := &m.fields[fi]
		name := f.name
		if m.wkt == wktWrapper {
			name = prefix // the wrapper is its value
		} else if prefix != nil {
			name = w.s.name(prefix, f.name)
		}
		if err := w.protoField(f, &w.s.counts[base+fi], name, typ, depth); err != nil {
			return err
		}
	}
	// proto3 leaves a field at its default off the wire: it is there all
	// the same, as every protobuf reader sees it.
	for fi := range m.fields {
		f := &m.fields[fi]
		if !f.implicit || w.s.counts[base+fi] > 0 || f.msg != nil {
			continue
		}
		name := f.name
		if m.wkt == wktWrapper {
			name = prefix
		} else if prefix != nil {
			name = w.s.name(prefix, f.name)
		}
		if err := w.protoDefault(f, name); err != nil {
			return err
		}
	}
	return nil
}

// protoField reads one occurrence of field f (seen *seen times before).
func (w *walker) protoField(f *protoField, seen *int32, name []byte, typ protowire.Type, depth int) *Error {
	if f.mapKey != nil {
		if typ != protowire.BytesType {
			return w.wireType(name, typ)
		}
		b, err := w.lenPrefixed()
		if err != nil {
			return err
		}
		*seen++
		return w.protoMapEntry(f, b, name, depth)
	}
	if f.list && typ == protowire.BytesType && packable(f.kind) {
		b, err := w.lenPrefixed()
		if err != nil {
			return err
		}
		p, at := w.p, w.at
		w.p, w.at = b, 0
		for w.at < len(w.p) {
			if err := w.protoOne(f, seen, name, wireOf(f.kind), depth); err != nil {
				return err
			}
		}
		w.p, w.at = p, at
		return nil
	}
	return w.protoOne(f, seen, name, typ, depth)
}

// protoOne reads one value of f, of wire type typ.
func (w *walker) protoOne(f *protoField, seen *int32, name []byte, typ protowire.Type, depth int) *Error {
	i := int(*seen)
	*seen++
	if i >= w.lim.MaxNonZeros {
		return w.tooMany()
	}
	if want := wireOf(f.kind); typ != want {
		return w.wireType(name, typ)
	}
	if f.list && f.kind != protoreflect.StringKind && f.kind != protoreflect.EnumKind {
		name = w.index(name, i) // a list of numbers or messages: name.i, as JSON arrays
	}
	if f.msg != nil {
		b, err := w.lenPrefixed()
		if err != nil {
			return err
		}
		label, key, kind := w.role(name)
		if label || key || kind == FieldIgnore {
			if label {
				return w.badLabel("a message")
			}
			if key {
				return w.badKey("a message")
			}
			return nil
		}
		return w.protoSub(f.msg, b, name, kind, depth)
	}
	label, key, kind := w.role(name)
	var (
		u   uint64
		b   []byte
		err *Error
	)
	switch typ {
	case protowire.VarintType:
		u, err = w.varint()
	case protowire.Fixed32Type:
		var v uint32
		v, n := protowire.ConsumeFixed32(w.p[w.at:])
		if n < 0 {
			return w.truncated()
		}
		w.at += n
		u = uint64(v)
	case protowire.Fixed64Type:
		v, n := protowire.ConsumeFixed64(w.p[w.at:])
		if n < 0 {
			return w.truncated()
		}
		w.at += n
		u = v
	case protowire.BytesType:
		b, err = w.lenPrefixed()
	}
	if err != nil {
		return err
	}
	if kind == FieldIgnore {
		return nil
	}
	return w.protoScalar(f, name, label, key, kind, u, b)
}

// protoSub reads a message field's bytes b under name.
func (w *walker) protoSub(m *protoMsg, b []byte, name []byte, kind FieldKind, depth int) *Error {
	p, at := w.p, w.at
	w.p, w.at = b, 0
	err := w.protoSubBody(m, name, kind, depth)
	w.p, w.at = p, at
	return err
}

func (w *walker) protoSubBody(m *protoMsg, name []byte, kind FieldKind, depth int) *Error {
	if m.wkt == wktTime {
		var secs, nanos int64
		for w.at < len(w.p) {
			num, typ, n := protowire.ConsumeTag(w.p[w.at:])
			if n < 0 {
				return w.mismatch("a bad field tag")
			}
			w.at += n
			if typ != protowire.VarintType {
				n := protowire.ConsumeFieldValue(num, typ, w.p[w.at:])
				if n < 0 {
					return w.truncated()
				}
				w.at += n
				continue
			}
			v, err := w.varint()
			if err != nil {
				return err
			}
			switch num {
			case 1:
				secs = int64(v)
			case 2:
				nanos = int64(int32(v))
			}
		}
		v := float64(secs) + float64(nanos)/1e9
		return w.number(name, kind, v, strconv.AppendFloat(w.num[:0], v, 'g', -1, 64))
	}
	if m.wkt == wktNone {
		if err := w.container(name, kind, "a message", depth); err != nil {
			return err
		}
	}
	return w.protoMessage(m, name, depth+1)
}

func (w *walker) protoMapEntry(f *protoField, b []byte, name []byte, depth int) *Error {
	p, at := w.p, w.at
	w.p, w.at = b, 0
	err := w.protoEntry(f, name, depth)
	w.p, w.at = p, at
	return err
}

func (w *walker) protoEntry(f *protoField, name []byte, depth int) *Error {
	if err := w.container(name, FieldAuto, "a map", depth); err != nil {
		return err
	}
	var key []byte
	var keyU uint64
	valAt, valTyp := -1, protowire.Type(0)
	for w.at < len(w.p) {
		num, typ, n := protowire.ConsumeTag(w.p[w.at:])
		if n < 0 {
			return w.mismatch("a bad field tag")
		}
		w.at += n
		start := w.at
		n = protowire.ConsumeFieldValue(num, typ, w.p[w.at:])
		if n < 0 {
			return w.truncated()
		}
		w.at += n
		switch num {
		case 1:
			if typ == protowire.BytesType {
				key, _ = protowire.ConsumeBytes(w.p[start:])
			} else if typ == protowire.VarintType {
				keyU, _ = protowire.ConsumeVarint(w.p[start:])
				key = nil
			}
		case 2:
			valAt, valTyp = start, typ
		}
	}
	if key == nil && f.mapKey.kind != protoreflect.StringKind {
		switch f.mapKey.kind {
		case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
			key = strconv.AppendInt(w.num[:0], protowire.DecodeZigZag(keyU), 10)
		case protoreflect.BoolKind:
			key = strconv.AppendBool(w.num[:0], keyU != 0)
		case protoreflect.Int32Kind, protoreflect.Int64Kind:
			key = strconv.AppendInt(w.num[:0], int64(keyU), 10)
		default:
			key = strconv.AppendUint(w.num[:0], keyU, 10)
		}
	}
	elem := w.s.name(name, key)
	if valAt < 0 {
		if f.mapVal.msg != nil {
			return nil
		}
		return w.protoDefault(f.mapVal, elem)
	}
	w.at = valAt
	var seen int32
	v := *f.mapVal
	v.list = false
	return w.protoOne(&v, &seen, elem, valTyp, depth+1)
}

// protoScalar takes a scalar value: u holds varints and fixed-width bits,
// b strings and bytes.
func (w *walker) protoScalar(f *protoField, name []byte, label, key bool, kind FieldKind, u uint64, b []byte) *Error {
	var v float64
	var text []byte
	switch f.kind {
	case protoreflect.BoolKind:
		switch {
		case label:
			return w.labelBool(u != 0)
		case key:
			return w.badKey("a boolean")
		}
		return w.boolean(name, kind, u != 0)
	case protoreflect.StringKind, protoreflect.BytesKind:
		switch {
		case label:
			return w.labelText(b)
		case key:
			return w.keyText(b)
		}
		if f.kind == protoreflect.BytesKind {
			if kind == FieldNumeric {
				return errorf(ReasonBadField, "payload byte %d: field %s is numeric but holds bytes", w.at, quote(name))
			}
			return w.addText(name, FieldCategorical, b)
		}
		if f.list {
			return w.token(name, kind, b) // a bag, as a JSON array of strings
		}
		return w.text(name, kind, b)
	case protoreflect.EnumKind:
		sym := w.enumName(f, int32(u))
		switch {
		case label:
			return w.labelText(sym)
		case key:
			return w.keyText(sym)
		}
		return w.token(name, kind, sym)
	case protoreflect.Int32Kind:
		v, text = float64(int32(u)), strconv.AppendInt(w.num[:0], int64(int32(u)), 10)
	case protoreflect.Int64Kind, protoreflect.Sfixed64Kind:
		v, text = float64(int64(u)), strconv.AppendInt(w.num[:0], int64(u), 10)
	case protoreflect.Sfixed32Kind:
		v, text = float64(int32(uint32(u))), strconv.AppendInt(w.num[:0], int64(int32(uint32(u))), 10)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		v, text = float64(uint32(u)), strconv.AppendUint(w.num[:0], uint64(uint32(u)), 10)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		v, text = float64(u), strconv.AppendUint(w.num[:0], u, 10)
	case protoreflect.Sint32Kind:
		s := int32(protowire.DecodeZigZag(u & math.MaxUint32))
		v, text = float64(s), strconv.AppendInt(w.num[:0], int64(s), 10)
	case protoreflect.Sint64Kind:
		s := protowire.DecodeZigZag(u)
		v, text = float64(s), strconv.AppendInt(w.num[:0], s, 10)
	case protoreflect.FloatKind:
		v = float64(math.Float32frombits(uint32(u)))
		text = strconv.AppendFloat(w.num[:0], v, 'g', -1, 32)
	case protoreflect.DoubleKind:
		v = math.Float64frombits(u)
		text = strconv.AppendFloat(w.num[:0], v, 'g', -1, 64)
	default:
		return w.mismatch("field %s: protobuf kind %s is not supported", quote(name), f.kind)
	}
	switch {
	case label:
		return w.labelNum(v)
	case key:
		return w.keyText(text)
	}
	return w.number(name, kind, v, text)
}

// protoDefault takes an implicit field's default value.
func (w *walker) protoDefault(f *protoField, name []byte) *Error {
	label, key, kind := w.role(name)
	if kind == FieldIgnore || key {
		return nil // an empty key is no key
	}
	switch f.kind {
	case protoreflect.StringKind, protoreflect.BytesKind:
		if label {
			return nil // an empty label is no label
		}
		return w.protoScalar(f, name, false, false, kind, 0, []byte{})
	}
	return w.protoScalar(f, name, label, false, kind, 0, nil)
}

func (w *walker) enumName(f *protoField, n int32) []byte {
	if s, ok := f.enum[n]; ok {
		return s
	}
	return strconv.AppendInt(w.num[:0], int64(n), 10) // a value of a newer schema
}

func (w *walker) lenPrefixed() ([]byte, *Error) {
	b, n := protowire.ConsumeBytes(w.p[w.at:])
	if n < 0 {
		return nil, w.truncated()
	}
	w.at += n
	return b, nil
}

func (w *walker) wireType(name []byte, typ protowire.Type) *Error {
	return w.mismatch("field %s has wire type %d, not its schema's", quote(name), typ)
}

func packable(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind, protoreflect.GroupKind:
		return false
	}
	return true
}

func wireOf(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.BoolKind, protoreflect.EnumKind, protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Uint32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Uint64Kind:
		return protowire.VarintType
	case protoreflect.Sfixed32Kind, protoreflect.Fixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Sfixed64Kind, protoreflect.Fixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	}
	return protowire.BytesType
}
