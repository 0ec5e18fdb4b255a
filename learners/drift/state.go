package drift

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// A detector that watches a live stream is part of the partition's
// checkpoint, so each one encodes its state: Marshal writes the spec and
// the state, Unmarshal rebuilds a detector that continues exactly (the
// same alarms at the same rounds) as the one that was encoded.

const stateVersion = 1

// Marshal encodes d with its configuration.
func Marshal(d Detector) ([]byte, error) {
	spec, ok := d.(interface{ String() string })
	if !ok {
		return nil, fmt.Errorf("drift: %s cannot be encoded", d.Name())
	}
	b := []byte{stateVersion}
	b = appendString(b, spec.String())
	switch x := d.(type) {
	case *ADWIN:
		b = appendInts(b, x.width, x.time, int64(len(x.rows)))
		b = appendFloats(b, x.total, x.variance)
		for _, row := range x.rows {
			b = appendInts(b, int64(len(row)))
			for _, bk := range row {
				b = appendFloats(b, bk.total, bk.variance)
			}
		}
	case *DDM:
		w := int64(0)
		if x.warning {
			w = 1
		}
		b = appendInts(b, x.n, x.errors, w)
		b = appendFloats(b, x.p, x.s, x.pMin, x.sMin, x.psMin)
	case *PageHinkley:
		b = appendInts(b, x.n)
		b = appendFloats(b, x.mean, x.m, x.min)
	default:
		return nil, fmt.Errorf("drift: %s cannot be encoded", d.Name())
	}
	return b, nil
}

// Unmarshal rebuilds the detector Marshal encoded.
func Unmarshal(b []byte) (Detector, error) {
	r := &reader{b: b}
	if v := r.byte(); v != stateVersion {
		return nil, fmt.Errorf("drift: detector state version %d, want %d", v, stateVersion)
	}
	d, err := New(r.string())
	if err != nil || r.err != nil {
		return nil, errors.Join(errors.New("drift: detector state"), err, r.err)
	}
	switch x := d.(type) {
	case *ADWIN:
		x.width, x.time = r.int(), r.int()
		rows := r.int()
		x.total, x.variance = r.float(), r.float()
		if rows < 0 || rows > 64 {
			return nil, fmt.Errorf("drift: ADWIN state with %d rows", rows)
		}
		for range rows {
			n := r.int()
			if n < 0 || n > int64(x.cfg.Buckets)+1 {
				return nil, fmt.Errorf("drift: ADWIN row of %d buckets", n)
			}
			row := x.newRow()
			for range n {
				row = append(row, bucket{total: r.float(), variance: r.float()})
			}
			x.rows = append(x.rows, row)
		}
	case *DDM:
		x.n, x.errors = r.int(), r.int()
		x.warning = r.int() == 1
		x.p, x.s, x.pMin, x.sMin, x.psMin = r.float(), r.float(), r.float(), r.float(), r.float()
	case *PageHinkley:
		x.n = r.int()
		x.mean, x.m, x.min = r.float(), r.float(), r.float()
	}
	if r.err != nil {
		return nil, fmt.Errorf("drift: detector state: %w", r.err)
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("drift: detector state: %d bytes left over", len(r.b))
	}
	return d, nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendInts(b []byte, vs ...int64) []byte {
	for _, v := range vs {
		b = binary.AppendVarint(b, v)
	}
	return b
}

func appendFloats(b []byte, vs ...float64) []byte {
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// reader reads what the append functions wrote; the first failure sticks.
type reader struct {
	b   []byte
	err error
}

var errTruncated = errors.New("truncated")

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.err = errTruncated
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) int() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errTruncated
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) float() float64 {
	if len(r.b) < 8 {
		r.err = errTruncated
		r.b = nil
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

func (r *reader) string() string {
	n, k := binary.Uvarint(r.b)
	if k <= 0 || n > uint64(len(r.b)-k) {
		r.err = errTruncated
		return ""
	}
	s := string(r.b[k : k+int(n)])
	r.b = r.b[k+int(n):]
	return s
}
