package offline

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/autolearn"
	"github.com/streamlearner/streamlearner/learners/prequential"
	"text/tabwriter"
)

// orderLine says which order the records were played in, since every
// rate of the table depends on it.
func orderLine(r Result) string {
	if r.KeepOrder {
		return "order: the file's (--keep-order)."
	}
	orders := "1 random order"
	if r.Orders != 1 {
		orders = fmt.Sprintf("%d random orders", r.Orders)
	}
	return fmt.Sprintf("order: %s of the records (--seed %d); --keep-order plays them in the file's.", orders, r.Seed)
}

// WriteTable prints results as an aligned table, rates in percent, each
// learner's mistake rate beside the majority-class baseline on the same
// stream and Cohen's kappa.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "learner\tkernel\torders\texamples\tmistakes %\tbaseline %\tkappa\tsupport\tpeak\ttest acc %\texamples/s")
	interrupted := false
	for _, r := range results {
		acc := "-"
		if r.TestAccuracy != nil {
			acc = fmt.Sprintf("%.2f ± %.2f", 100**r.TestAccuracy, 100**r.TestAccuracyStd)
		}
		examples := fmt.Sprint(r.Examples)
		if r.Interrupted {
			examples += "*"
			interrupted = true
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.2f ± %.2f\t%.2f\t%.3f\t%.1f ± %.1f\t%.1f\t%s\t%.0f\n",
			r.Spec, kernelColumn(r), r.Orders, examples, 100*r.MistakeRate, 100*r.MistakeRateStd, 100*r.BaselineRate, r.Kappa,
			r.Support, r.SupportStd, r.SupportMax, acc, r.ExamplesPerSecond)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "baseline: always the class seen most so far (prequential); kappa: agreement beyond chance (0: none, 1: perfect).")
	if len(results) > 0 {
		fmt.Fprintln(w, orderLine(results[0]))
	}
	if len(results) > 0 && results[0].Delay > 0 {
		records := "records"
		if results[0].Delay == 1 {
			records = "record"
		}
		fmt.Fprintf(w, "delay: each label revealed %d %s after its record (delayed progressive validation); mistakes are of the predictions made before it came.\n",
			results[0].Delay, records)
	}
	if interrupted {
		fmt.Fprintln(w, "* interrupted: the statistics of the records seen before the stop.")
	}
	writeSelection(w, results)
	for _, r := range results {
		if r.Auto != nil {
			writeAuto(w, r)
		}
	}
	for _, r := range results {
		if r.multi && r.Classes != nil {
			if err := writeClasses(w, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeSelection prints, under a table with a selector's row, its
// switches and the best single learner in hindsight (the lowest mistake
// rate among the rows before it).
func writeSelection(w io.Writer, results []Result) {
	for i, r := range results {
		if !r.Selector || i == 0 {
			continue
		}
		best := results[BestSingle(results, i)]
		fmt.Fprintf(w, "selection: %.2f %% mistakes with %.1f switches (mean over orders); best single learner in hindsight: %s on %s, %.2f %% (selection %+.2f points)\n",
			100*r.MistakeRate, r.Switches, best.Spec, best.Kernel, 100*best.MistakeRate, 100*(r.MistakeRate-best.MistakeRate))
	}
}

// BestSingle is the index of the lowest mistake rate among the learner
// rows before the selector's row sel (ties to the first).
func BestSingle(results []Result, sel int) int {
	best := 0
	for i := 1; i < sel; i++ {
		if results[i].MistakeRate < results[best].MistakeRate {
			best = i
		}
	}
	return best
}

// writeClasses prints a many-class result: accuracy, macro-F1, per-class
// recall and the confusion matrix, and which records they count.
func writeClasses(w io.Writer, r Result) error {
	counted := prequential.Counted(r.Confusion, r.Unanswered)
	if r.Orders > 1 {
		counted += fmt.Sprintf(" (%d orders together)", r.Orders)
	}
	fmt.Fprintf(w, "\n%s: %d classes, prequential accuracy %.2f %%, macro-F1 %.3f, %s\n", r.Spec, len(r.Classes), 100*r.Accuracy, r.MacroF1, counted)
	return prequential.WriteConfusion(w, r.Classes, r.Confusion, r.Unanswered)
}

// CurveHeader is the first line of a CSV learning curve (WriteCurveCSV).
const CurveHeader = "learner,order,seen,mistake_rate,window_rate,baseline_rate,kappa,support"

// AppendCurveCSV appends one point as a CSV line of the learning curve.
func AppendCurveCSV(b []byte, p Point) []byte {
	b = append(b, csvField(p.Spec)...)
	b = fmt.Appendf(b, ",%d,%d,%g,%g,%g,%g,%d\n", p.Order, p.Seen, p.MistakeRate, p.WindowRate, p.BaselineRate, p.Kappa, p.Support)
	return b
}

// csvField quotes a spec (specs hold commas) as RFC 4180 asks.
func csvField(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// WritePoint prints one running-metrics line.
func WritePoint(w io.Writer, p Point) error {
	_, err := fmt.Fprintf(w, "%-28s order %d  %9d seen  mistakes %6.2f %%  window %6.2f %%  baseline %6.2f %%  kappa %6.3f  support %d\n",
		p.Spec, p.Order, p.Seen, 100*p.MistakeRate, 100*p.WindowRate, 100*p.BaselineRate, p.Kappa, p.Support)
	return err
}

// WriteJSON prints {"learners": [...]}, one object per learner.
func WriteJSON(w io.Writer, results []Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Learners []Result `json:"learners"`
	}{results})
}

// kernelColumn is r's kernel as the table shows it: an "auto" learner
// searches kernels of its own ("searched") unless told kernel=given.
func kernelColumn(r Result) string {
	if sp, err := learners.ParseSpec(r.Spec); err == nil && sp.Name == autolearn.Name && sp.Params["kernel"] != "given" {
		return "searched"
	}
	return r.Kernel
}

// writeAuto prints what an "auto" learner chose (WriteAuto) under eval's
// table; over several orders, the first order's search.
func writeAuto(w io.Writer, r Result) {
	fmt.Fprintf(w, "\n%s: %d changes of champion", r.Spec, r.Auto.Switches)
	if r.Orders > 1 {
		fmt.Fprintf(w, ", in the first of the %d random orders", r.Orders)
	}
	fmt.Fprintln(w)
	WriteAuto(w, r.Auto)
}

// WriteAuto prints an "auto" learner's champions over time, with what
// decided each change, and its candidates' mistake rates; it says when
// the list of changes is cut and when the search has not narrowed yet.
func WriteAuto(w io.Writer, a *AutoReport) {
	if a.Reopens > 0 {
		fmt.Fprintf(w, "%d reopenings of the search at a rise of the mistake rate\n", a.Reopens)
	}
	if a.Halving {
		fmt.Fprintf(w, "the search has not narrowed yet: %d candidates still play, the next halving at labeled record %d\n", len(a.Candidates), a.NextCut)
	}
	fmt.Fprint(w, "champion from labeled record")
	if shown, all := len(a.Champions), a.Switches+1; uint64(shown) < all {
		fmt.Fprintf(w, " (the last %d of %d champions)", shown, all)
	}
	fmt.Fprintln(w, ":")
	for _, c := range a.Champions {
		fmt.Fprintf(w, "  %9d  %s", c.From(), c.Name)
		if c.Why != nil {
			fmt.Fprintf(w, "  (%s)", c.Why)
		}
		fmt.Fprintln(w)
	}
	autolearn.WriteCandidates(w, a.Candidates)
}
