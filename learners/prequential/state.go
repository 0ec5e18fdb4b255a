package prequential

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// stateVersion 2 added the baseline, the unanswered count and the
// confusion matrix; version 1 states still load, with those empty (they
// then cover the rounds after the restore).
const stateVersion = 2

// maxStateClasses bounds the matrix a state may claim, so a corrupt state
// cannot make UnmarshalBinary allocate without limit.
const maxStateClasses = 1 << 12

// MarshalBinary encodes the counters, the sliding window, the baseline and
// the confusion matrix, so that a restored evaluator continues exactly
// (checkpoints carry it with the model).
func (e *Evaluator) MarshalBinary() ([]byte, error) {
	b := []byte{stateVersion}
	for _, v := range []uint64{e.Rounds, e.Labeled, e.Mistakes, e.Updates, uint64(e.Support), uint64(e.SupportMax), uint64(e.Window), uint64(len(e.window.ring)), uint64(cap(e.window.ring)), uint64(e.window.next)} {
		b = binary.AppendUvarint(b, v)
	}
	for i := 0; i < len(e.window.ring); i += 8 {
		var bits byte
		for j := i; j < min(i+8, len(e.window.ring)); j++ {
			if e.window.ring[j] {
				bits |= 1 << (j - i)
			}
		}
		b = append(b, bits)
	}
	b = binary.AppendUvarint(b, e.BaselineMistakes)
	b = binary.AppendUvarint(b, e.Unanswered)
	b = binary.AppendUvarint(b, uint64(e.majority))
	b = binary.AppendUvarint(b, uint64(e.k))
	for _, c := range e.counts {
		b = binary.AppendUvarint(b, c)
	}
	for _, c := range e.confusion {
		b = binary.AppendUvarint(b, c)
	}
	return b, nil
}

// UnmarshalBinary restores what MarshalBinary wrote (this version or
// version 1).
func (e *Evaluator) UnmarshalBinary(b []byte) error {
	if len(b) == 0 || (b[0] != 1 && b[0] != stateVersion) {
		if len(b) > 0 {
			return fmt.Errorf("evaluator state: format version %d not supported (this build reads 1 and %d)", b[0], stateVersion)
		}
		return errors.New("evaluator state: empty")
	}
	version := b[0]
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
	ringBytes := (length + 7) / 8
	if length > capacity || capacity > 1<<24 || (length > 0 && next >= length) || uint64(len(b)) < ringBytes ||
		(version == 1 && uint64(len(b)) != ringBytes) {
		return fmt.Errorf("evaluator state: window %d/%d at %d with %d bytes", length, capacity, next, len(b))
	}
	r := Evaluator{Window: int(v[6]), Rounds: v[0], Labeled: v[1], Mistakes: v[2], Updates: v[3], Support: int(v[4]), SupportMax: int(v[5])}
	if capacity > 0 {
		r.window = Window{ring: make([]bool, length, capacity), next: int(next)}
		for i := range r.window.ring {
			r.window.ring[i] = b[i/8]&(1<<(i%8)) != 0
			if r.window.ring[i] {
				r.window.wrong++
			}
		}
	}
	b = b[ringBytes:]
	if version >= 2 {
		next := func() (uint64, error) {
			x, n := binary.Uvarint(b)
			if n <= 0 {
				return 0, errors.New("evaluator state: truncated")
			}
			b = b[n:]
			return x, nil
		}
		var head [4]uint64
		for i := range head {
			x, err := next()
			if err != nil {
				return err
			}
			head[i] = x
		}
		k := head[3]
		if k > maxStateClasses || (k > 0 && head[2] >= k) || (k == 0 && head[2] != 0) {
			return fmt.Errorf("evaluator state: %d classes, majority %d", k, head[2])
		}
		r.BaselineMistakes, r.Unanswered, r.majority = head[0], head[1], int(head[2])
		r.grow(int(k))
		for _, dst := range [][]uint64{r.counts, r.confusion} {
			for i := range dst {
				x, err := next()
				if err != nil {
					return err
				}
				dst[i] = x
			}
		}
		if len(b) != 0 {
			return fmt.Errorf("evaluator state: %d trailing bytes", len(b))
		}
	}
	*e = r
	return nil
}
