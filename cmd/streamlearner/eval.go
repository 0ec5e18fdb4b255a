package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/internal/offline"
	"github.com/streamlearner/streamlearner/internal/progress"
	"github.com/streamlearner/streamlearner/learners"
)

type evalCmd struct {
	fieldFlags  `embed:""`
	modelFlags  `embed:""`
	selectFlags `embed:""`
	Data        string   `required:"" type:"existingfile" placeholder:"FILE" help:"Training stream: LIBSVM, JSON records, JSON events (named fields), CSV with a header row (.csv: named-field events, true/false as booleans, empty cells missing), an Avro object container file (.avro, its schema in the file), or length-delimited Protobuf messages (--input protobuf --schema FILE); gzip allowed but for Avro, which has its own block compression."`
	Schema      string   `type:"existingfile" placeholder:"FILE" help:"With --input protobuf: the .proto file of --data's length-delimited messages, each a message of the file's first message type."`
	Test        string   `type:"existingfile" placeholder:"FILE" help:"Test file: accuracy of the final model."`
	Learner     []string `default:"auto" sep:"none" placeholder:"SPEC" help:"Learner spec name[:key=value,...], repeatable (see 'streamlearner learners'). Default auto: the learner, kernel, γ, budget and scaling searched online (docs/auto.md)."`
	Kernel      string   `default:"${default_kernel}" placeholder:"SPEC" help:"${kernel_help}"`
	Orders      int      `default:"1" help:"Random orders of the data, one pass each; results are mean ± std."`
	Seed        uint64   `default:"1" help:"Seed of the orders and of randomized learners (with --keep-order, the learners' seed itself, as run's --seed for partition 0)."`
	KeepOrder   bool     `help:"One pass in file order instead of random orders. Each learner's run reads the file as it learns, a batch at a time, so memory does not grow with the file (unless --delay or --standardize, which need it whole); random orders and --test keep the data in memory."`
	Limit       int      `help:"Use only the first N examples of the data file (0: all)."`
	Standardize bool     `help:"Scale features to mean 0, std 1 with training-set statistics (also applied to --test)."`
	Positive    string   `placeholder:"LABELS" help:"Comma-separated labels mapped to +1; the others to -1."`
	Negative    string   `placeholder:"LABELS" help:"With --positive: labels mapped to -1; records with other labels are skipped (not predicted, learned or scored) and counted."`
	Format      string   `default:"table" enum:"table,json" help:"Output format: table or json."`
	Trace       string   `placeholder:"FILE" help:"Write each round's margin f(x) before learning, one line per round, a column per learner (needs --keep-order)."`
	Jobs        int      `default:"1" help:"Runs (learner × order) in parallel; more than 1 makes examples/s figures contend for cores."`
	PrintEvery  int      `placeholder:"N" help:"Print running metrics (mistake rate, windowed rate, baseline, kappa, support) every N records of each run (0: only the final table; to stderr with --format json)."`
	Curve       string   `placeholder:"FILE" help:"Write the learning curve, a point every --print-every records (default 1000) per run: CSV, or JSON lines when FILE ends in .jsonl or .json."`
	Window      int      `default:"1000" help:"Labeled records in the windowed mistake rate of the running metrics."`
	Delay       int      `placeholder:"N" help:"Reveal each label N records after its record (delayed progressive validation); 0: at once."`
	MaxBad      int      `placeholder:"N" help:"Skip up to N bad records (malformed, over the limits, a label that is not binary without --positive), each reported by file line on stderr, before one more fails the run (0: the first fails it)."`
	Predictions string   `placeholder:"FILE" help:"Write each record's prediction (first order): line, key, prediction (class or ±1), margin, label; CSV, or JSON lines when FILE ends in .jsonl or .json (the fields and types of run's prediction records: prediction, class, margin, label, label_class)."`

	stats   *dataset.Stats // --standardize: the training set's
	skips   *skipReport    // records skipped so far (loading and learning)
	loading func(int)      // the records a load has read so far, for its progress line
	// dropped counts, by file, the records whose label the loader found
	// in neither --positive nor --negative (binary records; the model
	// refuses those of events and class lists, counted in the results).
	dropped map[string]int
}

