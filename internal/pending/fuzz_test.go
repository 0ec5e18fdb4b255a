package pending

import (
	"bytes"
	"fmt"
	"testing"
)

// FuzzUnmarshal: whatever the bytes, Unmarshal returns a store or an
// error, never panics; a store it returns is within its bounds and
// survives its own encoding unchanged (varints may have been written
// longer than needed, so the bytes themselves may differ).
func FuzzUnmarshal(f *testing.F) {
	s, _ := New(Config{MaxRecords: 3, MaxAge: 50})
	for i := range 5 {
		e := entry(i)
		if i%2 == 0 {
			e = scored(i)
		}
		s.Put(fmt.Sprint("k", i), e)
	}
	s.Expire(4000)
	b, _ := s.MarshalBinary()
	f.Add(b)
	f.Add([]byte{stateVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Unmarshal(b)
		if err != nil {
			return
		}
		again, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		s2, err := Unmarshal(again)
		if err != nil {
			t.Fatalf("its own encoding refused: %v", err)
		}
		if third, _ := s2.MarshalBinary(); !bytes.Equal(third, again) || s2.Counters != s.Counters {
			t.Fatalf("accepted state changes through its encoding:\n%x\n%x", again, third)
		}
		if s.Len() > s.Config().MaxRecords || s.gone.len() > s.Config().MaxRecords {
			t.Fatalf("accepted state over its bound: %d held, %d remembered, bound %d", s.Len(), s.gone.len(), s.Config().MaxRecords)
		}
	})
}
