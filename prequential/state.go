package prequential

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MarshalBinary encodes the counters and the sliding window, so that a
// restored evaluator continues exactly (checkpoints carry it with the
// model).
func (e *Evaluator) MarshalBinary() ([]byte, error) {
	b := []byte{1} // format version
	for _, v := range []uint64{e.Rounds, e.Labeled, e.Mistakes, e.Updates, uint64(e.Support), uint64(e.SupportMax), uint64(e.Window), uint64(len(e.ring)), uint64(cap(e.ring)), uint64(e.next)} {
		b = binary.AppendUvarint(b, v)
	}
	for i := 0; i < len(e.ring); i += 8 {
		var bits byte
		for j := i; j < min(i+8, len(e.ring)); j++ {
			if e.ring[j] {
				bits |= 1 << (j - i)
			}
		}
		b = append(b, bits)
	}
	return b, nil
}

// UnmarshalBinary restores what MarshalBinary wrote.
func (e *Evaluator) UnmarshalBinary(b []byte) error {
	if len(b) == 0 || b[0] != 1 {
		return errors.New("evaluator state: unknown format")
	}
	b = b[1:]
	var v [10]uint64
	for i := range v {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			return errors.New("evaluator state: truncated")
		}
		v[i], b = x, b[n:]
	}
	length, capacity, next := v[7], v[8], v[9]
	if length > capacity || capacity > 1<<24 || (length > 0 && next >= length) || uint64(len(b)) != (length+7)/8 {
		return fmt.Errorf("evaluator state: window %d/%d at %d with %d bytes", length, capacity, next, len(b))
	}
	*e = Evaluator{Window: int(v[6]), Rounds: v[0], Labeled: v[1], Mistakes: v[2], Updates: v[3], Support: int(v[4]), SupportMax: int(v[5]), next: int(next)}
	if capacity > 0 {
		e.ring = make([]bool, length, capacity)
		for i := range e.ring {
			e.ring[i] = b[i/8]&(1<<(i%8)) != 0
			if e.ring[i] {
				e.inWindow++
			}
		}
	}
	return nil
}
