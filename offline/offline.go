// Package offline runs learners over data files the way the service runs
// them over a partition — predict, then learn, one example at a time — and
// summarizes the prequential statistics over several random orders. It is
// the engine of `streamlearner eval` and of the reproduction scripts.
package offline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamlearner/streamlearner/dataset"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/model"
	"github.com/streamlearner/streamlearner/prequential"
	"github.com/streamlearner/streamlearner/rng"
	"github.com/streamlearner/streamlearner/sparse"
)

// Config says what to run.
type Config struct {
	Learners []string        // learner specs, e.g. "rbp:budget=100"
	Kernel   learners.Kernel // shared by all learners
	// Orders is the number of random orders of the training data; each is
	// one pass. Default 1. Ignored (1) with KeepOrder.
	Orders int
	// Seed derives every order's permutation and every learner's own seed,
	// so a run is reproducible from (data, specs, kernel, Seed).
	Seed uint64
	// KeepOrder runs once in file order instead of random orders, and
	// seeds each learner with Seed itself — as the service seeds the
	// learner of partition p with its --seed plus p — so that a service
	// partition (or a replay of it) and eval on the same records agree
	// round for round.
	KeepOrder bool
	// Jobs is how many runs (learner × order) go at once; default 1, which
	// keeps the examples/s figures free of contention.
	Jobs int
	// Trace, with KeepOrder, receives one line per round: each learner's
	// margin f(x) before learning, tab-separated in Learners order, printed
	// exactly (shortest representation that parses back to the same bits).
	Trace io.Writer
	// Progress, if set, is called from the workers now and then with the
	// rounds done so far and the total.
	Progress func(done, total int64)
	// Every, with Point, reports running metrics every Every records of
	// each run (learner × order), and once more at its end — a learning
	// curve, as River's progressive_val_score and MOA's
	// EvaluatePrequential print. 0: no points.
	Every int
	// Point receives the running metrics. It is called from the workers,
	// so with Jobs > 1 concurrently: it must synchronize itself.
	Point func(Point)
	// Window is the number of labeled rounds in the windowed mistake rate
	// of the points. Default prequential.DefaultWindow (1000).
	Window int
	// Model is the template of every run's partition model: how messages
	// are read (records or events), labels and classes. Its Learner,
	// Kernel, Seed and Window are set per run from the fields above.
	Model model.Config
}

// Data is a stream to evaluate on: indexed records with their label
// tokens, or raw event messages (with Config.Model.Events).
type Data struct {
	X      []sparse.Vector
	Labels []string // canonical label tokens; "" for an unlabeled record
	Events [][]byte
}

// Len is the number of records.
func (d *Data) Len() int {
	if d.Events != nil {
		return len(d.Events)
	}
	return len(d.X)
}

// FromSet wraps a binary data set: labels ±1 become the tokens "1" and
// "-1", which the default label map takes back to ±1.
func FromSet(s *dataset.Set) *Data {
	if s == nil {
		return nil
	}
	d := &Data{X: s.X, Labels: make([]string, len(s.Y))}
	for i, y := range s.Y {
		switch y {
		case 1:
			d.Labels[i] = "1"
		case -1:
			d.Labels[i] = "-1"
		}
	}
	return d
}

// Point is one run's running metrics after Seen records. Rates are
// fractions.
type Point struct {
	Spec         string  `json:"learner"`
	Order        int     `json:"order"`
	Seen         int     `json:"seen"`
	MistakeRate  float64 `json:"mistake_rate"`
	WindowRate   float64 `json:"window_rate"`
	BaselineRate float64 `json:"baseline_rate"`
	Kappa        float64 `json:"kappa"`
	Support      int     `json:"support"`
}

