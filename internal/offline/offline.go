// Package offline runs learners over data files the way the service runs
// them over a partition — predict, then learn, one example at a time — and
// summarizes the prequential statistics over several random orders. It is
// the engine of `streamlearner eval` and of the reproduction scripts. A
// pass in file order can start before its file is loaded: see Feed.
package offline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/autolearn"
	"github.com/streamlearner/streamlearner/learners/prequential"
	"github.com/streamlearner/streamlearner/learners/rng"
	"github.com/streamlearner/streamlearner/learners/selection"
	"github.com/streamlearner/streamlearner/learners/sparse"
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
	// Prediction, if set, receives each record's prediction in the first
	// run (the first learner, the first order), as it is made: for VW's
	// -p. Runs call it from their goroutine.
	Prediction func(Prediction)
	// MaxBad is how many records the model refuses (a *codec.Error: a
	// malformed event, a value over the limits, a label outside the map)
	// each run skips before one more ends it; 0 (default): none. Bad, if
	// set, receives the first run's skipped records' errors, which name
	// their file line when Data.Lines is known.
	MaxBad int
	Bad    func(error)
	// Model is the template of every run's partition model: how messages
	// are read (records or events), labels and classes. Its Learner,
	// Kernel, Seed and Window are set per run from the fields above.
	Model model.Config
	// Select, if set, plays the champion rule (package selection) over
	// every learner — the Learners, on Kernel, then the Challengers — in
	// one partition model per order, as run serves it. The results are
	// then one row per learner (each scored on its own predictions, as if
	// it ran alone; a challenger on another kernel is named SPEC@KERNEL)
	// and a last row, the selector's emitted predictions, named by
	// selection.Name.
	Select *selection.Config
	// Challengers are further learners of the selection, each with its
	// own kernel (the zero Kernel: Kernel). Only with Select.
	Challengers []model.Candidate
	// Delay reveals each label Delay records after its record (delayed
	// progressive validation, model.Delayer): a record is predicted when it
	// comes and learned when its label does, on the model as it is then,
	// and its emitted prediction is what is scored. The labels still in
	// flight at the end of the pass (or at a stop) are revealed then, so
	// every labeled record played is scored whatever the delay. Trace and the learning-curve
	// points follow the records, not the labels. Default 0: each label at
	// once, the usual prequential step.
	Delay int
}

// candidates are the learners of a selection, in order.
func (cfg Config) candidates() []model.Candidate {
	var cs []model.Candidate
	for _, spec := range cfg.Learners {
		cs = append(cs, model.Candidate{Learner: spec, Kernel: cfg.Kernel})
	}
	for _, c := range cfg.Challengers {
		if c.Kernel == (learners.Kernel{}) {
			c.Kernel = cfg.Kernel
		}
		cs = append(cs, c)
	}
	return cs
}

// rowNames are the display spec and kernel of each result row.
func (cfg Config) rowNames() (specs, kernels []string) {
	if cfg.Select == nil {
		for _, spec := range cfg.Learners {
			specs, kernels = append(specs, model.Candidate{Learner: spec}.DisplayName(cfg.Kernel)), append(kernels, cfg.Kernel.String())
		}
		return specs, kernels
	}
	distinct := []string{}
	for _, c := range cfg.candidates() {
		specs, kernels = append(specs, c.DisplayName(cfg.Kernel)), append(kernels, c.Kernel.String())
		if !slices.Contains(distinct, c.Kernel.String()) {
			distinct = append(distinct, c.Kernel.String())
		}
	}
	return append(specs, selection.Name(specs)), append(kernels, strings.Join(distinct, "|"))
}

