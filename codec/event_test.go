package codec

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// fieldsOf renders an event's fields as "name=text" or "name:value".
func fieldsOf(ev *Event) []string {
	var out []string
	for _, f := range ev.Fields {
		switch f.Kind {
		case FieldNumeric:
			out = append(out, string(ev.Name(f))+":"+formatLabel(f.Num))
		case FieldCategorical:
			out = append(out, string(ev.Name(f))+"="+string(ev.Text(f)))
		case FieldText:
			out = append(out, string(ev.Name(f))+"~"+string(ev.Text(f)))
		}
	}
	return out
}

func mustDecoder(t testing.TB, cfg EventConfig) *EventDecoder {
	t.Helper()
	d, err := NewEventDecoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestEventInference(t *testing.T) {
	d := mustDecoder(t, EventConfig{LabelField: "income", KeyField: "id"})
	var ev Event
	in := `{"id":"adult-000001","age":39,"workclass":"State-gov","fnlwgt":77516,"ok":true,"no":false,` +
		`"tags":["a","b","a"],"pos":[1.5,null,"x",{"z":2}],"addr":{"city":"Oslo","zip":{"n":7}},` +
		`"gone":null,"e":"caf\u00e9","income":"<=50K"}`
	if err := d.Decode([]byte(in), &ev); err != nil {
		t.Fatal(err)
	}
	want := []string{"age:39", "workclass=State-gov", "fnlwgt:77516", "ok:1", "no:0",
		"tags=a", "tags=b", "tags=a", "pos.0:1.5", "pos=x", "pos.3.z:2", "addr.city=Oslo", "addr.zip.n:7", "e=café"}
	if got := fieldsOf(&ev); !slices.Equal(got, want) {
		t.Fatalf("fields\n%q\nwant\n%q", got, want)
	}
	if string(ev.Key()) != "adult-000001" || string(ev.Label()) != "<=50K" {
		t.Fatalf("key %q label %q", ev.Key(), ev.Label())
	}
	// The same decoder and event again: nothing left over.
	if err := d.Decode([]byte(`{"age":1}`), &ev); err != nil {
		t.Fatal(err)
	}
	if got := fieldsOf(&ev); !slices.Equal(got, []string{"age:1"}) || ev.Key() != nil || ev.Label() != nil {
		t.Fatalf("second event %q key %q label %q", got, ev.Key(), ev.Label())
	}
}

func TestEventLabelsKeysAndSchema(t *testing.T) {
	schema, err := ParseSchema("zip:categorical, note:text ,age:numeric,secret:ignore,day:categorical")
	if err != nil {
		t.Fatal(err)
	}
	d := mustDecoder(t, EventConfig{Schema: schema, Ignore: []string{"id"}, KeyField: "k"})
	for _, c := range []struct{ in, label, key string }{
		{`{"label":1.0,"k":17,"x":1}`, "1", "17"},
		{`{"label":-0,"x":1}`, "0", ""},
		{`{"label":7,"x":1}`, "7", ""},
		{`{"label":true,"x":1}`, "true", ""},
		{`{"label":"UP","k":null,"x":1}`, "UP", ""},
		{`{"label":null,"x":1}`, "", ""},
	} {
		var ev Event
		if err := d.Decode([]byte(c.in), &ev); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if string(ev.Label()) != c.label || string(ev.Key()) != c.key || (c.label == "") != (ev.Label() == nil) {
			t.Fatalf("%s: label %q key %q", c.in, ev.Label(), ev.Key())
		}
	}
	var ev Event
	in := `{"id":"x1","zip":2134,"note":"Hello, World!","age":true,"secret":{"deep":[1,2]},"day":"2","label":"a"}`
	if err := d.Decode([]byte(in), &ev); err != nil {
		t.Fatal(err)
	}
	if got, want := fieldsOf(&ev), []string{"zip=2134", "note~Hello, World!", "age:1", "day=2"}; !slices.Equal(got, want) {
		t.Fatalf("schema fields %q, want %q", got, want)
	}
}

func TestEventErrors(t *testing.T) {
	schema := map[string]FieldKind{"n": FieldNumeric, "t": FieldText, "c": FieldCategorical}
	d := mustDecoder(t, EventConfig{Schema: schema, KeyField: "id", Limits: Limits{MaxNonZeros: 3}})
	for _, c := range []struct {
		in     string
		reason Reason
	}{
		{``, ReasonEmptyMessage},
		{"\xff{}", ReasonInvalidUTF8},
		{`[1]`, ReasonInvalidJSON},
		{`{"a":1`, ReasonInvalidJSON},
		{`{"a":1}x`, ReasonInvalidJSON},
		{`{"a":NaN}`, ReasonInvalidJSON},
		{`{"a":Infinity}`, ReasonInvalidJSON},
		{`{"a":1e999}`, ReasonNonFinite},
		{`{"label":1,"label":2}`, ReasonInvalidJSON},
		{`{"label":null,"label":2}`, ReasonInvalidJSON},
		{`{"id":1,"id":2}`, ReasonInvalidJSON},
		{`{"label":""}`, ReasonBadLabel},
		{`{"label":[1]}`, ReasonBadLabel},
		{`{"label":1e400}`, ReasonBadLabel},
		{`{"id":true}`, ReasonBadField},
		{`{"n":"x"}`, ReasonBadField},
		{`{"n":{"a":1}}`, ReasonBadField},
		{`{"n":"2x"}`, ReasonBadField},
		{`{"n":["a"]}`, ReasonBadField},
		{`{"a":1,"b":2,"c":"x","d":4}`, ReasonTooManyFeatures},
		{`{"a":[1,2,3,4]}`, ReasonTooManyFeatures},
		// Control bytes and bad numbers, in and after the first eight
		// bytes that the string scan tests at once.
		{"{\"a\":\"x\x01\"}", ReasonInvalidJSON},
		{"{\"a\":\"abcdefghijk\x1fmnopqrstuvwxyz\",\"b\":1}", ReasonInvalidJSON},
		{"{\"abcdefgh\nijklmnopq\":1,\"b\":1}", ReasonInvalidJSON},
		{`{"a":01}`, ReasonInvalidJSON},
		{`{"a":1.}`, ReasonInvalidJSON},
		{`{"a":-}`, ReasonInvalidJSON},
		{`{"a":.5}`, ReasonInvalidJSON},
		{`{"a":1e}`, ReasonInvalidJSON},
		{`{"label":01}`, ReasonInvalidJSON},
		{`{"a":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`, ReasonInvalidJSON},
	} {
		var ev Event
		err := d.Decode([]byte(c.in), &ev)
		var e *Error
		if !errors.As(err, &e) || e.Reason != c.reason {
			t.Errorf("%.40q: error %v, want reason %s", c.in, err, c.reason)
		}
	}
	for _, cfg := range []EventConfig{
		{LabelField: "y", KeyField: "y"},
		{Schema: map[string]FieldKind{"label": FieldNumeric}},
		{Schema: map[string]FieldKind{"a": 9}},
		{Ignore: []string{""}},
	} {
		if _, err := NewEventDecoder(cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	for _, s := range []string{"a", "a:nope", ":numeric", "a:text,a:numeric"} {
		if _, err := ParseSchema(s); err == nil {
			t.Errorf("schema %q accepted", s)
		}
	}
}

// TestEventStringsTypedAsCSVCells: one typing rule whatever the format
// wrote. A string holding a JSON number is that number, "true"/"false" in
// any case a boolean and "" a missing value, as the same row written by a
// CSV writer (which cannot tell "2" from 2) reads; a schema kind still
// decides (categorical keeps the text, text tokenizes it), and numbers and
// booleans declared text are their text. StringsAsText keeps the rule of
// the builds before it: every string is its text.
func TestEventStringsTypedAsCSVCells(t *testing.T) {
	typed := `{"a":"2","b":"True","c":"","d":"x","e":"02134","f":"1e999","g":"-0.5e1","h":"FALSE","i":" 3","j":"1.","k":"+1",` +
		`"l":["1","2"],"ca":"2","cb":"True","cc":"","ta":"2","tb":3,"tc":false,"na":"7","nb":"false","label":"1"}`
	plain := `{"a":2,"b":true,"c":null,"d":"x","e":"02134","f":"1e999","g":-0.5e1,"h":false,"i":" 3","j":"1.","k":"+1",` +
		`"l":["1","2"],"ca":2,"cb":true,"cc":null,"ta":"2","tb":"3","tc":"false","na":7,"nb":false,"label":1}`
	schema := map[string]FieldKind{"ca": FieldCategorical, "cb": FieldCategorical, "cc": FieldCategorical,
		"ta": FieldText, "tb": FieldText, "tc": FieldText, "na": FieldNumeric, "nb": FieldNumeric}
	d := mustDecoder(t, EventConfig{Schema: schema})
	var ev Event
	fields := func(in string) []string {
		t.Helper()
		if err := d.Decode([]byte(in), &ev); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		return fieldsOf(&ev)
	}
	want := []string{"a:2", "b:1", "d=x", "e=02134", "f=1e999", "g:-5", "h:0", "i= 3", "j=1.", "k=+1",
		"l=1", "l=2", "ca=2", "cb=true", "ta~2", "tb~3", "tc~false", "na:7", "nb:0"}
	if got := fields(typed); !slices.Equal(got, want) {
		t.Errorf("typed strings\n%q\nwant\n%q", got, want)
	}
	if got := fields(plain); !slices.Equal(got, want) {
		t.Errorf("their JSON values\n%q\nwant\n%q", got, want)
	}
	old := mustDecoder(t, EventConfig{StringsAsText: true})
	if err := old.Decode([]byte(`{"a":"2","b":"True","c":"","g":-0.5e1}`), &ev); err != nil {
		t.Fatal(err)
	}
	if got, want := fieldsOf(&ev), []string{"a=2", "b=True", "c=", "g:-5"}; !slices.Equal(got, want) {
		t.Errorf("StringsAsText: %q, want %q", got, want)
	}
	for s, want := range map[string]int{"0": StringNumber, "-0.0": StringNumber, "1E+3": StringNumber, "01": StringText,
		".5": StringText, "1e": StringText, "-": StringText, "tru": StringText, "fAlSe": StringBoolean, "": StringMissing,
		"NaN": StringText, "Infinity": StringText} {
		if got, _ := TypeString([]byte(s)); got != want {
			t.Errorf("TypeString(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestEventNumbersAndStrings: numbers read as strconv.ParseFloat reads
// them, whether short (converted while scanned) or not, and strings with
// escapes or blanks anywhere read as encoding/json reads them.
func TestEventNumbersAndStrings(t *testing.T) {
	d := mustDecoder(t, EventConfig{Limits: Limits{MaxAbsValue: math.MaxFloat64}})
	var ev Event
	for _, s := range []string{"0", "-0", "7", "-12.5", "0.1", "123456789012345", "12345678901234.5",
		"1234567890123456", "0.12345678901234567", "99999999999999999999", "1e3", "-2.5E-3", "1.5e+2", "-0.0e-3",
		"4.9e-324", "1e-400"} {
		if err := d.Decode([]byte(`{"x":`+s+`,"label":`+s+`}`), &ev); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		want, _ := strconv.ParseFloat(s, 64)
		if len(ev.Fields) != 1 || math.Float64bits(ev.Fields[0].Num) != math.Float64bits(want) {
			t.Errorf("%s: fields %q, want %v", s, fieldsOf(&ev), want)
		}
		if lab, _ := numericLabel(s); string(ev.Label()) != lab {
			t.Errorf("%s: label %q, want %q", s, ev.Label(), lab)
		}
	}
	for _, c := range []struct{ in, want string }{
		{`{"abcdefghij\u00e9":"abcdefghij\"k","b" : "x" , "c":"\\"}`, `abcdefghijé=abcdefghij"k b=x c=\`},
		{"{ \"a\"\t:\n\"short\" ,\r\"b\":[ \"p\" , \"q\" ] }", `a=short b=p b=q`},
		{`{"long-field-name":"a value longer than sixteen bytes","n\u00e9":"\u00e9t\u00e9"}`,
			`long-field-name=a value longer than sixteen bytes né=été`},
	} {
		if err := d.Decode([]byte(c.in), &ev); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got := strings.Join(fieldsOf(&ev), " "); got != c.want {
			t.Errorf("%s: fields %s, want %s", c.in, got, c.want)
		}
		for _, f := range ev.Fields {
			if nt := string(ev.NameText(f)); nt != string(ev.Name(f))+"\x00"+string(ev.Text(f)) {
				t.Errorf("%s: NameText %q", c.in, nt)
			}
		}
	}
}

// TestEventKindsOfReorderedFields: an Event reused across records whose
// fields come in other orders, appear or vanish, and across two decoders,
// gets the kinds that a fresh Event gets.
func TestEventKindsOfReorderedFields(t *testing.T) {
	schema := map[string]FieldKind{"a": FieldCategorical, "b": FieldText, "o.x": FieldCategorical, "l.1": FieldCategorical}
	decs := []*EventDecoder{
		mustDecoder(t, EventConfig{Schema: schema, Ignore: []string{"c", "o.y"}}),
		mustDecoder(t, EventConfig{Ignore: []string{"a"}}),
	}
	records := []string{
		`{"a":1,"b":"Two words","c":3,"d":4}`,
		`{"a":1,"b":"Two words","c":3,"d":4}`,
		`{"d":4,"c":3,"b":"x y","a":1}`,
		`{"b":"x","d":4}`,
		`{"o":{"x":1,"y":2},"l":[5,6],"a":7,"c":"z"}`,
		`{"o":{"y":1,"x":2},"l":[6,5,4],"a":8}`,
		`{"a":1,"b":"Two words","c":3,"d":4}`,
	}
	var ev Event
	for k := range 3 * len(records) {
		d, in := decs[k%len(decs)], records[k%len(records)]
		var fresh Event
		if err := d.Decode([]byte(in), &fresh); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if err := d.Decode([]byte(in), &ev); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got, want := fieldsOf(&ev), fieldsOf(&fresh); !slices.Equal(got, want) {
			t.Fatalf("record %d %s, decoder %d: fields %q, want %q", k, in, k%len(decs), got, want)
		}
	}
	// The kinds themselves, once the cache has seen other records.
	if got, want := fieldsOf(&ev), []string{"a=1", "b~Two words", "d:4"}; !slices.Equal(got, want) {
		t.Fatalf("fields %q, want %q", got, want)
	}
	if err := decs[0].Decode([]byte(`{"o":{"y":1,"x":2},"l":[6,5,4],"a":8}`), &ev); err != nil {
		t.Fatal(err)
	}
	if got, want := fieldsOf(&ev), []string{"o.x=2", "l.0:6", "l.1=5", "l.2:4", "a=8"}; !slices.Equal(got, want) {
		t.Fatalf("fields %q, want %q", got, want)
	}
}

func TestEventDecodeAllocatesNothingOnceWarm(t *testing.T) {
	d := mustDecoder(t, EventConfig{LabelField: "income", KeyField: "id"})
	in := []byte(`{"id":"adult-000001","age":39,"workclass":"State-gov","fnlwgt":77516,"education":"Bachelors","education-num":13,"marital-status":"Never-married","occupation":"Adm-clerical","relationship":"Not-in-family","race":"White","sex":"Male","capital-gain":2174,"capital-loss":0,"hours-per-week":40,"native-country":"United-States","income":"<=50K"}`)
	var ev Event
	if err := d.Decode(in, &ev); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = d.Decode(in, &ev) }); n != 0 {
		t.Fatalf("%v allocations per decode", n)
	}
}

// FuzzEventDecode: any input either decodes into fields that hold what
// the rules promise or fails with a listed reason and a readable detail;
// never a panic.
func FuzzEventDecode(f *testing.F) {
	for _, s := range []string{
		`{"id":"a-1","age":39,"w":"State-gov","income":"<=50K"}`,
		`{"label":1,"x":{"y":[1,"a",null,{"z":true}]},"t":"Hello world"}`,
		`{"label":"\u00e9\ud83d\ude00","a":-0.0e-3}`, `{}`, `[]`, `{"a":1e999}`, `{"label":{"a":1}}`,
	} {
		f.Add([]byte(s))
	}
	decs := []*EventDecoder{
		mustDecoder(f, EventConfig{}),
		mustDecoder(f, EventConfig{LabelField: "income", KeyField: "id", Ignore: []string{"x.y"},
			Schema: map[string]FieldKind{"t": FieldText, "a": FieldNumeric, "w": FieldCategorical},
			Limits: Limits{MaxBytes: 4096, MaxNonZeros: 8}}),
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, d := range decs {
			var ev Event
			err := d.Decode(in, &ev)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || !slices.Contains(Reasons(), e.Reason) || e.Detail == "" || !utf8.ValidString(e.Detail) {
					t.Fatalf("%q: bad error %v", in, err)
				}
				continue
			}
			if len(ev.Fields) > d.lim.MaxNonZeros {
				t.Fatalf("%q: %d fields", in, len(ev.Fields))
			}
			for _, fl := range ev.Fields {
				if fl.Kind == FieldNumeric && (math.IsNaN(fl.Num) || math.IsInf(fl.Num, 0)) {
					t.Fatalf("%q: field %q = %v", in, ev.Name(fl), fl.Num)
				}
				if fl.Kind != FieldNumeric && fl.Kind != FieldCategorical && fl.Kind != FieldText {
					t.Fatalf("%q: kind %v", in, fl.Kind)
				}
				if !utf8.Valid(ev.Name(fl)) || !utf8.Valid(ev.Text(fl)) || string(ev.Name(fl)) == d.label {
					t.Fatalf("%q: field %q text %q", in, ev.Name(fl), ev.Text(fl))
				}
			}
			if l := ev.Label(); l != nil && len(l) == 0 {
				t.Fatalf("%q: empty label", in)
			}
		}
	})
}

// TestEventValueLimit: every numeric value of an event, top level or
// nested, a number or a boolean, is held to MaxAbsValue (1e15 by default)
// and refused as value_too_large; the limit is configurable.
func TestEventValueLimit(t *testing.T) {
	d := mustDecoder(t, EventConfig{})
	var ev Event
	for _, msg := range []string{`{"age":1e16}`, `{"age":1e200}`, `{"x":1e308}`, `{"a":{"b":{"c":-1e308}}}`, `{"ok":1,"big":2e15}`} {
		err := d.Decode([]byte(msg), &ev)
		var ce *Error
		if !errors.As(err, &ce) || ce.Reason != ReasonValueTooLarge {
			t.Errorf("%s: %v, want value_too_large", msg, err)
		}
	}
	for _, msg := range []string{`{"age":1e15}`, `{"a":{"b":-1e15}}`, `{"t":true}`} {
		if err := d.Decode([]byte(msg), &ev); err != nil {
			t.Errorf("%s: %v", msg, err)
		}
	}
	wide := mustDecoder(t, EventConfig{Limits: Limits{MaxAbsValue: 1e300}})
	if err := wide.Decode([]byte(`{"age":1e200}`), &ev); err != nil {
		t.Errorf("under a limit of 1e300: %v", err)
	}
}
