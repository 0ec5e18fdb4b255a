package learners

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// The encoded state of a learner:
//
//	magic "SLRN" | format version (uvarint) | learner spec (string) | kernel spec (string)
//	| round counter (uvarint) | support set | learner-specific section (bytes)
//
// The support set is: count (uvarint), then per vector its birth round
// (uvarint), weight (float64 bits), entry count (uvarint), index deltas
// (uvarint) and values (float64 bits). Cached norms and kernel values are
// not stored: they are recomputed on decode by the same code that computed
// them, so they come back bit-identical. Strings and byte sections are a
// uvarint length followed by the bytes.
//
// A learner in primal form (see primalForm) writes format version
// statePrimal, whose support set is replaced by: the count of vectors
// folded in (uvarint), the constant's weight β (float64 bits), and w's
// non-zeros as a vector. A version-1 state
// of such a learner still decodes: its vectors fold into w. Integrity (checksums) is the
// checkpoint store's job; decoding only guarantees that corrupt input gives
// an error, never a panic or an allocation larger than the input implies.
const (
	stateMagic   = "SLRN"
	stateVersion = 1
	statePrimal  = 2
)

// AppendSized appends what enc appends, preceded by its length as a
// uvarint: a byte section encoded in place, with no buffer of its own (a
// snapshot holds its learners' states this way). It reserves the longest
// uvarint and closes the gap once the length is known, a move of the
// section within b.
func AppendSized(b []byte, enc func([]byte) ([]byte, error)) ([]byte, error) {
	at := len(b)
	b = append(b, make([]byte, binary.MaxVarintLen64)...)
	b, err := enc(b)
	if err != nil {
		return nil, err
	}
	n := len(b) - at - binary.MaxVarintLen64
	w := binary.PutUvarint(b[at:], uint64(n))
	copy(b[at+w:], b[at+binary.MaxVarintLen64:])
	return b[:at+w+n], nil
}

// ErrCorrupt is wrapped by every decoding error caused by malformed bytes.
var ErrCorrupt = errors.New("corrupt learner state")

type encoder struct{ b []byte }

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) float(v float64) {
	e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v))
}
func (e *encoder) bytes(p []byte)  { e.uvarint(uint64(len(p))); e.b = append(e.b, p...) }
func (e *encoder) string(s string) { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }

func (e *encoder) vector(v sparse.Vector) {
	e.uvarint(uint64(len(v.Idx)))
	prev := uint32(0)
	for _, i := range v.Idx {
		e.uvarint(uint64(i - prev))
		prev = i
	}
	for _, x := range v.Val {
		e.float(x)
	}
}

// decoder reads what encoder wrote. After the first failure every read
// returns a zero value and err keeps the first failure.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorrupt, what)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) float(what string) float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail(what)
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

// count reads a length and checks that at least min bytes per item remain,
// so a corrupt length cannot make the caller allocate more than the input.
func (d *decoder) count(what string, min int) int {
	n := d.uvarint(what)
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.b)/min) {
		d.fail(what + " count exceeds remaining data")
		return 0
	}
	return int(n)
}

func (d *decoder) bytes(what string) []byte {
	n := d.count(what, 1)
	if d.err != nil {
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) string(what string) string { return string(d.bytes(what)) }

// entries counts the entries of the next n support vectors (a birth
// round, a weight, a label and a vector each) without decoding them, so
// that the set can be sized for them. On malformed bytes the count stops
// short, and the decoding that follows refuses them.
func (d *decoder) entries(n int) int {
	p := decoder{b: d.b}
	total := 0
	for range n {
		p.uvarint("birth round")
		p.float("weight")
		p.uvarint("label")
		c := p.count("vector length", 9)
		for range c {
			p.uvarint("vector index")
		}
		if p.err != nil || len(p.b) < 8*c {
			break
		}
		p.b = p.b[8*c:]
		total += c
	}
	return total
}

func (d *decoder) vector() sparse.Vector { return d.vectorIn(sparse.Vector{}) }

// vectorIn is vector decoded into buf's arrays when they are large enough:
// for a vector that is copied, as the support set copies what it adds.
func (d *decoder) vectorIn(buf sparse.Vector) sparse.Vector {
	n := d.count("vector length", 9)
	if d.err != nil {
		return sparse.Vector{}
	}
	v := sparse.Vector{Idx: buf.Idx[:0], Val: buf.Val[:0]}
	if cap(v.Idx) < n || cap(v.Val) < n {
		v = sparse.Vector{Idx: make([]uint32, 0, n), Val: make([]float64, 0, n)}
	}
	v.Idx, v.Val = v.Idx[:n], v.Val[:n]
	prev := uint64(0)
	for i := range n {
		delta := d.uvarint("vector index")
		if i > 0 && delta == 0 {
			d.fail("vector indices not increasing")
		}
		prev += delta
		if prev > math.MaxUint32 {
			d.fail("vector index out of range")
		}
		v.Idx[i] = uint32(prev)
	}
	for i := range n {
		v.Val[i] = d.float("vector value")
	}
	if d.err == nil {
		if err := v.Validate(); err != nil {
			d.fail(err.Error())
		}
	}
	return v
}
