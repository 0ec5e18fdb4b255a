package codec

import (
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// vec builds a vector from idx, val pairs, in the order given.
func vec(pairs ...float64) sparse.Vector {
	var v sparse.Vector
	for k := 0; k+1 < len(pairs); k += 2 {
		v.Idx = append(v.Idx, uint32(pairs[k]))
		v.Val = append(v.Val, pairs[k+1])
	}
	return v
}

func sameExample(a, b Example) bool {
	if a.Label != b.Label || len(a.X.Idx) != len(b.X.Idx) || len(a.X.Val) != len(b.X.Val) {
		return false
	}
	for k := range a.X.Idx {
		if a.X.Idx[k] != b.X.Idx[k] || math.Float64bits(a.X.Val[k]) != math.Float64bits(b.X.Val[k]) {
			return false
		}
	}
	return true
}

type decodeCase struct {
	name   string
	in     string
	lim    Limits
	reason Reason  // "" when the record is accepted
	want   Example // when accepted
}

func ok(label string, x sparse.Vector) Example { return Example{X: x, Label: label} }

var tight = Limits{MaxBytes: 64, MaxIndex: 10, MaxNonZeros: 3}

var jsonCases = []decodeCase{
	// Accepted records.
	{name: "sparse object", in: `{"label":1,"features":{"3":0.5,"17":1}}`, want: ok("1", vec(3, 0.5, 17, 1))},
	{name: "dense array", in: `{"label":-1,"features":[0.5,0,2]}`, want: ok("-1", vec(1, 0.5, 3, 2))},
	{name: "features first", in: `{"features":{"1":2},"label":0}`, want: ok("0", vec(1, 2))},
	{name: "unlabeled", in: `{"features":{"1":1}}`, want: ok("", vec(1, 1))},
	{name: "null label", in: `{"label":null,"features":{"1":1}}`, want: ok("", vec(1, 1))},
	{name: "true label", in: `{"label":true,"features":{"1":1}}`, want: ok("true", vec(1, 1))},
	{name: "false label", in: `{"label":false,"features":{"1":1}}`, want: ok("false", vec(1, 1))},
	{name: "string label", in: `{"label":"cat","features":{"1":1}}`, want: ok("cat", vec(1, 1))},
	{name: "numeric string label kept", in: `{"label":"1.0","features":{"1":1}}`, want: ok("1.0", vec(1, 1))},
	{name: "escaped string label", in: `{"label":"c\"a\\t\/\b\f\n\r\t\u00e9\ud83d\ude00","features":{"1":1}}`, want: ok("c\"a\\t/\b\f\n\r\té😀", vec(1, 1))},
	{name: "lone surrogate label", in: `{"label":"a\ud800b","features":{"1":1}}`, want: ok("a\uFFFDb", vec(1, 1))},
	{name: "mismatched surrogates label", in: `{"label":"\ud800\u0041\udc00","features":{"1":1}}`, want: ok("\uFFFDA\uFFFD", vec(1, 1))},
	{name: "raw unicode label", in: `{"label":"chat noir é","features":{"1":1}}`, want: ok("chat noir é", vec(1, 1))},
	{name: "label 1.0", in: `{"label":1.0,"features":{"1":1}}`, want: ok("1", vec(1, 1))},
	{name: "label 1e0", in: `{"label":1e0,"features":{"1":1}}`, want: ok("1", vec(1, 1))},
	{name: "label -0", in: `{"label":-0,"features":{"1":1}}`, want: ok("0", vec(1, 1))},
	{name: "label 3", in: `{"label":3,"features":{"1":1}}`, want: ok("3", vec(1, 1))},
	{name: "label 0.5", in: `{"label":5E-1,"features":{"1":1}}`, want: ok("0.5", vec(1, 1))},
	{name: "unknown fields", in: `{"id":"a\"b\\c\u0041\n}","meta":{"x":[1,-2.5e3,{"y":null,"z":[true,false,[],{}]}],"k\"ey":"]"},"label":1,"features":{"2":3},"t":-1.5e-3,"u":[[[["x"]]]]}`, want: ok("1", vec(2, 3))},
	{name: "unknown key resembling label", in: `{"Label":5,"labels":5,"features":{"1":1}}`, want: ok("", vec(1, 1))},
	{name: "escaped label key", in: `{"l\u0061bel":1,"feat\u0075res":{"\u0033":2}}`, want: ok("1", vec(3, 2))},
	{name: "leading zeros in key", in: `{"features":{"03":1,"0":2}}`, want: ok("", vec(0, 2, 3, 1))},
	{name: "unsorted keys", in: `{"features":{"17":1,"3":0.5,"9":-2}}`, want: ok("", vec(3, 0.5, 9, -2, 17, 1))},
	{name: "zeros dropped", in: `{"features":{"1":0,"2":1,"3":-0,"4":0.0e5}}`, want: ok("", vec(2, 1))},
	{name: "dense zeros dropped", in: `{"features":[0,0,7,0]}`, want: ok("", vec(3, 7))},
	{name: "blanks everywhere", in: " \r\n\t{ \"label\" : 1 ,\n\"features\" :\t{ \"1\" : 1 } } \n", want: ok("1", vec(1, 1))},
	{name: "number forms", in: `{"features":[1E2,-2.5e-3,1e+2,0.125,-0.0,12345678901234567890,1.7976931348623157e308,5e-324]}`, lim: Limits{MaxAbsValue: math.MaxFloat64}, want: ok("", vec(1, 100, 2, -2.5e-3, 3, 100, 4, 0.125, 6, 12345678901234567890, 7, math.MaxFloat64, 8, 5e-324))},
	{name: "underflow to zero", in: `{"features":{"1":1e-400,"2":1}}`, want: ok("", vec(2, 1))},
	{name: "index at limit", in: `{"features":{"10":1}}`, lim: tight, want: ok("", vec(10, 1))},
	{name: "array at index limit", in: `{"features":[1,2,3]}`, lim: Limits{MaxIndex: 3}, want: ok("", vec(1, 1, 2, 2, 3, 3))},
	{name: "features at count limit", in: `{"features":{"1":1,"2":0,"3":1}}`, lim: tight, want: ok("", vec(1, 1, 3, 1))},
	{name: "allow empty object", in: `{"label":1,"features":{}}`, lim: Limits{AllowEmpty: true}, want: ok("1", sparse.Vector{})},
	{name: "allow empty null", in: `{"features":null}`, lim: Limits{AllowEmpty: true}, want: ok("", sparse.Vector{})},
	{name: "allow all zeros", in: `{"features":[0]}`, lim: Limits{AllowEmpty: true}, want: ok("", sparse.Vector{})},
	{name: "message at size limit", in: `{"features":{"1":1}}`, lim: Limits{MaxBytes: 20}, want: ok("", vec(1, 1))},

	// Message-level checks.
	{name: "empty", in: ``, reason: ReasonEmptyMessage},
	{name: "blanks only", in: " \r\n\t ", reason: ReasonEmptyMessage},
	{name: "over MaxBytes", in: `{"features":{"1":1}} `, lim: Limits{MaxBytes: 20}, reason: ReasonTooLarge},
	{name: "too large before utf8", in: strings.Repeat("\xff", 30), lim: Limits{MaxBytes: 20}, reason: ReasonTooLarge},
	{name: "invalid utf8 in string", in: "{\"label\":\"\xff\",\"features\":{\"1\":1}}", reason: ReasonInvalidUTF8},
	{name: "encoded surrogate", in: "{\"label\":\"\xed\xa0\x80\",\"features\":{\"1\":1}}", reason: ReasonInvalidUTF8},

	// Syntax.
	{name: "truncated", in: `{"label":1,"features":{"1":1}`, reason: ReasonInvalidJSON},
	{name: "truncated after comma", in: `{"label":1,`, reason: ReasonInvalidJSON},
	{name: "truncated in string", in: `{"label":"ab`, reason: ReasonInvalidJSON},
	{name: "truncated in escape", in: `{"label":"ab\`, reason: ReasonInvalidJSON},
	{name: "truncated number", in: `{"features":{"1":1.`, reason: ReasonInvalidJSON},
	{name: "lone brace", in: `{`, reason: ReasonInvalidJSON},
	{name: "top level array", in: `[1,2]`, reason: ReasonInvalidJSON},
	{name: "top level string", in: `"x"`, reason: ReasonInvalidJSON},
	{name: "top level number", in: `1`, reason: ReasonInvalidJSON},
	{name: "trailing data", in: `{"features":{"1":1}} x`, reason: ReasonInvalidJSON},
	{name: "two objects", in: `{"features":{"1":1}}{"features":{"1":1}}`, reason: ReasonInvalidJSON},
	{name: "extra brace", in: `{"features":{"1":1}}}`, reason: ReasonInvalidJSON},
	{name: "single quotes", in: `{'features':{'1':1}}`, reason: ReasonInvalidJSON},
	{name: "unquoted key", in: `{features:{"1":1}}`, reason: ReasonInvalidJSON},
	{name: "missing colon", in: `{"features" {"1":1}}`, reason: ReasonInvalidJSON},
	{name: "missing comma", in: `{"features":{"1":1} "x":1}`, reason: ReasonInvalidJSON},
	{name: "trailing comma", in: `{"features":{"1":1},}`, reason: ReasonInvalidJSON},
	{name: "trailing comma in features", in: `{"features":{"1":1,}}`, reason: ReasonInvalidJSON},
	{name: "trailing comma in array", in: `{"features":[1,]}`, reason: ReasonInvalidJSON},
	{name: "trailing comma in skipped", in: `{"x":[1,],"features":[1]}`, reason: ReasonInvalidJSON},
	{name: "colon in skipped array", in: `{"x":[1:2],"features":[1]}`, reason: ReasonInvalidJSON},
	{name: "skipped object without key", in: `{"x":{1:2},"features":[1]}`, reason: ReasonInvalidJSON},
	{name: "mismatched brackets", in: `{"x":[1},"features":[1]}`, reason: ReasonInvalidJSON},
	{name: "leading zero", in: `{"features":{"1":01}}`, reason: ReasonInvalidJSON},
	{name: "leading plus", in: `{"features":{"1":+1}}`, reason: ReasonInvalidJSON},
	{name: "bare fraction", in: `{"features":{"1":.5}}`, reason: ReasonInvalidJSON},
	{name: "trailing dot", in: `{"features":{"1":1.}}`, reason: ReasonInvalidJSON},
	{name: "empty exponent", in: `{"features":{"1":1e}}`, reason: ReasonInvalidJSON},
	{name: "lone minus", in: `{"features":{"1":-}}`, reason: ReasonInvalidJSON},
	{name: "NaN", in: `{"features":{"1":NaN}}`, reason: ReasonInvalidJSON},
	{name: "Infinity", in: `{"features":{"1":Infinity}}`, reason: ReasonInvalidJSON},
	{name: "hex number", in: `{"features":{"1":0x10}}`, reason: ReasonInvalidJSON},
	{name: "bad literal", in: `{"label":tru,"features":{"1":1}}`, reason: ReasonInvalidJSON},
	{name: "bad literal in skipped", in: `{"x":nul,"features":{"1":1}}`, reason: ReasonInvalidJSON},
	{name: "bad escape", in: `{"label":"\x","features":{"1":1}}`, reason: ReasonInvalidJSON},
	{name: "short unicode escape", in: `{"label":"\u12","features":{"1":1}}`, reason: ReasonInvalidJSON},
	{name: "bad escape in skipped", in: `{"x":"\a","features":{"1":1}}`, reason: ReasonInvalidJSON},
	{name: "control character", in: "{\"label\":\"a\tb\",\"features\":{\"1\":1}}", reason: ReasonInvalidJSON},
	{name: "too deep", in: `{"x":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `,"features":[1]}`, reason: ReasonInvalidJSON},

	// Valid JSON that breaks the record's rules.
	{name: "duplicate label key", in: `{"label":1,"label":2,"features":{"1":1}}`, reason: ReasonInvalidJSON},
	{name: "duplicate escaped label key", in: `{"label":1,"l\u0061bel":2,"features":{"1":1}}`, reason: ReasonInvalidJSON},
	{name: "duplicate features key", in: `{"features":{"1":1},"features":{"2":1}}`, reason: ReasonInvalidJSON},
	{name: "null feature value", in: `{"features":{"1":null}}`, reason: ReasonInvalidJSON},
	{name: "string feature value", in: `{"features":{"1":"1"}}`, reason: ReasonInvalidJSON},
	{name: "boolean feature value", in: `{"features":{"1":true}}`, reason: ReasonInvalidJSON},
	{name: "array feature value", in: `{"features":{"1":[1]}}`, reason: ReasonInvalidJSON},
	{name: "null in dense array", in: `{"features":[1,null]}`, reason: ReasonInvalidJSON},
	{name: "features string", in: `{"features":"1:1"}`, reason: ReasonInvalidJSON},
	{name: "features number", in: `{"features":1}`, reason: ReasonInvalidJSON},
	{name: "deep but valid nesting", in: `{"x":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `,"features":[1]}`, want: ok("", vec(1, 1))},

	{name: "array label", in: `{"label":[1],"features":{"1":1}}`, reason: ReasonBadLabel},
	{name: "object label", in: `{"label":{"a":1},"features":{"1":1}}`, reason: ReasonBadLabel},
	{name: "empty string label", in: `{"label":"","features":{"1":1}}`, reason: ReasonBadLabel},
	{name: "overflowing label", in: `{"label":1e999,"features":{"1":1}}`, reason: ReasonBadLabel},

	{name: "overflowing value", in: `{"features":{"1":1e999}}`, reason: ReasonNonFinite},
	{name: "value that overflows a kernel", in: `{"label":1,"features":{"1":1e308}}`, reason: ReasonValueTooLarge},
	{name: "dense value over the limit", in: `{"features":[1,-2e15]}`, reason: ReasonValueTooLarge},
	{name: "overflowing negative value", in: `{"features":{"1":-1e999}}`, reason: ReasonNonFinite},
	{name: "overflowing dense value", in: `{"features":[1,1e400]}`, reason: ReasonNonFinite},

	{name: "negative index", in: `{"features":{"-1":1}}`, reason: ReasonBadIndex},
	{name: "fractional index", in: `{"features":{"1.5":1}}`, reason: ReasonBadIndex},
	{name: "word index", in: `{"features":{"x":1}}`, reason: ReasonBadIndex},
	{name: "empty index", in: `{"features":{"":1}}`, reason: ReasonBadIndex},
	{name: "blank in index", in: `{"features":{" 1":1}}`, reason: ReasonBadIndex},
	{name: "plus index", in: `{"features":{"+1":1}}`, reason: ReasonBadIndex},

	{name: "index over default limit", in: `{"features":{"16777217":1}}`, reason: ReasonIndexTooLarge},
	{name: "index over uint32", in: `{"features":{"4294967296":1}}`, lim: Limits{MaxIndex: math.MaxUint32}, reason: ReasonIndexTooLarge},
	{name: "index over 2^64", in: `{"features":{"99999999999999999999999":1}}`, reason: ReasonIndexTooLarge},
	{name: "index over custom limit", in: `{"features":{"11":1}}`, lim: tight, reason: ReasonIndexTooLarge},
	{name: "array longer than MaxIndex", in: `{"features":[1,2,3,4]}`, lim: Limits{MaxIndex: 3}, reason: ReasonIndexTooLarge},

	{name: "duplicate index", in: `{"features":{"3":1,"3":2}}`, reason: ReasonDuplicateIndex},
	{name: "duplicate index leading zero", in: `{"features":{"3":1,"03":0}}`, reason: ReasonDuplicateIndex},
	{name: "duplicate index unsorted", in: `{"features":{"5":1,"2":1,"5":1}}`, reason: ReasonDuplicateIndex},

	{name: "too many in object", in: `{"features":{"1":1,"2":1,"3":1,"4":1}}`, lim: tight, reason: ReasonTooManyFeatures},
	{name: "too many counting zeros", in: `{"features":{"1":0,"2":0,"3":0,"4":1}}`, lim: tight, reason: ReasonTooManyFeatures},
	{name: "too many in array", in: `{"features":[1,2,3,4]}`, lim: tight, reason: ReasonTooManyFeatures},

	{name: "empty object", in: `{"features":{}}`, reason: ReasonEmptyFeatures},
	{name: "empty array", in: `{"features":[]}`, reason: ReasonEmptyFeatures},
	{name: "null features", in: `{"features":null}`, reason: ReasonEmptyFeatures},
	{name: "all zeros", in: `{"features":{"1":0,"2":0.0}}`, reason: ReasonEmptyFeatures},
	{name: "all zeros dense", in: `{"features":[0,0]}`, reason: ReasonEmptyFeatures},

	{name: "no features key", in: `{"label":1}`, reason: ReasonMissingFeatures},
	{name: "empty record", in: `{}`, reason: ReasonMissingFeatures},
	{name: "features key in other case", in: `{"Features":{"1":1}}`, reason: ReasonMissingFeatures},
}

var libsvmCases = []decodeCase{
	{name: "labeled", in: "1 3:0.5 17:1", want: ok("1", vec(3, 0.5, 17, 1))},
	{name: "unsorted", in: "-1 17:1 3:0.5 9:2", want: ok("-1", vec(3, 0.5, 9, 2, 17, 1))},
	{name: "plus one", in: "+1 1:1", want: ok("1", vec(1, 1))},
	{name: "one point zero", in: "1.0 1:1", want: ok("1", vec(1, 1))},
	{name: "exponent label", in: "1e0 1:1", want: ok("1", vec(1, 1))},
	{name: "zero label", in: "0 1:1", want: ok("0", vec(1, 1))},
	{name: "negative zero label", in: "-0 1:1", want: ok("0", vec(1, 1))},
	{name: "multiclass label", in: "3 1:1", want: ok("3", vec(1, 1))},
	{name: "regression label", in: "0.25 1:1", want: ok("0.25", vec(1, 1))},
	{name: "label 7", in: "7 1:1", want: ok("7", vec(1, 1))},
	{name: "unlabeled", in: "3:0.5 17:1", want: ok("", vec(3, 0.5, 17, 1))},
	{name: "comment", in: "1 1:1 # a comment: with 2:3", want: ok("1", vec(1, 1))},
	{name: "comment without blank", in: "1 1:1#c", want: ok("1", vec(1, 1))},
	{name: "CRLF", in: "1 1:1 2:2\r\n", want: ok("1", vec(1, 1, 2, 2))},
	{name: "LF", in: "1 1:1\n", want: ok("1", vec(1, 1))},
	{name: "comment and CRLF", in: "1 1:1 # c\r\n", want: ok("1", vec(1, 1))},
	{name: "tabs", in: "1\t1:1\t\t2:2", want: ok("1", vec(1, 1, 2, 2))},
	{name: "leading and trailing blanks", in: "  1  1:1  ", want: ok("1", vec(1, 1))},
	{name: "zeros dropped", in: "1 1:0 2:1 3:-0", want: ok("1", vec(2, 1))},
	{name: "number forms", in: "1 1:1e-3 2:-2.5E2 3:.5 4:7. 5:+3 6:0x1p-2 7:12345678901234567890", lim: Limits{MaxAbsValue: math.MaxFloat64}, want: ok("1", vec(1, 1e-3, 2, -250, 3, 0.5, 4, 7, 5, 3, 6, 0.25, 7, 12345678901234567890))},
	{name: "index zero and leading zeros", in: "1 0:1 03:2", want: ok("1", vec(0, 1, 3, 2))},
	{name: "underflow to zero", in: "1 1:1e-400 2:1", want: ok("1", vec(2, 1))},
	{name: "index at limit", in: "1 10:1", lim: tight, want: ok("1", vec(10, 1))},
	{name: "allow empty label only", in: "1", lim: Limits{AllowEmpty: true}, want: ok("1", sparse.Vector{})},
	{name: "allow empty zeros", in: "-1 1:0 # nothing", lim: Limits{AllowEmpty: true}, want: ok("-1", sparse.Vector{})},

	{name: "empty", in: "", reason: ReasonEmptyMessage},
	{name: "blanks only", in: " \t\r\n", reason: ReasonEmptyMessage},
	{name: "comment only", in: "# header\n", reason: ReasonEmptyMessage},
	{name: "over MaxBytes", in: "1 1:1 2:1 3:1 4:1 5:1 6:1 7:1 8:1", lim: Limits{MaxBytes: 20}, reason: ReasonTooLarge},
	{name: "invalid utf8", in: "1 1:1 \xff", reason: ReasonInvalidUTF8},
	{name: "invalid utf8 in comment", in: "1 1:1 # \xc3", reason: ReasonInvalidUTF8},

	{name: "word label", in: "abc 1:1", reason: ReasonBadLabel},
	{name: "nan label", in: "nan 1:1", reason: ReasonBadLabel},
	{name: "NaN label", in: "NaN 1:1", reason: ReasonBadLabel},
	{name: "inf label", in: "inf 1:1", reason: ReasonBadLabel},
	{name: "Infinity label", in: "-Infinity 1:1", reason: ReasonBadLabel},
	{name: "overflowing label", in: "1e999 1:1", reason: ReasonBadLabel},
	{name: "underscore label", in: "1_0 1:1", reason: ReasonBadLabel},
	{name: "true label", in: "true 1:1", reason: ReasonBadLabel},

	{name: "missing colon", in: "1 1", reason: ReasonInvalidLIBSVM},
	{name: "missing colon later", in: "1 1:1 2", reason: ReasonInvalidLIBSVM},
	{name: "empty index", in: "1 :1", reason: ReasonInvalidLIBSVM},
	{name: "empty value", in: "1 1:", reason: ReasonInvalidLIBSVM},
	{name: "lone colon", in: "1 :", reason: ReasonInvalidLIBSVM},
	{name: "word value", in: "1 1:abc", reason: ReasonInvalidLIBSVM},
	{name: "two colons", in: "1 1:2:3", reason: ReasonInvalidLIBSVM},
	{name: "double minus", in: "1 1:--1", reason: ReasonInvalidLIBSVM},
	{name: "underscore value", in: "1 1:1_0", reason: ReasonInvalidLIBSVM},
	{name: "two lines", in: "1 1:1\n-1 2:1", reason: ReasonInvalidLIBSVM},
	{name: "line break in comment", in: "1 1:1 # c\n-1 2:1\n", reason: ReasonInvalidLIBSVM},

	{name: "nan value", in: "1 1:nan", reason: ReasonNonFinite},
	{name: "value that overflows a kernel", in: "1 1:1e308", reason: ReasonValueTooLarge},
	{name: "NaN value", in: "1 1:NaN", reason: ReasonNonFinite},
	{name: "inf value", in: "1 1:inf", reason: ReasonNonFinite},
	{name: "negative Inf value", in: "1 1:-Inf", reason: ReasonNonFinite},
	{name: "Infinity value", in: "1 1:+Infinity", reason: ReasonNonFinite},
	{name: "overflowing value", in: "1 1:1e999", reason: ReasonNonFinite},

	{name: "negative index", in: "1 -1:1", reason: ReasonBadIndex},
	{name: "fractional index", in: "1 1.5:1", reason: ReasonBadIndex},
	{name: "word index", in: "1 x:1", reason: ReasonBadIndex},
	{name: "plus index", in: "1 +1:1", reason: ReasonBadIndex},

	{name: "index over default limit", in: "1 16777217:1", reason: ReasonIndexTooLarge},
	{name: "index over 2^64", in: "1 99999999999999999999999:1", reason: ReasonIndexTooLarge},
	{name: "index over custom limit", in: "1 11:1", lim: tight, reason: ReasonIndexTooLarge},

	{name: "duplicate index", in: "1 3:1 3:2", reason: ReasonDuplicateIndex},
	{name: "duplicate index with zero", in: "1 3:1 03:0", reason: ReasonDuplicateIndex},
	{name: "duplicate index unsorted", in: "1 5:1 2:1 5:1", reason: ReasonDuplicateIndex},

	{name: "too many", in: "1 1:1 2:1 3:1 4:1", lim: tight, reason: ReasonTooManyFeatures},
	{name: "too many counting zeros", in: "1 1:0 2:0 3:0 4:1", lim: tight, reason: ReasonTooManyFeatures},

	{name: "label only", in: "1", reason: ReasonEmptyFeatures},
	{name: "all zeros", in: "1 1:0 2:0.0", reason: ReasonEmptyFeatures},
	{name: "unlabeled zeros", in: "2:0", reason: ReasonEmptyFeatures},
	{name: "label and comment", in: "-1 # no feature", reason: ReasonEmptyFeatures},
}

func checkCase(t *testing.T, c decodeCase, ex Example, err error) {
	t.Helper()
	if c.reason == "" {
		if err != nil {
			t.Fatalf("%q: unexpected error %v", c.in, err)
		}
		if !sameExample(ex, c.want) {
			t.Fatalf("%q: got %+v, want %+v", c.in, ex, c.want)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%q: got (%+v, %v), want an *Error with reason %s", c.in, ex, err, c.reason)
	}
	if e.Reason != c.reason {
		t.Fatalf("%q: reason %s (%v), want %s", c.in, e.Reason, err, c.reason)
	}
	if e.Detail == "" || !utf8.ValidString(e.Detail) {
		t.Fatalf("%q: bad detail %q", c.in, e.Detail)
	}
	if !sameExample(ex, Example{}) {
		t.Fatalf("%q: error came with a non-zero Example %+v", c.in, ex)
	}
}

func TestDecodeJSON(t *testing.T) {
	for _, c := range jsonCases {
		t.Run(c.name, func(t *testing.T) {
			ex, err := DecodeJSON([]byte(c.in), c.lim)
			checkCase(t, c, ex, err)
			if b := []byte(c.in); firstNonBlank(b) < len(b) && b[firstNonBlank(b)] == '{' {
				ex, err := Decode(b, c.lim)
				checkCase(t, c, ex, err)
			}
		})
	}
}

func TestDecodeLIBSVM(t *testing.T) {
	for _, c := range libsvmCases {
		t.Run(c.name, func(t *testing.T) {
			ex, err := DecodeLIBSVM([]byte(c.in), c.lim)
			checkCase(t, c, ex, err)
			ex, err = Decode([]byte(c.in), c.lim)
			checkCase(t, c, ex, err)
		})
	}
}

// TestEveryReasonTested keeps the tables honest: each reason a record can be
// rejected for is exercised by at least one case of each format, except
// the reasons that belong to one format.
func TestEveryReasonTested(t *testing.T) {
	onlyLIBSVM := map[Reason]bool{ReasonInvalidLIBSVM: true}
	onlyJSON := map[Reason]bool{ReasonInvalidJSON: true, ReasonMissingFeatures: true}
	// Events have their own cases (event_test.go).
	onlyLIBSVM[ReasonBadField], onlyLIBSVM[ReasonTooManyClasses] = true, true
	onlyJSON[ReasonBadField], onlyJSON[ReasonTooManyClasses] = true, true
	// The model reports the delayed-label reasons (model's tests).
	for _, r := range []Reason{ReasonLabelUnknown, ReasonLabelExpired, ReasonLabelEvicted, ReasonLabelNoKey, ReasonKeyTooLarge} {
		onlyLIBSVM[r], onlyJSON[r] = true, true
	}
	// The wire format's reasons have their cases in wire_test.go.
	for _, r := range []Reason{ReasonBadFraming, ReasonUnknownSchema, ReasonSchemaMismatch, ReasonSchemaTooLarge, ReasonBadSchema} {
		onlyLIBSVM[r], onlyJSON[r] = true, true
	}
	for name, cases := range map[string][]decodeCase{"JSON": jsonCases, "LIBSVM": libsvmCases} {
		seen := map[Reason]bool{}
		for _, c := range cases {
			seen[c.reason] = true
		}
		for _, r := range Reasons() {
			skip := name == "JSON" && onlyLIBSVM[r] || name == "LIBSVM" && onlyJSON[r]
			if !skip && !seen[r] {
				t.Errorf("%s: no case for reason %s", name, r)
			}
		}
	}
}

func TestReasons(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	seen := map[Reason]bool{}
	for _, r := range Reasons() {
		if !snake.MatchString(string(r)) {
			t.Errorf("reason %q is not snake_case", r)
		}
		if seen[r] {
			t.Errorf("reason %q listed twice", r)
		}
		seen[r] = true
	}
	if len(seen) != 26 {
		t.Errorf("%d reasons, want 26", len(seen))
	}
	rs := Reasons()
	rs[0] = "changed"
	if Reasons()[0] != ReasonEmptyMessage {
		t.Error("Reasons shares its slice with callers")
	}
}

func TestErrorString(t *testing.T) {
	e := &Error{Reason: ReasonBadIndex, Detail: "feature key \"x\" is not a decimal integer"}
	if got, want := e.Error(), `codec: bad_index: feature key "x" is not a decimal integer`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := (&Error{Reason: ReasonTooLarge}).Error(), "codec: too_large"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestErrorDetailIsShort(t *testing.T) {
	long := `{"features":{"` + strings.Repeat("x", 5000) + `":1}}`
	_, err := DecodeJSON([]byte(long), Limits{})
	var e *Error
	if !errors.As(err, &e) || e.Reason != ReasonBadIndex {
		t.Fatalf("got %v, want bad_index", err)
	}
	if len(e.Detail) > 200 {
		t.Errorf("detail has %d bytes: %q", len(e.Detail), e.Detail)
	}
}

func TestDecodeDoesNotAlias(t *testing.T) {
	// Pooled scratch buffers must never leak into a returned Example.
	in := []byte(`{"label":"a\u0062c","features":{"5":1,"2":2}}`)
	a, err := DecodeJSON(in, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := DecodeJSON([]byte(`{"label":"x\u0079z","features":{"9":7,"1":8,"4":9}}`), Limits{}); err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeLIBSVM([]byte("3 9:7 1:8 4:9"), Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	if want := ok("abc", vec(2, 2, 5, 1)); !sameExample(a, want) {
		t.Fatalf("example changed to %+v, want %+v", a, want)
	}
}

func TestCanonicalLabel(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"1", "1"}, {"+1", "1"}, {"1.0", "1"}, {"1e0", "1"}, {"01", "1"},
		{"-1", "-1"}, {"-1.000", "-1"}, {"0", "0"}, {"-0", "0"}, {"0e5", "0"},
		{"3", "3"}, {"0.5", "0.5"}, {".5", "0.5"}, {"1e21", "1e+21"},
		{"true", "true"}, {"false", "false"}, {"cat", "cat"}, {"True", "True"},
		{"nan", "nan"}, {"Inf", "Inf"}, {"1e999", "1e999"}, {"1_0", "1_0"}, {" 1", " 1"},
	} {
		got, err := CanonicalLabel(c.in)
		if err != nil || got != c.want {
			t.Errorf("CanonicalLabel(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	var e *Error
	if _, err := CanonicalLabel(""); !errors.As(err, &e) || e.Reason != ReasonBadLabel {
		t.Errorf("CanonicalLabel(\"\") error = %v, want bad_label", err)
	}
}

func TestParseLabelList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"3,6,8", []string{"3", "6", "8"}},
		{" 3 , +6.0,cat ", []string{"3", "6", "cat"}},
		{"1", []string{"1"}},
		{"", nil},
		{"  ", nil},
	} {
		got, err := ParseLabelList(c.in)
		if err != nil || strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
			t.Errorf("ParseLabelList(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"3,,8", "3,", ",3", " , "} {
		var e *Error
		if _, err := ParseLabelList(in); !errors.As(err, &e) || e.Reason != ReasonBadLabel {
			t.Errorf("ParseLabelList(%q) error = %v, want bad_label", in, err)
		}
	}
}

func TestLabelMap(t *testing.T) {
	binary := LabelMap{}
	oneVsRest := LabelMap{Positive: []string{"3", "cat"}}
	oneVsSome := LabelMap{Positive: []string{"3"}, Negative: []string{"5", "6"}}
	for _, c := range []struct {
		m     LabelMap
		label string
		y     int
		keep  bool
	}{
		{binary, "", 0, true},
		{binary, "1", 1, true},
		{binary, "true", 1, true},
		{binary, "-1", -1, true},
		{binary, "0", -1, true},
		{binary, "false", -1, true},
		{oneVsRest, "", 0, true},
		{oneVsRest, "3", 1, true},
		{oneVsRest, "cat", 1, true},
		{oneVsRest, "1", -1, true},
		{oneVsRest, "7", -1, true},
		{oneVsSome, "3", 1, true},
		{oneVsSome, "5", -1, true},
		{oneVsSome, "6", -1, true},
		{oneVsSome, "7", 0, false},
		{oneVsSome, "", 0, true},
	} {
		y, keep, err := c.m.Map(c.label)
		if err != nil || y != c.y || keep != c.keep {
			t.Errorf("%+v.Map(%q) = %d, %v, %v; want %d, %v, nil", c.m, c.label, y, keep, err, c.y, c.keep)
		}
	}

	// A multiclass label read from a record, with no positive class named.
	ex, err := DecodeLIBSVM([]byte("7 1:1"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	_, keep, err := binary.Map(ex.Label)
	var e *Error
	if !errors.As(err, &e) || e.Reason != ReasonBadLabel || keep {
		t.Fatalf("Map(%q) = keep %v, error %v; want bad_label", ex.Label, keep, err)
	}
	want := `label "7" is not binary (+1/-1, 1/0, true/false): name the positive class(es) with --positive (and the negative ones with --negative), or learn many classes with --classes`
	if e.Detail != want {
		t.Errorf("detail %q, want %q", e.Detail, want)
	}
	for _, label := range []string{"2", "cat", "1.0", "True"} {
		if _, _, err := binary.Map(label); !errors.As(err, &e) || e.Reason != ReasonBadLabel {
			t.Errorf("Map(%q) error = %v, want bad_label", label, err)
		}
	}
}

func TestLimitsDefaults(t *testing.T) {
	l := Limits{}.withDefaults()
	if l.MaxBytes != 1<<20 || l.MaxIndex != 1<<24 || l.MaxNonZeros != 1<<16 || l.AllowEmpty {
		t.Errorf("defaults %+v", l)
	}
	l = Limits{MaxBytes: -1, MaxNonZeros: -5}.withDefaults()
	if l.MaxBytes != 1<<20 || l.MaxNonZeros != 1<<16 {
		t.Errorf("negative limits gave %+v", l)
	}
	// The default index limit itself is accepted, one above is not.
	if _, err := DecodeLIBSVM([]byte("1 16777216:1"), Limits{}); err != nil {
		t.Errorf("index 1<<24: %v", err)
	}
	big := `{"features":[` + strings.Repeat("0,", 1<<16) + `1]}`
	var e *Error
	if _, err := DecodeJSON([]byte(big), Limits{}); !errors.As(err, &e) || e.Reason != ReasonTooManyFeatures {
		t.Errorf("1<<16+1 features: %v, want too_many_features", err)
	}
}

func TestAppend(t *testing.T) {
	ex := ok("1", vec(3, 0.5, 17, 1))
	if got, want := string(AppendJSON(nil, ex)), `{"label":1,"features":{"3":0.5,"17":1}}`; got != want {
		t.Errorf("AppendJSON = %s, want %s", got, want)
	}
	if got, want := string(AppendLIBSVM(nil, ex)), "1 3:0.5 17:1"; got != want {
		t.Errorf("AppendLIBSVM = %s, want %s", got, want)
	}
	ex.Label = ""
	if got, want := string(AppendJSON([]byte("x"), ex)), `x{"features":{"3":0.5,"17":1}}`; got != want {
		t.Errorf("AppendJSON = %s, want %s", got, want)
	}
	if got, want := string(AppendLIBSVM(nil, ex)), "3:0.5 17:1"; got != want {
		t.Errorf("AppendLIBSVM = %s, want %s", got, want)
	}
	for label, want := range map[string]string{
		"true":  `{"label":true,"features":{}}`,
		"-1":    `{"label":-1,"features":{}}`,
		"1e+21": `{"label":1e+21,"features":{}}`,
		"1.0":   `{"label":"1.0","features":{}}`,
		"-0":    `{"label":"-0","features":{}}`,
		"NaN":   `{"label":"NaN","features":{}}`,
		"a\"b":  `{"label":"a\"b","features":{}}`,
		"\x01":  `{"label":"\u0001","features":{}}`,
		"\xff":  `{"label":"\ufffd","features":{}}`,
	} {
		if got := string(AppendJSON(nil, Example{Label: label})); got != want {
			t.Errorf("AppendJSON(label %q) = %s, want %s", label, got, want)
		}
	}
	// Invalid examples still give valid JSON, and never a panic.
	bad := Example{X: sparse.Vector{Idx: []uint32{1, 2}, Val: []float64{math.NaN()}}}
	if got, want := string(AppendJSON(nil, bad)), `{"features":{"1":null}}`; got != want {
		t.Errorf("AppendJSON(bad) = %s, want %s", got, want)
	}
	if got, want := string(AppendLIBSVM(nil, bad)), "1:NaN"; got != want {
		t.Errorf("AppendLIBSVM(bad) = %s, want %s", got, want)
	}
}

// A label sent after its record lists no feature; under Limits.LabelOnly
// it reads as a label message, otherwise it is refused as before, and a
// record of zero-valued features is never one.
func TestLabelOnlyRecords(t *testing.T) {
	lim := Limits{LabelOnly: true}
	for _, in := range []string{`{"label":1}`, `{"label":"1","features":{}}`, `+1`, "+1  \n"} {
		ex, err := Decode([]byte(in), lim)
		if err != nil || !ex.LabelOnly || ex.Label != "1" || len(ex.X.Idx) != 0 {
			t.Errorf("%q: %+v, %v; want a label-only record of label 1", in, ex, err)
		}
		if _, err := Decode([]byte(in), Limits{}); err == nil {
			t.Errorf("%q accepted without LabelOnly", in)
		}
	}
	for _, in := range []string{`{"label":1,"features":{"3":0}}`, `+1 3:0`} {
		if ex, err := Decode([]byte(in), lim); err == nil {
			t.Errorf("%q: %+v accepted; zero features are empty_features", in, ex)
		}
	}
	ex, err := Decode([]byte(`-1 3:2`), lim)
	if err != nil || ex.LabelOnly || len(ex.X.Idx) != 1 {
		t.Errorf("a record with features: %+v %v", ex, err)
	}
}

func TestLabelMapClassNames(t *testing.T) {
	for _, c := range []struct {
		m        LabelMap
		pos, neg string
		named    bool
	}{
		{LabelMap{}, "", "", false},
		{LabelMap{Positive: []string{"fraud"}}, "fraud", "not fraud", true},
		{LabelMap{Positive: []string{"3", "6"}, Negative: []string{"8"}}, "3,6", "8", true},
	} {
		pos, neg, ok := c.m.ClassNames()
		if pos != c.pos || neg != c.neg || ok != c.named {
			t.Errorf("%+v: %q %q %v", c.m, pos, neg, ok)
		}
	}
}
