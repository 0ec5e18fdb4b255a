package prequential

import (
	"math"
	"reflect"
	"strings"
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
	if e.window.Len() != DefaultWindow || e.WindowRate() != 0.2 {
		t.Fatalf("default window: len %d rate %v", e.window.Len(), e.WindowRate())
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

func TestReportingRuleAtZeroMargin(t *testing.T) {
	if Predict(0) != -1 || Predict(-0.0) != -1 || Predict(1e-300) != 1 || Predict(-2) != -1 {
		t.Fatal("sign rule")
	}
	// Margin 0: the learners update on y·f ≤ 0 for both labels, but the
	// reported prediction is −1, right for y = −1.
	if IsMistake(0, -1) || !IsMistake(0, 1) || IsMistake(0, 0) || IsMistake(3, 0) {
		t.Fatal("mistake rule at f = 0")
	}
	var e Evaluator
	e.Binary(0, -1, true, 1)
	e.Binary(0, 1, true, 2)
	if e.Mistakes != 1 || e.Labeled != 2 || e.Updates != 2 {
		t.Fatalf("counts %+v", e)
	}
	if c := e.Confusion(); c[0][0] != 1 || c[1][0] != 1 || c[0][1] != 0 || c[1][1] != 0 {
		t.Fatalf("confusion %v", c)
	}
}

func TestBaselineAndKappa(t *testing.T) {
	// Labels: − − + − + + +, answers all −1 (margin −1).
	var e Evaluator
	labels := []int{-1, -1, 1, -1, 1, 1, 1}
	for _, y := range labels {
		e.Binary(-1, y, false, 0)
	}
	// Baseline before each round: − (none seen, ties to −1), −, −, −, −
	// (3−,1+), − (3−,2+), − (3−,3+ tie → −1): wrong on the four +.
	if e.BaselineMistakes != 4 || e.BaselineRate() != 4.0/7 {
		t.Fatalf("baseline %d (%v)", e.BaselineMistakes, e.BaselineRate())
	}
	s := e.Scores()
	// Always −1: p₀ = 3/7 = pₑ, kappa 0.
	if s.Accuracy != 3.0/7 || s.Kappa != 0 || s.Recall[0] != 1 || s.Recall[1] != 0 {
		t.Fatalf("scores %+v", s)
	}
	// A perfect classifier on the same labels: kappa 1, macro-F1 1.
	var p Evaluator
	for _, y := range labels {
		p.Binary(float64(y), y, false, 0)
	}
	if s := p.Scores(); s.Kappa != 1 || s.MacroF1 != 1 || s.Accuracy != 1 || p.Mistakes != 0 {
		t.Fatalf("perfect: %+v", s)
	}
	// A hand-computed matrix: truth a,a,a,b,b,c answered a,b,a,b,b,a.
	var m Evaluator
	for i, tp := range [][2]int{{0, 0}, {0, 1}, {0, 0}, {1, 1}, {1, 1}, {2, 0}} {
		m.Class(tp[1], tp[0], false, i)
	}
	s = m.Scores()
	// p₀ = 4/6; rows 3,2,1; cols 3,3,0; pₑ = (9+6+0)/36; kappa = (4/6−15/36)/(1−15/36) = 9/21.
	if math.Abs(s.Kappa-9.0/21) > 1e-15 || s.Accuracy != 4.0/6 {
		t.Fatalf("kappa %v accuracy %v", s.Kappa, s.Accuracy)
	}
	// F1: a 2·2/(3+3) = 2/3, b 2·2/(2+3) = 4/5, c 0 → macro (2/3+4/5)/3.
	if math.Abs(s.MacroF1-(2.0/3+4.0/5)/3) > 1e-15 || s.Recall[0] != 2.0/3 || s.Recall[1] != 1 || s.Recall[2] != 0 {
		t.Fatalf("f1 %v recall %v", s.MacroF1, s.Recall)
	}
	// Baseline: a (nothing seen → index 0) right, then a,a right, b wrong,
	// b wrong (a 3 > b 1), c wrong: 3 mistakes.
	if m.BaselineMistakes != 3 {
		t.Fatalf("baseline mistakes %d", m.BaselineMistakes)
	}
	// No answer yet: a mistake outside the matrix.
	var u Evaluator
	u.Class(-1, 0, false, 0)
	if u.Mistakes != 1 || u.Unanswered != 1 || u.Scores().Accuracy != 0 || u.Scored() != 1 {
		t.Fatalf("unanswered %+v", u)
	}
	// The hand-computed matrix and one more b with no answer: every score
	// counts it, as a mistake of class b. Rows 3,3,1 (n = 7), columns
	// 3,3,0 and 1 unanswered; p₀ = 4/7, pₑ = (9+9+0)/49, kappa = 10/31;
	// F1: a 2/3, b 2·2/(3+3) = 2/3, c 0.
	m.Class(-1, 1, false, 6)
	s = m.Scores()
	if u := m.UnansweredByClass(); len(u) != 3 || u[0] != 0 || u[1] != 1 || u[2] != 0 {
		t.Fatalf("unanswered by class %v", u)
	}
	if s.Accuracy != 4.0/7 || s.Accuracy != 1-m.MistakeRate() || math.Abs(s.Kappa-10.0/31) > 1e-15 ||
		math.Abs(s.MacroF1-4.0/9) > 1e-15 || s.Recall[0] != 2.0/3 || s.Recall[1] != 2.0/3 || s.Recall[2] != 0 {
		t.Fatalf("with one unanswered: %+v", s)
	}
	if p.UnansweredByClass() != nil {
		t.Fatal("unanswered rounds where every round had an answer")
	}
}

func TestClassStateRoundTrip(t *testing.T) {
	a := Evaluator{Window: 5}
	for i := range 40 {
		a.Class(i%3, (i*7)%4, i%2 == 0, i)
	}
	b, _ := a.MarshalBinary()
	var c Evaluator
	if err := c.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		a.Class(i%5, i%6, false, i)
		c.Class(i%5, i%6, false, i)
	}
	if !reflect.DeepEqual(a, c) {
		t.Fatalf("restored\n%+v\noriginal\n%+v", c, a)
	}
	for n := range len(b) {
		if err := c.UnmarshalBinary(b[:n]); err == nil {
			t.Fatalf("state cut at %d of %d accepted", n, len(b))
		}
	}
}

func TestVersion1StateLoads(t *testing.T) {
	// A version-1 state as the previous build wrote it: 3 rounds, 2
	// labeled, 1 mistake, window of 4 holding [true false].
	v1 := []byte{1, 3, 2, 1, 1, 2, 2, 4, 2, 4, 0, 0b01}
	var e Evaluator
	if err := e.UnmarshalBinary(v1); err != nil {
		t.Fatal(err)
	}
	if e.Rounds != 3 || e.Labeled != 2 || e.Mistakes != 1 || e.WindowRate() != 0.5 || e.Classes() != 0 {
		t.Fatalf("v1 state %+v", e)
	}
	if err := e.UnmarshalBinary([]byte{9}); err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Fatalf("unknown version: %v", err)
	}
}
