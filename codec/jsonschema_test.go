package codec

import (
	"errors"
	"strings"
	"testing"
)

const personSchema = `{"type":"object","properties":{"id":{"type":"string"},"age":{"type":"number","minimum":0},
	"address":{"$ref":"address.json"},"label":{"enum":[-1,1]}},"required":["id","label"]}`

// personDecoder reads personSchema's records: id 4 validated, id 5 not.
func personDecoder(tb testing.TB) *FramedDecoder {
	refs := map[string]string{"address.json": `{"type":"object","properties":{"zip":{"type":"string","pattern":"^[0-9]{5}$"}}}`}
	on, err := CompileSchemaWith(4, SchemaJSON, personSchema, refs, SchemaOptions{ValidateJSON: true})
	if err != nil {
		tb.Fatal(err)
	}
	off, err := CompileSchema(5, SchemaJSON, personSchema, refs)
	if err != nil {
		tb.Fatal(err)
	}
	fd, err := NewFramedDecoder(EventConfig{KeyField: "id"}, FormatJSONSchema, StaticSchemas{4: on, 5: off})
	if err != nil {
		tb.Fatal(err)
	}
	return fd
}

// TestJSONSchemaValidation: with ValidateJSON, a payload that does not
// follow its JSON Schema (its references included) is schema_mismatch,
// saying where; one that does is read as without it; without
// ValidateJSON, nothing is validated (Confluent's default).
func TestJSONSchemaValidation(t *testing.T) {
	fd := personDecoder(t)
	for _, c := range []struct {
		payload, where string // where: "" when the payload follows the schema
	}{
		{`{"id":"a","age":30,"address":{"zip":"12345"},"label":1}`, ""},
		{`{"id":"a","label":-1,"extra":"allowed"}`, ""},
		{`{"id":"a","age":"thirty","label":1}`, "/age"},
		{`{"id":"a","age":-3,"label":1}`, "/age"},
		{`{"id":"a","label":0}`, "/label"},
		{`{"id":"a","address":{"zip":"1234x"},"label":1}`, "/address/zip"},
		{`{"label":1,"id":7}`, "/id"},
		{`{"id":"a"}`, "label"},
	} {
		var ev Event
		err := fd.Decode(append(AppendFrame(nil, 4), c.payload...), &ev)
		var ce *Error
		switch {
		case c.where == "" && err != nil:
			t.Errorf("%s: %v", c.payload, err)
		case c.where != "" && (!errors.As(err, &ce) || ce.Reason != ReasonSchemaMismatch || !strings.Contains(ce.Detail, c.where) || len(ce.Detail) > 400):
			t.Errorf("%s: %v, want schema_mismatch naming %s", c.payload, err, c.where)
		}
		if err := fd.Decode(append(AppendFrame(nil, 5), c.payload...), &ev); err != nil && c.where != "label" {
			t.Errorf("%s, not validated: %v", c.payload, err)
		}
	}
	// A $ref reaches the schema's references only: not files, not hosts.
	for _, ref := range []string{"file:///etc/passwd", "/etc/passwd", "http://127.0.0.1:1/x.json", "missing.json"} {
		if _, err := CompileSchemaWith(6, SchemaJSON, `{"$ref":"`+ref+`"}`, nil, SchemaOptions{ValidateJSON: true}); err == nil {
			t.Errorf("a $ref to %s compiled", ref)
		}
	}
}

// BenchmarkJSONSchemaValidation is the cost of --validate-json-schema: a
// JSON Schema record decoded alone, and decoded and validated.
func BenchmarkJSONSchemaValidation(b *testing.B) {
	fd := personDecoder(b)
	payload := `{"id":"a","age":30,"address":{"zip":"12345"},"label":1}`
	for _, c := range []struct {
		name string
		id   uint32
	}{{"read", 5}, {"validated", 4}} {
		b.Run(c.name, func(b *testing.B) {
			in := append(AppendFrame(nil, c.id), payload...)
			var ev Event
			b.ReportAllocs()
			for b.Loop() {
				if err := fd.Decode(in, &ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
