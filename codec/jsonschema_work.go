package codec

import (
	"fmt"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxJSONSchemaWork bounds, for --validate-json-schema, how many times
// validation may evaluate a subschema against any one value of a
// payload (the units of work this package counts: see workGraph.self). A JSON Schema that could take more is refused when compiled
// (its records are dead letters, bad_schema): its $refs, allOf, anyOf and
// oneOf multiply, so that 2.4 kB of schema (28 levels of an anyOf of two
// $refs to the level below) asks 2^28 evaluations of one value, and keeps
// the error of each failing one. The bound is on the schema, whatever the
// payload: a record's validation then takes at most this many evaluations
// per value it holds, and its payload is bounded in bytes. Schemas written
// by hand or generated from classes evaluate a value a few times (the
// person schema of the tests: at most 3, its label's enum of two values
// counting 3); 4096 leaves room for unions of unions. An enum counts one more for each of its values (each is
// compared with the value).
const MaxJSONSchemaWork = 4096

// jsonSchemaWork is how many evaluations of one value validating against
// root can make, found level by level down the payload's nesting: at
// level d, work[s] is how many times s's evaluation (once) evaluates a
// subschema against one value d levels inside its own. byLevel is root's
// work at each level; a level past its end has the work of its last. It
// stops once the levels repeat (a recursive schema walks the same way at
// every level), once they are all zero (no deeper value is evaluated),
// past the deepest payload read (maxDepth), or past limit (the last level
// then says limit+1).
//
// A cycle of subschemas through the same value (a $ref to itself, in
// effect) is an error of the schema: validation would go round it until
// stopped. It is refused (cycle), since counting work through it is not
// sure.
func jsonSchemaWork(root *jsonschema.Schema, limit int64) (byLevel []int64, cycle bool) {
	g := newWorkGraph(root)
	var prev []int64
	for d := 0; d <= maxDepth+1; d++ {
		cur, cycle := g.level(d, prev, limit)
		if cycle {
			return nil, true
		}
		zero, same := true, prev != nil
		for i, v := range cur {
			zero = zero && v == 0
			same = same && v == prev[i]
		}
		w := cur[g.index[root]]
		byLevel = append(byLevel, min(w, limit+1))
		if w > limit || zero || same {
			break
		}
		prev = cur
	}
	return byLevel, false
}

// workGraph is a schema's subschemas, each with those evaluated against
// the same value (inPlace: $ref, allOf, anyOf, oneOf, not, if, then,
// else, dependent schemas) and those evaluated against a value inside it
// (one slot for each way in; a value inside is reached by one of a
// slot's ways and by every slot of sums).
type workGraph struct {
	nodes []*jsonschema.Schema
	index map[*jsonschema.Schema]int
	// The edges by node index.
	inPlace [][]int
	// dyn are the schemas a dynamic reference may resolve to: one is.
	dyn [][]int
	// self is the work of a node's own keywords: 1, and one more for each
	// value of an enum, which a value is compared with in turn (100,000
	// numbers took 0.51 s, 340,000 times a failing evaluation).
	self []int64
	// alts are the ways into a value inside, of which one applies (a
	// property's schema or additionalProperties; an item's); sums apply
	// together (patternProperties, contains, unevaluated*, propertyNames,
	// contentSchema).
	alts, sums [][]int
}

func newWorkGraph(root *jsonschema.Schema) *workGraph {
	g := &workGraph{index: map[*jsonschema.Schema]int{}}
	g.add(root)
	for i := 0; i < len(g.nodes); i++ {
		s := g.nodes[i]
		g.inPlace = append(g.inPlace, g.addAll(inPlaceOf(s)))
		if s.DynamicRef != nil {
			g.addAll([]*jsonschema.Schema{s.DynamicRef.Ref})
		}
		g.addAll([]*jsonschema.Schema{s.RecursiveRef})
		alts, sums := insideOf(s)
		g.alts = append(g.alts, g.addAll(alts))
		g.sums = append(g.sums, g.addAll(sums))
	}
	g.self = make([]int64, len(g.nodes))
	for i, s := range g.nodes {
		g.self[i] = 1
		if s.Enum != nil {
			g.self[i] += int64(len(s.Enum.Values))
		}
	}
	g.dynamic()
	return g
}

// dynamic fills dyn: a dynamic reference resolves, as it is evaluated,
// to its own target or to a schema of its anchor, one of them.
func (g *workGraph) dynamic() {
	anchors, recursive := map[string][]int{}, []int{}
	for j, t := range g.nodes {
		if t.DynamicAnchor != "" {
			anchors[t.DynamicAnchor] = append(anchors[t.DynamicAnchor], j)
		}
		if t.RecursiveAnchor {
			recursive = append(recursive, j)
		}
	}
	g.dyn = make([][]int, len(g.nodes))
	for i, s := range g.nodes {
		switch {
		case s.RecursiveRef != nil:
			g.dyn[i] = append([]int{g.index[s.RecursiveRef]}, recursive...)
		case s.DynamicRef != nil && s.DynamicRef.Ref != nil:
			g.dyn[i] = []int{g.index[s.DynamicRef.Ref]}
			if s.DynamicRef.Anchor != "" {
				g.dyn[i] = append(g.dyn[i], anchors[s.DynamicRef.Anchor]...)
			}
		}
	}
}

func (g *workGraph) add(s *jsonschema.Schema) int {
	if i, ok := g.index[s]; ok {
		return i
	}
	g.index[s] = len(g.nodes)
	g.nodes = append(g.nodes, s)
	return len(g.nodes) - 1
}

func (g *workGraph) addAll(ss []*jsonschema.Schema) []int {
	var out []int
	for _, s := range ss {
		if s != nil {
			out = append(out, g.add(s))
		}
	}
	return out
}

// inPlaceOf lists the subschemas s evaluates against its own value.
func inPlaceOf(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.Not, s.If, s.Then, s.Else}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	for _, d := range s.DependentSchemas {
		out = append(out, d)
	}
	for _, d := range s.Dependencies {
		if d, ok := d.(*jsonschema.Schema); ok {
			out = append(out, d)
		}
	}
	return out
}

