package prequential

import (
	"reflect"
	"testing"

	"github.com/streamlearner/streamlearner/learners"
)

// An evaluator's Summary holds its own figures: the rates, the scores
// and the matrix, an unanswered round counted; the baseline's rate is
// over the rounds scored with their label, not over a round recorded by
// outcome alone.
func TestSummaryIsTheEvaluators(t *testing.T) {
	var e Evaluator
	for _, r := range [][2]int{{0, 0}, {1, 0}, {1, 1}, {2, 1}, {-1, 2}, {2, 2}, {0, 2}} {
		e.Class(r[0], r[1], false, 1)
	}
	e.Observe(learners.Outcome{Mistake: true}, true, 1)
	classes := []string{"a", "b", "c"}
	s := e.Summary(classes)
	want := Summary{Labeled: e.Labeled, MistakeRate: e.MistakeRate(), BaselineRate: e.BaselineRate(), Classes: classes,
		Confusion: e.Confusion(), Unanswered: e.UnansweredByClass()}
	sc := e.Scores()
	want.Kappa, want.Accuracy, want.MacroF1, want.Recall = sc.Kappa, sc.Accuracy, sc.MacroF1, sc.Recall
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("summary %+v, want %+v", s, want)
	}
	if s.Labeled != 8 || s.MistakeRate != 5.0/8 || s.BaselineRate != float64(e.BaselineMistakes)/7 || s.Unanswered[2] != 1 {
		t.Fatalf("summary %+v", s)
	}
	if z := Summarize(0, 0, 0, nil, nil, nil); z.MistakeRate != 0 || z.BaselineRate != 0 || z.Accuracy != 0 {
		t.Fatalf("nothing labeled: %+v", z)
	}
}
