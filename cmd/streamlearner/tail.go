package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/feed"
)

type tailCmd struct {
	// Its own brokers flag for the short -b (kcat's); the rest of the
	// connection settings are the shared ones.
	Brokers   []string `required:"" short:"b" placeholder:"HOST:PORT" help:"Bootstrap brokers."`
	connOpts  `embed:""`
	Topic     string `required:"" short:"t" help:"Prediction topic to follow (run's --output-topic); it must exist."`
	From      string `default:"earliest" placeholder:"BOUND" help:"Where each partition starts: earliest, latest (only new predictions), an offset, -N (the last N records) or an RFC 3339 time."`
	ExitAtEnd bool   `short:"e" help:"Stop at the end each partition has when the tail starts, instead of following (kcat -e)."`
	Format    string `default:"table" enum:"table,json" help:"Output: table, or JSON lines: each prediction with right (prediction equals label; null when unlabeled) and the running accuracies."`
	Window    int    `default:"1000" help:"Labeled predictions in the windowed accuracy."`
	Limit     int    `help:"Stop after N distinct predictions (0: follow until Ctrl-C, or the end with --exit-at-end)."`
}

func (c *tailCmd) Validate() error {
	if _, err := feed.ParseBound(c.From); err != nil {
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
	if c.Format == "table" {
		fmt.Fprintln(tw, "source\toffset\tpred\tmargin\tlabel\tright\taccuracy\twindow")
	}
	n := 0
	cfg := feed.TailConfig{Conn: c.withBrokers(c.Brokers), Topic: c.Topic, From: c.From, ExitAtEnd: c.ExitAtEnd, Window: c.Window, Limit: c.Limit,
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
			return enc.Encode(struct {
				codec.Prediction
				Right    *bool   `json:"right"`
				Accuracy float64 `json:"running_accuracy"`
				Window   float64 `json:"window_accuracy"`
			}{p, right, st.Accuracy, st.Window})
		}
		label, right := "-", "-"
		if r, ok := feed.Right(p); ok {
			label, right = fmt.Sprint(p.Label), map[bool]string{true: "yes", false: "no"}[r]
		}
		pred := fmt.Sprintf("%+d", p.Predicted)
		if p.Class != "" || p.LabelClass != "" { // many classes: class names
			pred = p.Class
			if p.LabelClass != "" {
				label = p.LabelClass
			}
		}
		fmt.Fprintf(tw, "%s/%d\t%d\t%s\t%.4f\t%s\t%s\t%.2f%%\t%.2f%%\n", p.Topic, p.Partition, p.Offset, pred, p.Margin, label, right, 100*st.Accuracy, 100*st.Window)
		if n++; n%50 == 0 {
			return tw.Flush()
		}
		return nil
	})
	tw.Flush()
	if st.Skipped > 0 {
		fmt.Fprintf(warn, "streamlearner: %d records of %s were not predictions and were skipped\n", st.Skipped, c.Topic)
	}
	if ctx.Err() != nil {
		return nil // Ctrl-C is how a tail ends
	}
	return err
}