// Result summarizes one learner over all orders. Rates and accuracies are
// fractions in [0, 1]; "± std" values are sample standard deviations over
// orders (0 for one order).
type Result struct {
	Spec     string `json:"spec"`
	Kernel   string `json:"kernel"`
	Orders   int    `json:"orders"`
	Examples int    `json:"examples"`
	// Classes, Accuracy, MacroF1, Recall and Confusion are set for
	// many-class runs: the classes (in the order the first order met
	// them), the mean accuracy and macro-F1 over orders, and per-class
	// recall and the confusion matrix (row = true class) over all orders.
	Classes        []string   `json:"classes,omitempty"`
	Accuracy       float64    `json:"accuracy,omitempty"`
	MacroF1        float64    `json:"macro_f1,omitempty"`
	Recall         []float64  `json:"recall,omitempty"`
	Confusion      [][]uint64 `json:"confusion,omitempty"`
	MistakeRate    float64    `json:"mistake_rate"`
	MistakeRateStd float64    `json:"mistake_rate_std"`
	// BaselineRate is the prequential majority-class baseline's mistake
	// rate on the same stream (predict the class seen most so far).
	BaselineRate float64 `json:"baseline_rate"`
	// Kappa is Cohen's kappa of the learner's predictions (mean over
	// orders): 0 is no better than chance given the class frequencies.
	Kappa    float64 `json:"kappa"`
	KappaStd float64 `json:"kappa_std"`
	// Updates is the mean number of rounds that changed the model.
	Updates           float64  `json:"updates"`
	Support           float64  `json:"support"`
	SupportStd        float64  `json:"support_std"`
	SupportMax        float64  `json:"support_max"`
	TestAccuracy      *float64 `json:"test_accuracy"`
	TestAccuracyStd   *float64 `json:"test_accuracy_std"`
	ExamplesPerSecond float64  `json:"examples_per_second"`
	// Interrupted is set when the run was stopped before the end:
	// Examples is then the mean number of records its runs saw, and the
	// test accuracy is left out.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Seed streams: each purpose draws from its own sequence of the run seed.
const (
	streamOrder   = 0x6f72646572000000
	streamLearner = 0x6c6561726e000000
)

// OrderSeed is the learner seed used for order o (exported so that other
// tools can reproduce a single run of eval).
func OrderSeed(seed uint64, o int) uint64 { return rng.New(seed, streamLearner+uint64(o)).Uint64() }

// Order returns the permutation of [0, n) used for order o.
func Order(seed uint64, o, n int) []int { return rng.New(seed, streamOrder+uint64(o)).Perm(n) }

type run struct {
	learner, order int
	seen           int // records played
	classes        []string
	confusion      [][]uint64
	accuracy       float64
	macroF1        float64
	mistakeRate    float64
	baselineRate   float64
	kappa          float64
	updates        uint64
	support        int
	supportMax     int
	testAcc        float64
	seconds        float64
	margins        []float64 // for the trace
}

// Run evaluates every learner on a binary train set (and test, if not
// nil), records as they are; see RunData.
func Run(ctx context.Context, train, test *dataset.Set, cfg Config) ([]Result, error) {
	return RunData(ctx, FromSet(train), FromSet(test), cfg)
}

// RunData evaluates every learner on train (and test, if not nil) through
// the partition model (package model) and returns one Result per learner,
// in Config order. When ctx is cancelled, Run
// returns the results so far (marked Interrupted; learners whose runs had
// not started are left out) together with ctx's error.
func RunData(ctx context.Context, train, test *Data, cfg Config) ([]Result, error) {
	if len(cfg.Learners) == 0 {
		return nil, errors.New("no learner given")
	}
	if train.Len() == 0 {
		return nil, errors.New("no training examples")
	}
	if cfg.Trace != nil && !cfg.KeepOrder {
		return nil, errors.New("a trace needs the file order (keep-order)")
	}
	orders := max(cfg.Orders, 1)
	if cfg.KeepOrder {
		orders = 1
	}
	// Fail on a bad spec or configuration before any work.
	for _, spec := range cfg.Learners {
		if _, err := model.New(cfg.modelConfig(spec, 0)); err != nil {
			return nil, err
		}
	}
	perms := make([][]int, orders)
	for o := range perms {
		if cfg.KeepOrder {
			perms[o] = nil
		} else {
			perms[o] = Order(cfg.Seed, o, train.Len())
		}
	}

	tasks := make(chan *run)
	results := make([]*run, 0, len(cfg.Learners)*orders)
	for l := range cfg.Learners {
		for o := range orders {
			results = append(results, &run{learner: l, order: o})
		}
	}
	var done atomic.Int64
	total := int64(len(results) * train.Len())
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range max(cfg.Jobs, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range tasks {
				// A stop from the caller is an interruption, reported
				// below with the results so far, not a failure.
				if err := r.do(ctx, train, test, cfg, perms[r.order], &done, total); err != nil && parent.Err() == nil {
					errOnce.Do(func() { firstErr = err; cancel() })
				}
			}
		}()
	}
feed:
	for _, r := range results {
		select {
		case tasks <- r:
		case <-ctx.Done():
			break feed
		}
	}
	close(tasks)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := parent.Err(); err != nil {
		return summarize(cfg, orders, train.Len(), test, results), err
	}
	if cfg.Trace != nil {
		if err := writeTrace(cfg.Trace, results); err != nil {
			return nil, fmt.Errorf("write trace: %w", err)
		}
	}
	return summarize(cfg, orders, train.Len(), test, results), nil
}