// Data is a stream to evaluate on: indexed records with their label
// tokens, or raw event messages (with Config.Model.Events). A Feed's Data
// is filled while it is read; its fields stay empty.
type Data struct {
	X      []sparse.Vector
	Labels []string // canonical label tokens; "" for an unlabeled record
	Events [][]byte
	// Lines are the records' lines in their file, for errors; nil: errors
	// number records from 1 instead.
	Lines []int

	// mapped says Labels hold the ±1 tokens of labels already mapped to
	// binary targets (FromSet, a stream's): the runs then read them with the
	// binary label map whatever Config.Model.Labels says, since mapping
	// them again through a --positive list would find "1" and "-1" in
	// neither class and leave every record unlabeled.
	mapped bool

	stream *streamed // FromStream's: its batches are read by each run
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
	d := &Data{X: s.X, Labels: make([]string, len(s.Y)), Lines: s.Lines, mapped: true}
	for i, y := range s.Y {
		d.Labels[i] = LabelToken(y)
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
	// Skipped is how many records the model refused and a run skipped
	// under Config.MaxBad (the most of any order).
	Skipped int `json:"skipped,omitempty"`
	// Unlisted and TestUnlisted are how many records of the training and
	// the test data had a label in none of the lists (codec.Unlisted: in
	// neither --positive nor --negative, or not one of the classes): not
	// played, not scored, and not bad records either (the most of any
	// order). Records whose labels the data set's loader mapped were
	// dropped there and are not counted here.
	Unlisted     int `json:"unlisted,omitempty"`
	TestUnlisted int `json:"test_unlisted,omitempty"`
	// Summary is the learner's over the orders: Labeled is how many
	// records carried a label that was scored (the fewest of any order);
	// MistakeRate, BaselineRate, Kappa (0: no better than chance given the
	// class frequencies), Accuracy and MacroF1 are means over orders;
	// Classes (in the order the first order met them), Confusion,
	// Unanswered and Recall are over all orders together.
	prequential.Summary
	MistakeRateStd float64 `json:"mistake_rate_std"`
	KappaStd       float64 `json:"kappa_std"`
	// Positives is how many of the labeled records were +1 (binary runs;
	// the fewest of any order): eval refuses a stream that has nothing to
	// learn, where a mistake rate of 0 would mean nothing.
	Positives int `json:"positives,omitempty"`
	// KeepOrder and Seed say which order the records were played in: the
	// file's, or Orders random orders drawn from Seed. Rates depend on it.
	KeepOrder bool   `json:"keep_order"`
	Seed      uint64 `json:"seed"`
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
	// Selector marks the selector's row (Config.Select); Switches is its
	// mean number of champion changes over orders.
	Selector bool    `json:"selector,omitempty"`
	Switches float64 `json:"switches,omitempty"`
	// Delay is Config.Delay: each label was revealed Delay records after
	// its record (absent when 0).
	Delay int `json:"delay,omitempty"`
	// Auto is what an "auto" learner chose, in the first order.
	Auto *AutoReport `json:"auto,omitempty"`

	multi bool // many-class: the table shows its classes
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

// run is one model over one order: one learner (row learner), or with
// Config.Select every learner and the selector (rows 0..n).
type run struct {
	learner, order int
	rows           []rowStats
	seen           int // records played
	skipped        int // records the model refused, under Config.MaxBad
	unlisted       int // records of a label in no list (codec.IsUnlisted)
	testUnlisted   int // the same in the test data
	multi          bool
	seconds        float64
	margins        []float64 // for the trace
}

// rowStats is one result row's statistics from one run.
type rowStats struct {
	row        int
	sum        prequential.Summary
	updates    uint64
	support    int
	supportMax int
	testAcc    float64
	switches   uint64
	positives  uint64 // of the labeled records, those labeled +1 (binary)
	auto       *AutoReport
}

// AutoReport is what an "auto" learner chose: its champions over time and
// its candidates at the end.
type AutoReport struct {
	// Champions are the changes of champion (at most the last 64), each
	// decided at labeled record After, in effect from After+1 on, with
	// what decided it.
	Champions []autolearn.Change `json:"champions"`
	Switches  uint64             `json:"switches"`
	// Halving is set when the search had not narrowed yet at the end (a
	// short stream): its candidates all still played, and the next halving
	// was due at labeled record NextCut.
	Halving bool   `json:"halving,omitempty"`
	NextCut uint64 `json:"next_cut,omitempty"`
	// Reopens counts the rises of the emitted mistake rate that reopened
	// the search (auto's drift=).
	Reopens uint64 `json:"reopens"`
	// Candidates are the candidates alive at the end, with their mistake
	// rates since their birth.
	Candidates []autolearn.Status `json:"candidates"`
}

// AutoOf is what candidate k of m chose when its learner is "auto" (in
// many-class mode, the search the classes share), or nil.
func AutoOf(m *model.Model, k int) *AutoReport {
	if k >= m.Candidates() {
		return nil
	}
	ls := m.CandidateLearners(k)
	if len(ls) == 0 {
		return nil // many classes, none seen yet
	}
	a, ok := ls[0].(*autolearn.Auto)
	if !ok {
		return nil
	}
	r := &AutoReport{Champions: a.Changes(), Switches: a.Switches(), Reopens: a.Reopens(), Candidates: a.Candidates()}
	if halving, _, end := a.Narrowing(); halving {
		r.Halving, r.NextCut = true, end
	}
	return r
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
//
// train may be a Feed's: a pass in file order without a delay reads it as
// it is loaded; other configurations wait for the whole of it. A loading
// error is returned in place of results, as if the data had been loaded
// first.
func RunData(ctx context.Context, train, test *Data, cfg Config) ([]Result, error) {
	if err := checkConfig(cfg, train); err != nil {
		return nil, err
	}
	if train.mapped {
		cfg.Model.Labels = codec.LabelMap{}
	}
	orders := max(cfg.Orders, 1)
	if cfg.KeepOrder {
		orders = 1
	}
	// Fail on a bad spec or configuration before any work.
	models := len(cfg.Learners)
	if cfg.Select != nil {
		models = 1
	}
	for l := range models {
		if _, err := model.New(cfg.modelConfig(l, 0)); err != nil {
			return nil, err
		}
	}
	results := make([]*run, 0, models*orders)
	for l := range models {
		for o := range orders {
			results = append(results, &run{learner: l, order: o})
		}
	}
	firstErr := playAll(ctx, train, test, cfg, orders, results)
	n := train.Len()
	if train.stream != nil {
		// -1: stopped before any reading reached the data's end, so no
		// run is whole.
		n = int(train.stream.records.Load())
		if n == 0 && firstErr == nil && ctx.Err() == nil {
			return nil, errors.New("no training examples")
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return summarize(cfg, orders, n, test, results), err
	}
	if cfg.Trace != nil {
		if err := writeTrace(cfg.Trace, results); err != nil {
			return nil, fmt.Errorf("write trace: %w", err)
		}
	}
	return summarize(cfg, orders, n, test, results), nil
}

// checkConfig refuses what RunData cannot run, before any work.
func checkConfig(cfg Config, train *Data) error {
	if len(cfg.Learners) == 0 {
		return errors.New("no learner given")
	}
	streaming := train.stream != nil
	if streaming && (!cfg.KeepOrder || cfg.Delay != 0) {
		return errors.New("a stream is read in file order without a delay: load the data for random orders or a delay")
	}
	if !streaming && train.Len() == 0 {
		return errors.New("no training examples")
	}
	if cfg.Trace != nil && !cfg.KeepOrder {
		return errors.New("a trace needs the file order (keep-order)")
	}
	if cfg.Select == nil && len(cfg.Challengers) > 0 {
		return errors.New("challengers need a selection (Select)")
	}
	if cfg.Select != nil && len(cfg.Learners)+len(cfg.Challengers) < 2 {
		return errors.New("a selection needs at least two learners (add challengers)")
	}
	if cfg.Select != nil && cfg.Trace != nil {
		return errors.New("a trace is of learners run apart, not of a selection")
	}
	if cfg.Delay < 0 {
		return fmt.Errorf("delay %d: want 0 or more records", cfg.Delay)
	}
	return nil
}

// playAll plays the runs, cfg.Jobs at a time, and returns the first error
// that ended one; the first also stops the others. A stop from ctx is an
// interruption, not an error: the runs keep what they played.
func playAll(ctx context.Context, train, test *Data, cfg Config, orders int, runs []*run) error {
	perms := make([][]int, orders)
	for o := range perms {
		if cfg.KeepOrder {
			perms[o] = nil
		} else {
			perms[o] = Order(cfg.Seed, o, train.Len())
		}
	}
	tasks := make(chan *run)
	var done atomic.Int64
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
				// with the results so far, not a failure.
				if err := r.do(ctx, train, test, cfg, perms[r.order], &done, len(runs)); err != nil && parent.Err() == nil {
					errOnce.Do(func() { firstErr = err; cancel() })
				}
			}
		}()
	}
feed:
	for _, r := range runs {
		select {
		case tasks <- r:
		case <-ctx.Done():
			break feed
		}
	}
	close(tasks)
	wg.Wait()
	return firstErr
}

// modelConfig is the model of learner l's runs, or with Select of every
// run.
func (cfg Config) modelConfig(l int, seed uint64) model.Config {
	mc := cfg.Model
	mc.Learner, mc.Kernel, mc.Seed, mc.Window = cfg.Learners[l], cfg.Kernel, seed, cfg.Window
	if cfg.Select != nil {
		mc.Challengers, mc.Select = cfg.candidates()[1:], *cfg.Select
	}
	if cfg.Delay > 0 {
		mc.Delayed = model.DelayConfig(cfg.Delay)
	}
	return mc
}

// errStopped is how a run's loop says that its context ended.
var errStopped = errors.New("stopped")

// step plays record j of d through m, learning or (test) only predicting,
// its result in r; label is a buffer for the record's label token. (The
// caller's r, because a Result is some two hundred bytes to copy at each
// return on the way.)
func step(m *model.Model, d *Data, j int, learn bool, label *[]byte, r *model.Result) error {
	var err error
	switch {
	case d.Events != nil && learn:
		*r, err = m.Step(d.Events[j])
	case d.Events != nil:
		*r, err = m.Predict(d.Events[j])
	case learn:
		*r, err = m.StepVector(d.X[j], labelBytes(label, d.Labels[j]))
	default:
		*r, err = m.PredictVector(d.X[j], labelBytes(label, d.Labels[j]))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", d.where(j), err)
	}
	return nil
}

// labelBytes is the token s in the buffer buf: the model takes a label as
// bytes, and converting the string would allocate for every record (the
// model keeps no reference to it).
func labelBytes(buf *[]byte, s string) []byte {
	*buf = append((*buf)[:0], s...)
	return *buf
}

// Prediction is one record's prediction: its file line (0: unknown), key
// (events with a key field), and the prediction, margin and label with the
// fields and types of the service's prediction records (codec.Prediction),
// so that one reader serves both: ±1 numbers for binary labels; with many
// classes the predicted class's index and name (−1 and "" before any
// class is known) and the true class's name.
type Prediction struct {
	Line       int     `json:"line,omitempty"`
	Key        string  `json:"key,omitempty"`
	Predicted  int     `json:"prediction"`
	Class      string  `json:"class,omitempty"`
	Margin     float64 `json:"margin"`
	Label      int     `json:"label,omitempty"` // 0: unlabeled, or many classes
	LabelClass string  `json:"label_class,omitempty"`
}

func predictionOf(m *model.Model, d *Data, j int, r model.Result) Prediction {
	p := Prediction{Key: string(r.Key), Margin: r.Margin, Predicted: r.Predicted}
	if j < len(d.Lines) {
		p.Line = d.Lines[j]
	}
	if m.Multi() {
		p.Class = r.Class
		if r.Labeled {
			p.LabelClass = m.Class(r.Label)
		}
	} else if r.Labeled {
		p.Label = r.Label
	}
	return p
}

// total is the records runs passes over d play, for a progress line: 0
// until a stream has been read to its end once, when its length is known.
func (d *Data) total(runs int) int64 {
	if d.stream != nil {
		return int64(runs) * max(d.stream.records.Load(), 0)
	}
	return int64(runs * d.Len())
}

// where names record j: its file line when known.
func (d *Data) where(j int) string {
	if j < len(d.Lines) {
		return fmt.Sprintf("line %d", d.Lines[j])
	}
	return fmt.Sprintf("record %d", j+1)
}

// trainer plays the training pass: each record predicted then learned at
// once, or with Config.Delay through a model.Delayer.
type trainer struct {
	m       *model.Model
	delayer *model.Delayer
	res     model.Result       // the last record's prediction, under a delay
	see     func(model.Result) // the Delayer's callback, made once
	label   []byte             // the record's label token, for step
}

func newTrainer(m *model.Model, delay int) (*trainer, error) {
	t := &trainer{m: m}
	if delay == 0 {
		return t, nil
	}
	d, err := model.NewDelayer(m, delay)
	if err != nil {
		return nil, err
	}
	t.delayer = d
	// A Delayer reports the record's own prediction first, then the
	// labels it revealed (Late): a trace and a margin are the record's.
	t.see = func(r model.Result) {
		if !r.Late {
			t.res = r
		}
	}
	return t, nil
}

// step plays training record j of d, its prediction in r.
func (t *trainer) step(d *Data, j int, r *model.Result) error {
	if t.delayer == nil {
		return step(t.m, d, j, true, &t.label, r)
	}
	var err error
	if d.Events != nil {
		err = t.delayer.Step(d.Events[j], t.see)
	} else {
		err = t.delayer.StepVector(d.X[j], labelBytes(&t.label, d.Labels[j]), t.see)
	}
	if err != nil {
		*r = model.Result{}
		return fmt.Errorf("%s: %w", d.where(j), err)
	}
	*r = t.res
	return nil
}

// flush reveals the labels still held back, so that every record played
// is scored.
func (t *trainer) flush() error {
	if t.delayer == nil {
		return nil
	}
	if err := t.delayer.Flush(func(model.Result) {}); err != nil {
		return fmt.Errorf("reveal the delayed labels: %w", err)
	}
	return nil
}

// do plays one run; runs is how many there are, for the progress total.
func (r *run) do(ctx context.Context, train, test *Data, cfg Config, perm []int, done *atomic.Int64, runs int) error {
	seed := OrderSeed(cfg.Seed, r.order)
	if perm == nil { // file order: the service's seeding, see KeepOrder
		seed = cfg.Seed
	}
	if err := ctx.Err(); err != nil {
		return err // stopped before this run began
	}
	p, err := r.newPlay(ctx, cfg, seed, train, done, runs)
	if err != nil {
		return err
	}
	r.rows = make([]rowStats, len(p.rows))
	// The statistics so far are kept whatever ends the run, so that an
	// interrupted eval still reports them.
	defer p.keep()
	if cfg.Trace != nil {
		r.margins = make([]float64, 0, train.Len())
	}
	records, err := p.train(perm)
	if errors.Is(err, errStopped) || err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// Stopped: the statistics kept are those of the records seen,
		// their delayed labels included.
		return errors.Join(ctx.Err(), p.tr.flush())
	}
	if err != nil {
		return err
	}
	if err := p.tr.flush(); err != nil {
		return err
	}
	if n := done.Add(int64(records % chunk)); cfg.Progress != nil {
		cfg.Progress(n, train.total(runs))
	}
	if cfg.Every > 0 && (r.seen%cfg.Every != 0 || cfg.Delay > 0) {
		p.point(r.seen)
	}
	if test == nil {
		return nil
	}
	return p.test(test)
}

