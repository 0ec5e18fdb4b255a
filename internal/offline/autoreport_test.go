package offline

import (
	"fmt"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/autolearn"
)

// TestAutoReportSaysWhatItLeavesOut: the report of a search says when the
// search has not narrowed yet (a stream shorter than its first rung), when
// its list of champions is cut, and which order it is of.
func TestAutoReportSaysWhatItLeavesOut(t *testing.T) {
	m, err := model.New(model.Config{Learner: "auto:rung=200", Kernel: learners.Kernel{Kind: learners.Linear}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 150 {
		if _, err := m.Step([]byte(fmt.Sprintf("%+d 1:%d 2:%d", 1-2*(i%2), 1+i%7, 1+i%5))); err != nil {
			t.Fatal(err)
		}
	}
	a := AutoOf(m, 0)
	var b strings.Builder
	writeAuto(&b, Result{Spec: "auto", Orders: 1, Auto: a})
	out := b.String()
	if !a.Halving || a.NextCut != 200 || !strings.Contains(out, fmt.Sprintf("has not narrowed yet: %d candidates still play, the next halving at labeled record 200", len(a.Candidates))) {
		t.Fatalf("halving %v, next cut %d:\n%s", a.Halving, a.NextCut, out)
	}
	if strings.Contains(out, "order") || strings.Contains(out, "the last") {
		t.Fatalf("one order, every change listed, yet:\n%s", out)
	}

	cut := &AutoReport{Switches: 100, Candidates: a.Candidates}
	for i := range 64 {
		cut.Champions = append(cut.Champions, autolearn.Change{After: uint64(100 + i), Name: "x"})
	}
	b.Reset()
	writeAuto(&b, Result{Spec: "auto", Orders: 3, Auto: cut})
	out = b.String()
	if !strings.Contains(out, "the last 64 of 101 champions") || !strings.Contains(out, "in the first of the 3 random orders") || strings.Contains(out, "not narrowed") {
		t.Fatalf("a cut list over three orders, reported as:\n%s", out)
	}
}
