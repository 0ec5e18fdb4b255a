// Package sparse holds the feature vector that every other package exchanges.
//
// A Vector lists its non-zero entries in strictly increasing index order, with
// finite values. Codecs build vectors from bytes and check these rules
// (Validate); learners rely on them and do not check again on their hot path.
//
// Dense input (a JSON array, a row of a dense matrix) becomes a Vector whose
// feature i+1 is the array's element i, so that a dense record and the LIBSVM
// line "1:v1 2:v2 ..." describe the same point. Zero entries are dropped: they
// change neither dot products nor norms.
//
// Vectors share their backing arrays when copied; Clone makes an independent
// copy. Nothing in this package panics on a vector that breaks the rules,
// except where a method says so.
package sparse

import (
	"errors"
	"fmt"
	"math"
)

// Vector is a sparse feature vector: Idx[i] is the index of the i-th non-zero
// entry and Val[i] its value. Idx is strictly increasing and len(Idx) ==
// len(Val).
type Vector struct {
	Idx []uint32
	Val []float64
}

// Len reports the number of stored (non-zero) entries.
func (v Vector) Len() int { return len(v.Idx) }

// MaxIndex reports the largest index, or 0 for an empty vector.
func (v Vector) MaxIndex() uint32 {
	if len(v.Idx) == 0 {
		return 0
	}
	return v.Idx[len(v.Idx)-1]
}

// SqNorm returns the squared Euclidean norm.
func (v Vector) SqNorm() float64 {
	s := 0.0
	for _, x := range v.Val {
		s += x * x
	}
	return s
}

// Dot returns the inner product of two vectors by merging their index lists.
func (v Vector) Dot(w Vector) float64 {
	s := 0.0
	i, j := 0, 0
	for i < len(v.Idx) && j < len(w.Idx) {
		switch a, b := v.Idx[i], w.Idx[j]; {
		case a == b:
			s += v.Val[i] * w.Val[j]
			i++
			j++
		case a < b:
			i++
		default:
			j++
		}
	}
	return s
}

// SqDist returns ‖v − w‖², computed entry by entry (no cancellation).
func (v Vector) SqDist(w Vector) float64 {
	s := 0.0
	i, j := 0, 0
	for i < len(v.Idx) || j < len(w.Idx) {
		var d float64
		switch {
		case j >= len(w.Idx) || (i < len(v.Idx) && v.Idx[i] < w.Idx[j]):
			d = v.Val[i]
			i++
		case i >= len(v.Idx) || w.Idx[j] < v.Idx[i]:
			d = w.Val[j]
			j++
		default:
			d = v.Val[i] - w.Val[j]
			i++
			j++
		}
		s += d * d
	}
	return s
}

// Clone returns a copy that shares no memory with v.
func (v Vector) Clone() Vector {
	return v.CopyInto(Vector{})
}

// CopyInto copies v into dst's backing arrays, growing them if needed, and
// returns the result. It lets a caller recycle the storage of a vector it no
// longer needs.
func (v Vector) CopyInto(dst Vector) Vector {
	dst.Idx = append(dst.Idx[:0], v.Idx...)
	dst.Val = append(dst.Val[:0], v.Val...)
	return dst
}

// Dense returns the values of features 1..d as a slice of length d (feature
// i+1 at position i); entries above d are ignored.
func (v Vector) Dense(d int) []float64 {
	out := make([]float64, d)
	for k, i := range v.Idx {
		if i >= 1 && int(i) <= d {
			out[i-1] = v.Val[k]
		}
	}
	return out
}

// FromDense builds a vector whose feature i+1 is x[i], dropping zeros.
func FromDense(x []float64) Vector {
	var v Vector
	for i, a := range x {
		if a != 0 {
			v.Idx = append(v.Idx, uint32(i+1))
			v.Val = append(v.Val, a)
		}
	}
	return v
}

// Errors returned by Validate. They are wrapped with the position of the
// offending entry; test for them with errors.Is.
var (
	ErrLength    = errors.New("index and value lists differ in length")
	ErrOrder     = errors.New("indices not strictly increasing")
	ErrDuplicate = errors.New("duplicate index")
	ErrNonFinite = errors.New("value is NaN or infinite")
)

// Validate checks the rules of the package comment: equal lengths, strictly
// increasing indices and finite values. Zero values are allowed.
func (v Vector) Validate() error {
	if len(v.Idx) != len(v.Val) {
		return fmt.Errorf("%w: %d indices, %d values", ErrLength, len(v.Idx), len(v.Val))
	}
	for k, x := range v.Val {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%w: feature %d", ErrNonFinite, v.Idx[k])
		}
		if k > 0 {
			switch {
			case v.Idx[k] == v.Idx[k-1]:
				return fmt.Errorf("%w: feature %d", ErrDuplicate, v.Idx[k])
			case v.Idx[k] < v.Idx[k-1]:
				return fmt.Errorf("%w: %d after %d", ErrOrder, v.Idx[k], v.Idx[k-1])
			}
		}
	}
	return nil
}
