package codec

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// jsonSchemaBase is where a registry's JSON Schema is placed for its
// $refs to resolve: a name of no network, so that a relative $ref names
// one of the schema's references and nothing else.
const jsonSchemaBase = "https://schema-registry.invalid/"

// compileJSONSchema compiles a JSON Schema (draft-07 unless its $schema
// says otherwise: what Confluent's serializers write) with the schemas it
// references, by name. Nothing is loaded from files or the network: a
// $ref reaches only the references, so a schema cannot make the service
// read a local file or call a host.
func compileJSONSchema(text string, refs map[string]string) (*jsonSchema, error) {
	objects := jsonObjects(text)
	for _, r := range refs {
		objects += jsonObjects(r)
	}
	if objects > MaxJSONSchemaObjects {
		return nil, fmt.Errorf("%d objects with its references, over the %d a schema validated against may hold (compiling it takes time that grows as their square)", objects, MaxJSONSchemaObjects)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	c.DefaultDraft(jsonschema.Draft7)
	add := func(name, text string) error {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		u, err := url.Parse(name)
		if err != nil {
			return fmt.Errorf("reference %q: %w", name, err)
		}
		base, _ := url.Parse(jsonSchemaBase)
		return c.AddResource(base.ResolveReference(u).String(), doc)
	}
	for name, text := range refs {
		if err := add(name, text); err != nil {
			return nil, err
		}
	}
	if err := add(jsonSchemaBase+"schema.json", text); err != nil {
		return nil, err
	}
	s, err := c.Compile(jsonSchemaBase + "schema.json")
	if err != nil {
		return nil, err
	}
	cost, err := checkJSONSchemaWork(s)
	if err != nil {
		return nil, err
	}
	return &jsonSchema{s, cost}, nil
}

// jsonSchema is a compiled JSON Schema and what validating against it
// costs.
type jsonSchema struct {
	*jsonschema.Schema
	cost schemaCost
}

// MaxJSONSchemaObjects bounds the JSON objects (its subschemas, at most)
// of a JSON Schema compiled for validation, with its references: the
// validation library's compiler takes time that grows as their square
// (10,000 properties took 1.1 s, 20,000 took 3.8 s, 38,000 — a schema of
// 1 MB — 63 s, on a loaded 2-core host). A larger schema is refused (its
// records are dead letters, bad_schema).
const MaxJSONSchemaObjects = 10000

// jsonObjects counts the objects of a JSON text (the '{' outside strings).
func jsonObjects(text string) int {
	n, in, esc := 0, false, false
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && c == '{':
			n++
		}
	}
	return n
}

// maxMismatchDetail bounds the validator's words in a dead letter's
// header.
const maxMismatchDetail = 300

// validateJSON checks a JSON payload (already read as an event, so well
// formed) against s.
func validateJSON(s *Schema, payload []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
	if err == nil {
		if w := recordWork(v, s.json.cost); w > MaxJSONRecordWork {
			return errorf(ReasonTooLarge, "schema %d: validating the payload could take over %d units of work (evaluations of its values, its strings matched against patterns), the most a record is given (MaxJSONRecordWork)", s.ID, MaxJSONRecordWork)
		}
		err = s.json.Validate(v)
	}
	if err == nil {
		return nil
	}
	detail := mismatchDetail(err)
	if len(detail) > maxMismatchDetail {
		detail = strings.ToValidUTF8(detail[:maxMismatchDetail], "") + "..."
	}
	return errorf(ReasonSchemaMismatch, "schema %d: the payload does not follow it: %s", s.ID, detail)
}

// mismatchDetail says what failed: the first failures found, until
// maxMismatchDetail bytes are said. Only those are formatted, not the
// whole tree of a union's failing branches, which Error would format
// whole however long.
func mismatchDetail(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return strings.Join(strings.Fields(err.Error()), " ")
	}
	var b strings.Builder
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			if b.Len() > 0 {
				b.WriteString("; ")
			}
			b.WriteString(strings.Join(strings.Fields(e.Error()), " "))
			return
		}
		for _, c := range e.Causes {
			if b.Len() > maxMismatchDetail {
				return
			}
			walk(c)
		}
	}
	walk(ve)
	return b.String()
}
