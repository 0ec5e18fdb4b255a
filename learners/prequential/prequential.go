// Package prequential is the test-then-train evaluator shared by eval
// (files), replay (a topic) and the live metrics of run: every labeled
// round is first scored with the model as it was, then learned from.
//
// Mistakes follow the reporting rule (see Predict and IsMistake):
// prediction = sign(f) with sign(0) = −1, mistake = prediction ≠ label.
// Besides rounds, labeled rounds, mistakes, updates and the support-set
// size (and its peak), an Evaluator keeps the mistake rate over a sliding
// window of the last Window labeled rounds, the confusion matrix of true
// against predicted class, and a prequential majority-class baseline:
// before each labeled round it predicts the class seen most often so far
// (ties to the lowest class index: −1 for binary labels, the first class
// seen for class tokens), so that a mistake rate can be read against what
// always answering the common class would have scored. Cohen's kappa,
// accuracy, macro-F1 and per-class recall come from the confusion matrix.
//
// Classes are small non-negative indices. Binary rounds (Binary) use 0 for
// −1 and 1 for +1; many-class rounds (Class) use the index the caller gives
// each class, in the order classes were first seen. The matrix grows when a
// new class appears and never allocates otherwise.
package prequential

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/streamlearner/streamlearner/learners"
)

// DefaultWindow is the sliding window used when Window is 0.
const DefaultWindow = 1000

// Evaluator accumulates prequential statistics. The zero value is ready
// to use with DefaultWindow. It is not safe for concurrent use.
type Evaluator struct {
	Window int // labeled rounds in the sliding window; 0 means DefaultWindow

	Rounds     uint64 // all rounds, labeled or not
	Labeled    uint64
	Mistakes   uint64
	Updates    uint64
	Support    int // support-set size after the last round
	SupportMax int
	// BaselineMistakes counts the labeled rounds (recorded through Binary
	// or Class) on which the majority-class baseline was wrong.
	BaselineMistakes uint64
	// Unanswered counts labeled rounds recorded with no prediction (a
	// many-class model before it knows any class): mistakes that have no
	// column in the confusion matrix.
	Unanswered uint64

	window Window // mistakes of the last Window labeled rounds

	k         int      // classes in the matrix
	confusion []uint64 // k×k, row = true class, column = predicted class
	counts    []uint64 // labeled rounds per true class (the baseline's tally)
	majority  int      // the baseline's current answer
}

// Observe records one round from a learner's Outcome, trusting
// o.Mistake as the round's mistake. It does not feed the confusion matrix
// or the baseline, which need the label; prefer Binary, which applies the
// reporting rule. Observe stays for callers that only have an outcome.
func (e *Evaluator) Observe(o learners.Outcome, labeled bool, support int) {
	e.round(o.Updated, support)
	if labeled {
		e.labeled(o.Mistake)
	}
}

// Binary records one binary round by the reporting rule: margin f (before
// learning), label y (+1, −1, or 0 when unlabeled), whether the model
// changed, and the support-set size after the round.
func (e *Evaluator) Binary(f float64, y int, updated bool, support int) {
	e.Class(BinaryClass(Predict(f)), BinaryClass(y), updated, support)
}

// Class records one round over class indices: pred is the predicted class
// (−1: no prediction), truth the true class or −1 when unlabeled.
func (e *Evaluator) Class(pred, truth int, updated bool, support int) {
	e.round(updated, support)
	if truth >= 0 {
		e.score(pred, truth)
	}
}

// LateBinary is Late for a binary round: f is the margin the prediction
// was made with.
func (e *Evaluator) LateBinary(f float64, y int, updated bool, support int) {
	e.Late(BinaryClass(Predict(f)), BinaryClass(y), updated, support)
}

// Late records a label that arrived after its round (delayed labels): the
// round was counted unlabeled when it was predicted; now its prediction
// pred is scored against truth, and the learning the label caused counts
// as an update. It is not a new round.
func (e *Evaluator) Late(pred, truth int, updated bool, support int) {
	e.Support = support
	e.SupportMax = max(e.SupportMax, support)
	if updated {
		e.Updates++
	}
	e.score(pred, truth)
}

// score counts one labeled prediction: baseline, confusion, mistakes.
func (e *Evaluator) score(pred, truth int) {
	e.grow(max(pred, truth) + 1)
	if e.majority != truth {
		e.BaselineMistakes++
	}
	e.counts[truth]++
	if c := e.counts[truth]; c > e.counts[e.majority] || (c == e.counts[e.majority] && truth < e.majority) {
		e.majority = truth
	}
	if pred < 0 {
		e.Unanswered++
	} else {
		e.confusion[truth*e.k+pred]++
	}
	e.labeled(pred != truth)
}

