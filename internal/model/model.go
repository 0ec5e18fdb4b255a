// Package model is the per-partition model (docs/architecture.md §6) that run, replay
// and eval share: bytes → codec → features → classifier(s) → evaluator, in
// one value with one snapshot.
//
// # The rules up front
//
//   - Input. A message is either a record ({"label":…,"features":{…}} or a
//     LIBSVM line: an indexed vector, decoded by codec.Decode with
//     Config.Limits) or, with Config.Events set, a named-field event
//     (codec.EventDecoder, then features.Featurizer: hashing, text, the
//     optional online scaler). StepVector takes an already decoded indexed
//     vector and its label token.
//   - Classes. In binary mode (Config.Classes empty) the label token goes
//     through Config.Labels (codec.LabelMap) to +1/−1, exactly as the
//     service maps it today; a label in neither list (--positive with
//     --negative) is refused with codec.Unlisted (bad_label), as a label
//     outside a given class list is: the record is not part of the
//     problem the lists define. In many-class mode (Config.Classes = ["auto"] or a list of
//     class tokens) the model is one-vs-rest: one binary learner per class
//     on the same vector, learning +1 for its class and −1 for the others,
//     each with the learner spec's own budget. Classes are indexed in the
//     order first seen (a given list: its order); the prediction is the
//     class with the largest margin, ties to the lowest index (the first
//     seen). With "auto", a label not seen before becomes a new class
//     after the round's prediction (so it is never predicted on the round
//     that introduces it), up to Config.MaxClasses; one more is refused
//     with codec reason too_many_classes and changes nothing. With a given
//     list, a label outside it is refused with bad_label (codec.Unlisted).
//   - Mistakes follow prequential's reporting rule: binary prediction =
//     sign(margin) with sign(0) = −1; many-class prediction = argmax.
//   - Determinism. Given the same Config and the same messages in the same
//     order, the outputs (margins, predictions, evaluator) are bit for bit
//     the same on every machine. The binary learner is seeded with
//     Config.Seed itself (the service's seed for the partition, so that
//     margins equal those of today's learner); class k's learner with
//     ClassSeed(Seed, k).
//   - Challengers. Config.Challengers adds learners beside Config.Learner
//     (candidate 0), each with its own kernel if it names one. Every
//     candidate predicts, then learns, every record — its own binary
//     learner, or its own one-vs-rest set over the shared class list —
//     seeded exactly as a model of that learner alone (Config.Seed, class
//     k ClassSeed(Seed, k)): candidates differ in spec or kernel (the same
//     one twice is refused), so they need no seeds of their own, and each
//     candidate's margins and evaluator are those of a model without
//     challengers of its learner and kernel. The emitted prediction
//     (Result, Eval) is the champion's; which candidate is champion is
//     package selection's rule, fed after each labeled record with a bit
//     per candidate that erred by the reporting rule; a switch takes
//     effect from the next record. Result names the candidate and reports
//     each candidate's mistake and the switch. A record refused by one
//     candidate's margin (not its kernel: that is checked for all first)
//     may leave the candidates before it learned, as a class learner's
//     does in many-class mode.
//   - Delayed labels. With Config.Delayed, a label may come after its
//     record (StepAt): a record with a key and no label is predicted at
//     once and held in a bounded pending store (package pending) with the
//     prediction emitted; a label message — a key and a label, no feature
//     (an event with no feature field, a JSON record without "features",
//     a LIBSVM line of a label alone) — takes its record from the store,
//     every learner learns it on the model as it is then, and the
//     evaluators score the prediction emitted when the record came
//     (prequential.Evaluator.Late: a round counts when predicted, its
//     label when it comes). Labels without a held record are refused
//     (label_unknown, label_expired, label_evicted, label_without_key)
//     and change nothing. A record that carries its label is learned at
//     once. Hold and Resolve play a labeled stream with its labels held
//     back, as eval --delay and replay --delay do; revealed at once, they
//     give exactly Step's margins and evaluators.
//   - Snapshot. MarshalBinary holds everything stateful — the configuration,
//     the featurizer (scaler statistics), the class list, every learner and
//     the evaluator, with challengers every candidate's evaluator and the
//     selector — versioned and ending with a CRC-32C (a model without
//     challengers writes format 1, byte for byte as before challengers
//     existed; with them, format 2); Unmarshal
//     restores a model that continues with bit-identical outputs. A
//     snapshot of another version is refused with an error naming it.
//   - Memory. A Model is not safe for concurrent use; give each partition
//     its own. Result.Margins and Result.Key point into the model's buffers
//     and are valid until the next call. Once its buffers have grown, a
//     Step on an event allocates nothing but what the learners allocate
//     (a learner at its budget allocates nothing either).
//
// # Wiring a consumer
//
// One Model per partition, built with New (seed: the service's seed for the
// partition) or restored with Unmarshal. For each message: r, err :=
// m.Step(value); an error is a dead letter whose reason is the
// *codec.Error's (errors.As), and the model is unchanged; otherwise r has
// the prediction (r.Predicted, r.Class, r.Margin, r.Margins), whether it
// was learned (r.Labeled) and a mistake (r.Mistake), and r.Key. m.Eval() is
// the partition's evaluator (mistake rates, baseline, kappa, confusion) and
// m.Support() its support-set size, for metrics. With challengers,
// r.Candidate and r.Learner name the learner behind the prediction,
// r.Switched (r.From, r.To) a champion change, r.Mistakes each candidate's
// mistake; m.CandidateEval(i), m.CandidateSupport(i), m.CandidateName(i)
// and m.Selector() (windowed rates, switches) are the per-learner metrics. At a checkpoint, store
// m.MarshalBinary() (it holds the evaluator too); to continue, Unmarshal
// it. eval and replay drive the same type, so their numbers are the
// service's by construction.
package model

