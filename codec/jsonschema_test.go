package codec

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
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

// levels is a JSON Schema of n definitions, each level(i) of the one
// below, over l0, the root holding the top one in an allOf.
func levels(n int, l0 string, level func(below string) string) string {
	var b strings.Builder
	b.WriteString(`{"allOf":[{"$ref":"#/definitions/l` + strconv.Itoa(n) + `"}],"definitions":{"l0":` + l0)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `,"l%d":%s`, i, level(`{"$ref":"#/definitions/l`+strconv.Itoa(i-1)+`"}`))
	}
	b.WriteString("}}")
	return b.String()
}

// TestJSONSchemaOfUnboundedWorkIsRefused: schemas whose validation
// multiplies (a 2.4 kB one of 28 levels of anyOf over two $refs: 2^28
// evaluations of one value, each failing one's error kept; a oneOf/allOf
// one passing, on CPU alone; a recursive one that doubles at each level
// of the payload) are refused when compiled, at once and in little
// memory, saying why. Before, they compiled, and the first payload
// validated against them held its partition while the member's memory
// grew by gigabytes. Schemas that evaluate values a bounded number of
// times, recursive ones included, still compile.
func TestJSONSchemaOfUnboundedWorkIsRefused(t *testing.T) {
	anyOf := levels(28, `{"required":["no-such-field"]}`, func(r string) string { return `{"anyOf":[` + r + `,` + r + `]}` })
	if len(anyOf) > 2500 {
		t.Fatalf("the schema has %d bytes", len(anyOf))
	}
	refused := map[string]string{
		"anyOf of $refs": anyOf,
		"oneOf of allOf": levels(28, `{"type":"object"}`, func(r string) string { return `{"oneOf":[{"allOf":[` + r + `,` + r + `]},{"not":` + r + `}]}` }),
		"recursive, doubling at each level": `{"$ref":"#/definitions/t","definitions":{"t":{"anyOf":[{"properties":{"a":{"$ref":"#/definitions/t"}}},
			{"properties":{"a":{"$ref":"#/definitions/t"}}}]}}}`,
		"a cycle through the same value": `{"$ref":"#/definitions/a","definitions":{"a":{"allOf":[{"$ref":"#/definitions/b"}]},"b":{"anyOf":[{"$ref":"#/definitions/a"}]}}}`,
	}
	for name, text := range refused {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := CompileSchemaWith(1, SchemaJSON, text, nil, SchemaOptions{ValidateJSON: true})
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if err == nil || (!strings.Contains(err.Error(), "evaluate one value") && !strings.Contains(err.Error(), "cycle")) {
			t.Errorf("%s: compiled (%v); want it refused for its work", name, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; took > 2*time.Second || alloc > 64<<20 {
			t.Errorf("%s: refused in %v, %d bytes allocated", name, took, alloc)
		}
	}
	bounded := map[string]string{
		"person":           personSchema,
		"12 levels":        levels(12, `{"required":["label"]}`, func(r string) string { return `{"anyOf":[` + r + `,{"type":"object"}]}` }),
		"a recursive tree": `{"$ref":"#/definitions/node","definitions":{"node":{"type":"object","properties":{"v":{"type":"number"},"kids":{"type":"array","items":{"$ref":"#/definitions/node"}}}}}}`,
		"2020-12 dynamic":  `{"$schema":"https://json-schema.org/draft/2020-12/schema","$dynamicAnchor":"n","type":"object","properties":{"kids":{"type":"array","items":{"$dynamicRef":"#n"}}}}`,
	}
	refs := map[string]string{"address.json": `{"type":"object"}`}
	for name, text := range bounded {
		s, err := CompileSchemaWith(1, SchemaJSON, text, refs, SchemaOptions{ValidateJSON: true})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		payload := []byte(`{"label":1,"id":"a","v":1,"kids":[{"v":2,"kids":[{"v":3}]}]}`)
		if err := validateJSON(s, payload); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestJSONSchemaWorkIsAnUpperBound: the work counted for a schema is
// what validation does, each schema and each $ref evaluated: n levels of
// an anyOf of two $refs make level i 3 + 2 times level i-1 (l0: 1), 2^(i+2)
// - 3, and the root and its allOf's $ref 2 more: 4095 at 10 levels, which
// fits in 4096, and 8191 at 11, which does not.
func TestJSONSchemaWorkIsAnUpperBound(t *testing.T) {
	for n, want := range map[int]bool{10: true, 11: false} {
		text := levels(n, `{"required":["no-such-field"]}`, func(r string) string { return `{"anyOf":[` + r + `,` + r + `]}` })
		_, err := CompileSchemaWith(1, SchemaJSON, text, nil, SchemaOptions{ValidateJSON: true})
		if got := err == nil; got != want {
			t.Errorf("%d levels: compiled %v (%v), want %v", n, got, err, want)
		}
	}
}

// TestJSONRecordWorkIsBounded: a record's validation is bounded too: its
// values at each level times the schema's work there. With 4094
// evaluations of each property's value (an 10-level anyOf as
// additionalProperties), 16 properties (65,505 evaluations) are
// validated and 17 (69,599) are too_large at once, not validated.
// Before, a record of many values could take the schema's bound on one
// value many times over.
func TestJSONRecordWorkIsBounded(t *testing.T) {
	lv := levels(10, `{"required":["no-such-field"]}`, func(r string) string { return `{"anyOf":[` + r + `,` + r + `]}` })
	text := strings.Replace(lv, `"allOf":[{"$ref":"#/definitions/l10"}]`, `"additionalProperties":{"$ref":"#/definitions/l10"}`, 1)
	s, err := CompileSchemaWith(1, SchemaJSON, text, nil, SchemaOptions{ValidateJSON: true})
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]Reason{16: ReasonSchemaMismatch, 17: ReasonTooLarge} {
		var b strings.Builder
		b.WriteString(`{"x":{}`)
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, `,"f%d":{}`, i)
		}
		b.WriteString("}")
		err := validateJSON(s, []byte(b.String()))
		var ce *Error
		if !errors.As(err, &ce) || ce.Reason != want {
			t.Errorf("%d properties: %v, want %s", n, err, want)
		}
	}
}

// TestJSONSchemaEnumCountsItsValues: an enum's values are compared with
// a value in turn, each as costly as an evaluation or more (100,000 took
// 0.51 s for one value): an enum of 5,000 values is over the bound, one
// of 4,000 within it.
func TestJSONSchemaEnumCountsItsValues(t *testing.T) {
	for n, want := range map[int]bool{4000: true, 5000: false} {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = strconv.Itoa(i)
		}
		text := `{"properties":{"a":{"enum":[` + strings.Join(vals, ",") + `]}}}`
		_, err := CompileSchemaWith(1, SchemaJSON, text, nil, SchemaOptions{ValidateJSON: true})
		if got := err == nil; got != want {
			t.Errorf("enum of %d: compiled %v (%v), want %v", n, got, err, want)
		}
	}
}