// chunk is how many records a run plays between two looks at its
// context and two progress reports.
const chunk = 1024

// play is what one run needs while it plays its records.
type play struct {
	r     *run
	ctx   context.Context
	cfg   Config
	m     *model.Model
	tr    *trainer
	names []string
	// rows are the run's result rows: learner r.learner alone, or every
	// candidate then the selector.
	rows     []int
	selector int
	data     *Data // the training data, for the progress total
	done     *atomic.Int64
	runs     int
	res      model.Result // the record's, filled in place by each call of one
}

// newPlay makes the run's model and its rows.
func (r *run) newPlay(ctx context.Context, cfg Config, seed uint64, train *Data, done *atomic.Int64, runs int) (*play, error) {
	m, err := model.New(cfg.modelConfig(r.learner, seed))
	if err != nil {
		return nil, err
	}
	tr, err := newTrainer(m, cfg.Delay)
	if err != nil {
		return nil, err
	}
	names, _ := cfg.rowNames()
	rows := []int{r.learner}
	if cfg.Select != nil {
		rows = rows[:0]
		for k := range names {
			rows = append(rows, k)
		}
	}
	return &play{r: r, ctx: ctx, cfg: cfg, m: m, tr: tr, names: names, rows: rows, selector: len(names) - 1,
		data: train, done: done, runs: runs}, nil
}

