package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

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
			fmt.Fprintln(out, tailRow("source", "offset", "key", "pred", "margin", "label", "right", "accuracy", "window"))
			headed = true
		}
	}
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
		}
		// The accuracies are the input partition's: each has its own model.
		_, err := fmt.Fprintln(out, tailRow(fmt.Sprintf("%s/%d", p.Topic, p.Partition), strconv.FormatInt(p.Offset, 10), key, pred,
			strconv.FormatFloat(p.Margin, 'f', 4, 64), label, right, percent(st.SourceAccuracy), percent(st.SourceWindow)))
		return err
	})
	if err == nil || ctx.Err() != nil {
		summary(tw, c.Format, st)
	}
	tw.Flush()
	if st.Skipped > 0 {
		fmt.Fprintf(warn, "streamlearner: %d records of %s were not predictions and were skipped\n", st.Skipped, c.Topic)
	}
	if err == nil && c.ExitAtEnd && st.Predictions == 0 && st.Skipped == 0 && len(st.Held) > 0 {
		fmt.Fprintf(warn, "streamlearner: nothing to show from --from %s: %s\n", c.From, heldText(c.Topic, st.Held))
	}
	if ctx.Err() != nil {
		return nil // Ctrl-C is how a tail ends
	}
	return err
}

// tailWidths are the widths of tail's table columns, fixed so that the
// columns stay put from one batch of predictions to the next. A longer
// key or class name is cut, its last rune an ellipsis; a longer source or
// number is never cut (it would lose its partition or digits) and pushes
// its row to the right. Numbers are right-aligned.
var tailWidths = [...]int{16, 12, 24, 10, 12, 10, 5, 8, 8}

// tailRow lays out one row of tail's table.
func tailRow(cells ...string) string {
	var b strings.Builder
	for i, cell := range cells {
		w := tailWidths[i]
		if n := utf8.RuneCountInString(cell); n > w && (i == 2 || i == 3 || i == 5) {
			cell = string([]rune(cell)[:w-1]) + "…"
		}
		pad := strings.Repeat(" ", max(w-utf8.RuneCountInString(cell), 0))
		if i > 0 {
			b.WriteString("  ")
		}
		switch i {
		case 1, 4, 7, 8: // offset, margin, accuracies
			b.WriteString(pad + cell)
		default:
			b.WriteString(cell + pad)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// heldText says what a topic held: its records, and each partition's
// offsets.
func heldText(topic string, held []feed.Held) string {
	var n int64
	var parts []string
	for _, h := range held {
		n += h.End - h.First
		if h.End > h.First {
			parts = append(parts, fmt.Sprintf("partition %d: offsets %d to %d", h.Partition, h.First, h.End-1))
		} else {
			parts = append(parts, fmt.Sprintf("partition %d: empty (next offset %d)", h.Partition, h.End))
		}
	}
	return fmt.Sprintf("topic %s holds %d records (%s)", topic, n, strings.Join(parts, ", "))
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