import (
	"cmp"
	"encoding"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/internal/pending"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/autolearn"
	"github.com/streamlearner/streamlearner/learners/prequential"
	"github.com/streamlearner/streamlearner/learners/rng"
	"github.com/streamlearner/streamlearner/learners/selection"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

// DefaultMaxClasses bounds the classes of "auto" discovery when
// Config.MaxClasses is 0: room for the usual many-class sets (26 letters,
// 100-way benchmarks) while a stream whose label field holds ids fails
// fast instead of growing a learner per record.
const DefaultMaxClasses = 100

// Auto is the Config.Classes entry for classes discovered online.
const Auto = "auto"

// Config says what a model is. Zero values take the documented defaults.
type Config struct {
	// Learner is the learner spec, e.g. "rbp:budget=100"; required.
	Learner string
	// Kernel is the learners' kernel.
	Kernel learners.Kernel
	// Seed seeds randomized learners (see the package comment).
	Seed uint64
	// Limits bound a record (not an event) as codec.Decode reads it.
	Limits codec.Limits
	// Events reads named-field events instead of records.
	Events bool
	// Event and Features say how events are read and featurized (Events
	// only).
	Event    codec.EventConfig
	Features features.Config
	// Format is how events are written: plain JSON (the zero value), or
	// framed in the Confluent wire format (Avro, Protobuf, JSON Schema),
	// their schemas from Schemas, which must not block (the caller fetches
	// a record's schema before stepping it). Events only.
	Format  codec.Format
	Schemas codec.SchemaSource
	// Labels maps label tokens to +1/−1 in binary mode.
	Labels codec.LabelMap
	// LabelRequired refuses (ReasonMissingLabel) a record without a
	// label while the model has learned from none: a stream whose records
	// all lack the label field (a misspelled --label-field) has nothing to
	// learn, and an empty model's predictions would mean nothing. Once a
	// label has been learned, unlabeled records are predicted as usual.
	// Not with Delayed, whose records come without their labels. Default
	// false (eval and replay score such a stream as it is).
	LabelRequired bool
	// Classes selects many-class one-vs-rest: {"auto"} discovers classes
	// online, a list fixes them in its order. Empty: binary.
	Classes []string
	// MaxClasses bounds auto discovery. Default DefaultMaxClasses (100).
	MaxClasses int
	// Window is the evaluator's window. Default prequential.DefaultWindow.
	Window int
	// Challengers are further learners run beside Learner (candidate 0) on
	// every record; with any, the emitted prediction is the champion's
	// (see Select and the package comment). Empty: one learner, exactly
	// the model without challengers. At most selection.MaxLearners − 1.
	Challengers []Candidate
	// Select is the champion rule (window, margin, detector); used only
	// with challengers. Zero values take selection's defaults.
	Select selection.Config
	// Delayed, if set, lets labels come after their records (see the
	// package comment, "Delayed labels"): records awaiting a label wait in
	// a pending store bounded as it says. Nil (default): a label comes
	// with its record or not at all.
	Delayed *pending.Config
}

// Candidate is a challenger: a learner spec and its kernel (the zero
// Kernel means Config.Kernel, so that a challenger may differ in the
// learner, the kernel or both).
type Candidate struct {
	Learner string
	Kernel  learners.Kernel
}

// Result is what one step did.
type Result struct {
	// Labeled is whether the message carried a label that was learned.
	Labeled bool
	// Label is the true class: ±1 in binary mode, the class index in
	// many-class mode; 0 (binary) or −1 (many-class) when not labeled.
	Label int
	// Predicted is ±1 in binary mode, the predicted class index in
	// many-class mode (−1 before any class is known).
	Predicted int
	// Class is the predicted class token in many-class mode ("" otherwise
	// or with no prediction).
	Class string
	// Margin is f(x) in binary mode, the predicted class's margin in
	// many-class mode; computed before learning.
	Margin float64
	// Margins are the per-class margins in many-class mode (nil in binary
	// mode), in class index order; valid until the next call.
	Margins []float64
	// Mistake is the reporting rule's verdict (false when not labeled).
	Mistake bool
	// Updated is whether any learner changed.
	Updated bool
	// Key is the event's key (nil for records or without one); valid until
	// the next call.
	Key []byte
	// Candidate is the index of the learner whose prediction this is (0,
	// Config.Learner, without challengers) and Learner its name, "spec
	// kernel=K" (see Model.CandidateName).
	Candidate int
	Learner   string
	// Mistakes has bit i set when candidate i erred on this labeled record
	// (by the reporting rule, each on its own prediction); 0 when not
	// labeled.
	Mistakes uint64
	// Switched is whether the champion changed after this record, From and
	// To the champions before and after it (both Candidate when not).
	Switched bool
	From, To int
	// SearchFrom and SearchTo are set when the emitting learner searches
	// configurations itself ("auto"; in many-class mode the classes'
	// shared search) and chose another after this record: the
	// configurations before and after (see Model.SearchChampion).
	SearchFrom, SearchTo string
	// SearchChange is that change as the search recorded it: the labeled
	// record from which SearchTo is champion (From) and what decided it.
	SearchChange autolearn.Change
	// SearchReopened is set when that search reopened after this record,
	// at a rise of its mistake rate (auto's drift=).
	SearchReopened bool

	// Delayed labels (Config.Delayed). Held: the record had a key and no
	// label; it was predicted (the prediction above) and waits in the
	// pending store for its label. Late: the message was a label for an
	// earlier record, now learned; Predicted, Class, Margin and Mistake
	// are that record's emitted prediction scored against the label,
	// LateOffset and Delay the record's offset and how long the label took
	// (message time − record time). Expired is how many records this
	// message's time expired from the store.
	Held       bool
	Late       bool
	LateOffset int64
	Delay      int64
	Expired    int
}

// ParseCandidate reads a challenger as flags give it: "SPEC" (the model's
// kernel) or "SPEC@KERNEL", e.g. "rbp:budget=100@rbf:gamma=0.5".
func ParseCandidate(s string) (Candidate, error) {
	spec, kern, ok := strings.Cut(s, "@")
	if spec == "" {
		return Candidate{}, fmt.Errorf("challenger %q: want SPEC or SPEC@KERNEL", s)
	}
	if _, err := learners.ParseSpec(spec); err != nil {
		return Candidate{}, fmt.Errorf("challenger %q: %w", s, err)
	}
	c := Candidate{Learner: spec}
	if ok {
		k, err := learners.ParseKernel(kern)
		if err != nil {
			return Candidate{}, fmt.Errorf("challenger %q: %w", s, err)
		}
		c.Kernel = k
	}
	return c, nil
}

// Model is one partition's model. See the package comment.
type Model struct {
	cfg   Config
	multi bool
	auto  bool
	spec  string // canonical learner spec of candidate 0
	// cands are the learners: cands[0] is Config.Learner, then the
	// challengers in order. Each holds its one-vs-rest set (or its binary
	// learner) and, with challengers, its own evaluator.
	cands []*candidate
	sel   *selection.Selector // nil without challengers
	class []string
	index map[string]int
	dec   eventDecoder
	feat  *features.Featurizer
	ev    codec.Event
	// lim is Config.Limits, accepting label-only records when delayed.
	lim codec.Limits
	// rec decodes records (not events) into storage it reuses at the
	// next record: nothing keeps a decoded vector past the step (the
	// learners and the pending store copy what they keep).
	rec  *codec.Decoder
	pend *pending.Store // nil unless Config.Delayed
	// eval scores the emitted predictions (the champion's).
	eval prequential.Evaluator
}

// candidate is one learner of the model (a one-vs-rest set in many-class
// mode).
type candidate struct {
	given  string // the spec as configured
	spec   string // canonical
	name   string // spec + " kernel=" + kernel
	kernel learners.Kernel
	ls     []learners.Learner
	margin []float64             // many-class: this round's margins
	eval   prequential.Evaluator // with challengers only

	// searched and chose are a searching learner's changes of champion
	// and champion as last reported, reopened its reopenings (see
	// searcher).
	searched uint64
	chose    string
	reopened uint64

	// This round's outcome (see play).
	f       float64 // margin (binary) or the predicted class's
	pred    int
	updated bool
	mistake bool
}

// ClassSeed is the seed of class k's learner in many-class mode.
func ClassSeed(seed uint64, k int) uint64 { return rng.New(seed, streamClass+uint64(k)).Uint64() }

const streamClass = 0x636c617373000000 // "class"

// New checks cfg and builds an empty model.
func New(cfg Config) (*Model, error) {
	if cfg.Learner == "" {
		return nil, errors.New("model: a learner spec is needed")
	}
	if cfg.MaxClasses == 0 {
		cfg.MaxClasses = DefaultMaxClasses
	}
	if cfg.MaxClasses < 2 {
		return nil, fmt.Errorf("model: max classes %d: want at least 2", cfg.MaxClasses)
	}
	m := &Model{cfg: cfg, index: map[string]int{}, eval: prequential.Evaluator{Window: cfg.Window}, lim: cfg.Limits}
	if cfg.Delayed != nil {
		var err error
		if m.pend, err = pending.New(*cfg.Delayed); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
		d := m.pend.Config()
		m.cfg.Delayed = &d
		m.lim.LabelOnly = true
	}
	if err := m.buildCandidates(); err != nil {
		return nil, err
	}
	m.spec = m.cands[0].spec
	switch {
	case len(cfg.Classes) == 0:
		if len(cfg.Labels.Positive) == 0 && len(cfg.Labels.Negative) > 0 {
			return nil, errors.New("model: negative labels need positive ones")
		}
	case len(cfg.Classes) == 1 && cfg.Classes[0] == Auto:
		m.multi, m.auto = true, true
	default:
		m.multi = true
		if len(cfg.Classes) < 2 {
			return nil, fmt.Errorf("model: classes %q: give at least two, or auto", cfg.Classes)
		}
		if len(cfg.Labels.Positive) > 0 {
			return nil, errors.New("model: positive labels are for binary mode, not with classes")
		}
	}
	if m.multi {
		for _, c := range m.cands {
			c.ls = c.ls[:0] // one learner per class instead
		}
	}
	if m.multi && !m.auto {
		for _, c := range cfg.Classes {
			if c == "" || c == Auto {
				return nil, fmt.Errorf("model: class %q is not a class token", c)
			}
			tok, err := codec.CanonicalLabel(c)
			if err != nil {
				return nil, fmt.Errorf("model: class %q: %w", c, err)
			}
			if _, dup := m.index[tok]; dup {
				return nil, fmt.Errorf("model: class %q given twice", c)
			}
			if err := m.addClass(tok); err != nil {
				return nil, err
			}
		}
	}
	if cfg.Events {
		if cfg.Features.Scale == features.ScaleOnline {
			// The scaler maps a field's first value (and any before it has
			// a spread) to 0: an event that comes out empty is still a round.
			cfg.Features.AllowEmpty = true
			m.cfg.Features.AllowEmpty = true
		}
		if err := m.ReadAs(cfg.Format, cfg.Schemas); err != nil {
			return nil, err
		}
		var err error
		if m.feat, err = features.New(cfg.Features); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
	}
	m.initSearch()
	return m, nil
}

// ReadAs makes an event model read its messages in format f, their
// schemas from src. A snapshot does not say how the records were written:
// the same values give the same features in every format, so a model may
// go on from a JSON topic to an Avro one; whoever restores a model gives it
// the format of the configuration it serves.
func (m *Model) ReadAs(f codec.Format, src codec.SchemaSource) error {
	if !m.cfg.Events {
		if f.Framed() {
			return fmt.Errorf("model: format %s is for events, not records", f)
		}
		return nil
	}
	// The record limits (--max-record-bytes, --max-nonzeros,
	// --max-abs-value) bound events as they bound records.
	ec := m.cfg.Event
	ec.Limits = m.cfg.Limits
	// A model saved under the featurization rules before the typing rule
	// reads strings as it learned them.
	ec.StringsAsText = m.cfg.Features.Rules == features.RulesSpelled
	var dec eventDecoder
	var err error
	if f.Framed() {
		dec, err = codec.NewFramedDecoder(ec, f, src)
	} else {
		dec, err = codec.NewEventDecoder(ec)
	}
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	m.dec, m.cfg.Format, m.cfg.Schemas = dec, f, src
	return nil
}

// eventDecoder reads one message into an event: codec.EventDecoder (JSON)
// or codec.FramedDecoder (the wire format).
type eventDecoder interface {
	Decode(b []byte, ev *codec.Event) error
}

// buildCandidates makes candidate 0 (Config.Learner) and the challengers,
// each with its binary learner, and the selector.
func (m *Model) buildCandidates() error {
	cfg := m.cfg
	if n := 1 + len(cfg.Challengers); n > selection.MaxLearners {
		return fmt.Errorf("model: %d learners: at most %d (one and %d challengers)", n, selection.MaxLearners, selection.MaxLearners-1)
	}
	all := append([]Candidate{{Learner: cfg.Learner, Kernel: cfg.Kernel}}, cfg.Challengers...)
	seen := map[string]bool{}
	for i, cd := range all {
		if cd.Learner == "" {
			return fmt.Errorf("model: challenger %d has no learner spec", i)
		}
		if cd.Kernel == (learners.Kernel{}) {
			cd.Kernel = cfg.Kernel
		}
		l, err := learners.New(cd.Learner, cd.Kernel, cfg.Seed)
		if err != nil {
			if i == 0 {
				return fmt.Errorf("model: %w", err)
			}
			return fmt.Errorf("model: challenger %q: %w", cd.Learner, err)
		}
		c := &candidate{given: cd.Learner, spec: l.Spec(), kernel: cd.Kernel, ls: []learners.Learner{l},
			eval: prequential.Evaluator{Window: cfg.Window}}
		c.name = c.spec + " kernel=" + c.kernel.String()
		if seen[c.name] {
			return fmt.Errorf("model: learner %s given twice", c.name)
		}
		seen[c.name] = true
		m.cands = append(m.cands, c)
	}
	if len(m.cands) > 1 {
		sel, err := selection.New(cfg.Select, len(m.cands))
		if err != nil {
			return fmt.Errorf("model: %w", err)
		}
		m.sel = sel
	}
	return nil
}

// addClass adds class tok: a learner for it in every candidate, class k's
// seeded ClassSeed(Seed, k) whatever the candidate.
func (m *Model) addClass(tok string) error {
	k := len(m.class)
	for _, c := range m.cands {
		l, err := learners.New(c.given, c.kernel, ClassSeed(m.cfg.Seed, k))
		if err != nil {
			return fmt.Errorf("model: %w", err)
		}
		c.ls = append(c.ls, l)
		c.margin = append(c.margin, 0)
		// A many-class model's "auto" learners search as one (their
		// margins must compare): the new class joins the others' search.
		if err := autolearn.Group(c.ls); err != nil {
			return fmt.Errorf("model: %w", err)
		}
	}
	m.class = append(m.class, tok)
	m.index[tok] = k
	if k == 0 {
		m.initSearch()
	}
	return nil
}

// Step decodes one message, predicts, learns from its label and updates
// the evaluator. A message that cannot be decoded, or whose label cannot be
// taken, is an error (a *codec.Error, with its reason) and changes nothing.
func (m *Model) Step(b []byte) (Result, error) {
	if m.pend != nil {
		return m.StepAt(b, At{})
	}
	x, label, key, _, err := m.decode(b)
	if err != nil {
		return Result{}, m.undo(err)
	}
	if m.cfg.LabelRequired && len(label) == 0 && m.eval.Labeled == 0 {
		return Result{}, m.undo(m.missingLabel())
	}
	r, err := m.step(x, label, true)
	r.Key = key
	return r, m.undo(err)
}

// ReasonMissingLabel is the refusal of Config.LabelRequired.
const ReasonMissingLabel codec.Reason = "missing_label"

// missingLabel is the error of a record refused under LabelRequired: it
// names the label field and, for an event, the fields it has.
func (m *Model) missingLabel() error {
	if !m.cfg.Events {
		return &codec.Error{Reason: ReasonMissingLabel, Detail: "the record has no label, and nothing has been learned yet"}
	}
	var names []string
	for _, f := range m.ev.Fields[:min(len(m.ev.Fields), 20)] {
		names = append(names, string(m.ev.Name(f)))
	}
	if len(m.ev.Fields) > 20 {
		names = append(names, "…")
	}
	return &codec.Error{Reason: ReasonMissingLabel, Detail: fmt.Sprintf("the record has no label field %q (its fields: %s), and nothing has been learned yet: set --label-field to the field that holds the label",
		cmp.Or(m.cfg.Event.LabelField, codec.DefaultLabelField), strings.Join(names, ", "))}
}

// undo, when err is not nil, takes back what decoding the refused message
// changed (the online scaler's statistics): a dead-lettered record leaves
// the model exactly as it was. It returns err.
func (m *Model) undo(err error) error {
	if err != nil && m.feat != nil {
		m.feat.Rollback()
	}
	return err
}

// StepVector is Step for an already decoded indexed record: x and its
// canonical label token ("" when unlabeled). It is not for event models.
func (m *Model) StepVector(x sparse.Vector, label []byte) (Result, error) {
	if m.cfg.Events {
		return Result{}, errors.New("model: StepVector on an event model")
	}
	return m.step(x, label, true)
}

// Predict is Step without learning: nothing in the model changes (the
// scaler scales with its statistics and does not update them); Result says
// whether the prediction was a mistake. For test sets.
func (m *Model) Predict(b []byte) (Result, error) {
	if m.feat != nil {
		m.feat.Freeze(true)
		defer m.feat.Freeze(false)
	}
	x, label, key, labelOnly, err := m.decode(b)
	if err != nil {
		return Result{}, err
	}
	if labelOnly {
		return Result{}, errLabelOnly
	}
	r, err := m.step(x, label, false)
	r.Key = key
	return r, err
}

// PredictVector is Predict for an indexed record.
func (m *Model) PredictVector(x sparse.Vector, label []byte) (Result, error) {
	return m.step(x, label, false)
}

// decode reads a message: its vector, label token and key (events), and
// whether it is a label message (no feature; delayed labels only), for
// which x is empty and the featurizer has not seen it.
func (m *Model) decode(b []byte) (x sparse.Vector, label, key []byte, labelOnly bool, err error) {
	if m.feat != nil {
		m.feat.Commit() // the last message's scaling stands; a refusal of this one undoes only its own
	}
	if !m.cfg.Events {
		if m.rec == nil {
			m.rec = codec.NewRecordDecoder(m.lim)
		}
		m.rec.Reset()
		ex, err := m.rec.Decode(b)
		if err != nil {
			return sparse.Vector{}, nil, nil, false, err
		}
		// The label's bytes are only read (a new class's name is copied
		// where it is kept), so they can be the string's own: a copy cost
		// an allocation a record.
		return ex.X, unsafe.Slice(unsafe.StringData(ex.Label), len(ex.Label)), nil, ex.LabelOnly, nil
	}
	if err := m.dec.Decode(b, &m.ev); err != nil {
		return sparse.Vector{}, nil, nil, false, err
	}
	if m.pend != nil && len(m.ev.Fields) == 0 {
		return sparse.Vector{}, m.ev.Label(), m.ev.Key(), true, nil
	}
	if x, err = m.feat.Vector(&m.ev); err != nil {
		return sparse.Vector{}, nil, nil, false, err
	}
	return x, m.ev.Label(), m.ev.Key(), false, nil
}

// target resolves a label token: y for binary mode, the class index for
// many-class mode (−1: unlabeled), and whether the class is new (auto).
func (m *Model) target(label []byte) (y int, isNew bool, err error) {
	if !m.multi {
		if len(label) == 0 {
			return 0, false, nil
		}
		y, keep, err := m.cfg.Labels.Map(string(label))
		if err != nil {
			return 0, false, err
		}
		if !keep {
			return 0, false, m.cfg.Labels.Unlisted(string(label))
		}
		return y, false, nil
	}
	if len(label) == 0 {
		return -1, false, nil
	}
	if k, ok := m.index[string(label)]; ok {
		return k, false, nil
	}
	if !m.auto {
		return 0, false, codec.Unlisted(fmt.Sprintf("label %q is not one of the classes %s", label, strings.Join(m.class, ",")))
	}
	if len(m.class) >= m.cfg.MaxClasses {
		return 0, false, &codec.Error{Reason: codec.ReasonTooManyClasses, Detail: fmt.Sprintf("label %q would be class %d; the limit is %d", label, len(m.class)+1, m.cfg.MaxClasses)}
	}
	return len(m.class), true, nil
}

func (m *Model) step(x sparse.Vector, label []byte, learn bool) (Result, error) {
	y, isNew, err := m.target(label)
	if err != nil {
		return Result{}, err
	}
	for _, c := range m.cands {
		if why := c.kernel.Refuses(x); why != "" {
			return Result{}, refused(why)
		}
	}
	champ := 0
	if m.sel != nil {
		champ = m.sel.Champion()
	}
	labeled := y != 0
	if m.multi {
		labeled = y >= 0
	}
	updated, err := m.playAll(x, y, isNew, label, learn)
	if err != nil {
		return Result{}, err
	}
	return m.settle(champ, y, labeled, updated, isNew && learn, learn, false), nil
}

// playAll is every candidate's round on x with target y: each predicts
// among the classes known before this round, then (learn) learns; a new
// class (isNew, its token label) is added after the predictions, its
// learners learning x as theirs. A refused margin (the kernel check
// passed, so only a non-finite margin) leaves the candidates before it
// learned.
func (m *Model) playAll(x sparse.Vector, y int, isNew bool, label []byte, learn bool) (updated bool, err error) {
	for _, c := range m.cands {
		if err := c.play(x, y, m.multi, learn); err != nil {
			return false, err
		}
		updated = updated || c.updated
	}
	if learn && isNew {
		if err := m.addClass(string(label)); err != nil {
			return false, err
		}
		for _, c := range m.cands {
			o := c.ls[y].Round(x, 1)
			c.updated = c.updated || o.Updated
			updated = updated || o.Updated
		}
	}
	if learn && m.multi {
		known := len(m.class)
		if isNew {
			known-- // the new class predicted nothing this round
		}
		for _, c := range m.cands {
			if err := autolearn.Settle(c.ls, known, x, y); err != nil {
				return false, fmt.Errorf("model: %w", err)
			}
		}
	}
	return updated, nil
}

// settle scores the round's predictions (each candidate's pred and f) and,
// when learning, feeds the evaluators and the selector; late says the
// label came after its round (Evaluator.Late), newClass that the label
// added its class this round.
func (m *Model) settle(champ, y int, labeled, updated, newClass, learn, late bool) Result {
	var mistakes uint64
	for i, c := range m.cands {
		c.mistake = labeled && (m.multi && c.pred != y || !m.multi && prequential.IsMistake(c.f, y))
		if c.mistake {
			mistakes |= 1 << i
		}
	}
	c := m.cands[champ]
	r := Result{Labeled: labeled, Label: y, Predicted: c.pred, Margin: c.f, Mistake: c.mistake, Updated: updated,
		Candidate: champ, Learner: c.name, Mistakes: mistakes, From: champ, To: champ}
	if m.multi {
		if !late {
			r.Margins = c.margin
			if newClass {
				r.Margins = c.margin[:len(c.margin)-1]
			}
		}
		if r.Predicted >= 0 {
			r.Class = m.class[r.Predicted]
		}
	}
	if !learn {
		return r
	}
	support := m.Support()
	record := func(ev *prequential.Evaluator, pred int, f float64, updated bool, support int) {
		switch {
		case late && m.multi:
			ev.Late(pred, y, updated, support)
		case late:
			ev.LateBinary(f, y, updated, support)
		case m.multi:
			ev.Class(pred, y, updated, support)
		default:
			ev.Binary(f, y, updated, support)
		}
	}
	record(&m.eval, r.Predicted, r.Margin, updated, support)
	if s := m.searcher(champ); s != nil {
		if s.Switches() != c.searched {
			r.SearchFrom, r.SearchTo, r.SearchChange = c.chose, s.Champion(), s.LastChange()
			c.searched, c.chose = s.Switches(), r.SearchTo
		}
		if s.Reopens() != c.reopened {
			r.SearchReopened, c.reopened = true, s.Reopens()
		}
	}
	if m.sel == nil {
		return r
	}
	for _, c := range m.cands {
		record(&c.eval, c.pred, c.f, c.updated, c.support())
	}
	if labeled {
		r.To, r.Switched = m.sel.Observe(mistakes)
	}
	return r
}

// searcher is a learner that chooses among configurations itself
// (package autolearn's "auto"): the model reports its changes of champion
// and its reopenings.
type searcher interface {
	Champion() string
	LastChange() autolearn.Change
	Switches() uint64
	Reopens() uint64
}

// searcher is candidate i's learner when it is a searcher, or nil; in
// many-class mode the first class's, whose search the classes share
// (autolearn.Group).
func (m *Model) searcher(i int) searcher {
	if len(m.cands[i].ls) == 0 {
		return nil
	}
	s, _ := m.cands[i].ls[0].(searcher)
	return s
}

// initSearch takes the searchers' state as already reported.
func (m *Model) initSearch() {
	for i, c := range m.cands {
		if s := m.searcher(i); s != nil {
			c.searched, c.chose, c.reopened = s.Switches(), s.Champion(), s.Reopens()
		}
	}
}

// SearchChampion is the configuration the champion's learner emits when it
// searches configurations itself ("auto"), or "".
func (m *Model) SearchChampion() string {
	if s := m.searcher(m.Champion()); s != nil {
		return s.Champion()
	}
	return ""
}

// play is one candidate's round: predict (and learn), leaving the
// prediction, margin and whether it changed in c.
func (c *candidate) play(x sparse.Vector, y int, multi, learn bool) error {
	c.updated = false
	if !multi {
		l := c.ls[0]
		var o learners.Outcome
		if learn {
			o = l.Round(x, y)
		} else {
			o.Margin = l.Predict(x)
		}
		if o.Refused != "" || math.IsNaN(o.Margin) || math.IsInf(o.Margin, 0) {
			return refused(learners.RefusedMargin)
		}
		c.f, c.pred, c.updated = o.Margin, prequential.Predict(o.Margin), o.Updated
		return nil
	}
	c.pred, c.f = -1, 0
	for k, l := range c.ls {
		if learn {
			t := 0 // unlabeled: a round that predicts, as the binary learner plays it
			if y >= 0 {
				t = -1
				if k == y {
					t = 1
				}
			}
			o := l.Round(x, t)
			if o.Refused != "" {
				return refused(o.Refused)
			}
			c.margin[k] = o.Margin
			c.updated = c.updated || o.Updated
		} else {
			c.margin[k] = l.Predict(x)
		}
	}
	// An auto group that votes emits its candidates' vote over the
	// classes (docs/auto.md).
	autolearn.Vote(c.ls, x, learn, c.margin[:len(c.ls)])
	for k, f := range c.margin[:len(c.ls)] {
		if c.pred < 0 || f > c.f {
			c.pred, c.f = k, f
		}
	}
	return nil
}

func (c *candidate) support() int {
	n := 0
	for _, l := range c.ls {
		n += l.Size()
	}
	return n
}

// FromLearner builds a binary record model around a learner and its
// evaluator: how a partition's state was kept before this type held it
// (checkpoint format 1), so that such a checkpoint continues as if it had
// never been converted. cfg must describe that learner (same spec and
// kernel) with neither events, classes nor challengers.
func FromLearner(cfg Config, l learners.Learner, ev prequential.Evaluator) (*Model, error) {
	if cfg.Events || len(cfg.Classes) > 0 || len(cfg.Challengers) > 0 {
		return nil, errors.New("model: a lone learner is a binary record model; events, classes and challengers need a model snapshot")
	}
	m, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if l.Spec() != m.spec || l.Kernel() != cfg.Kernel {
		return nil, fmt.Errorf("model: learner %s with %s, configured %s with %s", l.Spec(), l.Kernel(), m.spec, cfg.Kernel)
	}
	m.cands[0].ls[0], m.eval = l, ev
	m.initSearch()
	return m, nil
}

// LearnerSpec is the canonical spec of the model's learner(s) (candidate
// 0's with challengers).
func (m *Model) LearnerSpec() string { return m.spec }

// Class is class k's token in many-class mode ("" when there is no such
// class); unlike Classes it does not copy.
func (m *Model) Class(k int) string {
	if k < 0 || k >= len(m.class) {
		return ""
	}
	return m.class[k]
}

// refused is the error of a record no learner may play: its values
// overflow the kernel, or a margin is not finite. Nothing entered a model.
func refused(why string) error {
	return &codec.Error{Reason: codec.Reason(why), Detail: "the record's values overflow the kernel (k(x,x) or ‖x‖² beyond 1e100, or a non-finite margin)"}
}

// Support is the number of support vectors over all learners (every
// candidate's): what the model holds in memory in the dual form. A
// learner in primal form counts the vectors folded into its weights,
// which it does not hold (see Form).
func (m *Model) Support() int {
	n := 0
	for _, c := range m.cands {
		n += c.support()
	}
	return n
}

// FormMixed is Form's answer for a model with learners in both forms.
const FormMixed = "mixed"

// Form is learners.FormPrimal when every learner of the model (every
// class's, every candidate's) keeps a weight vector, learners.FormDual
// when none does, FormMixed otherwise; a many-class model that has met
// no class yet answers for the learners its specs will build.
func (m *Model) Form() string {
	form := ""
	for _, c := range m.cands {
		f := learners.FormDual
		if learners.Primal(c.spec, c.kernel) {
			f = learners.FormPrimal
		}
		fs := []string{f}
		for _, l := range c.ls {
			fs = append(fs, learners.Form(l))
		}
		for _, f := range fs {
			switch {
			case form == "":
				form = f
			case form != f:
				return FormMixed
			}
		}
	}
	return form
}

// Eval is the model's prequential evaluator: it scores the emitted
// predictions, the champion's (read it, do not keep it across steps).
func (m *Model) Eval() *prequential.Evaluator { return &m.eval }

// Candidates is the number of learners: 1 + the challengers.
func (m *Model) Candidates() int { return len(m.cands) }

// CandidateName is candidate i's name, "canonical-spec kernel=K", as
// Result.Learner gives it; "" when there is no such candidate.
func (m *Model) CandidateName(i int) string {
	if i < 0 || i >= len(m.cands) {
		return ""
	}
	return m.cands[i].name
}

// CandidateSpec is candidate i's canonical learner spec and its kernel.
func (m *Model) CandidateSpec(i int) (string, learners.Kernel) {
	return m.cands[i].spec, m.cands[i].kernel
}

// CandidateEval is candidate i's own evaluator: every labeled record
// scored by its prediction, emitted or not. Without challengers it is
// Eval. Read it, do not keep it across steps.
func (m *Model) CandidateEval(i int) *prequential.Evaluator {
	if m.sel == nil {
		return &m.eval
	}
	return &m.cands[i].eval
}

// CandidateSupport is candidate i's support-set size (all its classes).
func (m *Model) CandidateSupport(i int) int { return m.cands[i].support() }

// CandidateLearners are candidate i's learners: its binary learner, or
// one per class in many-class mode. For reports (an "auto" learner's
// search); stepping them would change the model.
func (m *Model) CandidateLearners(i int) []learners.Learner { return m.cands[i].ls }

// Champion is the candidate whose predictions the next record emits (0
// without challengers).
func (m *Model) Champion() int {
	if m.sel == nil {
		return 0
	}
	return m.sel.Champion()
}

// Selector is the champion rule's state (nil without challengers): its
// windowed rates and switch count. Read it; stepping it is the model's.
func (m *Model) Selector() *selection.Selector { return m.sel }

// Classes lists the class tokens in index order (nil in binary mode).
func (m *Model) Classes() []string { return slices.Clone(m.class) }

// Learners returns candidate 0's learners: the binary learner, or one per
// class.
func (m *Model) Learners() []learners.Learner { return slices.Clone(m.cands[0].ls) }

// Multi reports whether the model is many-class.
func (m *Model) Multi() bool { return m.multi }

// Featurizer is the event featurizer (nil for record models).
func (m *Model) Featurizer() *features.Featurizer { return m.feat }

// Spec describes the model in one line: learner, kernel, mode, for events
// the featurizer, and the challengers with the selection rule.
func (m *Model) Spec() string {
	s := m.spec + " kernel=" + m.cfg.Kernel.String()
	if m.multi {
		s += " classes=" + strings.Join(m.cfg.Classes, ",")
	}
	if m.cfg.Events {
		fc := m.feat.Config()
		s += fmt.Sprintf(" events hash-bits=%d scale=%s", fc.HashBits, fc.Scale)
	}
	for _, c := range m.cands[1:] {
		s += " challenger=" + c.spec + " challenger-kernel=" + c.kernel.String()
	}
	if m.sel != nil {
		sc := m.sel.Config()
		s += fmt.Sprintf(" select=window=%d,margin=%g", sc.Window, sc.Margin)
		if sc.Detector != "" {
			s += " select-detector=" + sc.Detector
		}
	}
	if d := m.cfg.Delayed; d != nil {
		s += fmt.Sprintf(" delayed-labels pending-max-records=%d pending-max-age-ms=%d", d.MaxRecords, d.MaxAge)
		// Named only when not the default, so that the models saved
		// before the byte bounds existed (default bounds) still match.
		if d.MaxBytes != pending.DefaultMaxBytes {
			s += fmt.Sprintf(" pending-max-bytes=%d", d.MaxBytes)
		}
		if d.MaxKeyBytes != pending.DefaultMaxKeyBytes {
			s += fmt.Sprintf(" pending-max-key-bytes=%d", d.MaxKeyBytes)
		}
	}
	return s
}

// Config returns the configuration the model was built with.
func (m *Model) Config() Config { return m.cfg }

// Snapshot format. Version 1 is a model without challengers (its bytes
// are those of the builds before challengers existed, and still read);
// version 2 adds, after version 1's sections, the challengers' learners,
// every candidate's evaluator and the selector; version 3 is a model with
// delayed labels: version 1's or 2's sections (as its configuration has
// challengers or not), then the pending store.
const (
	snapshotMagic   = "SLMODEL"
	snapshotVersion = 3
)

// ErrChecksum is the error for a snapshot whose bytes were damaged.
var ErrChecksum = errors.New("model snapshot: checksum mismatch")

// snapConfig is the configuration as the snapshot stores it.
type snapConfig struct {
	Learner     string                     `json:"learner"`
	Kernel      string                     `json:"kernel"`
	Seed        uint64                     `json:"seed"`
	Limits      codec.Limits               `json:"limits"`
	Events      bool                       `json:"events"`
	LabelField  string                     `json:"label_field,omitempty"`
	KeyField    string                     `json:"key_field,omitempty"`
	Ignore      []string                   `json:"ignore,omitempty"`
	Schema      map[string]codec.FieldKind `json:"schema,omitempty"`
	Positive    []string                   `json:"positive,omitempty"`
	Negative    []string                   `json:"negative,omitempty"`
	Classes     []string                   `json:"classes,omitempty"`
	MaxClasses  int                        `json:"max_classes"`
	Window      int                        `json:"window"`
	Challengers []snapCandidate            `json:"challengers,omitempty"`
	Select      *selection.Config          `json:"select,omitempty"`
	Delayed     *pending.Config            `json:"delayed,omitempty"`
}

type snapCandidate struct {
	Learner string `json:"learner"`
	Kernel  string `json:"kernel"`
}

// MarshalBinary encodes the whole model: magic, version, configuration,
// featurizer, classes, candidate 0's learners, the evaluator; with
// challengers (version 2) then their learners, every candidate's
// evaluator and the selector; last a CRC-32C.
func (m *Model) MarshalBinary() ([]byte, error) { return m.AppendBinary(nil) }

// AppendBinary appends MarshalBinary's bytes to b. The learners and the
// pending store, most of a snapshot, are encoded straight into b: a
// snapshot then costs one buffer of its size, not each section's buffer
// grown on its own (the garbage of a buffer grown by appending is up to
// four times its size) and copied.
func (m *Model) AppendBinary(b []byte) ([]byte, error) {
	start := len(b)
	c := m.cfg
	sc := snapConfig{Learner: c.Learner, Kernel: c.Kernel.String(), Seed: c.Seed, Limits: c.Limits,
		Events: c.Events, LabelField: c.Event.LabelField, KeyField: c.Event.KeyField, Ignore: c.Event.Ignore,
		Schema: c.Event.Schema, Positive: c.Labels.Positive, Negative: c.Labels.Negative, Classes: c.Classes,
		MaxClasses: c.MaxClasses, Window: c.Window}
	version := byte(1)
	if m.pend != nil {
		version = 3
		sc.Delayed = m.cfg.Delayed
	}
	if m.sel != nil {
		version = max(version, 2)
		for _, cd := range m.cands[1:] {
			sc.Challengers = append(sc.Challengers, snapCandidate{Learner: cd.given, Kernel: cd.kernel.String()})
		}
		sel := m.cfg.Select
		sc.Select = &sel
	}
	conf, err := json.Marshal(sc)
	if err != nil {
		return nil, fmt.Errorf("model snapshot: %w", err)
	}
	b = append(b, snapshotMagic...)
	b = append(b, version)
	b = appendBytes(b, conf)
	var feat []byte
	if m.feat != nil {
		if feat, err = m.feat.MarshalBinary(); err != nil {
			return nil, err
		}
	}
	b = appendBytes(b, feat)
	b = binary.AppendUvarint(b, uint64(len(m.class)))
	for _, c := range m.class {
		b = appendBytes(b, []byte(c))
	}
	if b, err = appendLearners(b, m.cands[0].ls); err != nil {
		return nil, err
	}
	if b, err = appendEval(b, &m.eval); err != nil {
		return nil, err
	}
	if m.sel != nil {
		for _, cd := range m.cands[1:] {
			if b, err = appendLearners(b, cd.ls); err != nil {
				return nil, err
			}
		}
		for _, cd := range m.cands {
			if b, err = appendEval(b, &cd.eval); err != nil {
				return nil, err
			}
		}
		s, err := m.sel.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("model snapshot: %w", err)
		}
		b = appendBytes(b, s)
	}
	if m.pend != nil {
		if b, err = learners.AppendSized(b, m.pend.AppendBinary); err != nil {
			return nil, fmt.Errorf("model snapshot: %w", err)
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli)), nil
}

