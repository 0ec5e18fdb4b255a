package offline

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable prints results as an aligned table, rates in percent.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "learner\tkernel\torders\texamples\tmistakes %\tsupport\tpeak\ttest acc %\texamples/s")
	for _, r := range results {
		acc := "-"
		if r.TestAccuracy != nil {
			acc = fmt.Sprintf("%.2f ± %.2f", 100**r.TestAccuracy, 100**r.TestAccuracyStd)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f ± %.2f\t%.1f ± %.1f\t%.1f\t%s\t%.0f\n",
			r.Spec, r.Kernel, r.Orders, r.Examples, 100*r.MistakeRate, 100*r.MistakeRateStd,
			r.Support, r.SupportStd, r.SupportMax, acc, r.ExamplesPerSecond)
	}
	return tw.Flush()
}

// WriteJSON prints {"learners": [...]}, one object per learner.
func WriteJSON(w io.Writer, results []Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Learners []Result `json:"learners"`
	}{results})
}
