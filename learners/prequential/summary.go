package prequential

// Summary is how a learner's predictions scored, as eval, replay and
// replay's per-partition reports give it: one type, so that a reader of
// their JSON finds the same keys with the same meaning in each. Rates are
// fractions in [0, 1].
type Summary struct {
	Labeled     uint64  `json:"labeled"`
	MistakeRate float64 `json:"mistake_rate"`
	// BaselineRate is the majority-class baseline's mistake rate: before
	// each labeled round it predicts the class seen most so far.
	BaselineRate float64 `json:"baseline_rate"`
	// Kappa is Cohen's kappa (Scores.Kappa).
	Kappa float64 `json:"kappa"`
	// Classes names the confusion matrix's classes: BinaryClasses for a
	// binary model, the class tokens in the order met for a many-class
	// one. Confusion counts labeled rounds by true class (row) and
	// predicted class (column); Unanswered, by true class, those that had
	// no prediction (a many-class model that knew no class yet): mistakes
	// that every rate and score counts.
	Classes    []string   `json:"classes"`
	Confusion  [][]uint64 `json:"confusion"`
	Unanswered []uint64   `json:"unanswered,omitempty"`
	// Accuracy, MacroF1 and Recall are Scores' figures.
	Accuracy float64   `json:"accuracy"`
	MacroF1  float64   `json:"macro_f1"`
	Recall   []float64 `json:"recall"`
}

// Summarize is the Summary of labeled rounds of which mistakes were the
// learner's and baselineMistakes the baseline's, and of their confusion
// matrix (named by classes) and unanswered rounds (nil: none). Kappa,
// accuracy, macro-F1 and recall come from the matrix, so that reports can
// sum matrices over partitions or orders first (MergeConfusion). The
// baseline's rate counts the rounds the matrix holds: those scored with
// their label, as Evaluator.BaselineRate.
func Summarize(labeled, mistakes, baselineMistakes uint64, classes []string, conf [][]uint64, unanswered []uint64) Summary {
	sc := ScoresOf(conf, unanswered)
	s := Summary{Labeled: labeled, Kappa: sc.Kappa, Classes: classes, Confusion: conf, Unanswered: unanswered,
		Accuracy: sc.Accuracy, MacroF1: sc.MacroF1, Recall: sc.Recall}
	if labeled > 0 {
		s.MistakeRate = float64(mistakes) / float64(labeled)
	}
	if answered, none := rounds(conf, unanswered); answered+none > 0 {
		s.BaselineRate = float64(baselineMistakes) / float64(answered+none)
	}
	return s
}

// Summary is the evaluator's Summary, its matrix's classes named by
// classes.
func (e *Evaluator) Summary(classes []string) Summary {
	return Summarize(e.Labeled, e.Mistakes, e.BaselineMistakes, classes, e.Confusion(), e.UnansweredByClass())
}

// rounds counts the rounds a confusion matrix holds (answered) and the
// unanswered ones (none).
func rounds(conf [][]uint64, unanswered []uint64) (answered, none uint64) {
	for _, row := range conf {
		for _, c := range row {
			answered += c
		}
	}
	for _, c := range unanswered {
		none += c
	}
	return answered, none
}
