package replay

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/drift"
	"github.com/streamlearner/streamlearner/learners/prequential"
	"github.com/streamlearner/streamlearner/learners/selection"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

// Config says what to evaluate and how. Zero values take the documented
// defaults.
type Config struct {
	// Learners are the learner specs, e.g. "rbp:budget=100"; at least one.
	Learners []string
	// Kernel is shared by all learners.
	Kernel learners.Kernel
	// Seed seeds randomized learners: the learners of partition p get
	// Seed + p, as the service's. Default 1, the service's default.
	Seed uint64
	// Window is the number of labeled records in the windowed mistake rate
	// (and the pre-shift level). Default prequential.DefaultWindow (1000).
	Window int
	// RecoveryWindow is the number of labeled post-shift records whose
	// mistake rate decides recovery. Default 200.
	RecoveryWindow int
	// Tolerance is how far above the pre-shift level (an absolute
	// difference of rates) the post-shift rate may be and count as
	// recovered. Default 0.05.
	Tolerance float64
	// Detectors are drift detector specs (see drift.New). Nil means
	// drift.Defaults(); an empty non-nil slice means none.
	Detectors []string
	// MaxDelay, if positive, is the most rounds after a known shift that a
	// detection may come and still count as detecting it. Default 0: any
	// detection before the next known shift counts.
	MaxDelay int64
	// TracePoints bounds the samples kept per learner for plots: when the
	// trace is full every other sample is dropped and the stride doubles.
	// Default 2000.
	TracePoints int
	// ShiftOffsets are known shift offsets (in the partition's offsets);
	// a shift is marked at the first record at or past each one.
	ShiftOffsets []int64
	// ShiftsFromSegments marks a shift at the first record of each new
	// segment: one whose segment number is higher than any before it
	// (records without a segment are never shifts).
	ShiftsFromSegments bool
	// Model is the template of every learner's partition model (package
	// model): records or events, features, classes. Learner, Kernel, Seed
	// and Window are set per learner and partition from the fields above.
	// The zero value is today's binary model on records.
	Model model.Config
	// Challengers are further learners, each with its own kernel (the
	// zero Kernel: Kernel), played alone after the Learners; a challenger
	// on another kernel is reported as SPEC@KERNEL. Only with Select.
	Challengers []model.Candidate
	// Select, if set, adds a last learner row: the champion rule (package
	// selection) over the Learners and Challengers in one partition model,
	// as run plays it, named by selection.Name and scored on the emitted
	// predictions.
	Select *selection.Config
	// Delay, if positive, reveals each labeled record's label Delay records
	// after it (delayed progressive validation, model.Delayer): a record
	// is predicted when it comes and learned, and scored, when its label is
	// revealed; Stream.Flush reveals the labels still held back at the
	// partition's end. The numbers are eval --delay's on the same records.
	// Default 0: labels at once. Not with Model.Delayed.
	Delay int
}

// laneDef is one row of the report: its name and model (Seed is set per
// partition).
type laneDef struct {
	name     string
	mc       model.Config
	selector bool
}

// lanes are the report's rows: the learners, the challengers, and the
// selection over them all.
func (c Config) lanes() []laneDef {
	var defs []laneDef
	var names []string
	var cands []model.Candidate
	add := func(name, spec string, k learners.Kernel) {
		mc := c.Model
		mc.Learner, mc.Kernel, mc.Window = spec, k, c.Window
		if c.Delay > 0 {
			mc.Delayed = model.DelayConfig(c.Delay)
		}
		defs, names = append(defs, laneDef{name: name, mc: mc}), append(names, name)
		cands = append(cands, model.Candidate{Learner: spec, Kernel: k})
	}
	// Rows named as eval names them.
	for _, spec := range c.Learners {
		add(model.Candidate{Learner: spec}.DisplayName(c.Kernel), spec, c.Kernel)
	}
	for _, ch := range c.Challengers {
		k := ch.Kernel
		if k == (learners.Kernel{}) {
			k = c.Kernel
		}
		add(ch.DisplayName(c.Kernel), ch.Learner, k)
	}
	if c.Select != nil && len(cands) > 0 {
		mc := defs[0].mc
		mc.Challengers, mc.Select = cands[1:], *c.Select
		defs = append(defs, laneDef{name: selection.Name(names), mc: mc, selector: true})
	}
	return defs
}