// evalOf is row k's evaluator and support in the model.
func (p *play) evalOf(k int) (*prequential.Evaluator, int) {
	if p.cfg.Select == nil || k == p.selector {
		return p.m.Eval(), p.m.Support()
	}
	return p.m.CandidateEval(k), p.m.CandidateSupport(k)
}

// point reports each row's running metrics after seen records.
func (p *play) point(seen int) {
	if p.cfg.Point == nil {
		return
	}
	for _, k := range p.rows {
		ev, support := p.evalOf(k)
		p.cfg.Point(Point{Spec: p.names[k], Order: p.r.order, Seen: seen, MistakeRate: ev.MistakeRate(), WindowRate: ev.WindowRate(),
			BaselineRate: ev.BaselineRate(), Kappa: ev.Scores().Kappa, Support: support})
	}
}

// keep stores each row's statistics in the run.
func (p *play) keep() {
	r, m := p.r, p.m
	r.multi = m.Multi()
	classes := prequential.BinaryClasses
	if r.multi {
		classes = m.Classes()
	}
	for i, k := range p.rows {
		ev, _ := p.evalOf(k)
		rs := &r.rows[i]
		rs.row, rs.sum, rs.updates = k, ev.Summary(classes), ev.Updates
		rs.support, rs.supportMax = ev.Support, ev.SupportMax
		rs.positives = positivesOf(ev, r.multi)
		if sel := m.Selector(); sel != nil && k == p.selector {
			rs.switches = sel.Switches()
		}
		if p.cfg.Select == nil || k != p.selector {
			rs.auto = AutoOf(m, k)
		}
	}
}

