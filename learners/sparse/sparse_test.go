package sparse

import (
	"errors"
	"math"
	"testing"
)

func TestDotNormDistAgreeWithDense(t *testing.T) {
	a := []float64{0, 1.5, 0, -2, 3, 0}
	b := []float64{4, 0, 0, 0.5, -1, 2}
	va, vb := FromDense(a), FromDense(b)
	if va.Len() != 3 || va.Idx[0] != 2 || va.MaxIndex() != 5 {
		t.Fatalf("FromDense: %+v", va)
	}
	dot, sq, na := 0.0, 0.0, 0.0
	for i := range a {
		dot += a[i] * b[i]
		sq += (a[i] - b[i]) * (a[i] - b[i])
		na += a[i] * a[i]
	}
	if va.Dot(vb) != dot || vb.Dot(va) != dot || va.SqDist(vb) != sq || va.SqNorm() != na {
		t.Fatalf("dot %v/%v dist %v/%v norm %v/%v", va.Dot(vb), dot, va.SqDist(vb), sq, va.SqNorm(), na)
	}
	back := va.Dense(6)
	for i := range a {
		if back[i] != a[i] {
			t.Fatalf("Dense: %v, want %v", back, a)
		}
	}
}

func TestCloneAndCopyIntoDoNotShare(t *testing.T) {
	v := FromDense([]float64{1, 2})
	c := v.Clone()
	c.Val[0] = 9
	if v.Val[0] != 1 {
		t.Fatal("Clone shares memory")
	}
	buf := Vector{Idx: make([]uint32, 0, 8), Val: make([]float64, 0, 8)}
	d := v.CopyInto(buf)
	if &d.Idx[:1][0] != &buf.Idx[:1][0] || d.Len() != 2 {
		t.Fatal("CopyInto did not reuse the storage")
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		v    Vector
		want error
	}{
		{Vector{Idx: []uint32{1, 3}, Val: []float64{1, 0}}, nil},
		{Vector{Idx: []uint32{1}, Val: []float64{1, 2}}, ErrLength},
		{Vector{Idx: []uint32{3, 1}, Val: []float64{1, 2}}, ErrOrder},
		{Vector{Idx: []uint32{2, 2}, Val: []float64{1, 2}}, ErrDuplicate},
		{Vector{Idx: []uint32{1}, Val: []float64{math.NaN()}}, ErrNonFinite},
		{Vector{Idx: []uint32{1}, Val: []float64{math.Inf(-1)}}, ErrNonFinite},
	} {
		if err := c.v.Validate(); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%+v: %v, want %v", c.v, err, c.want)
		}
	}
}
