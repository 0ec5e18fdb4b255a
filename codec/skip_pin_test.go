package codec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/internal/golden"
)

// skipPinValues are values of every kind, well formed and not, for the
// field the decoder steps over.
func skipPinValues() []string {
	deep := func(n int, open, close string) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }
	return []string{
		`1`, `-0.5e3`, `"s"`, `"\u00e9\n"`, `true`, `false`, `null`, `{}`, `[]`, ` { } `, `[ ]`,
		`{"a":1}`, `{"a":[1,{"b":null,"c":[true,false,"x"]}],"d":{}}`, `[[],[[]],{},{"e":{"f":[]}}]`,
		`[1, 2 ,3 ]`, `{ "a" : 1 , "b" : [ ] }`, deep(999, "[", "]"), deep(1000, "[", "]"),
		strings.Repeat(`{"a":`, 998) + `1` + strings.Repeat(`}`, 998), strings.Repeat(`[{"k":`, 70) + `0` + strings.Repeat(`}]`, 70),
		``, `-`, `01`, `1.`, `tru`, `nul`, `fals`, `x`, `"open`, `"\x"`, `{`, `[`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1}`,
		`{"a":1]`, `{1:2}`, `[1 2]`, `{"a":1 "b":2}`, `{"a":[}`, `[{]`, `{,}`, `[,]`, `{"a":1}}`, "[\"\x01\"]", `[1e]`, `[1,{"a":[2,]}]`,
	}
}

// TestSkipValuePinned pins what the JSON record decoder and the event
// decoder make of a record with a field they step over holding each value:
// the example or event, or the error with its offset.
func TestSkipValuePinned(t *testing.T) {
	var b strings.Builder
	ed, err := NewEventDecoder(EventConfig{LabelField: "y", Schema: map[string]FieldKind{"skip": FieldIgnore}})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range skipPinValues() {
		in := `{"label":1,"skip":` + v + `,"features":{"1":2}}`
		ex, err := DecodeJSON([]byte(in), Limits{})
		name := v
		if len(name) > 60 {
			name = fmt.Sprintf("%s... (%d bytes)", name[:60], len(name))
		}
		fmt.Fprintf(&b, "%s\n\trecord: %q %v %v\n", name, ex.Label, ex.X, err)
		var ev Event
		err = ed.Decode([]byte(`{"y":"a","skip":`+v+`,"x":3}`), &ev)
		if err != nil {
			fmt.Fprintf(&b, "\tevent: %v\n", err)
		} else {
			fmt.Fprintf(&b, "\tevent: %s\n", eventText(&ev))
		}
		err = ed.Decode([]byte(`{"y":"a","x":3,"nested":`+v+`}`), &ev)
		if err != nil {
			fmt.Fprintf(&b, "\tnested: %v\n", err)
		} else {
			fmt.Fprintf(&b, "\tnested: %s\n", eventText(&ev))
		}
	}
	golden.Check(t, "skip.golden", []byte(b.String()))
}

// An a9a record with a field the decoder steps over: request metadata
// nesting objects and arrays of every kind of value.
var a9aMetaJSON = []byte(`{"label":-1,"meta":{"id":"r-8812","ts":1718000000123,"tags":["web","eu",null,true],"geo":{"lat":48.85,"lon":2.35,"ok":false},` +
	`"hist":[[1,2],[3,4.5e-3],[]],"ua":"Mozilla/5.0 (X11; Linux x86_64)"},"features":{"3":1,"11":1,"14":1,"19":1,"39":1,"42":1,"55":1,"64":1,"67":1,"73":1,"75":1,"76":1,"80":1,"83":1}}`)

// BenchmarkDecodeJSONSkip is BenchmarkDecodeJSON on a record with a field
// to step over.
func BenchmarkDecodeJSONSkip(b *testing.B) {
	benchDecode(b, DecodeJSON, a9aMetaJSON)
}
