package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/internal/golden"
)

// avroPinTypes are a value of every avro type, as the binary encoding
// writes it, for the pinned decoding tests.
func avroPinTypes() []struct {
	schema, name string
	payload      []byte
} {
	z := func(vs ...int64) (b []byte) {
		for _, v := range vs {
			b = appendZigzagLong(b, v)
		}
		return b
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	f32 := binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.5))
	f64 := binary.LittleEndian.AppendUint64(nil, math.Float64bits(0.1))
	nan := binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.NaN()))
	return []struct {
		schema, name string
		payload      []byte
	}{
		{`"null"`, "null", nil},
		{`"boolean"`, "true", []byte{1}},
		{`"boolean"`, "false", []byte{0}},
		{`"boolean"`, "byte 2", []byte{2}},
		{`"int"`, "int", z(-7)},
		{`"int"`, "int out of range", z(1 << 40)},
		{`"long"`, "long", z(1<<60 + 1)},
		{`"long"`, "zero", z(0)},
		{`"float"`, "float", f32},
		{`"double"`, "double", f64},
		{`"double"`, "NaN", nan},
		{`"bytes"`, "bytes", cat(z(2), []byte("ab"))},
		{`{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}`, "decimal", cat(z(2), []byte{0x30, 0x39})},
		{`"string"`, "string", cat(z(3), []byte("yes"))},
		{`"string"`, "empty string", z(0)},
		{`"string"`, "bad UTF-8", cat(z(2), []byte{0xff, 0xfe})},
		{`{"type":"enum","name":"E","symbols":["a","b"]}`, "enum", z(1)},
		{`{"type":"enum","name":"E","symbols":["a","b"]}`, "enum symbol 5", z(5)},
		{`{"type":"fixed","name":"F","size":2}`, "fixed", []byte("hi")},
		{`{"type":"fixed","name":"F","size":3,"logicalType":"decimal","precision":6,"scale":1}`, "fixed decimal", []byte{0xff, 0xff, 0xf1}},
		{`{"type":"array","items":"double"}`, "array of doubles", cat(z(2), f64, f64, z(0))},
		{`{"type":"array","items":"string"}`, "array of strings", cat(z(-2, 4, 1), []byte("a"), z(1), []byte("b"), z(0))},
		{`{"type":"array","items":{"type":"enum","name":"E","symbols":["a","b"]}}`, "array of enums", cat(z(2, 1, 0), z(0))},
		{`{"type":"array","items":["null","string","long"]}`, "array of unions", cat(z(3, 0, 1, 1), []byte("s"), z(2, 9), z(0))},
		{`{"type":"array","items":"long"}`, "empty array", z(0)},
		{`{"type":"map","values":"long"}`, "map", cat(z(2, 1), []byte("a"), z(5, 1), []byte("b"), z(6), z(0))},
		{`{"type":"record","name":"R","fields":[{"name":"p","type":"int"},{"name":"q","type":"string"}]}`, "record", cat(z(3, 1), []byte("x"))},
		{`["null","long"]`, "union null", z(0)},
		{`["null","long"]`, "union long", z(1, 42)},
		{`["null","string"]`, "union string", cat(z(1, 2), []byte("ok"))},
		{`["null","long"]`, "union branch 4", z(4)},
	}
}

// TestAvroDecodingPinned pins what the walk makes of a value of every
// avro type as the label, the key, and a field of each kind, and of the
// value cut short: the event, or the error.
func TestAvroDecodingPinned(t *testing.T) {
	var out strings.Builder
	for _, c := range avroPinTypes() {
		text := `{"type":"record","name":"P","fields":[{"name":"f","type":` + c.schema + `},{"name":"end","type":"long"}]}`
		s := mustAvro(t, text, 5)
		cfgs := []struct {
			role string
			cfg  EventConfig
		}{
			{"label", EventConfig{LabelField: "f"}},
			{"key", EventConfig{KeyField: "f"}},
			{"auto", EventConfig{}},
			{"numeric", EventConfig{Schema: map[string]FieldKind{"f": FieldNumeric}}},
			{"categorical", EventConfig{Schema: map[string]FieldKind{"f": FieldCategorical}}},
			{"text", EventConfig{Schema: map[string]FieldKind{"f": FieldText}}},
		}
		for _, rc := range cfgs {
			fd, err := NewFramedDecoder(rc.cfg, FormatAvro, StaticSchemas{5: s})
			if err != nil {
				t.Fatal(err)
			}
			for _, cut := range []bool{false, true} {
				p := append(AppendFrame(nil, 5), c.payload...)
				p = appendZigzagLong(p, 3) // end
				name := c.name
				if cut {
					if len(c.payload) == 0 {
						continue
					}
					p, name = p[:len(p)-2], c.name+" cut short"
				}
				var ev Event
				if err := fd.Decode(p, &ev); err != nil {
					fmt.Fprintf(&out, "%s %s: %v\n", name, rc.role, err)
				} else {
					fmt.Fprintf(&out, "%s %s: %s\n", name, rc.role, eventText(&ev))
				}
			}
		}
	}
	golden.Check(t, "avro_decode.golden", []byte(out.String()))
}

// TestAvroEncodingPinned pins the bytes AppendEncoded writes for a JSON
// value in a field of every avro type, or its error.
func TestAvroEncodingPinned(t *testing.T) {
	values := []string{`null`, `true`, `7`, `-2.5`, `1e300`, `"b"`, `"hi"`, `[1,2]`, `[]`, `{"a":1,"b":2}`, `{}`, `{"p":3,"q":"x"}`, `4294967296`, `["x"]`}
	var out strings.Builder
	seen := map[string]bool{}
	for _, c := range avroPinTypes() {
		if seen[c.schema] {
			continue
		}
		seen[c.schema] = true
		s := mustAvro(t, `{"type":"record","name":"P","fields":[{"name":"f","type":`+c.schema+`}]}`, 6)
		for _, v := range append(values, "missing") {
			obj := map[string]any{}
			if v != "missing" {
				d := json.NewDecoder(strings.NewReader(`{"f":` + v + `}`))
				d.UseNumber()
				if err := d.Decode(&obj); err != nil {
					t.Fatal(err)
				}
			}
			b, err := s.AppendEncoded(nil, obj)
			if err != nil {
				fmt.Fprintf(&out, "%s %s: %v\n", c.schema, v, err)
			} else {
				fmt.Fprintf(&out, "%s %s: %x\n", c.schema, v, b)
			}
		}
	}
	golden.Check(t, "avro_encode.golden", []byte(out.String()))
}
