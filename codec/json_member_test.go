package codec

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// simpleMember must read exactly what the general path reads: the same
// index, the same value bits and the same end, or leave the member to it.
func TestSimpleMemberAgreesWithTheGeneralPath(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := []string{"0", "7", "123", "0007", "4294967295", "4294967296", "99999999999", "12a", "", "1\\u0030", "-1", "1 "}
	vals := []string{"0", "-0", "1", "-1", "0.5", "-0.25", "1.0", "01", "00.5", "1.", ".5", "1e3", "1E-2", "123456789012345",
		"1234567890123456", "0.000000000000001", "12345678.1234567", "9007199254740993", "-", "--1", "+1", "1.5e", "true", "\"1\"", "NaN", "1 "}
	ends := []string{",", "}", " ,", "\t}", "", "x"}
	tested, fast := 0, 0
	for range 20000 {
		member := `"` + keys[r.IntN(len(keys))] + `"` + []string{":", " :", ": "}[r.IntN(3)*r.IntN(2)] + vals[r.IntN(len(vals))] + ends[r.IntN(len(ends))]
		if r.IntN(4) == 0 { // random digits, as producers print values
			member = `"` + keys[r.IntN(4)] + `":` + randomDecimal(r) + ends[r.IntN(2)]
		}
		for _, lim := range []Limits{{}, {MaxIndex: 100}} {
			lim = lim.withDefaults()
			in := []byte(member)
			f := jsonDecoder{b: in, lim: lim, s: &scratch{}}
			idx, v, ok := f.simpleMember()
			tested++
			if !ok {
				if f.i != 0 {
					t.Fatalf("%q: refused, but moved to %d", member, f.i)
				}
				continue
			}
			fast++
			g := jsonDecoder{b: in, lim: lim, s: &scratch{}}
			key, err := g.stringValue()
			if err != nil {
				t.Fatalf("%q: fast path took it, the general path refuses the key: %v", member, err)
			}
			gidx, st := parseIndex(key, lim.MaxIndex)
			if st != indexOK {
				t.Fatalf("%q: fast path took it, parseIndex says %d", member, st)
			}
			if err := g.colon(); err != nil {
				t.Fatalf("%q: colon: %v", member, err)
			}
			gv, err := g.featureValue(gidx, 2)
			if err != nil || gidx != idx || math.Float64bits(gv) != math.Float64bits(v) || g.i != f.i {
				t.Fatalf("%q: fast %d %v (end %d), general %d %v (end %d, %v)", member, idx, v, f.i, gidx, gv, g.i, err)
			}
		}
	}
	if fast < tested/10 || fast == tested {
		t.Fatalf("%d of %d members took the fast path: the cases do not exercise both paths", fast, tested)
	}
}

// randomDecimal is a number as producers print it: an integer or a
// decimal of 1 to 17 significant digits, sometimes negative.
func randomDecimal(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(3) == 0 {
		b.WriteByte('-')
	}
	n := 1 + r.IntN(17)
	dot := r.IntN(n + 1)
	for i := range n {
		if i == dot && i > 0 {
			b.WriteByte('.')
		}
		c := byte('0' + r.IntN(10))
		if i == 0 && c == '0' && dot != 1 {
			c = '1'
		}
		b.WriteByte(c)
	}
	return b.String()
}
