package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// fuzzLimits are tried on every input: the defaults, and tight limits that
// the fuzzer can actually reach.
var fuzzLimits = []Limits{
	{},
	{MaxBytes: 4096, MaxIndex: 1000, MaxNonZeros: 8, AllowEmpty: true},
}

// checkDecoded checks what every decode must guarantee, and that the example
// survives re-encoding in each format that can carry its label.
func checkDecoded(t *testing.T, in []byte, lim Limits, ex Example, err error) {
	t.Helper()
	lim = lim.withDefaults()
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%q: error %v (%T) is not an *Error", in, err, err)
		}
		if !slices.Contains(Reasons(), e.Reason) {
			t.Fatalf("%q: unknown reason %q", in, e.Reason)
		}
		if e.Detail == "" || !utf8.ValidString(e.Detail) || len(e.Detail) > 300 {
			t.Fatalf("%q: bad detail %q", in, e.Detail)
		}
		if !sameExample(ex, Example{}) {
			t.Fatalf("%q: error came with %+v", in, ex)
		}
		return
	}
	if len(in) > lim.MaxBytes {
		t.Fatalf("%q: accepted %d bytes over the limit %d", in, len(in), lim.MaxBytes)
	}
	if err := ex.X.Validate(); err != nil {
		t.Fatalf("%q: invalid vector %+v: %v", in, ex.X, err)
	}
	if ex.X.Len() > lim.MaxNonZeros || ex.X.MaxIndex() > lim.MaxIndex {
		t.Fatalf("%q: vector %+v breaks the limits %+v", in, ex.X, lim)
	}
	if ex.X.Len() == 0 && !lim.AllowEmpty {
		t.Fatalf("%q: accepted an empty vector", in)
	}
	if ex.X.Len() == 0 && (ex.X.Idx != nil || ex.X.Val != nil) {
		t.Fatalf("%q: empty vector with non-nil slices", in)
	}
	for _, v := range ex.X.Val {
		if v == 0 {
			t.Fatalf("%q: zero value kept in %+v", in, ex.X)
		}
	}
	if !utf8.ValidString(ex.Label) {
		t.Fatalf("%q: label %q is not UTF-8", in, ex.Label)
	}

	// Re-encoding may take more bytes than the input did (a dense array
	// becomes an object), so the size limit is lifted for the check.
	relim := lim
	relim.MaxBytes = math.MaxInt
	b := AppendJSON(nil, ex)
	if got, err := DecodeJSON(b, relim); err != nil || !sameExample(got, ex) {
		t.Fatalf("%q: JSON round trip %s gave %+v, %v; want %+v", in, b, got, err, ex)
	}
	if (ex.Label == "" || isCanonicalNumber(ex.Label)) && (ex.Label != "" || ex.X.Len() > 0) {
		b := AppendLIBSVM(nil, ex)
		if got, err := DecodeLIBSVM(b, relim); err != nil || !sameExample(got, ex) {
			t.Fatalf("%q: LIBSVM round trip %q gave %+v, %v; want %+v", in, b, got, err, ex)
		}
	}
}

func addSeeds(f *testing.F, cases []decodeCase) {
	// Long inputs (the deep-nesting cases, the dense benchmark records) are
	// left out: the fuzzer minimizes every input that finds new coverage,
	// and on a long one that eats most of a short run.
	for _, c := range cases {
		if len(c.in) <= 256 {
			f.Add([]byte(c.in))
		}
	}
	f.Add(a9aJSON)
	f.Add(a9aLIBSVM)
	f.Add([]byte(`{"label":1,"features":[0,0.5,0,0,1e-3,0,0,0.25,0,0]}`))
	f.Add([]byte("1 1:0 2:0.5 5:1e-3 8:0.25 # dense"))
}

// semanticJSON matches the details of invalid_json errors raised on
// well-formed JSON; any other invalid_json on input that encoding/json finds
// valid is a scanner bug.
var semanticJSON = regexp.MustCompile(`appears twice|want a number|want an object, an array or null|nesting deeper|top level is not an object`)

func FuzzDecodeJSON(f *testing.F) {
	addSeeds(f, jsonCases)
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, lim := range fuzzLimits {
			ex, err := DecodeJSON(in, lim)
			checkDecoded(t, in, lim, ex, err)
			if k := firstNonBlank(in); k < len(in) && in[k] == '{' {
				ex2, err2 := Decode(in, lim)
				if !sameExample(ex, ex2) || (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
					t.Fatalf("%q: Decode gave %+v, %v; DecodeJSON %+v, %v", in, ex2, err2, ex, err)
				}
			}
		}
		ex, err := DecodeJSON(in, Limits{})
		compareWithEncodingJSON(t, in, ex, err)
	})
}