// skipReport counts the records --max-bad let through; the loader and the
// runs report to it from their goroutines.
type skipReport struct {
	mu sync.Mutex
	n  int
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
	if c.PrintEvery < 0 || c.Window < 1 {
		return errors.New("--print-every must be ≥ 0, --window ≥ 1")
	}
	if c.Delay < 0 {
		return fmt.Errorf("--delay %d: want 0 or more records", c.Delay)
	}
	if c.KeepOrder && c.Orders > 1 {
		return fmt.Errorf("--orders %d with --keep-order: the file's order is one order; drop one of them", c.Orders)
	}
	if c.Window != 1000 && c.PrintEvery == 0 && c.Curve == "" {
		return errors.New("--window is the windowed rate of --print-every and --curve; give one of them")
	}
	if c.MaxClasses != 100 && c.Classes != model.Auto {
		return errors.New("--max-classes bounds the classes --classes auto discovers; give --classes auto")
	}
	if c.Select != "" && c.Trace != "" {
		return errors.New("--trace is for learners run apart, not with --select")
	}
	_, _, err := c.selection()
	return err
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
	c.skips, c.dropped = &skipReport{}, map[string]int{}
	kern, labels, err := kernelAndLabels(c.Kernel, c.Positive, c.Negative)
	if err != nil {
		return err
	}
	mc, err := c.modelConfig(c.fieldFlags, labels)
	if err != nil {
		return err
	}
	if err := c.dataFormat(ctx, &mc); err != nil {
		return err
	}
	if mc.Events && c.Standardize {
		return errors.New("--standardize is for records; events scale with --scale online")
	}
	if only := c.eventOnly(c.Scale); !mc.Events && len(only) > 0 {
		return fmt.Errorf("%s: only named-field events use them, and %s holds indexed records (LIBSVM or {\"label\",\"features\"}); remove them (records scale with --standardize)", strings.Join(only, ", "), c.Data)
	}
	var train *offline.Data
	if c.streams() {
		train = c.stream(mc, labels)
	} else if train, err = c.load(ctx, c.Data, mc, labels, c.Limit); err != nil {
		return err
	}
	var test *offline.Data
	if c.Test != "" {
		if test, err = c.load(ctx, c.Test, mc, labels, 0); err != nil {
			return err
		}
		if w := c.testSpace(ctx, mc); w != "" {
			fmt.Fprintln(os.Stderr, "streamlearner: warning:", w)
		}
	}
	cfg := offline.Config{
		Learners: c.Learner, Kernel: kern, Orders: c.Orders, Seed: c.Seed,
		KeepOrder: c.KeepOrder, Jobs: c.Jobs, Model: mc, Delay: c.Delay,
		MaxBad: c.MaxBad, Bad: c.badLine,
	}
	if cfg.Select, cfg.Challengers, err = c.selection(); err != nil {
		return err
	}
	if c.Trace != "" {
		f, err := createFile(c.Trace)
		if err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		defer f.Close()
		cfg.Trace = f
	}
	if c.Predictions != "" {
		closePreds, err := c.predictions(&cfg)
		if err != nil {
			return err
		}
		defer closePreds()
	}
	bar := progress.New(os.Stderr, "eval")
	cfg.Progress = bar.Update
	curve, err := c.curve(&cfg, bar, out)
	if err != nil {
		return err
	}
	results, err := offline.RunData(ctx, train, test, cfg)
	bar.Done()
	if cerr := curve.close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if len(results) == 0 {
		return err
	}
	if err == nil {
		if err := c.nothingToLearn(ctx, mc, labels, results); err != nil {
			return err
		}
	}
	// An interrupted eval (Ctrl-C) still prints what it measured.
	var werr error
	if c.Format == "json" {
		werr = offline.WriteJSON(out, results)
	} else {
		werr = offline.WriteTable(out, results)
	}
	if n := c.skips.n; n > 0 {
		fmt.Fprintf(os.Stderr, "streamlearner: %d bad records skipped (--max-bad %d)\n", n, c.MaxBad)
	}
	c.reportUnlisted(results)
	return errors.Join(err, werr)
}