func (e *Evaluator) round(updated bool, support int) {
	e.Rounds++
	e.Support = support
	e.SupportMax = max(e.SupportMax, support)
	if updated {
		e.Updates++
	}
}

func (e *Evaluator) labeled(mistake bool) {
	e.Labeled++
	if mistake {
		e.Mistakes++
	}
	if e.window.Cap() == 0 {
		w := e.Window
		if w <= 0 {
			w = DefaultWindow
		}
		e.window = NewWindow(w)
	}
	e.window.Add(mistake)
}

// grow makes room for k classes, keeping the counts.
func (e *Evaluator) grow(k int) {
	if k <= e.k {
		return
	}
	conf := make([]uint64, k*k)
	for t := range e.k {
		copy(conf[t*k:t*k+e.k], e.confusion[t*e.k:(t+1)*e.k])
	}
	counts := make([]uint64, k)
	copy(counts, e.counts)
	e.k, e.confusion, e.counts = k, conf, counts
}

// MistakeRate is the cumulative mistake rate over labeled rounds (0 before
// any).
func (e *Evaluator) MistakeRate() float64 {
	if e.Labeled == 0 {
		return 0
	}
	return float64(e.Mistakes) / float64(e.Labeled)
}

// WindowRate is the mistake rate over the last Window labeled rounds (or
// fewer, before the window has filled).
func (e *Evaluator) WindowRate() float64 { return e.window.Rate() }

// Scored is the number of labeled rounds recorded with their label
// (through Binary or Class): those the baseline and the matrix cover.
func (e *Evaluator) Scored() uint64 {
	var n uint64
	for _, c := range e.counts {
		n += c
	}
	return n
}

// BaselineRate is the majority-class baseline's mistake rate over the
// scored rounds (0 before any).
func (e *Evaluator) BaselineRate() float64 {
	n := e.Scored()
	if n == 0 {
		return 0
	}
	return float64(e.BaselineMistakes) / float64(n)
}

// Classes is the number of classes in the confusion matrix.
func (e *Evaluator) Classes() int { return e.k }

// Confusion returns a copy of the confusion matrix: row = true class,
// column = predicted class.
func (e *Evaluator) Confusion() [][]uint64 {
	out := make([][]uint64, e.k)
	for t := range out {
		out[t] = append([]uint64(nil), e.confusion[t*e.k:(t+1)*e.k]...)
	}
	return out
}

// UnansweredByClass counts, by true class index, the labeled rounds that
// had no prediction (Unanswered in all; nil when none had): the matrix's
// rows leave them out.
func (e *Evaluator) UnansweredByClass() []uint64 {
	if e.Unanswered == 0 {
		return nil
	}
	out := make([]uint64, e.k)
	for t := range out {
		var answered uint64
		for _, c := range e.confusion[t*e.k : (t+1)*e.k] {
			answered += c
		}
		if e.counts[t] > answered { // not so only in a corrupt state
			out[t] = e.counts[t] - answered
		}
	}
	return out
}

// Scores are the confusion matrix's summary statistics. Each counts every
// scored round: one with no prediction is a mistake in all of them, as in
// the mistake rate (a prediction of no class).
type Scores struct {
	// Accuracy is right answers over scored rounds: 1 − the mistake rate.
	Accuracy float64 `json:"accuracy"`
	// Kappa is Cohen's kappa: (p₀ − pₑ)/(1 − pₑ), agreement beyond what
	// the marginals give by chance ("no prediction" a column of its own,
	// which no truth matches); 0 when pₑ = 1 (one class everywhere: no
	// agreement beyond chance is possible).
	Kappa float64 `json:"kappa"`
	// MacroF1 averages F1 over the classes that occur as truth or as
	// prediction (F1 = 0 for a class never predicted right).
	MacroF1 float64 `json:"macro_f1"`
	// Recall is per class index: right answers over rounds of that class
	// (0 for a class with no labeled round).
	Recall []float64 `json:"recall"`
}

// Scores computes accuracy, kappa, macro-F1 and per-class recall.
func (e *Evaluator) Scores() Scores { return ScoresOf(e.Confusion(), e.UnansweredByClass()) }