// one plays record j of data, the run's i-th record. It returns
// errStopped when the context ends (checked every chunk records).
func (p *play) one(data *Data, i, j int) error {
	r, cfg := p.r, p.cfg
	if i%chunk == chunk-1 {
		if p.ctx.Err() != nil {
			return errStopped
		}
		n := p.done.Add(chunk)
		if cfg.Progress != nil {
			cfg.Progress(n, p.data.total(p.runs))
		}
	}
	err := p.tr.step(data, j, &p.res)
	margin := p.res.Margin
	if err != nil {
		return r.refused(err, i, cfg)
	}
	r.seen = i + 1
	if r.margins != nil {
		r.margins = append(r.margins, margin)
	}
	if cfg.Prediction != nil && r.learner == 0 && r.order == 0 {
		cfg.Prediction(predictionOf(p.m, data, j, p.res))
	}
	// Under a delay the last point waits for the flush below, so
	// that it, like the result, scores every label.
	if cfg.Every > 0 && r.seen%cfg.Every == 0 && (cfg.Delay == 0 || r.seen < data.Len()) {
		p.point(r.seen)
	}
	return nil
}

// train plays the training data, in the order perm (nil: file order),
// and returns how many records it played.
func (p *play) train(perm []int) (records int, err error) {
	r, train := p.r, p.data
	// The examples/s figure is the learner's: the time a stream spends
	// reading and decoding does not count.
	var learning time.Duration
	if train.stream != nil {
		err = train.stream.read(p.ctx, r.learner == 0 && r.order == 0, func(b *Data) error {
			start := time.Now()
			defer func() { learning += time.Since(start) }()
			for j := range b.Len() {
				if err := p.one(b, records, j); err != nil {
					return err
				}
				records++
			}
			return nil
		})
		if err == nil {
			train.stream.records.Store(int64(records))
		}
	} else {
		start := time.Now()
		for records < train.Len() {
			j := records
			if perm != nil {
				j = perm[records]
			}
			if err = p.one(train, records, j); err != nil {
				break
			}
			records++
		}
		learning = time.Since(start)
	}
	r.seconds = learning.Seconds()
	return records, err
}

