package codec

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"
)

// AppendEncoded appends the wire-format record (header and payload) of
// obj, a JSON object as encoding/json decodes it with UseNumber, written
// with schema s: what `streamlearner produce --format` sends. A field of
// the schema is filled from the member of its name or, failing that, of
// the name with '-' and '.' for '_' (JSON "education-num" fills Avro's
// education_num); a missing or null member is null (an Avro union with
// null, a protobuf field left unset), or the field's default when it has
// one and no null branch. Protobuf takes the first message of the file.
func (s *Schema) AppendEncoded(dst []byte, obj map[string]any) ([]byte, error) {
	dst = AppendFrame(dst, s.ID)
	switch s.Type {
	case SchemaAvro:
		return appendAvro(dst, s.avro, obj, "")
	case SchemaProtobuf:
		dst = append(dst, 0) // message indexes [0]
		renamed := map[string]any{}
		m := s.pb.msgs[0]
		for _, f := range m.fields {
			if v, ok := member(obj, string(f.name)); ok && v != nil {
				renamed[string(f.name)] = v
			}
		}
		js, err := json.Marshal(renamed)
		if err != nil {
			return nil, err
		}
		msg := dynamicpb.NewMessage(s.pb.desc[0])
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(js, msg); err != nil {
			return nil, fmt.Errorf("protobuf %s: %w", m.name, err)
		}
		return proto.MarshalOptions{Deterministic: true}.MarshalAppend(dst, msg)
	case SchemaJSON:
		js, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		return append(dst, js...), nil
	}
	return nil, fmt.Errorf("schema type %s", s.Type)
}

// member finds a JSON member by a schema field's name.
func member(obj map[string]any, name string) (any, bool) {
	if v, ok := obj[name]; ok {
		return v, true
	}
	for k, v := range obj {
		if strings.Map(func(r rune) rune {
			if r == '-' || r == '.' {
				return '_'
			}
			return r
		}, k) == name {
			return v, true
		}
	}
	return nil, false
}

func appendAvro(dst []byte, n *avroNode, v any, path string) ([]byte, error) {
	switch n.t {
	case avArray:
		return appendAvroArray(dst, n, v, path)
	case avMap:
		return appendAvroMap(dst, n, v, path)
	case avRecord:
		return appendAvroRecord(dst, n, v, path)
	case avUnion:
		for i, b := range n.branches {
			if fits(b, v) {
				return appendAvro(appendZigzagLong(dst, int64(i)), b, v, path)
			}
		}
		return nil, avroMisfit(n, v, path)
	}
	if out, ok := appendAvroScalar(dst, n, v); ok {
		return out, nil
	}
	return nil, avroMisfit(n, v, path)
}

// avroMisfit is the error for a JSON value v at path that node n does not
// take.
func avroMisfit(n *avroNode, v any, path string) error {
	return fmt.Errorf("field %s: %T %v does not fit avro %s", strings.TrimPrefix(path, "."), v, v, avroTypeNames[n.t])
}

// appendAvroScalar appends v as a value of a node that is not a
// container, or says that it does not fit.
func appendAvroScalar(dst []byte, n *avroNode, v any) ([]byte, bool) {
	switch n.t {
	case avNull:
		return dst, v == nil
	case avBool:
		switch v {
		case true:
			return append(dst, 1), true
		case false:
			return append(dst, 0), true
		}
		return nil, false
	case avInt, avLong, avFloat, avDouble:
		return appendAvroNumber(dst, n, v)
	case avString, avBytes, avFixed, avEnum:
		return appendAvroText(dst, n, v)
	}
	return nil, false
}

// appendAvroNumber appends v as an int, long, float or double.
func appendAvroNumber(dst []byte, n *avroNode, v any) ([]byte, bool) {
	if n.t == avInt || n.t == avLong {
		i, ok := integer(v)
		if !ok || n.t == avInt && int64(int32(i)) != i {
			return nil, false
		}
		return appendZigzagLong(dst, i), true
	}
	f, ok := float(v)
	if !ok {
		return nil, false
	}
	if n.t == avFloat {
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f))), true
	}
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), true
}

// appendAvroText appends v as a string, bytes, fixed or enum: a string,
// or for a string a JSON number's text too.
func appendAvroText(dst []byte, n *avroNode, v any) ([]byte, bool) {
	s, ok := v.(string)
	if num, isNum := v.(json.Number); isNum && n.t == avString {
		s, ok = string(num), true
	}
	switch {
	case !ok:
		return nil, false
	case n.t == avEnum:
		i := slices.IndexFunc(n.symbols, func(b []byte) bool { return string(b) == s })
		if i < 0 {
			return nil, false
		}
		return appendZigzagLong(dst, int64(i)), true
	case n.decimal, n.t == avFixed && len(s) != n.size:
		return nil, false
	case n.t == avFixed:
		return append(dst, s...), true
	}
	return append(appendZigzagLong(dst, int64(len(s))), s...), true
}

// appendAvroArray appends a JSON array as one block.
func appendAvroArray(dst []byte, n *avroNode, v any, path string) ([]byte, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, avroMisfit(n, v, path)
	}
	if len(a) > 0 {
		dst = appendZigzagLong(dst, int64(len(a)))
		for i, e := range a {
			var err error
			if dst, err = appendAvro(dst, n.items, e, path+"."+strconv.Itoa(i)); err != nil {
				return nil, err
			}
		}
	}
	return append(dst, 0), nil
}

// appendAvroMap appends a JSON object as one block of a map, in the
// order of its keys, so that a record is always written alike.
func appendAvroMap(dst []byte, n *avroNode, v any, path string) ([]byte, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, avroMisfit(n, v, path)
	}
	if len(m) > 0 {
		dst = appendZigzagLong(dst, int64(len(m)))
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			dst = append(appendZigzagLong(dst, int64(len(k))), k...)
			var err error
			if dst, err = appendAvro(dst, n.items, m[k], path+"."+k); err != nil {
				return nil, err
			}
		}
	}
	return append(dst, 0), nil
}

// appendAvroRecord appends a JSON object's members as the record's
// fields; a missing member is null.
func appendAvroRecord(dst []byte, n *avroNode, v any, path string) ([]byte, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, avroMisfit(n, v, path)
	}
	for _, f := range n.fields {
		fv, _ := member(m, string(f.name))
		var err error
		if dst, err = appendAvro(dst, f.node, fv, path+"."+string(f.name)); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// fits says whether a union branch takes a JSON value.
func fits(n *avroNode, v any) bool {
	switch v := v.(type) {
	case nil:
		return n.t == avNull
	case bool:
		return n.t == avBool
	case json.Number, float64, int, int32, int64:
		if _, ok := integer(v); ok && (n.t == avInt || n.t == avLong) {
			return true
		}
		return n.t == avFloat || n.t == avDouble
	case string:
		if n.t == avEnum {
			return slices.IndexFunc(n.symbols, func(b []byte) bool { return string(b) == v }) >= 0
		}
		return n.t == avString || n.t == avBytes && !n.decimal
	case []any:
		return n.t == avArray
	case map[string]any:
		return n.t == avRecord || n.t == avMap
	}
	return false
}

func integer(v any) (int64, bool) {
	switch v := v.(type) {
	case int:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, true
		}
		f, err := v.Float64()
		if err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f), true
		}
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v), true
		}
	}
	return 0, false
}

func float(v any) (float64, bool) {
	if i, ok := integer(v); ok {
		if _, isNum := v.(json.Number); !isNum {
			return float64(i), true
		}
	}
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case float64:
		return v, true
	}
	return 0, false
}

func appendZigzagLong(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}
