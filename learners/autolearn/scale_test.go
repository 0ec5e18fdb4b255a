package autolearn

import (
	"math"
	"slices"
	"testing"

	"github.com/streamlearner/streamlearner/learners/rng"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

// The scaler centres a feature present in at least half the rounds (an
// offset a linear candidate learns slowly), adding it to a record that
// lacks it, and leaves a rare one uncentred so that sparse records stay
// sparse; both are divided by their deviation over the rounds before and
// the record's own. A restored search scales as the uninterrupted one.
func TestScalerCentresDenseFeatures(t *testing.T) {
	a := build(t, "auto:width=4", 1)
	src := rng.New(5, 5)
	for i := range 300 {
		// Feature 1: 100 ± 10 in every record; feature 7: 5 in one in ten.
		x := sparse.Vector{Idx: []uint32{1}, Val: []float64{100 + 10*(2*src.Float64()-1)}}
		if i%10 == 0 {
			x.Idx, x.Val = append(x.Idx, 7), append(x.Val, 5)
		}
		a.Round(x, 1-2*(i%2))
	}
	if len(a.dense) != 1 || a.dense[0] != 1 {
		t.Fatalf("dense features %v, want [1]", a.dense)
	}
	rare := sparse.Vector{Idx: []uint32{7}, Val: []float64{5}}
	s := a.scale(rare)
	s = sparse.Vector{Idx: slices.Clone(s.Idx), Val: slices.Clone(s.Val)} // scale's storage is reused
	if len(s.Idx) != 2 || s.Idx[0] != 1 || s.Idx[1] != 7 {
		t.Fatalf("a record without the dense feature scales to %v, want it added", s)
	}
	n := float64(a.rounds + 1)
	m1, v1 := a.stats[2]/n, a.stats[3]/n
	want1 := -m1 / math.Sqrt(v1-m1*m1) // absent: 0, centred
	m7, v7 := (a.stats[14]+5)/n, (a.stats[15]+25)/n
	want7 := 5 / math.Sqrt(v7-m7*m7) // not centred
	if math.Abs(s.Val[0]-want1) > 1e-9 || math.Abs(s.Val[1]-want7) > 1e-9 {
		t.Fatalf("scaled %v, want [%v %v]", s.Val, want1, want7)
	}
	if s.Val[0] > -8 {
		t.Fatalf("the absent dense feature scales to %v: not centred (its mean is 10 deviations from 0)", s.Val[0])
	}
	typical := a.scale(sparse.Vector{Idx: []uint32{1}, Val: []float64{100}})
	if len(typical.Idx) != 1 || math.Abs(typical.Val[0]) > 0.5 {
		t.Fatalf("a typical record scales to %v, want its dense feature near 0", typical)
	}
	b, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	got := r.scale(rare)
	if !slices.Equal(got.Idx, s.Idx) || !slices.Equal(got.Val, s.Val) {
		t.Fatalf("restored, the record scales to %v, want %v", got, s)
	}
}

// A feature that falls below half the rounds stops being centred at the
// next sweep, and a state from before centring (format 6) scales as it
// did: x's features only, none centred.
func TestScalerDropsFeaturesNoLongerDense(t *testing.T) {
	a := build(t, "auto:width=4", 1)
	for i := range 64 {
		a.Round(sparse.Vector{Idx: []uint32{3}, Val: []float64{float64(1 + i%3)}}, 1-2*(i%2))
	}
	if len(a.dense) != 1 {
		t.Fatalf("dense %v after 64 rounds with feature 3, want [3]", a.dense)
	}
	for i := range 128 {
		a.Round(sparse.Vector{Idx: []uint32{9}, Val: []float64{float64(1 + i%2)}}, 1-2*(i%2))
	}
	if len(a.dense) != 1 || a.dense[0] != 9 {
		t.Fatalf("dense %v after 128 more rounds with feature 9 alone, want [9]", a.dense)
	}
	old, err := a.appendVersion(nil, 6)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Unmarshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if s := r.scale(sparse.Vector{Idx: []uint32{3}, Val: []float64{2}}); len(s.Idx) != 1 || s.Idx[0] != 3 {
		t.Fatalf("a format-6 state scales to %v, want feature 3 alone", s)
	}
}