// test scores the final model on test: each learner's own prediction (a
// bit of Result.Mistakes), the selector's the emitted one.
func (p *play) test(test *Data) error {
	r := p.r
	right, labeled := make([]int, len(p.rows)), 0
	for j := range test.Len() {
		var o model.Result
		if err := step(p.m, test, j, false, &p.tr.label, &o); err != nil {
			if codec.IsUnlisted(err) {
				r.testUnlisted++
				continue
			}
			return fmt.Errorf("test %w", err)
		}
		if !o.Labeled {
			continue
		}
		labeled++
		for i, k := range p.rows {
			wrong := o.Mistake
			if p.cfg.Select != nil && k != p.selector {
				wrong = o.Mistakes&(1<<k) != 0
			}
			if !wrong {
				right[i]++
			}
		}
	}
	if labeled == 0 {
		return errors.New("test set has no labeled example")
	}
	for i := range p.rows {
		r.rows[i].testAcc = float64(right[i]) / float64(labeled)
	}
	return nil
}

// refused handles the error of the run's i-th record: a record the model
// refuses (a *codec.Error) is skipped while cfg.MaxBad allows, any other
// error ends the run. (Apart from the loop, so that the loop's records do
// not each allocate the target of errors.As.)
func (r *run) refused(err error, i int, cfg Config) error {
	var ce *codec.Error
	if !errors.As(err, &ce) {
		return err
	}
	if codec.IsUnlisted(err) {
		// Not part of the problem the label lists define: not a bad
		// record, and not one of the examples either.
		r.unlisted++
		r.seen = i + 1
		return nil
	}
	if r.skipped < cfg.MaxBad {
		// A record the model refuses changes nothing in it: skipped,
		// counted, and said once (by the first run).
		r.skipped++
		r.seen = i + 1
		if cfg.Bad != nil && r.learner == 0 && r.order == 0 {
			cfg.Bad(err)
		}
		return nil
	}
	if cfg.MaxBad > 0 {
		return fmt.Errorf("%w (one more than --max-bad %d)", err, cfg.MaxBad)
	}
	return err
}