// TestJSONSchemaOfTooManyObjectsIsRefused: the validation library's
// compiler takes time that grows as the square of a schema's subschemas
// (38,000 properties, 1 MB: over a minute), so a schema compiled for
// validation holds at most MaxJSONSchemaObjects objects, its references
// included, and a larger one is refused at once; braces inside strings
// are not objects.
func TestJSONSchemaOfTooManyObjectsIsRefused(t *testing.T) {
	props := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"description":"{{{{","properties":{"x":{}`)
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, `,"p%d":{"type":"string"}`, i)
		}
		b.WriteString(`}}`)
		return b.String()
	}
	// The root, properties, and each property: n + 2 objects.
	for n, want := range map[int]bool{MaxJSONSchemaObjects - 2: true, MaxJSONSchemaObjects - 1: false} {
		t0 := time.Now()
		_, err := CompileSchemaWith(1, SchemaJSON, props(n), nil, SchemaOptions{ValidateJSON: true})
		if got := err == nil; got != want {
			t.Errorf("%d properties: compiled %v (%v), want %v", n, got, err, want)
		}
		if !want && time.Since(t0) > time.Second {
			t.Errorf("%d properties refused in %v", n, time.Since(t0))
		}
	}
	_, err := CompileSchemaWith(1, SchemaJSON, `{"$ref":"big.json"}`, map[string]string{"big.json": props(MaxJSONSchemaObjects)}, SchemaOptions{ValidateJSON: true})
	if err == nil || !strings.Contains(err.Error(), "objects") {
		t.Errorf("a reference of too many objects: %v", err)
	}
}

// TestJSONRecordPatternWorkIsBounded: a pattern is matched in time that
// grows with the string's length times its own (a 794-byte pattern took
// 1.0 s on 900 kB): a record's strings times the schema's longest
// pattern count towards its bound, so a long string against a long
// pattern is too_large at once, while the same string against a short
// pattern, or a short string against the long one, is validated.
func TestJSONRecordPatternWorkIsBounded(t *testing.T) {
	var alts []string
	for i := range 150 {
		alts = append(alts, fmt.Sprintf("a%dz", i))
	}
	long := "^(" + strings.Join(alts, "|") + ")*$"
	for _, c := range []struct {
		pattern string
		n       int
		want    Reason
	}{
		{long, 300000, ReasonTooLarge},
		{long, 1000, ReasonSchemaMismatch},
		{"^(a1z)*$", 300000, ReasonSchemaMismatch},
	} {
		s, err := CompileSchemaWith(1, SchemaJSON, `{"properties":{"s":{"type":"string","pattern":"`+c.pattern+`"}}}`, nil, SchemaOptions{ValidateJSON: true})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		err = validateJSON(s, []byte(`{"s":"`+strings.Repeat("a1z", c.n)+`b"}`))
		var ce *Error
		if !errors.As(err, &ce) || ce.Reason != c.want {
			t.Errorf("pattern of %d bytes, string of %d: %v, want %s", len(c.pattern), 3*c.n+1, err, c.want)
		}
		if c.want == ReasonTooLarge && time.Since(t0) > 100*time.Millisecond {
			t.Errorf("refused in %v", time.Since(t0))
		}
	}
}
