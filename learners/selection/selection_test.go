package selection

import (
	"math/rand/v2"
	"testing"

	"github.com/streamlearner/streamlearner/learners/drift"
)

// m packs one record's mistakes: m(true, false, true) = learners 0 and 2 erred.
func m(errs ...bool) uint64 {
	var w uint64
	for i, e := range errs {
		if e {
			w |= 1 << i
		}
	}
	return w
}

// The rule worked out by hand: window 4, margin 0.3 (a challenger must
// make at least 2 fewer mistakes in 4 records).
func TestSelectionByHand(t *testing.T) {
	s, err := New(Config{Window: 4, Margin: 0.3}, 3)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		mistakes uint64
		champion int
		switched bool
		why      string
	}{
		{m(true, false, false), 0, false, "window not full: the first learner stays"},
		{m(true, false, true), 0, false, ""},
		{m(false, false, false), 0, false, ""},
		{m(false, true, false), 0, false, "full: counts 2,1,1; best learner 1 (tie with 2, first listed) beats by 1 of 4 = 0.25 ≤ 0.3"},
		{m(true, false, false), 0, false, "record 1 leaves: counts 2,1,1"},
		{m(false, false, false), 0, false, "record 2 leaves: counts 1,1,0; learner 2 better by 0.25 only"},
		{m(true, true, false), 2, true, "counts 2,2,0: learner 2 better by 0.5"},
		{m(true, true, true), 2, false, "counts 3,2,1: the champion is the best"},
		{m(false, false, true), 2, false, "counts 2,2,2: a three-way tie keeps the champion"},
	}
	for i, st := range steps {
		c, sw := s.Observe(st.mistakes)
		if c != st.champion || sw != st.switched {
			t.Fatalf("record %d (%s): champion %d switched %v, want %d %v", i+1, st.why, c, sw, st.champion, st.switched)
		}
	}
	if s.Switches() != 1 || s.Rate(0) != 0.5 || s.Rate(1) != 0.5 || s.Rate(2) != 0.5 {
		t.Fatalf("switches %d, rates %v %v %v", s.Switches(), s.Rate(0), s.Rate(1), s.Rate(2))
	}
	// Record 10: L2 errs again; window r7..r10: L0 2, L1 2, L2 3 — every
	// challenger better by 1 of 4 only: no switch. Record 11: L2 errs,
	// others right; window r8..r11: L0 1, L1 1, L2 4 — better by 0.75:
	// learner 0 (tie with 1, first listed) takes over.
	if c, sw := s.Observe(m(false, false, true)); c != 2 || sw {
		t.Fatalf("record 10: champion %d switched %v", c, sw)
	}
	if c, sw := s.Observe(m(false, false, true)); c != 0 || !sw {
		t.Fatalf("record 11: champion %d switched %v, want 0 (tie with 1 goes to the first listed)", c, sw)
	}
}

// A tie with the champion never switches, whatever the margin.
func TestTieKeepsTheChampion(t *testing.T) {
	s, _ := New(Config{Window: 10, Margin: 1e-9}, 2)
	r := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		e := r.IntN(3) == 0
		if c, _ := s.Observe(m(e, e)); c != 0 {
			t.Fatal("an equal challenger took over")
		}
	}
}

// With a detector, its alarm empties the window and re-selects, without
// the margin, as soon as Window/10 records (at least 30) have come since:
// the records before the drift no longer count.
func TestDetectorForcesReselection(t *testing.T) {
	s, err := New(Config{Window: 300, Margin: 0.5, Detector: "page-hinkley:lambda=5,min-instances=10"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	// The champion is right for 50 records, then always wrong, while the
	// challenger is wrong one time in four throughout.
	switchedAt := -1
	for i := range 200 {
		c, sw := s.Observe(m(i >= 50, i%4 == 0))
		if sw {
			switchedAt = i
			if c != 1 {
				t.Fatalf("switched to %d", c)
			}
			break
		}
	}
	// Page-Hinkley fires at record 55; the window restarts after it, and
	// 30 records later (56..85) the challenger has 8 mistakes, the
	// champion 30.
	if switchedAt != 85 {
		t.Fatalf("re-selected at record %d, want 85 (alarm at 55, then 30 records)", switchedAt)
	}
	// Without the detector the half-full window and the margin keep it.
	s2, _ := New(Config{Window: 300, Margin: 0.5}, 2)
	for i := range 200 {
		if _, sw := s2.Observe(m(i >= 50, i%4 == 0)); sw {
			t.Fatalf("switched at %d without a detector", i)
		}
	}
}

// Encoded at any record and decoded, a selector continues exactly.
func TestStateContinuesExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	stream := make([]uint64, 5000)
	for i := range stream {
		p := []float64{0.1, 0.3, 0.2}
		if i > 2500 {
			p = []float64{0.4, 0.1, 0.2}
		}
		stream[i] = m(r.Float64() < p[0], r.Float64() < p[1], r.Float64() < p[2])
	}
	for _, cfg := range []Config{{Window: 300, Margin: 0.02}, {Window: 300, Detector: "adwin"}, {Window: 50, Detector: "ddm"}} {
		straight, _ := New(cfg, 3)
		var want []int
		for _, w := range stream {
			c, _ := straight.Observe(w)
			want = append(want, c)
		}
		if straight.Switches() == 0 {
			t.Fatalf("%+v: no switch: the test proves nothing", cfg)
		}
		s, _ := New(cfg, 3)
		for i, w := range stream {
			if i%613 == 100 {
				b, err := s.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				if s, err = Unmarshal(b); err != nil {
					t.Fatalf("%+v at %d: %v", cfg, i, err)
				}
			}
			if c, _ := s.Observe(w); c != want[i] {
				t.Fatalf("%+v: record %d champion %d after restores, %d straight", cfg, i, c, want[i])
			}
		}
		if s.Switches() != straight.Switches() {
			t.Fatalf("switches %d vs %d", s.Switches(), straight.Switches())
		}
		b, _ := s.MarshalBinary()
		for cut := range len(b) {
			if _, err := Unmarshal(b[:cut]); err == nil {
				t.Fatalf("%+v: state cut to %d of %d bytes accepted", cfg, cut, len(b))
			}
		}
	}
}

func TestParse(t *testing.T) {
	c, err := Parse("window=500,margin=0.02")
	if err != nil || c.Window != 500 || c.Margin != 0.02 {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{"window", "size=3", "window=-1", "margin=1", "margin=x"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := New(Config{Detector: "nope"}, 2); err == nil {
		t.Error("unknown detector accepted")
	}
	if _, err := New(Config{}, 65); err == nil {
		t.Error("65 learners accepted")
	}
	_ = drift.Names
}