// ScoresOf computes Scores from a confusion matrix (row = truth, column =
// prediction) and the unanswered labeled rounds of each true class (nil:
// none), so that reports can sum matrices over partitions first.
func ScoresOf(conf [][]uint64, unanswered []uint64) Scores {
	k := len(conf)
	s := Scores{Recall: make([]float64, k)}
	rows, cols := make([]float64, k), make([]float64, k)
	var n, diag float64
	for t := range conf {
		for p, c := range conf[t] {
			rows[t] += float64(c)
			cols[p] += float64(c)
		}
		if t < len(unanswered) {
			rows[t] += float64(unanswered[t])
		}
		n += rows[t]
		diag += float64(conf[t][t])
	}
	if n == 0 {
		return s
	}
	s.Accuracy = diag / n
	pe := 0.0 // no truth is "no prediction": that column adds nothing
	for c := range k {
		pe += rows[c] / n * cols[c] / n
	}
	if pe < 1 {
		s.Kappa = (diag/n - pe) / (1 - pe)
	}
	classes := 0
	for c := range k {
		if rows[c] == 0 && cols[c] == 0 {
			continue
		}
		classes++
		tp := float64(conf[c][c])
		if rows[c] > 0 {
			s.Recall[c] = tp / rows[c]
		}
		if tp > 0 {
			s.MacroF1 += 2 * tp / (rows[c] + cols[c])
		}
	}
	if classes > 0 {
		s.MacroF1 /= float64(classes)
	}
	return s
}

// MergeConfusion adds matrix conf, whose classes are named by classes,
// and the unanswered rounds of each of those classes (nil: none) into dst
// and dstUnanswered (named by dstClasses), class by class name; classes
// new to dst are appended. Reports that sum over partitions or orders use
// it, since each may have met the classes in its own order.
func MergeConfusion(dstClasses []string, dst [][]uint64, dstUnanswered []uint64, classes []string, conf [][]uint64, unanswered []uint64) ([]string, [][]uint64, []uint64) {
	index := make(map[string]int, len(dstClasses))
	for i, c := range dstClasses {
		index[c] = i
	}
	for _, c := range classes {
		if _, ok := index[c]; !ok {
			index[c] = len(dstClasses)
			dstClasses = append(dstClasses, c)
		}
	}
	k := len(dstClasses)
	for len(dst) < k {
		dst = append(dst, nil)
	}
	for i := range dst {
		for len(dst[i]) < k {
			dst[i] = append(dst[i], 0)
		}
	}
	for len(dstUnanswered) < k && (dstUnanswered != nil || unanswered != nil) {
		dstUnanswered = append(dstUnanswered, 0)
	}
	for t, row := range conf {
		for p, c := range row {
			dst[index[classes[t]]][index[classes[p]]] += c
		}
	}
	for t, c := range unanswered {
		dstUnanswered[index[classes[t]]] += c
	}
	return dstClasses, dst, dstUnanswered
}

// BinaryClasses names the binary class indices: 0 is −1, 1 is +1.
var BinaryClasses = []string{"-1", "+1"}

// WriteConfusion prints a confusion matrix (row = true class) with each
// class's recall, as the eval and replay reports show it; the labeled
// rounds of each class that had no prediction (unanswered, nil: none), if
// any, in a column of their own, so that each row holds every labeled
// round of its class, as its recall does.
func WriteConfusion(w io.Writer, classes []string, conf [][]uint64, unanswered []uint64) error {
	recall := ScoresOf(conf, unanswered).Recall
	none := false
	for _, u := range unanswered {
		none = none || u > 0
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "true \\ predicted\t")
	for _, c := range classes {
		fmt.Fprintf(tw, "%s\t", c)
	}
	if none {
		fmt.Fprint(tw, "(none)\t")
	}
	fmt.Fprint(tw, "recall %\t\n")
	for t, c := range classes {
		fmt.Fprintf(tw, "%s\t", c)
		for p := range classes {
			n := uint64(0)
			if t < len(conf) && p < len(conf[t]) {
				n = conf[t][p]
			}
			fmt.Fprintf(tw, "%d\t", n)
		}
		if none {
			n := uint64(0)
			if t < len(unanswered) {
				n = unanswered[t]
			}
			fmt.Fprintf(tw, "%d\t", n)
		}
		r := 0.0
		if t < len(recall) {
			r = recall[t]
		}
		fmt.Fprintf(tw, "%.1f\t\n", 100*r)
	}
	return tw.Flush()
}

// Counted says which records a matrix's figures count: every labeled
// one, and how many of them had no prediction.
func Counted(conf [][]uint64, unanswered []uint64) string {
	n, u := rounds(conf, unanswered)
	s := fmt.Sprintf("over %d labeled records", n+u)
	if u > 0 {
		s += fmt.Sprintf(", %d of them with no prediction (mistakes, in the column (none))", u)
	}
	return s
}