// withDefaults fills in the documented defaults.
func (c Config) withDefaults() Config {
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Window <= 0 {
		c.Window = prequential.DefaultWindow
	}
	if c.RecoveryWindow <= 0 {
		c.RecoveryWindow = 200
	}
	if c.Tolerance == 0 {
		c.Tolerance = 0.05
	}
	if c.Detectors == nil {
		c.Detectors = drift.Defaults()
	}
	if c.TracePoints <= 0 {
		c.TracePoints = 2000
	}
	return c
}

// Validate reports a configuration that cannot run, before any record is
// read.
func (c Config) Validate() error {
	if len(c.Learners) == 0 {
		return errors.New("replay: at least one learner is needed")
	}
	if c.Delay < 0 {
		return fmt.Errorf("replay: delay %d: want 0 or more records", c.Delay)
	}
	if c.Delay > 0 && c.Model.Delayed != nil {
		return errors.New("replay: a delay replays labeled records with their labels held back; delayed labels (Model.Delayed) come in their own messages: one or the other")
	}
	if c.Select == nil && len(c.Challengers) > 0 {
		return errors.New("replay: challengers need a selection (Select)")
	}
	if c.Select != nil && len(c.Learners)+len(c.Challengers) < 2 {
		return errors.New("replay: a selection needs at least two learners (add challengers)")
	}
	for _, def := range c.lanes() {
		if _, err := model.New(def.mc); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
	}
	for _, spec := range c.Detectors {
		if _, err := drift.New(spec); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
	}
	if !(c.Tolerance >= 0) || math.IsInf(c.Tolerance, 0) {
		return fmt.Errorf("replay: tolerance must be a non-negative rate, got %v", c.Tolerance)
	}
	if c.ShiftsFromSegments && len(c.ShiftOffsets) > 0 {
		return errors.New("replay: shifts come from offsets or from segment headers, not both")
	}
	if !slices.IsSorted(c.ShiftOffsets) {
		return errors.New("replay: shift offsets must be in increasing order")
	}
	return nil
}

// Record is one decoded record of the stream.
type Record struct {
	Offset int64
	X      sparse.Vector
	Y      int // +1, −1, or 0 when unlabeled (predicted, not learned)
	// Label is the label token, for many-class models ("" unlabeled).
	Label string
	// Value is the message itself, for event models: each learner's model
	// decodes and featurizes it (X is then empty).
	Value []byte
	// Segment is the record's segment number, or −1 if it carries none.
	Segment int
	// Key and Time (ms) are the message's Kafka key and timestamp, for
	// delayed labels (Config.Model.Delayed): there every record's Value is
	// the message, played by model.StepAt.
	Key  []byte
	Time int64
	// FromLabels marks a record read from the label topic: its Offset is
	// that topic's, so it neither moves the partition's offsets nor marks
	// shifts.
	FromLabels bool
	// Bad, if not empty, is why the record could not be decoded (a codec
	// reason): it is counted and skipped, not a round.
	Bad string
}

// Stream plays one partition's records through every learner.
type Stream struct {
	cfg       Config
	partition int
	lanes     []*lane

	rounds      int64
	firstOffset int64
	lastOffset  int64
	bad         map[string]int64
	shifts      []Shift
	nextShift   int // index into cfg.ShiftOffsets
	maxSegment  int
	classes     map[string]bool // many-class: the labels met so far
	// lastRound is where the labels Flush reveals count.
	lastRound  int64
	labelReads int64 // records read from the label topic
}

// Shift is a known change point.
type Shift struct {
	Round  int64 `json:"round"`
	Offset int64 `json:"offset"`
	// Segment is the new segment's number (−1 when records carry none).
	Segment int `json:"segment"`
}

