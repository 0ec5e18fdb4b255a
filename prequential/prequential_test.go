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
