package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/dataset"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/offline"
	"github.com/streamlearner/streamlearner/progress"
)

type evalCmd struct {
	Data        string   `required:"" type:"existingfile" placeholder:"FILE" help:"Training stream: LIBSVM or JSON lines, gzip allowed."`
	Test        string   `type:"existingfile" placeholder:"FILE" help:"Test file: accuracy of the final model."`
	Learner     []string `required:"" sep:"none" placeholder:"SPEC" help:"Learner spec name[:key=value,...], repeatable (see 'streamlearner learners')."`
	Kernel      string   `required:"" placeholder:"SPEC" help:"Kernel: linear, poly:degree=4,coef0=1,scale=1, rbf:gamma=0.01 or rbf:sigma2=25; add normalize=true for k(x,x)=1."`
	Orders      int      `default:"1" help:"Random orders of the data, one pass each; results are mean ± std."`
	Seed        uint64   `default:"1" help:"Seed of the orders and of randomized learners (with --keep-order, the learners' seed itself, as run's --seed for partition 0)."`
	KeepOrder   bool     `help:"One pass in file order instead of random orders."`
	Limit       int      `help:"Use only the first N examples of the data file (0: all)."`
	Standardize bool     `help:"Scale features to mean 0, std 1 with training-set statistics (also applied to --test)."`
	Positive    string   `placeholder:"LABELS" help:"Comma-separated labels mapped to +1; the others to -1."`
	Negative    string   `placeholder:"LABELS" help:"With --positive: labels mapped to -1; records with other labels are dropped."`
	Format      string   `default:"table" enum:"table,json" help:"Output format: table or json."`
	Trace       string   `placeholder:"FILE" help:"Write each round's margin f(x) before learning, one line per round, a column per learner (needs --keep-order)."`
	Jobs        int      `default:"1" help:"Runs (learner × order) in parallel; more than 1 makes examples/s figures contend for cores."`
}

func (c *evalCmd) Validate() error {
	if c.Trace != "" && !c.KeepOrder {
		return errors.New("--trace needs --keep-order: a trace is compared round by round in file order")
	}
	if c.Negative != "" && c.Positive == "" {
		return errors.New("--negative needs --positive")
	}
	if c.Orders < 1 || c.Jobs < 1 || c.Limit < 0 {
		return errors.New("--orders and --jobs must be ≥ 1, --limit ≥ 0")
	}
	return nil
}

func labelMap(pos, neg string) (codec.LabelMap, error) {
	var m codec.LabelMap
	var err error
	if neg != "" && pos == "" {
		return m, errors.New("--negative needs --positive")
	}
	if pos != "" {
		if m.Positive, err = codec.ParseLabelList(pos); err != nil {
			return m, fmt.Errorf("--positive: %w", err)
		}
	}
	if neg != "" {
		if m.Negative, err = codec.ParseLabelList(neg); err != nil {
			return m, fmt.Errorf("--negative: %w", err)
		}
	}
	return m, nil
}

// kernelAndLabels parses the kernel and label-map flags every learning
// command takes.
func kernelAndLabels(kernel, positive, negative string) (learners.Kernel, codec.LabelMap, error) {
	kern, err := learners.ParseKernel(kernel)
	if err != nil {
		return learners.Kernel{}, codec.LabelMap{}, err
	}
	labels, err := labelMap(positive, negative)
	return kern, labels, err
}

func (c *evalCmd) Run(ctx context.Context, out io.Writer) error {
	kern, labels, err := kernelAndLabels(c.Kernel, c.Positive, c.Negative)
	if err != nil {
		return err
	}
	train, err := dataset.Load(ctx, c.Data, dataset.Options{Labels: labels, Limit: c.Limit})
	if err != nil {
		return err
	}
	var test *dataset.Set
	if c.Test != "" {
		if test, err = dataset.Load(ctx, c.Test, dataset.Options{Labels: labels}); err != nil {
			return err
		}
	}
	if c.Standardize {
		st := dataset.ComputeStats(train)
		st.Standardize(train)
		if test != nil {
			st.Standardize(test)
		}
	}
	cfg := offline.Config{
		Learners: c.Learner, Kernel: kern, Orders: c.Orders, Seed: c.Seed,
		KeepOrder: c.KeepOrder, Jobs: c.Jobs,
	}
	if c.Trace != "" {
		f, err := os.Create(c.Trace)
		if err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		defer f.Close()
		cfg.Trace = f
	}
	bar := progress.New(os.Stderr, "eval")
	cfg.Progress = bar.Update
	results, err := offline.Run(ctx, train, test, cfg)
	bar.Done()
	if err != nil {
		return err
	}
	if c.Format == "json" {
		return offline.WriteJSON(out, results)
	}
	return offline.WriteTable(out, results)
}

type learnersCmd struct{}

func (learnersCmd) Run(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, info := range learners.Available() {
		fmt.Fprintf(tw, "%s\t%s\n\t(%s)\n", info.Name, info.Summary, info.Source)
		for _, p := range info.Params {
			fmt.Fprintf(tw, "\t  %s=%s\t%s\n", p.Name, p.Default, p.Doc)
		}
	}
	fmt.Fprintln(tw, "\nKernels: "+strings.Join([]string{"linear", "poly:degree=2,coef0=1,scale=1", "rbf:gamma=1 | rbf:sigma2=S (gamma = 1/(2S))", "any with normalize=true"}, "; "))
	return tw.Flush()
}
