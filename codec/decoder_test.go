package codec

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// simpleLines are lines at the edges of what parseSimple takes: it must
// read each as parseLIBSVM does, or leave it to parseLIBSVM.
var simpleLines = []string{
	"", " ", "1", "-1", "+1 ", "0", "1.0", "-1.0", "2", "1e3", "x", "1_0 1:1", "-1 3:1 11:1 14:1 ",
	"1:1", " 1:1 2:2", "\t-1\t1:1\t2:0.5", "1 1:1  2:1", "1 0:1", "1 00001:1", "1 000000001:1", "1 0000000001:1",
	"1 999999999:1", "1 1000000000:1", "1 16777216:1", "1 16777217:1", "1 4294967296:1", "1 18446744073709551616:1",
	"1 1:", "1 :1", "1 1:1:1", "1 1:1 :", "1 1", "1 a:1", "1 1:a", "1 +1:1", "1 -1:1", "1 1:+1", "1 1:-1", "1 1:.5",
	"1 1:5.", "1 1:.", "1 1:-", "1 1:+", "1 1:1.2.3", "1 1:1e5", "1 1:1E-5", "1 1:inf", "1 1:NaN", "1 1:0x10",
	"1 1:1_0", "1 1:123456789012345", "1 1:1234567890123456", "1 1:0.00000000000001", "1 1:0.000000000000001",
	"1 1:-0", "1 1:0", "1 1:0 2:0", "1 2:1 1:1", "1 1:1 1:2", "1 3:1 2:0 2:1", "1 1:1e400", "1 1:1e-400",
	"1 1:1\v", "1 1:1\x00", "1 1:1 2:1 3:1 4:1 5:1 6:1 7:1 8:1 9:1", "1 1:1 2:1 3:1 4:1 5:1 6:1 7:1 8:1",
	"1 1:999999999999999", "1 1:1000000000000000", "1 1:-1000000000000000.5", "é 1:1", "1 1:é",
}

// simpleLimits are the limits the lines are read under: the defaults, and
// limits the lines above reach.
var simpleLimits = []Limits{
	{}, {MaxIndex: 1000, MaxNonZeros: 8, AllowEmpty: true}, {LabelOnly: true}, {MaxIndex: 999999999},
	{MaxIndex: math.MaxUint32, MaxNonZeros: 1}, {MaxAbsValue: 100, MaxBytes: 24},
}

// sameAsParseLIBSVM fails t when parseSimple reads line other than
// parseLIBSVM does, its values checked; it reports whether parseSimple
// took the line.
func sameAsParseLIBSVM(t *testing.T, line []byte, lim Limits) bool {
	t.Helper()
	lim = lim.withDefaults()
	for _, a := range []*arena{nil, {}} {
		got, gotErr, ok := parseSimple(line, lim, &scratch{arena: a})
		if !ok {
			return false
		}
		want, wantErr := parseLIBSVM(line, lim, &scratch{})
		if wantErr == nil {
			if wantErr = checkValues(want, lim); wantErr != nil {
				want = Example{}
			}
		}
		if !sameExample(got, want) || got.LabelOnly != want.LabelOnly || (gotErr == nil) != (wantErr == nil) ||
			gotErr != nil && *gotErr != *wantErr {
			t.Fatalf("%q under %+v: parseSimple read %+v, %v; parseLIBSVM %+v, %v", line, lim, got, gotErr, want, wantErr)
		}
		if len(got.X.Idx) > 0 && (cap(got.X.Idx) != len(got.X.Idx) || cap(got.X.Val) != len(got.X.Val)) {
			t.Fatalf("%q: vector with room to grow into the next: %d/%d, %d/%d", line, len(got.X.Idx), cap(got.X.Idx), len(got.X.Val), cap(got.X.Val))
		}
	}
	return true
}

// TestParseSimpleIsParseLIBSVM: the one-pass reading of the common line
// accepts and refuses what the token-by-token one does, with the same
// vector, label and error; and it does take the common lines (a9a's,
// usps's), or it would save nothing.
func TestParseSimpleIsParseLIBSVM(t *testing.T) {
	for _, s := range simpleLines {
		for _, lim := range simpleLimits {
			sameAsParseLIBSVM(t, []byte(s), lim)
		}
	}
	for _, s := range []string{"-1 3:1 11:1 14:1 19:1 39:1 42:1 55:1 64:1 67:1 73:1 75:1 76:1 80:1 83:1 ", "+1 5:1 7:1",
		"1 1:-0.6 2:0.123456 3:-1 256:0.25", "2 1:0.5", "1 1:0.001", "-1"} {
		if !sameAsParseLIBSVM(t, []byte(s), Limits{}) {
			t.Errorf("%q: parseSimple left a common line to parseLIBSVM", s)
		}
	}
	for _, c := range libsvmCases {
		for _, lim := range append(simpleLimits, c.lim) {
			sameAsParseLIBSVM(t, []byte(c.in), lim)
		}
	}
}

