package prequential

import (
	"testing"

	"github.com/streamlearner/streamlearner/learners"
)

func TestCountsAndWindow(t *testing.T) {
	e := Evaluator{Window: 4}
	// labeled mistake pattern: M . M M . . .  then an unlabeled round
	pattern := []bool{true, false, true, true, false, false, false}
	wantWindow := []float64{1, 0.5, 2.0 / 3, 0.75, 0.5, 0.5, 0.25}
	for i, m := range pattern {
		e.Observe(learners.Outcome{Mistake: m, Updated: m}, true, i+1)
		if got := e.WindowRate(); got != wantWindow[i] {
			t.Fatalf("after %d rounds: window rate %v, want %v", i+1, got, wantWindow[i])
		}
	}
	e.Observe(learners.Outcome{}, false, 3)
	if e.Rounds != 8 || e.Labeled != 7 || e.Mistakes != 3 || e.Updates != 3 {
		t.Fatalf("counts %+v", e)
	}
	if e.MistakeRate() != 3.0/7 || e.WindowRate() != 0.25 {
		t.Fatalf("rates %v %v", e.MistakeRate(), e.WindowRate())
	}
	if e.Support != 3 || e.SupportMax != 7 {
		t.Fatalf("support %d peak %d", e.Support, e.SupportMax)
	}
}

func TestZeroValue(t *testing.T) {
	var e Evaluator
	if e.MistakeRate() != 0 || e.WindowRate() != 0 {
		t.Fatal("rates of an empty evaluator")
	}
	for i := range 2500 {
		e.Observe(learners.Outcome{Mistake: i%5 == 0}, true, 0)
	}
	if len(e.ring) != DefaultWindow || e.WindowRate() != 0.2 {
		t.Fatalf("default window: len %d rate %v", len(e.ring), e.WindowRate())
	}
}

func TestStateRoundTrip(t *testing.T) {
	for _, n := range []int{0, 3, 10, 37} {
		a := Evaluator{Window: 10}
		for i := range n {
			a.Observe(learners.Outcome{Mistake: i%3 == 0, Updated: i%3 == 0}, i%4 != 1, i)
		}
		b, _ := a.MarshalBinary()
		var c Evaluator
		if err := c.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		for i := range 25 {
			o := learners.Outcome{Mistake: i%2 == 0}
			a.Observe(o, true, i)
			c.Observe(o, true, i)
			if a.WindowRate() != c.WindowRate() || a.MistakeRate() != c.MistakeRate() || a.Rounds != c.Rounds {
				t.Fatalf("n=%d step %d: restored %+v, original %+v", n, i, c, a)
			}
		}
		if err := c.UnmarshalBinary(b[:len(b)-1]); err == nil && n > 0 {
			t.Fatalf("n=%d: truncated state accepted", n)
		}
	}
}