// NewStream prepares the learners of one partition.
func NewStream(cfg Config, partition int) (*Stream, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Stream{cfg: cfg, partition: partition, firstOffset: -1, lastOffset: -1, maxSegment: -1, bad: map[string]int64{},
		classes: map[string]bool{}}
	for _, c := range cfg.Model.Classes {
		if c != model.Auto {
			s.classes[c] = true
		}
	}
	seed := cfg.Seed + uint64(partition)
	for _, def := range cfg.lanes() {
		def.mc.Seed = seed
		m, err := model.New(def.mc)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		ln := &lane{spec: def.name, seed: seed, m: m,
			post: prequential.NewWindow(cfg.RecoveryWindow), traceCap: cfg.TracePoints, stride: 1}
		if cfg.Delay > 0 {
			if ln.delayer, err = model.NewDelayer(m, cfg.Delay); err != nil {
				return nil, fmt.Errorf("replay: %w", err)
			}
		}
		if m.Pending() != nil {
			ln.labels = &DelayedLabels{}
		}
		for _, d := range cfg.Detectors {
			det, err := drift.New(d)
			if err != nil {
				return nil, fmt.Errorf("replay: %w", err)
			}
			ln.dets = append(ln.dets, det)
			ln.detected = append(ln.detected, nil)
		}
		ln.startSegment(0, -1, -1)
		s.lanes = append(s.lanes, ln)
	}
	return s, nil
}

func (s *Stream) seen(offset int64) {
	if s.firstOffset < 0 {
		s.firstOffset = offset
	}
	s.lastOffset = offset
}

// Play runs a batch of records, in order, through every learner. The
// learners go in parallel (they share nothing), each through the whole
// batch, so the results do not depend on the number of cores.
func (s *Stream) Play(recs []Record) {
	// Bad records are counted and dropped; the slice is copied only when
	// there is one.
	nbad := 0
	for i := range recs {
		r := &recs[i]
		if r.FromLabels {
			s.labelReads++
		} else {
			s.seen(r.Offset)
		}
		if r.Bad == "" {
			r.Bad = s.classCheck(r)
		}
		if r.Bad != "" {
			nbad++
			s.bad[r.Bad]++
		}
	}
	if nbad > 0 {
		good := make([]Record, 0, len(recs)-nbad)
		for _, r := range recs {
			if r.Bad == "" {
				good = append(good, r)
			}
		}
		recs = good
	}
	if len(recs) == 0 {
		return
	}
	// Shifts are decided once, for all lanes, before the lanes run.
	marks := make([]bool, len(recs))
	for i, r := range recs {
		round := s.rounds + int64(i)
		shift, seg := false, r.Segment
		for !r.FromLabels && s.nextShift < len(s.cfg.ShiftOffsets) && s.cfg.ShiftOffsets[s.nextShift] <= r.Offset {
			s.nextShift++
			shift = round > 0 // a shift before the first record is no change
		}
		if s.cfg.ShiftsFromSegments && r.Segment >= 0 && !r.FromLabels {
			// Segments only grow: a gradual drift mixes records of the old
			// and the new segment, and its shift is where the new one first
			// appears, not every switch back and forth.
			if s.maxSegment >= 0 && r.Segment > s.maxSegment {
				shift = true
			}
			s.maxSegment = max(s.maxSegment, r.Segment)
		}
		if shift {
			marks[i] = true
			s.shifts = append(s.shifts, Shift{Round: round, Offset: r.Offset, Segment: seg})
		}
	}
	base := s.rounds
	s.rounds += int64(len(recs))
	s.lastRound = s.rounds - 1

	workers := min(runtime.GOMAXPROCS(0), len(s.lanes))
	if workers <= 1 {
		for _, ln := range s.lanes {
			ln.play(s.cfg, base, recs, marks)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan *lane, len(s.lanes))
	for _, ln := range s.lanes {
		next <- ln
	}
	close(next)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ln := range next {
				ln.play(s.cfg, base, recs, marks)
			}
		}()
	}
	wg.Wait()
}