// decodeTokens is decodeLIBSVM as it was before parseSimple: every check
// in its documented order, then parseLIBSVM alone.
func decodeTokens(b []byte, lim Limits) (Example, *Error) {
	lim = lim.withDefaults()
	if err := precheck(b, lim); err != nil {
		return Example{}, err
	}
	end := len(b)
	for end > 0 && (b[end-1] == '\n' || b[end-1] == '\r') {
		end--
	}
	line := b[:end]
	if k := lineBreak(line); k >= 0 {
		return Example{}, errorf(ReasonInvalidLIBSVM, "offset %d: line break inside the record; a message holds one line", k)
	}
	if k := bytes.IndexByte(line, '#'); k >= 0 {
		line = line[:k]
	}
	ex, err := parseLIBSVM(line, lim, &scratch{})
	if err == nil {
		err = checkValues(ex, lim)
	}
	if err != nil {
		return Example{}, err
	}
	return ex, nil
}

// sameAsTokens fails t when DecodeLIBSVM, or a Decoder, reads the
// message b other than decodeTokens does.
func sameAsTokens(t *testing.T, d *Decoder, b []byte, lim Limits) {
	t.Helper()
	want, wantErr := decodeTokens(b, lim)
	type read struct {
		ex  Example
		err error
	}
	var reads []read
	ex, err := DecodeLIBSVM(b, lim)
	reads = append(reads, read{ex, err})
	if k := firstNonBlank(b); k == len(b) || b[k] != '{' { // else JSON
		ex, err := d.Decode(b)
		reads = append(reads, read{ex, err})
	}
	for _, g := range reads {
		if !sameExample(g.ex, want) || g.ex.LabelOnly != want.LabelOnly || (g.err == nil) != (wantErr == nil) || g.err != nil && g.err.Error() != wantErr.Error() {
			t.Fatalf("%q under %+v: read %+v, %v; the token reading %+v, %v", b, lim, g.ex, g.err, want, wantErr)
		}
	}
}

// messageVariants are s as a message with what decodeLIBSVM checks
// before reading a line: line ends, a comment, a line break within, bytes
// that are not UTF-8, blanks.
func messageVariants(s string) []string {
	return []string{s, s + "\n", s + "\r\n", s + " # comment", s + "#", s + "\n1 1:1", s + "\r", "\xff" + s, s + " # \xff",
		s + " 9:1e16", s + " 9:-1000000000000000.5", " \t" + s, s + "\t\r\n\n"}
}

// TestDecodeLIBSVMIsTheTokenReading: the messages that parseSimple reads
// at once (a line, before searching it for line breaks and comments)
// decode as they did when every message was checked first and read token
// by token: same records, same errors, under every limit.
func TestDecodeLIBSVMIsTheTokenReading(t *testing.T) {
	for _, lim := range simpleLimits {
		d := NewDecoder(lim)
		for _, s := range simpleLines {
			for _, m := range messageVariants(s) {
				sameAsTokens(t, d, []byte(m), lim)
			}
		}
		for _, c := range libsvmCases {
			for _, m := range messageVariants(c.in) {
				sameAsTokens(t, d, []byte(m), lim)
			}
		}
	}
}

// FuzzParseSimple is TestParseSimpleIsParseLIBSVM and
// TestDecodeLIBSVMIsTheTokenReading on any input.
func FuzzParseSimple(f *testing.F) {
	for _, s := range simpleLines {
		f.Add([]byte(s))
	}
	f.Add([]byte("1 1:1 # c"))
	f.Add([]byte("1 1:1\n2 2:2"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, lim := range simpleLimits {
			sameAsParseLIBSVM(t, b, lim)
			sameAsTokens(t, NewDecoder(lim), b, lim)
		}
	})
}