// reportUnlisted says how many records of each file had a label in none
// of the lists (--positive with --negative, --classes A,B,…): skipped, as
// the service dead-letters them (bad_label), not counted as examples.
func (c *evalCmd) reportUnlisted(results []offline.Result) {
	train, test := c.dropped[c.Data], c.dropped[c.Test]
	if len(results) > 0 {
		train += results[0].Unlisted
		test += results[0].TestUnlisted
	}
	for _, f := range []struct {
		path string
		n    int
	}{{c.Data, train}, {c.Test, test}} {
		if f.n > 0 {
			fmt.Fprintf(os.Stderr, "streamlearner: %d records of %s skipped: their label is in none of the label lists (--positive/--negative, --classes)\n", f.n, f.path)
		}
	}
}

// relaxedLoadBytes bounds the files relaxGC loads with a relaxed
// collector: their data stays well under a gigabyte even at five times
// its size.
const relaxedLoadBytes = 16 << 20

// relaxGC lets the heap grow to five times the live data (GOGC 400)
// instead of twice, while eval loads a file of at most relaxedLoadBytes,
// unless GOGC is set: everything a load reads stays live, so the
// collections it would trigger only cost time — about 5 ms of the 45–50 ms
// a whole run over a9a takes. A larger file loads with the default, so
// that a big data set does not need five times its size in memory. It
// returns the function that restores the setting.
func relaxGC(path string) func() {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() > relaxedLoadBytes || os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(400)
	return func() { debug.SetGCPercent(old) }
}

// streams reports whether each run can read the training file as it
// learns, holding a batch of it at a time: one pass in file order,
// without a delay (whose last points need the record count) or
// --standardize (whose statistics need the whole set).
func (c *evalCmd) streams() bool {
	return c.KeepOrder && c.Delay == 0 && !c.Standardize
}