// Flush ends the stream: the labels a delay (Config.Delay) still holds
// back are revealed, oldest first, and count at the last round. Without a
// delay it does nothing; after it, Play must not be called again.
func (s *Stream) Flush() {
	if s.rounds == 0 {
		return
	}
	for _, ln := range s.lanes {
		if ln.delayer == nil {
			continue
		}
		start := time.Now()
		// A label refused here has left the queue: go on with the next.
		for {
			err := ln.delayer.Flush(func(o model.Result) { ln.observe(s.cfg, s.lastRound, o) })
			if err == nil {
				break
			}
			ln.fail(err)
		}
		ln.elapsed += time.Since(start)
	}
}

// classCheck refuses, once for all lanes, a label that a many-class model
// cannot take: a new class beyond MaxClasses (auto) or one outside the
// given list, as the model itself would. It returns the codec reason, or "".
// With labels that come late the model takes a class when the label
// comes, not with its record, so each lane's model decides alone.
func (s *Stream) classCheck(r *Record) string {
	mc := s.cfg.Model
	if len(mc.Classes) == 0 || r.Label == "" || s.classes[r.Label] || s.cfg.Delay > 0 || mc.Delayed != nil {
		return ""
	}
	if mc.Classes[0] != model.Auto {
		return string(codec.ReasonBadLabel)
	}
	if limit := cmp.Or(mc.MaxClasses, model.DefaultMaxClasses); len(s.classes) >= limit {
		return string(codec.ReasonTooManyClasses)
	}
	s.classes[r.Label] = true
	return ""
}

// Rounds is the number of records played so far.
func (s *Stream) Rounds() int64 { return s.rounds }

// lane is one learner's run over the stream.
type lane struct {
	spec string
	seed uint64
	m    *model.Model
	// failed counts records the model refused although the stream took
	// them (it checks what all lanes share; this stays 0 unless labels
	// come late, when only the model can tell).
	failed map[string]int64
	// delayer holds labels back (Config.Delay); labels counts what became
	// of held records and late labels (a model with a pending store).
	delayer *model.Delayer
	labels  *DelayedLabels
	// champions are an auto learner's changes of configuration.
	champions []ChampionChange
	changes   int // all of them, champions the first maxChampions

	segments []SegmentStats

	// Recovery: the pre-shift level and the last RecoveryWindow labeled
	// post-shift mistakes (a ring once full).
	recovery []Recovery
	post     prequential.Window
	waiting  bool // the last shift's recovery is still open

	dets     []drift.Detector
	detected [][]int64

	trace    []TracePoint
	traceCap int
	stride   int64

	elapsed time.Duration
}

func (ln *lane) startSegment(round, offset int64, segment int) {
	ln.segments = append(ln.segments, SegmentStats{StartRound: round, StartOffset: offset, Segment: segment})
}

func (ln *lane) play(cfg Config, base int64, recs []Record, marks []bool) {
	start := time.Now()
	for i := range recs {
		r := &recs[i]
		round := base + int64(i)
		if marks[i] {
			ln.shift(round, r)
		}
		if i == 0 && round == 0 {
			ln.segments[0].StartOffset, ln.segments[0].Segment = r.Offset, r.Segment
		}
		// A record may give several results: its own, then the labels it
		// lets through (Config.Delay).
		played := false
		err := ln.step(r, func(o model.Result) {
			if !played {
				played = true
				ln.segments[len(ln.segments)-1].Rounds++
			}
			ln.observe(cfg, round, o)
		})
		if err != nil {
			ln.fail(err)
		}
		if played && round%ln.stride == 0 {
			ln.sample(round, r.Offset)
		}
	}
	ln.elapsed += time.Since(start)
}

// maxChampions bounds the changes of champion a lane keeps for its report.
const maxChampions = 1000

// observe counts one result at round.
func (ln *lane) observe(cfg Config, round int64, o model.Result) {
	if o.SearchTo != "" {
		ln.changes++
		if len(ln.champions) < maxChampions {
			ch := o.SearchChange
			ln.champions = append(ln.champions, ChampionChange{Round: round, From: ch.From(), Name: o.SearchTo, Why: ch.Why})
		}
	}
	if ln.labels != nil {
		switch {
		case o.Held:
			ln.labels.Held++
		case o.Late:
			ln.labels.Late++
		}
	}
	if !o.Labeled {
		return
	}
	seg := &ln.segments[len(ln.segments)-1]
	seg.Labeled++
	if o.Mistake {
		seg.Mistakes++
	}
	ln.observePost(cfg, round, o.Mistake)
	for d, det := range ln.dets {
		if det.Add(o.Mistake) {
			ln.detected[d] = append(ln.detected[d], round)
		}
	}
}