// decimalPrefix is the number fastDecimal reads at the start of a string.
var decimalPrefix = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)`)

// TestFastDecimal: fastDecimal stops where the number at i ends, and reads
// it as strconv does, bit for bit, when it has 1 to 15 digits.
func TestFastDecimal(t *testing.T) {
	for _, s := range []string{"1", "-1", "+0.5", "123456789012345", "0.000000000000001", "-99999999.9999999", "1.", ".5", "007",
		"", "-", "+", ".", "-.", "x1", "1234567890123456", "0.0000000000000001"} {
		for _, tail := range []string{"", " 2:1", ":", "e5", ".1", "x", "-1"} {
			in := "x:" + s + tail
			v, end, ok := fastDecimal([]byte(in), 2)
			num := decimalPrefix.FindString(in[2:])
			digits := strings.Count(num, "") - 1 - strings.Count(num, ".") - strings.Count(num, "-") - strings.Count(num, "+")
			if want := num != "" && digits <= 15; ok != want {
				t.Fatalf("fastDecimal(%q, 2) took it: %v, want %v", in, ok, want)
			}
			if !ok {
				continue
			}
			want, err := strconv.ParseFloat(num, 64)
			if err != nil || end != 2+len(num) || math.Float64bits(v) != math.Float64bits(want) {
				t.Fatalf("fastDecimal(%q, 2) = %v ending at %d, want %v ending at %d", in, v, end, want, 2+len(num))
			}
		}
	}
}

// TestDecoderIsDecode: a Decoder reads every record as Decode does; the
// vectors of a run stay as they were until Reset, however many the run
// holds, and cannot grow into each other; after Reset the next run reuses
// their storage instead of allocating.
func TestDecoderIsDecode(t *testing.T) {
	var run [][]byte
	for _, c := range libsvmCases {
		run = append(run, []byte(c.in))
	}
	for _, c := range jsonCases {
		run = append(run, []byte(c.in))
	}
	for k := range 3000 {
		run = append(run, fmt.Appendf(nil, "%d 1:%d %d:0.5 %d:-2", k%3-1, k+1, 10+k%7, 20+k%5))
		run = append(run, fmt.Appendf(nil, `{"label":%d,"features":{"%d":0.5,"1":%d,"%d":-2}}`, k%3-1, 10+k%7, k+1, 20+k%5))
	}
	for i, lim := range append(simpleLimits, Limits{MaxBytes: 64}) {
		d := NewDecoder(lim)
		if i%2 == 1 { // a record's worth of storage, grown as it goes
			d = NewRecordDecoder(lim)
		}
		for pass := range 2 {
			exs := make([]Example, len(run))
			for k, b := range run {
				ex, err := d.Decode(b)
				want, wantErr := Decode(b, lim)
				if !sameExample(ex, want) || ex.LabelOnly != want.LabelOnly || (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
					t.Fatalf("pass %d, %q: Decoder read %+v, %v; Decode %+v, %v", pass, b, ex, err, want, wantErr)
				}
				if err == nil && ex.X.Len() > 0 {
					_ = append(ex.X.Idx, 1<<30) // must not reach the next vector
					_ = append(ex.X.Val, math.Pi)
				}
				exs[k] = ex
			}
			for k, b := range run {
				if want, _ := Decode(b, lim); !sameExample(exs[k], want) {
					t.Fatalf("pass %d, %q: before Reset the vector became %+v, want %+v", pass, b, exs[k].X, want.X)
				}
			}
			d.Reset()
		}
		if lim != (Limits{}) {
			continue
		}
		for _, b := range [][]byte{
			[]byte("-1 3:1 11:1 14:1 19:1 39:1 42:1 55:1 64:1 67:1 73:1 75:1 76:1 80:1 83:1"),
			[]byte(`{"label":-1,"features":{"3":1,"11":1,"14":1,"19":1,"39":1,"42":1,"55":1,"64":1,"67":1,"73":1,"75":1,"76":1,"80":1,"83":1}}`),
		} {
			if n := testing.AllocsPerRun(100, func() {
				for range 100 {
					if _, err := d.Decode(b); err != nil {
						t.Fatal(err)
					}
				}
				d.Reset()
			}); n != 0 {
				t.Errorf("%+v, %.20s…: %v allocations a run of 100 records after Reset, want 0", lim, b, n)
			}
		}
	}
}

// TestRecordDecoderKeepsARecordsWorth: a Decoder for one record at a
// time (one for each partition a member serves) keeps storage the size of
// its records, not a run's arena, and drops what a huge record grew.
func TestRecordDecoderKeepsARecordsWorth(t *testing.T) {
	d := NewRecordDecoder(Limits{})
	small := []byte(`{"label":1,"features":{"3":1,"11":1,"14":1,"19":1,"39":1,"42":1,"55":1,"64":1,"67":1,"73":1,"75":1,"76":1,"80":1,"83":1}}`)
	for range 100 {
		d.Reset()
		if _, err := d.Decode(small); err != nil {
			t.Fatal(err)
		}
	}
	if c := cap(d.s.arena.idx); c > 64 {
		t.Errorf("after records of 14 entries the arena holds %d entries; NewDecoder's runs start at %d", c, minArena)
	}
	huge := fmt.Appendf(nil, "1")
	for k := range 5000 {
		huge = fmt.Appendf(huge, " %d:1", k+1)
	}
	d.Reset()
	if ex, err := d.Decode(huge); err != nil || ex.X.Len() != 5000 {
		t.Fatalf("huge record: %d entries, %v", ex.X.Len(), err)
	}
	d.Reset()
	if a, e, i := cap(d.s.arena.idx), cap(d.s.ents), cap(d.s.idx); max(a, e, i) > 64 {
		t.Errorf("after a record of 5,000 entries and a Reset, the arena keeps %d entries, the scratch %d and %d", a, e, i)
	}
}

// BenchmarkDecoder is BenchmarkDecodeLIBSVM through a Decoder reset every
// 512 records, as dataset's batches use it.
func BenchmarkDecoder(b *testing.B) {
	for _, c := range []struct {
		name string
		in   []byte
	}{{"a9a", a9aLIBSVM}, {"dense784", dense784LIBSVM}} {
		b.Run(c.name, func(b *testing.B) {
			d := NewDecoder(Limits{})
			b.ReportAllocs()
			b.SetBytes(int64(len(c.in)))
			n := 0
			for b.Loop() {
				if _, err := d.Decode(c.in); err != nil {
					b.Fatal(err)
				}
				if n++; n%512 == 0 {
					d.Reset()
				}
			}
		})
	}
}
