package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"text/tabwriter"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/feed"
	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
)

type tailCmd struct {
	// Its own brokers flag for the short -b (kcat's); the rest of the
	// connection settings are the shared ones.
	Brokers   []string `required:"" short:"b" placeholder:"HOST:PORT" help:"Bootstrap brokers."`
	connOpts  `embed:""`
	Topic     string `required:"" short:"t" help:"Prediction topic to follow (run's --output-topic); it must exist."`
	From      string `default:"earliest" placeholder:"BOUND" help:"Where each partition starts: earliest, latest (only new predictions), an offset, -N (the last N records) or an RFC 3339 time."`
	ExitAtEnd bool   `short:"e" help:"Stop at the end each partition has when the tail starts, instead of following (kcat -e)."`
	Format    string `default:"table" enum:"table,json" help:"Output: table, or JSON lines: each prediction with right (prediction equals label; null when unlabeled), and its input partition's labeled predictions and running and windowed accuracy (null before a labeled one)."`
	Window    int    `default:"1000" help:"Labeled predictions in the windowed accuracy."`
	Limit     int    `help:"Stop after N distinct predictions (0: follow until Ctrl-C, or the end with --exit-at-end)."`
	// ReadUncommitted shows what a read_uncommitted consumer would see.
	ReadUncommitted bool `help:"Also read predictions of open and aborted transactions (default: read committed, as consumers of run --processing-guarantee exactly-once must)."`
}

func (c *tailCmd) Validate() error {
	if _, err := fetch.ParseBound(c.From); err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	cfg := c.withBrokers(c.Brokers)
	return cfg.Validate()
}

func (c *tailCmd) Run(ctx context.Context, out io.Writer) error {
	return c.tail(ctx, out, os.Stderr)
}

// tail writes the predictions to out and warnings to warn.
func (c *tailCmd) tail(ctx context.Context, out, warn io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	enc := json.NewEncoder(out)
	// The header waits for the first prediction, so that a tail that
	// cannot connect says only why.
	headed := false
	header := func() {
		if c.Format == "table" && !headed {
			fmt.Fprintln(tw, "source\toffset\tkey\tpred\tmargin\tlabel\tright\taccuracy\twindow")
			headed = true
		}
	}
	n := 0
	if c.ReadUncommitted {
		fmt.Fprintln(warn, "streamlearner: reading uncommitted: predictions of aborted transactions are read too (those repeating an input offset are counted as duplicates, not shown)")
	}
	cfg := feed.TailConfig{Conn: c.withBrokers(c.Brokers), Topic: c.Topic, From: c.From, ExitAtEnd: c.ExitAtEnd, Window: c.Window, Limit: c.Limit,
		ReadUncommitted: c.ReadUncommitted,
		Skipped: func(n uint64, partition int, offset int64, err error) {
			if n == 1 {
				fmt.Fprintf(warn, "streamlearner: warning: %s/%d offset %d is not a prediction (%v); such records are skipped and counted (is %s run's --output-topic?)\n",
					c.Topic, partition, offset, err, c.Topic)
			}
		}}
	st, err := feed.Tail(ctx, cfg, func(p codec.Prediction, st feed.TailStats) error {
		if c.Format == "json" {
			var right *bool // null for an unlabeled prediction
			if r, ok := feed.Right(p); ok {
				right = &r
			}
			// The input partition's figures, as in the table: each has
			// its own model.
			return enc.Encode(struct {
				codec.Prediction
				Right    *bool    `json:"right"`
				Labeled  uint64   `json:"labeled"`
				Accuracy *float64 `json:"running_accuracy"`
				Window   *float64 `json:"window_accuracy"`
			}{p, right, st.SourceLabeled, orNull(st.SourceAccuracy), orNull(st.SourceWindow)})
		}
		header()
		label, right := "-", "-"
		if r, ok := feed.Right(p); ok {
			label, right = fmt.Sprint(p.Label), map[bool]string{true: "yes", false: "no"}[r]
		}
		pred := fmt.Sprintf("%+d", p.Predicted)
		if p.Class != "" || p.LabelClass != "" { // class names: many classes, or --positive
			pred = p.Class
			if p.LabelClass != "" {
				label = p.LabelClass
			}
		}
		key := p.Key
		if key == "" {
			key = "-"
		} else if len(key) > 24 {
			key = key[:23] + "…"
		}
		// The accuracies are the input partition's: each has its own model.
		fmt.Fprintf(tw, "%s/%d\t%d\t%s\t%s\t%.4f\t%s\t%s\t%s\t%s\n", p.Topic, p.Partition, p.Offset, key, pred, p.Margin, label, right, percent(st.SourceAccuracy), percent(st.SourceWindow))
		if n++; n%50 == 0 {
			return tw.Flush()
		}
		return nil
	})
	if err == nil || ctx.Err() != nil {
		summary(tw, c.Format, st)
	}
	tw.Flush()
	if st.Skipped > 0 {
		fmt.Fprintf(warn, "streamlearner: %d records of %s were not predictions and were skipped\n", st.Skipped, c.Topic)
	}
	if ctx.Err() != nil {
		return nil // Ctrl-C is how a tail ends
	}
	return err
}

// summary closes a table with each input partition's accuracy and the
// overall one, over the labeled predictions seen, and how many of the
// predictions those were.
func summary(tw io.Writer, format string, st feed.TailStats) {
	if format != "table" || st.Predictions == 0 {
		return
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "input\tpredictions\tlabeled\taccuracy")
	for _, s := range st.Sources {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", s.Source, s.Predictions, s.Labeled, percent(s.Accuracy))
	}
	fmt.Fprintf(tw, "all\t%d\t%d\t%s\n", st.Predictions, st.Labeled, percent(st.Accuracy))
}

// percent writes an accuracy, or "-" when it has no value (no labeled
// prediction).
func percent(a float64) string {
	if math.IsNaN(a) {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*a)
}

// orNull is an accuracy for JSON: null when it has no value.
func orNull(a float64) *float64 {
	if math.IsNaN(a) {
		return nil
	}
	return &a
}