// insideOf lists the subschemas s evaluates against a value inside its
// own: alternatives, of which one applies to a given value inside, and
// sums, which all may.
func insideOf(s *jsonschema.Schema) (alts, sums []*jsonschema.Schema) {
	for _, p := range s.Properties {
		alts = append(alts, p)
	}
	alts = append(alts, schemaOf(s.AdditionalProperties), schemaOf(s.AdditionalItems), s.Items2020)
	alts = append(alts, s.PrefixItems...)
	switch it := s.Items.(type) {
	case *jsonschema.Schema:
		alts = append(alts, it)
	case []*jsonschema.Schema:
		alts = append(alts, it...)
	}
	for _, p := range s.PatternProperties {
		sums = append(sums, p)
	}
	sums = append(sums, s.Contains, s.UnevaluatedProperties, s.UnevaluatedItems, s.PropertyNames, s.ContentSchema)
	return alts, sums
}

func schemaOf(v any) *jsonschema.Schema {
	s, _ := v.(*jsonschema.Schema)
	return s
}

// level computes the work of every node at level d from level d-1's
// (prev), saturating past limit.
func (g *workGraph) level(d int, prev []int64, limit int64) (cur []int64, cycle bool) {
	cur = make([]int64, len(g.nodes))
	const (
		unseen = iota
		open
		done
	)
	state := make([]uint8, len(g.nodes))
	var visit func(i int) int64
	visit = func(i int) int64 {
		switch state[i] {
		case open:
			cycle = true
			return 0
		case done:
			return cur[i]
		}
		state[i] = open
		w := int64(0)
		if d == 0 {
			w = g.self[i]
		} else {
			w = g.inside(i, prev)
		}
		for _, j := range g.inPlace[i] {
			w = min(w+visit(j), limit+1)
		}
		most := int64(0)
		for _, j := range g.dyn[i] {
			most = max(most, visit(j))
		}
		w += most
		cur[i], state[i] = min(w, limit+1), done
		return cur[i]
	}
	for i := range g.nodes {
		visit(i)
	}
	return cur, cycle
}