// modelConfig is the model of one run.
func (cfg Config) modelConfig(spec string, seed uint64) model.Config {
	mc := cfg.Model
	mc.Learner, mc.Kernel, mc.Seed, mc.Window = spec, cfg.Kernel, seed, cfg.Window
	return mc
}

// step plays record j of d through m, learning or (test) only predicting.
func step(m *model.Model, d *Data, j int, learn bool) (model.Result, error) {
	var r model.Result
	var err error
	switch {
	case d.Events != nil && learn:
		r, err = m.Step(d.Events[j])
	case d.Events != nil:
		r, err = m.Predict(d.Events[j])
	case learn:
		r, err = m.StepVector(d.X[j], []byte(d.Labels[j]))
	default:
		r, err = m.PredictVector(d.X[j], []byte(d.Labels[j]))
	}
	if err != nil {
		return r, fmt.Errorf("record %d: %w", j+1, err)
	}
	return r, nil
}

func (r *run) do(ctx context.Context, train, test *Data, cfg Config, perm []int, done *atomic.Int64, total int64) error {
	spec := cfg.Learners[r.learner]
	seed := OrderSeed(cfg.Seed, r.order)
	if perm == nil { // file order: the service's seeding, see KeepOrder
		seed = cfg.Seed
	}
	if err := ctx.Err(); err != nil {
		return err // stopped before this run began
	}
	m, err := model.New(cfg.modelConfig(spec, seed))
	if err != nil {
		return err
	}
	ev := m.Eval()
	shown := displaySpec(spec, cfg.Kernel)
	point := func(seen int) {
		if cfg.Point != nil {
			cfg.Point(Point{Spec: shown, Order: r.order, Seen: seen, MistakeRate: ev.MistakeRate(), WindowRate: ev.WindowRate(),
				BaselineRate: ev.BaselineRate(), Kappa: ev.Scores().Kappa, Support: m.Support()})
		}
	}
	// The statistics so far are kept whatever ends the run, so that an
	// interrupted eval still reports them.
	defer func() {
		sc := ev.Scores()
		r.mistakeRate, r.baselineRate, r.kappa, r.updates = ev.MistakeRate(), ev.BaselineRate(), sc.Kappa, ev.Updates
		r.support, r.supportMax = ev.Support, ev.SupportMax
		r.accuracy, r.macroF1, r.confusion = sc.Accuracy, sc.MacroF1, ev.Confusion()
		r.classes = m.Classes()
	}()
	if cfg.Trace != nil {
		r.margins = make([]float64, 0, train.Len())
	}
	start := time.Now()
	const chunk = 1024
	for i := range train.Len() {
		if i%chunk == chunk-1 {
			if ctx.Err() != nil {
				r.seconds = time.Since(start).Seconds()
				return ctx.Err()
			}
			n := done.Add(chunk)
			if cfg.Progress != nil {
				cfg.Progress(n, total)
			}
		}
		j := i
		if perm != nil {
			j = perm[i]
		}
		o, err := step(m, train, j, true)
		if err != nil {
			return err
		}
		r.seen = i + 1
		if r.margins != nil {
			r.margins = append(r.margins, o.Margin)
		}
		if cfg.Every > 0 && r.seen%cfg.Every == 0 {
			point(r.seen)
		}
	}
	r.seconds = time.Since(start).Seconds()
	if n := done.Add(int64(train.Len() % chunk)); cfg.Progress != nil {
		cfg.Progress(n, total)
	}
	if cfg.Every > 0 && r.seen%cfg.Every != 0 {
		point(r.seen)
	}
	if test != nil {
		right, labeled := 0, 0
		for j := range test.Len() {
			o, err := step(m, test, j, false)
			if err != nil {
				return fmt.Errorf("test %w", err)
			}
			if !o.Labeled {
				continue
			}
			labeled++
			if !o.Mistake {
				right++
			}
		}
		if labeled == 0 {
			return errors.New("test set has no labeled example")
		}
		r.testAcc = float64(right) / float64(labeled)
	}
	return nil
}

