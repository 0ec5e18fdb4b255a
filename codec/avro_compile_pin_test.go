package codec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/internal/golden"
)

// dumpAvro writes the compiled graph under n; a named node met again is
// written by its name alone, so shared and recursive types show.
func dumpAvro(b *strings.Builder, n *avroNode, depth int, seen map[*avroNode]bool) {
	pad := strings.Repeat("  ", depth)
	fmt.Fprintf(b, "%s%s name=%q size=%d decimal=%t scale=%d pow=%g symbols=%q", pad, avroTypeNames[n.t], n.name, n.size, n.decimal, n.scale, n.pow, n.symbols)
	if n.name != "" && seen[n] {
		b.WriteString(" (again)\n")
		return
	}
	seen[n] = true
	b.WriteString("\n")
	for _, f := range n.fields {
		fmt.Fprintf(b, "%s field %s\n", pad, f.name)
		dumpAvro(b, f.node, depth+1, seen)
	}
	if n.items != nil {
		dumpAvro(b, n.items, depth+1, seen)
	}
	for _, br := range n.branches {
		dumpAvro(b, br, depth+1, seen)
	}
}

// TestAvroCompilePinned pins the graph compileAvro makes of a field of
// every avro type, of named types used twice, of a recursive type and of
// logical types, and the errors of schemas it refuses.
func TestAvroCompilePinned(t *testing.T) {
	schemas := []string{
		`{"type":"record","name":"L","fields":[{"name":"v","type":"long"},{"name":"next","type":["null","L"]}]}`,
		`{"type":"record","name":"ns.R","fields":[{"name":"a","type":{"type":"enum","name":"E","symbols":["x","y"]}},{"name":"b","type":"E"},` +
			`{"name":"c","type":{"type":"fixed","name":"F","size":4}},{"name":"d","type":"F"},` +
			`{"name":"e","type":{"type":"record","name":"In","fields":[{"name":"z","type":"int"}]}},{"name":"f","type":{"type":"array","items":"In"}}]}`,
		`{"type":"record","name":"T","fields":[{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"day","type":{"type":"int","logicalType":"date"}},` +
			`{"name":"id","type":{"type":"string","logicalType":"uuid"}},{"name":"m","type":{"type":"map","values":{"type":"array","items":["null","double","boolean"]}}},` +
			`{"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":20,"scale":7}},{"name":"nul","type":"null"},{"name":"fl","type":"float"}]}`,
		`"long"`, `{"type":"array","items":"long"}`, `["null","string"]`, `{"type":"record","name":"Bad","fields":[{"name":"x","type":"nosuch"}]}`,
	}
	for _, c := range avroPinTypes() {
		schemas = append(schemas, `{"type":"record","name":"P","fields":[{"name":"f","type":`+c.schema+`}]}`)
	}
	var b strings.Builder
	for _, s := range schemas {
		fmt.Fprintf(&b, "%s\n", s)
		n, err := compileAvro(s)
		if err != nil {
			fmt.Fprintf(&b, "  error %v\n", err)
			continue
		}
		dumpAvro(&b, n, 1, map[*avroNode]bool{})
	}
	golden.Check(t, "avro_compile.golden", []byte(b.String()))
}