// inside is the most work node i's ways into a value inside its own make
// at that value's level, given that level's work prev.
func (g *workGraph) inside(i int, prev []int64) int64 {
	w := int64(0)
	for _, j := range g.alts[i] {
		w = max(w, prev[j])
	}
	for _, j := range g.sums[i] {
		w += prev[j]
	}
	return w
}

// checkJSONSchemaWork refuses a schema whose validation could evaluate
// one value more than MaxJSONSchemaWork times; it returns what the
// schema costs (jsonSchemaWork, longestPattern).
func checkJSONSchemaWork(s *jsonschema.Schema) (schemaCost, error) {
	byLevel, cycle := jsonSchemaWork(s, MaxJSONSchemaWork)
	if cycle {
		return schemaCost{}, fmt.Errorf("a cycle of $refs through the same value: validation would never end")
	}
	if slices.Max(byLevel) > MaxJSONSchemaWork {
		return schemaCost{}, fmt.Errorf("validating a payload against it could evaluate one value over %d times (the $refs, allOf, anyOf and oneOf multiply): more work than the service gives a record", MaxJSONSchemaWork)
	}
	return schemaCost{byLevel: byLevel, pattern: int64(longestPattern(newWorkGraph(s)))}, nil
}

// schemaCost is what validating against a schema costs: its work by
// level of nesting, and the length of its longest pattern.
type schemaCost struct {
	byLevel []int64
	pattern int64
}

// longestPattern is the length of the longest regular expression of g's
// schemas (pattern, patternProperties).
func longestPattern(g *workGraph) int {
	n := 0
	for _, s := range g.nodes {
		if s.Pattern != nil {
			n = max(n, len(s.Pattern.String()))
		}
		for re := range s.PatternProperties {
			n = max(n, len(re.String()))
		}
	}
	return n
}

// MaxJSONRecordWork bounds the work validating one record may make: its
// values at each level of nesting, times what the schema asks of a value
// there (see MaxJSONSchemaWork), and its strings and member names, times
// the schema's longest pattern, which may be matched against each (a
// unit for each patternBytes of their product). A record over it is a
// dead letter (too_large) before it is validated. An evaluation that
// fails was measured at 1.5 µs and 340 bytes (a record of 64 values each
// failing 4094 evaluations: 0.40 s, 85 MB), so a record at the bound
// takes about 0.1 s and 22 MB; a schema asking one or two evaluations of
// a value, as most do, validates records of over 30,000 values.
const MaxJSONRecordWork = 1 << 16

// patternBytes is the product of a string's length and a pattern's
// worth an evaluation: a 794-byte pattern took 1.0 s to match 900 kB, or
// 1.4 ns a byte of each, and 1,024 of those about an evaluation's 1.5 µs.
const patternBytes = 1024

// recordWork is the most work validating v can make, given its schema's
// cost; it stops counting past MaxJSONRecordWork.
func recordWork(v any, c schemaCost) int64 {
	total, text := int64(0), int64(0)
	var walk func(v any, d int)
	walk = func(v any, d int) {
		if total > MaxJSONRecordWork {
			return
		}
		total += c.byLevel[min(d, len(c.byLevel)-1)]
		switch v := v.(type) {
		case string:
			text += int64(len(v))
		case map[string]any:
			for k, e := range v {
				text += int64(len(k))
				walk(e, d+1)
			}
		case []any:
			for _, e := range v {
				walk(e, d+1)
			}
		}
	}
	walk(v, 0)
	return total + text*c.pattern/patternBytes
}
