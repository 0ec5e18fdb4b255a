package pending

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/internal/golden"
)

// TestUnmarshalPinned pins what Unmarshal makes of a state, of the same
// state in format 1, and of every cut and one-byte change of them: the
// error, or the digest of the restored store's encoding and counters.
func TestUnmarshalPinned(t *testing.T) {
	s, _ := New(Config{MaxRecords: 3, MaxAge: 50})
	for i := range 5 {
		e := entry(i)
		if i%2 == 0 {
			e = scored(i)
		}
		s.Put(fmt.Sprint("k", i), e)
	}
	s.Expire(4000)
	v2, _ := s.MarshalBinary()
	// Format 1 has no byte bounds in its header: the last two of nine.
	v1, rest := []byte{1}, v2[1:]
	for i := range 9 {
		v, n := binary.Uvarint(rest)
		if i < 7 {
			v1 = binary.AppendUvarint(v1, v)
		}
		rest = rest[n:]
	}
	v1 = append(v1, rest...)
	var out strings.Builder
	outcome := func(what string, b []byte) {
		st, err := Unmarshal(b)
		if err != nil {
			fmt.Fprintf(&out, "%s: %v\n", what, err)
			return
		}
		enc, _ := st.MarshalBinary()
		fmt.Fprintf(&out, "%s: %x %+v %+v\n", what, sha256.Sum256(enc), st.Config(), st.Counters)
	}
	for _, c := range []struct {
		name string
		b    []byte
	}{{"v1", v1}, {"v2", v2}} {
		name, b := c.name, c.b
		outcome(name, b)
		for n := range len(b) {
			outcome(fmt.Sprintf("%s cut at %d", name, n), b[:n])
		}
		for i := range b {
			for _, d := range []byte{1, 0x80, 0xff} {
				m := bytes.Clone(b)
				m[i] += d
				outcome(fmt.Sprintf("%s byte %d +%#x", name, i, d), m)
			}
		}
	}
	golden.Check(t, "unmarshal.golden", []byte(out.String()))
}