// compareWithEncodingJSON is the differential check: invalid JSON must be
// rejected, and an accepted record must read the same through encoding/json.
func compareWithEncodingJSON(t *testing.T, in []byte, ex Example, err error) {
	t.Helper()
	valid := json.Valid(in)
	if err != nil {
		var e *Error
		errors.As(err, &e)
		if valid && e.Reason == ReasonInvalidJSON && !semanticJSON.MatchString(e.Detail) {
			t.Fatalf("%q: encoding/json finds it valid, but: %v", in, err)
		}
		return
	}
	if !valid {
		t.Fatalf("%q: accepted, but encoding/json finds it invalid", in)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(in, &top); err != nil {
		t.Fatalf("%q: accepted, but encoding/json fails: %v", in, err)
	}

	want := ""
	if raw, ok := top["label"]; ok {
		raw = bytes.TrimSpace(raw)
		switch raw[0] {
		case 'n':
		case 't', 'f':
			want = string(raw)
		case '"':
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatalf("%q: label: %v", in, err)
			}
		default:
			var v float64
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatalf("%q: label: %v", in, err)
			}
			want = strconv.FormatFloat(v, 'g', -1, 64)
			if v == 0 {
				want = "0"
			}
		}
	}
	if ex.Label != want {
		t.Fatalf("%q: label %q, encoding/json reads %q", in, ex.Label, want)
	}

	raw, ok := top["features"]
	if !ok {
		t.Fatalf("%q: accepted without features", in)
	}
	raw = bytes.TrimSpace(raw)
	var x sparse.Vector
	switch raw[0] {
	case 'n':
	case '[':
		var dense []float64
		if err := json.Unmarshal(raw, &dense); err != nil {
			t.Fatalf("%q: features: %v", in, err)
		}
		x = sparse.FromDense(dense)
	case '{':
		var m map[string]float64
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%q: features: %v", in, err)
		}
		for k, v := range m {
			i, err := strconv.ParseUint(k, 10, 32)
			if err != nil {
				t.Fatalf("%q: accepted feature key %q: %v", in, k, err)
			}
			if v != 0 {
				x.Idx = append(x.Idx, uint32(i))
			}
		}
		slices.Sort(x.Idx)
		for _, i := range x.Idx {
			for k, v := range m {
				if n, _ := strconv.ParseUint(k, 10, 32); uint32(n) == uint32(i) {
					x.Val = append(x.Val, v)
					break
				}
			}
		}
	default:
		t.Fatalf("%q: accepted features %s", in, raw)
	}
	if !sameExample(Example{X: ex.X}, Example{X: x}) {
		t.Fatalf("%q: features %+v, encoding/json reads %+v", in, ex.X, x)
	}
}

func FuzzDecodeLIBSVM(f *testing.F) {
	addSeeds(f, libsvmCases)
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, lim := range fuzzLimits {
			ex, err := DecodeLIBSVM(in, lim)
			checkDecoded(t, in, lim, ex, err)
			if k := firstNonBlank(in); k < len(in) && in[k] != '{' {
				ex2, err2 := Decode(in, lim)
				if !sameExample(ex, ex2) || (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
					t.Fatalf("%q: Decode gave %+v, %v; DecodeLIBSVM %+v, %v", in, ex2, err2, ex, err)
				}
			}
		}
		ex, err := DecodeLIBSVM(in, Limits{})
		want, ok := refLIBSVM(string(in))
		if ok != (err == nil) {
			t.Fatalf("%q: DecodeLIBSVM gave %+v, %v; the reference accepts: %v", in, ex, err, ok)
		}
		if ok && !sameExample(ex, want) {
			t.Fatalf("%q: got %+v, the reference reads %+v", in, ex, want)
		}
	})
}

func parseFloatRef(s string) (float64, error) { return strconv.ParseFloat(s, 64) }

// refLIBSVM is a slow, plain reading of the LIBSVM rules under the default
// limits, written independently of the decoder to check it against.
func refLIBSVM(s string) (Example, bool) {
	if strings.Trim(s, " \t\r\n") == "" || len(s) > 1<<20 || !utf8.ValidString(s) {
		return Example{}, false
	}
	s = strings.TrimRight(s, "\r\n")
	if strings.ContainsAny(s, "\r\n") {
		return Example{}, false
	}
	if k := strings.IndexByte(s, '#'); k >= 0 {
		s = s[:k]
	}
	number := func(tok string) (float64, bool) {
		v, err := parseFloatRef(tok)
		if err != nil || strings.Contains(tok, "_") || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, false
		}
		return v, true
	}
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' })
	if len(fields) == 0 {
		return Example{}, false
	}
	var ex Example
	if !strings.Contains(fields[0], ":") {
		v, ok := number(fields[0])
		if !ok {
			return Example{}, false
		}
		ex.Label = strconv.FormatFloat(v, 'g', -1, 64)
		if v == 0 {
			ex.Label = "0"
		}
		fields = fields[1:]
	}
	if len(fields) > 1<<16 {
		return Example{}, false
	}
	m := map[uint32]float64{}
	for _, tok := range fields {
		is, vs, ok := strings.Cut(tok, ":")
		if !ok || is == "" || vs == "" || strings.Trim(is, "0123456789") != "" {
			return Example{}, false
		}
		i, err := strconv.ParseUint(is, 10, 64)
		if err != nil || i > 1<<24 {
			return Example{}, false
		}
		v, ok := number(vs)
		if !ok || math.Abs(v) > defaultMaxAbsValue { // the limit is on features, not labels
			return Example{}, false
		}
		if _, dup := m[uint32(i)]; dup {
			return Example{}, false
		}
		m[uint32(i)] = v
	}
	for i, v := range m {
		if v != 0 {
			ex.X.Idx = append(ex.X.Idx, i)
		}
	}
	if len(ex.X.Idx) == 0 {
		return Example{}, false
	}
	slices.Sort(ex.X.Idx)
	for _, i := range ex.X.Idx {
		ex.X.Val = append(ex.X.Val, m[i])
	}
	return ex, true
}