func appendLearners(b []byte, ls []learners.Learner) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(ls)))
	for _, l := range ls {
		var err error
		if a, ok := l.(encoding.BinaryAppender); ok {
			b, err = learners.AppendSized(b, a.AppendBinary)
		} else {
			var s []byte
			s, err = l.MarshalBinary()
			b = appendBytes(b, s)
		}
		if err != nil {
			return nil, fmt.Errorf("model snapshot: %w", err)
		}
	}
	return b, nil
}

func appendEval(b []byte, ev *prequential.Evaluator) ([]byte, error) {
	s, err := ev.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("model snapshot: %w", err)
	}
	return appendBytes(b, s), nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("model snapshot: truncated at %s", what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(what string) []byte {
	n := r.uvarint(what)
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("model snapshot: truncated in %s", what)
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

// Unmarshal restores a model from MarshalBinary's output (format 1 or 2).
func Unmarshal(data []byte) (*Model, error) {
	r, version, err := openSnapshot(data)
	if err != nil {
		return nil, err
	}
	cfg, err := readConfig(r, version)
	if err != nil {
		return nil, err
	}
	feat := r.bytes("featurizer")
	if r.err != nil {
		return nil, r.err
	}
	if cfg.Events {
		f, err := features.Unmarshal(feat)
		if err != nil {
			return nil, fmt.Errorf("model snapshot: %w", err)
		}
		cfg.Features = f.Config()
	}
	m, err := New(cfg)
	if err != nil {
		return nil, fmt.Errorf("model snapshot: %w", err)
	}
	if cfg.Events {
		m.feat, _ = features.Unmarshal(feat)
	}
	want, err := m.readClasses(r)
	if err != nil {
		return nil, err
	}
	if err := m.cands[0].readLearners(r, want, m.multi); err != nil {
		return nil, err
	}
	if err := readEval(r, &m.eval); err != nil {
		return nil, err
	}
	if err := m.readSelection(r, want); err != nil {
		return nil, err
	}
	if err := m.readPending(r); err != nil {
		return nil, err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("model snapshot: %d trailing bytes", len(r.b))
	}
	m.initSearch()
	return m, nil
}

// openSnapshot checks a snapshot's magic, format version and checksum,
// and returns a reader of the sections after them.
func openSnapshot(data []byte) (*reader, byte, error) {
	if len(data) < len(snapshotMagic)+1+4 || string(data[:len(snapshotMagic)]) != snapshotMagic {
		return nil, 0, errors.New("model snapshot: not a model snapshot (bad magic)")
	}
	version := data[len(snapshotMagic)]
	if version < 1 || version > snapshotVersion {
		return nil, 0, fmt.Errorf("model snapshot: format version %d not supported (this build reads 1 to %d)", version, snapshotVersion)
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, 0, ErrChecksum
	}
	return &reader{b: body[len(snapshotMagic)+1:]}, version, nil
}

// readConfig reads the configuration section: the model's Config but
// its featurizer's, which the next section holds. Format 2 is the one
// with challengers, format 3 the one with delayed labels.
func readConfig(r *reader, version byte) (Config, error) {
	var sc snapConfig
	conf := r.bytes("configuration")
	if r.err != nil {
		return Config{}, r.err
	}
	if err := json.Unmarshal(conf, &sc); err != nil {
		return Config{}, fmt.Errorf("model snapshot: configuration: %w", err)
	}
	if version < 3 && (version == 2) != (len(sc.Challengers) > 0) {
		return Config{}, fmt.Errorf("model snapshot: format %d with %d challengers", version, len(sc.Challengers))
	}
	if (version == 3) != (sc.Delayed != nil) {
		return Config{}, fmt.Errorf("model snapshot: format %d with delayed labels %v", version, sc.Delayed != nil)
	}
	kern, err := learners.ParseKernel(sc.Kernel)
	if err != nil {
		return Config{}, fmt.Errorf("model snapshot: %w", err)
	}
	cfg := Config{Learner: sc.Learner, Kernel: kern, Seed: sc.Seed, Limits: sc.Limits, Events: sc.Events,
		Event:  codec.EventConfig{LabelField: sc.LabelField, KeyField: sc.KeyField, Ignore: sc.Ignore, Schema: sc.Schema},
		Labels: codec.LabelMap{Positive: sc.Positive, Negative: sc.Negative}, Classes: sc.Classes,
		MaxClasses: sc.MaxClasses, Window: sc.Window, Delayed: sc.Delayed}
	for _, c := range sc.Challengers {
		k, err := learners.ParseKernel(c.Kernel)
		if err != nil {
			return Config{}, fmt.Errorf("model snapshot: challenger %q: %w", c.Learner, err)
		}
		cfg.Challengers = append(cfg.Challengers, Candidate{Learner: c.Learner, Kernel: k})
	}
	if sc.Select != nil {
		cfg.Select = *sc.Select
	}
	return cfg, nil
}

// readClasses reads the classes section into m, and returns how many
// learners each candidate has: one a class, or one for a binary model.
func (m *Model) readClasses(r *reader) (want int, err error) {
	nc := r.uvarint("class count")
	if r.err == nil && nc > uint64(max(m.cfg.MaxClasses, len(m.class))) {
		return 0, fmt.Errorf("model snapshot: %d classes", nc)
	}
	var classes []string
	for range nc {
		classes = append(classes, string(r.bytes("class")))
	}
	if r.err != nil {
		return 0, r.err
	}
	if !slices.Equal(classes, m.class) && !(m.auto && len(m.class) == 0) {
		return 0, fmt.Errorf("model snapshot: classes %q do not match the configuration's %q", classes, m.class)
	}
	want = len(classes)
	if !m.multi {
		want = 1
	}
	m.class, m.index = nil, map[string]int{}
	for k, c := range classes {
		m.class = append(m.class, c)
		m.index[c] = k
	}
	return want, nil
}

// readSelection reads, for a model with challengers, their learners and
// everyone's evaluation, then the selector, which must be the
// configuration's.
func (m *Model) readSelection(r *reader, want int) error {
	if m.sel == nil {
		return nil
	}
	for _, c := range m.cands[1:] {
		if err := c.readLearners(r, want, m.multi); err != nil {
			return err
		}
	}
	for _, c := range m.cands {
		if err := readEval(r, &c.eval); err != nil {
			return err
		}
	}
	s := r.bytes("selector")
	if r.err != nil {
		return r.err
	}
	sel, err := selection.Unmarshal(s)
	if err != nil {
		return fmt.Errorf("model snapshot: %w", err)
	}
	if got, cfgd := sel.Config(), m.sel.Config(); got != cfgd {
		return fmt.Errorf("model snapshot: selector %+v, configuration %+v", got, cfgd)
	}
	if sel.Champion() >= len(m.cands) {
		return fmt.Errorf("model snapshot: champion %d of %d learners", sel.Champion(), len(m.cands))
	}
	m.sel = sel
	return nil
}

// readPending reads, for a model with delayed labels, its store of
// records awaiting their label, which must have the configuration's
// bounds.
func (m *Model) readPending(r *reader) error {
	if m.pend == nil {
		return nil
	}
	s := r.bytes("pending store")
	if r.err != nil {
		return r.err
	}
	p, err := pending.Unmarshal(s)
	if err != nil {
		return fmt.Errorf("model snapshot: %w", err)
	}
	if p.Config() != m.pend.Config() {
		return fmt.Errorf("model snapshot: pending store %+v, configuration %+v", p.Config(), m.pend.Config())
	}
	m.pend = p
	return nil
}

// readLearners reads a candidate's learners: want of them, each of the
// candidate's spec (binary) and kernel.
func (c *candidate) readLearners(r *reader, want int, multi bool) error {
	nl := r.uvarint("learner count")
	if r.err != nil {
		return r.err
	}
	if nl != uint64(want) {
		return fmt.Errorf("model snapshot: %s: %d learners for %d classes", c.name, nl, want)
	}
	c.ls, c.margin = c.ls[:0], c.margin[:0]
	for k := range nl {
		s := r.bytes("learner")
		if r.err != nil {
			return r.err
		}
		l, err := learners.Unmarshal(s)
		if err != nil {
			return fmt.Errorf("model snapshot: %s: learner %d: %w", c.name, k, err)
		}
		if (!multi && l.Spec() != c.spec) || l.Kernel() != c.kernel {
			return fmt.Errorf("model snapshot: learner %q with %s, configuration %q with %s", l.Spec(), l.Kernel(), c.spec, c.kernel)
		}
		c.ls = append(c.ls, l)
		if multi {
			c.margin = append(c.margin, 0)
		}
	}
	if multi {
		if err := autolearn.Group(c.ls); err != nil {
			return fmt.Errorf("model snapshot: %s: %w", c.name, err)
		}
	}
	return nil
}

func readEval(r *reader, ev *prequential.Evaluator) error {
	b := r.bytes("evaluator")
	if r.err != nil {
		return r.err
	}
	if err := ev.UnmarshalBinary(b); err != nil {
		return fmt.Errorf("model snapshot: %w", err)
	}
	return nil
}