// fail counts a refusal by its codec reason: label refusals (a label
// whose record is not held) apart, as the service counts its orphan
// labels.
func (ln *lane) fail(err error) {
	reason := "internal"
	var ce *codec.Error
	if errors.As(err, &ce) {
		reason = string(ce.Reason)
	}
	if ln.labels != nil && labelRefusal[codec.Reason(reason)] {
		if ln.labels.Refused == nil {
			ln.labels.Refused = map[string]int64{}
		}
		ln.labels.Refused[reason]++
		return
	}
	if ln.failed == nil {
		ln.failed = map[string]int64{}
	}
	ln.failed[reason]++
}

// labelRefusal are the reasons a label message is refused for.
var labelRefusal = map[codec.Reason]bool{codec.ReasonLabelUnknown: true, codec.ReasonLabelExpired: true,
	codec.ReasonLabelEvicted: true, codec.ReasonLabelNoKey: true}

// binaryToken is the label token of a binary target, for StepVector.
var binaryToken = map[int][]byte{1: []byte("1"), -1: []byte("-1")}

// step plays one record through the lane's model, giving f each result.
func (ln *lane) step(r *Record, f func(model.Result)) error {
	token := binaryToken[r.Y]
	if ln.m.Multi() {
		token = []byte(r.Label)
	}
	if ln.delayer != nil {
		if r.Value != nil {
			return ln.delayer.Step(r.Value, f)
		}
		return ln.delayer.StepVector(r.X, token, f)
	}
	var o model.Result
	var err error
	if r.Value != nil {
		// StepAt is Step for a model without delayed labels.
		o, err = ln.m.StepAt(r.Value, model.At{Key: r.Key, Time: r.Time, Offset: r.Offset})
	} else {
		o, err = ln.m.StepVector(r.X, token)
	}
	if err != nil {
		return err
	}
	f(o)
	return nil
}

// shift closes the current segment and opens the recovery watch.
func (ln *lane) shift(round int64, r *Record) {
	ln.startSegment(round, r.Offset, r.Segment)
	pre := math.NaN()
	if ev := ln.m.Eval(); ev.Labeled > 0 {
		pre = ev.WindowRate()
	}
	ln.recovery = append(ln.recovery, Recovery{ShiftRound: round, PreRate: pre})
	ln.post.Reset()
	ln.waiting = !math.IsNaN(pre)
}

func (ln *lane) observePost(cfg Config, round int64, mistake bool) {
	if !ln.waiting {
		return
	}
	first := !ln.post.Full() // the window may fill with this round
	ln.post.Add(mistake)
	if !ln.post.Full() {
		return
	}
	rec := &ln.recovery[len(ln.recovery)-1]
	if ln.post.Rate() <= rec.PreRate+cfg.Tolerance {
		n := round - rec.ShiftRound + 1
		rec.Records, rec.AtMost = &n, first
		ln.waiting = false
	}
}

func (ln *lane) sample(round, offset int64) {
	if len(ln.trace) == ln.traceCap {
		// Keep every other sample and sample half as often from now on, so
		// the trace stays evenly spaced and bounded however long the stream.
		kept := ln.trace[:0]
		for i, p := range ln.trace {
			if i%2 == 0 {
				kept = append(kept, p)
			}
		}
		ln.trace = kept
		ln.stride *= 2
		if round%ln.stride != 0 {
			return
		}
	}
	ev := ln.m.Eval()
	ln.trace = append(ln.trace, TracePoint{Round: round, Offset: offset,
		WindowRate: ev.WindowRate(), MistakeRate: ev.MistakeRate(), Support: ln.m.Support()})
}