func summarize(cfg Config, orders, n int, test *Data, runs []*run) []Result {
	out := make([]Result, 0, len(cfg.Learners))
	for l, spec := range cfg.Learners {
		var mr, br, kappa, upd, sup, supMax, acc, eps, seen []float64
		canon := displaySpec(spec, cfg.Kernel)
		complete := true
		for _, r := range runs {
			if r.learner != l || r.seen == 0 {
				continue
			}
			complete = complete && r.seen == n
			seen = append(seen, float64(r.seen))
			mr = append(mr, r.mistakeRate)
			br = append(br, r.baselineRate)
			kappa = append(kappa, r.kappa)
			upd = append(upd, float64(r.updates))
			sup = append(sup, float64(r.support))
			supMax = append(supMax, float64(r.supportMax))
			acc = append(acc, r.testAcc)
			eps = append(eps, float64(r.seen)/r.seconds)
		}
		if len(seen) == 0 {
			continue // interrupted before this learner started
		}
		complete = complete && len(seen) == orders
		res := Result{
			Spec: canon, Kernel: cfg.Kernel.String(), Orders: len(seen), Examples: int(math.Round(mean(seen))),
			ExamplesPerSecond: mean(eps), Interrupted: !complete, Updates: mean(upd), BaselineRate: mean(br),
		}
		res.MistakeRate, res.MistakeRateStd = mean(mr), std(mr)
		mergeClasses(&res, runs, l)
		res.Kappa, res.KappaStd = mean(kappa), std(kappa)
		res.Support, res.SupportStd = mean(sup), std(sup)
		res.SupportMax = mean(supMax)
		if test != nil && complete {
			m, s := mean(acc), std(acc)
			res.TestAccuracy, res.TestAccuracyStd = &m, &s
		}
		out = append(out, res)
	}
	return out
}

// mergeClasses fills the many-class fields of res from learner l's runs:
// their confusion matrices are added class by class name, since orders
// may meet the classes in different orders.
func mergeClasses(res *Result, runs []*run, l int) {
	var acc, f1 []float64
	for _, r := range runs {
		if r.learner != l || r.seen == 0 || r.classes == nil {
			continue
		}
		acc, f1 = append(acc, r.accuracy), append(f1, r.macroF1)
		res.Classes, res.Confusion = prequential.MergeConfusion(res.Classes, res.Confusion, r.classes, r.confusion)
	}
	if res.Classes == nil {
		return
	}
	res.Accuracy, res.MacroF1 = mean(acc), mean(f1)
	res.Recall = prequential.ScoresOf(res.Confusion, 0).Recall
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// std is the sample standard deviation (n−1), 0 for fewer than two values.
func std(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := mean(xs)
	s := 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(xs)-1))
}

func writeTrace(w io.Writer, runs []*run) error {
	var cols [][]float64
	for _, r := range runs { // one order: runs are in learner order
		cols = append(cols, r.margins)
	}
	var line []byte
	for i := range cols[0] {
		line = line[:0]
		for c := range cols {
			if c > 0 {
				line = append(line, '\t')
			}
			line = strconv.AppendFloat(line, cols[c][i], 'g', -1, 64)
		}
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return nil
}

// displaySpec is the canonical spec without a seed the user did not give:
// each order runs with its own derived seed, so no single value is true.
func displaySpec(spec string, k learners.Kernel) string {
	l, err := learners.New(spec, k, 0)
	if err != nil {
		return spec
	}
	user, _ := learners.ParseSpec(spec)
	canon, _ := learners.ParseSpec(l.Spec())
	if _, ok := user.Params["seed"]; !ok {
		delete(canon.Params, "seed")
	}
	return canon.String()
}