// load reads a data file as mc says: events as raw lines, binary records
// through the label map (and --standardize), many-class records with
// their label tokens.
func (c *evalCmd) load(ctx context.Context, path string, mc model.Config, labels codec.LabelMap, limit int) (*offline.Data, error) {
	defer relaxGC(path)()
	// A large file takes seconds to read before any learning: say so.
	bar := progress.New(os.Stderr, "load "+filepath.Base(path))
	defer bar.Done()
	c.loading = func(n int) { bar.Update(int64(n), 0) }
	switch {
	case mc.Events:
		d := &offline.Data{Events: [][]byte{}}
		err := c.eachEvent(ctx, path, mc, limit, true, func(line int, b []byte) error {
			d.Events = append(d.Events, bytes.Clone(b))
			d.Lines = append(d.Lines, line)
			if len(d.Events)%(1<<14) == 0 {
				c.loading(len(d.Events))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		return d, nil
	case len(mc.Classes) > 0:
		raw, err := dataset.LoadRaw(ctx, path, c.loadOptions(codec.LabelMap{}, limit))
		if err != nil {
			return nil, err
		}
		return &offline.Data{X: raw.X, Labels: raw.Labels, Lines: raw.Lines}, nil
	}
	set, err := dataset.Load(ctx, path, c.loadOptions(labels, limit))
	if err != nil {
		return nil, err
	}
	c.dropped[path] = set.Dropped
	if c.Standardize {
		// Training-set statistics, applied to the test set too.
		if c.stats == nil {
			st := dataset.ComputeStats(set)
			c.stats = &st
		}
		c.stats.Standardize(set)
	}
	return offline.FromSet(set), nil
}

// predictions sets up --predictions on cfg; the function it returns
// flushes and closes the file.
func (c *evalCmd) predictions(cfg *offline.Config) (func(), error) {
	f, err := createFile(c.Predictions)
	if err != nil {
		return nil, fmt.Errorf("predictions: %w", err)
	}
	w := bufio.NewWriter(f)
	jsonl := strings.HasSuffix(c.Predictions, ".jsonl") || strings.HasSuffix(c.Predictions, ".json")
	cw := csv.NewWriter(w)
	if jsonl {
		enc := json.NewEncoder(w)
		cfg.Prediction = func(p offline.Prediction) { enc.Encode(p) }
	} else {
		cw.Write([]string{"line", "key", "prediction", "margin", "label"})
		multi := len(cfg.Model.Classes) > 0
		cfg.Prediction = func(p offline.Prediction) {
			// A cell holds the class, or ±1 with its sign.
			pred, label := p.Class, p.LabelClass
			if !multi {
				pred, label = fmt.Sprintf("%+d", p.Predicted), ""
				if p.Label != 0 {
					label = fmt.Sprintf("%+d", p.Label)
				}
			}
			cw.Write([]string{strconv.Itoa(p.Line), p.Key, pred, strconv.FormatFloat(p.Margin, 'g', -1, 64), label})
		}
	}
	return func() {
		cw.Flush()
		w.Flush()
		f.Close()
	}, nil
}

// loadOptions are the loading options of the data files: the label map,
// the limit, and --max-bad's budget, each skipped record said on stderr.
func (c *evalCmd) loadOptions(labels codec.LabelMap, limit int) dataset.Options {
	return dataset.Options{Labels: labels, Limit: limit, MaxBad: c.MaxBad, Progress: c.loading, Bad: func(line int, err error) {
		c.badLine(fmt.Errorf("line %d: %w", line, err))
	}}
}

// badLine reports a skipped record on stderr, the first 20 in full.
func (c *evalCmd) badLine(err error) {
	c.skips.mu.Lock()
	defer c.skips.mu.Unlock()
	c.skips.n++
	if n := c.skips.n; n <= 20 {
		fmt.Fprintf(os.Stderr, "streamlearner: skipped %v\n", err)
	} else if n == 21 {
		fmt.Fprintln(os.Stderr, "streamlearner: more records skipped; the count follows the results")
	}
}

// curveWriter receives the running points of eval: lines for the reader
// and the learning-curve file.
type curveWriter struct {
	mu    sync.Mutex
	file  *os.File
	buf   *bufio.Writer
	jsonl bool
	lines io.Writer
	err   error
}

// curve sets up --print-every and --curve on cfg.
func (c *evalCmd) curve(cfg *offline.Config, bar *progress.Bar, out io.Writer) (*curveWriter, error) {
	cw := &curveWriter{}
	if c.PrintEvery == 0 && c.Curve == "" {
		return cw, nil
	}
	cfg.Every, cfg.Window = c.PrintEvery, c.Window
	if cfg.Every == 0 {
		cfg.Every = 1000
	}
	if c.PrintEvery > 0 {
		cw.lines = out
		if c.Format == "json" {
			cw.lines = os.Stderr
		}
	}
	if c.Curve != "" {
		f, err := createFile(c.Curve)
		if err != nil {
			return nil, fmt.Errorf("curve: %w", err)
		}
		cw.file, cw.buf = f, bufio.NewWriter(f)
		cw.jsonl = strings.HasSuffix(c.Curve, ".jsonl") || strings.HasSuffix(c.Curve, ".json")
		if !cw.jsonl {
			cw.buf.WriteString(offline.CurveHeader + "\n")
		}
	}
	cfg.Point = func(p offline.Point) {
		cw.mu.Lock()
		defer cw.mu.Unlock()
		if cw.lines != nil {
			bar.Done() // erase the bar; the next update redraws it
			offline.WritePoint(cw.lines, p)
		}
		if cw.buf != nil && cw.err == nil {
			if cw.jsonl {
				b, _ := json.Marshal(p)
				cw.buf.Write(append(b, '\n'))
			} else {
				cw.buf.Write(offline.AppendCurveCSV(nil, p))
			}
		}
	}
	return cw, nil
}

func (cw *curveWriter) close() error {
	if cw.file == nil {
		return nil
	}
	err := cw.buf.Flush()
	if cerr := cw.file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("curve: %w", err)
	}
	return nil
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
	fmt.Fprintln(tw, "\nKernels: "+strings.Join([]string{"linear | linear:bias=1 (x·y + 1)", "poly:degree=2,coef0=1,scale=1", "rbf:gamma=1 | rbf:sigma2=S (gamma = 1/(2S))", "any with normalize=true", "gaussian = rbf, polynomial = poly"}, "; "))
	return tw.Flush()
}