func summarize(cfg Config, orders, n int, test *Data, runs []*run) []Result {
	names, kernels := cfg.rowNames()
	out := make([]Result, 0, len(names))
	for row, canon := range names {
		var upd, sup, supMax, acc, eps, seen, played, sw []float64
		skipped, unlisted, testUnlisted := 0, 0, 0
		positives := -1
		sums := summaries{labeled: -1}
		complete, multi := true, false
		var auto *AutoReport
		for _, r := range runs {
			if r.seen == 0 {
				continue
			}
			for _, rs := range r.rows {
				if rs.row != row {
					continue
				}
				complete = complete && r.seen == n
				seen = append(seen, float64(r.seen))
				played = append(played, float64(r.seen-r.skipped-r.unlisted))
				skipped = max(skipped, r.skipped)
				unlisted, testUnlisted = max(unlisted, r.unlisted), max(testUnlisted, r.testUnlisted)
				positives, multi = minCount(positives, rs.positives), r.multi
				sums.add(rs.sum)
				upd = append(upd, float64(rs.updates))
				sup = append(sup, float64(rs.support))
				supMax = append(supMax, float64(rs.supportMax))
				acc = append(acc, rs.testAcc)
				eps = append(eps, float64(r.seen)/r.seconds)
				sw = append(sw, float64(rs.switches))
				if r.order == 0 && auto == nil {
					auto = rs.auto
				}
			}
		}
		if len(seen) == 0 {
			continue // interrupted before this learner started
		}
		complete = complete && len(seen) == orders
		res := Result{
			Spec: canon, Kernel: kernels[row], Orders: len(seen), Examples: int(math.Round(mean(played))), Skipped: skipped,
			Unlisted: unlisted, TestUnlisted: testUnlisted, Summary: sums.summary(), Positives: positives,
			MistakeRateStd: std(sums.mr), KappaStd: std(sums.kappa), ExamplesPerSecond: mean(eps), Interrupted: !complete,
			Updates: mean(upd), Delay: cfg.Delay, Auto: auto, KeepOrder: cfg.KeepOrder, Seed: cfg.Seed, multi: multi,
		}
		if cfg.Select != nil && row == len(names)-1 {
			res.Selector, res.Switches = true, mean(sw)
		}
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

// minCount is the smaller of a count so far (-1: none yet) and n.
func minCount(so int, n uint64) int {
	if so < 0 || int(n) < so {
		return int(n)
	}
	return so
}

// positivesOf is how many of ev's scored rounds had label +1: the row of
// class 1 in a binary confusion matrix (0 for many classes). A binary
// model always predicts, so none of them is outside the matrix.
func positivesOf(ev *prequential.Evaluator, multi bool) uint64 {
	conf := ev.Confusion()
	if multi || len(conf) < 2 {
		return 0
	}
	var sum uint64
	for _, c := range conf[1] {
		sum += c
	}
	return sum
}

// summaries gathers one result row's Summary of each order.
type summaries struct {
	labeled                int // the fewest of any order; -1: none yet
	mr, br, kappa, acc, f1 []float64
	classes                []string
	conf                   [][]uint64
	unanswered             []uint64
}

// add counts one order's Summary. Its matrix is added class by class
// name, since orders may meet the classes in different orders; an order
// that met no class yet has no accuracy or macro-F1 to average.
func (a *summaries) add(s prequential.Summary) {
	a.labeled = minCount(a.labeled, s.Labeled)
	a.mr, a.br, a.kappa = append(a.mr, s.MistakeRate), append(a.br, s.BaselineRate), append(a.kappa, s.Kappa)
	if s.Classes == nil {
		return
	}
	a.acc, a.f1 = append(a.acc, s.Accuracy), append(a.f1, s.MacroF1)
	a.classes, a.conf, a.unanswered = prequential.MergeConfusion(a.classes, a.conf, a.unanswered, s.Classes, s.Confusion, s.Unanswered)
}

// summary is the orders' Summary: rates and scores are means over
// orders, as their spreads are reported beside them; recall is the added
// matrix's.
func (a *summaries) summary() prequential.Summary {
	s := prequential.Summary{Labeled: uint64(max(a.labeled, 0)), MistakeRate: mean(a.mr), BaselineRate: mean(a.br), Kappa: mean(a.kappa),
		Classes: a.classes, Confusion: a.conf, Unanswered: a.unanswered}
	if a.classes != nil {
		s.Accuracy, s.MacroF1 = mean(a.acc), mean(a.f1)
		s.Recall = prequential.ScoresOf(a.conf, a.unanswered).Recall
	}
	return s
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
