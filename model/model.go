// Package model is the per-partition model (design §6) that run, replay
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
//     service maps it today; a label in neither list is predicted, not
//     learned. In many-class mode (Config.Classes = ["auto"] or a list of
//     class tokens) the model is one-vs-rest: one binary learner per class
//     on the same vector, learning +1 for its class and −1 for the others,
//     each with the learner spec's own budget. Classes are indexed in the
//     order first seen (a given list: its order); the prediction is the
//     class with the largest margin, ties to the lowest index (the first
//     seen). With "auto", a label not seen before becomes a new class
//     after the round's prediction (so it is never predicted on the round
//     that introduces it), up to Config.MaxClasses; one more is refused
//     with codec reason too_many_classes and changes nothing. With a given
//     list, a label outside it is refused with bad_label.
//   - Mistakes follow prequential's reporting rule: binary prediction =
//     sign(margin) with sign(0) = −1; many-class prediction = argmax.
//   - Determinism. Given the same Config and the same messages in the same
//     order, the outputs (margins, predictions, evaluator) are bit for bit
//     the same on every machine. The binary learner is seeded with
//     Config.Seed itself (the service's seed for the partition, so that
//     margins equal those of today's learner); class k's learner with
//     ClassSeed(Seed, k).
//   - Snapshot. MarshalBinary holds everything stateful — the configuration,
//     the featurizer (scaler statistics), the class list, every learner and
//     the evaluator — versioned and ending with a CRC-32C; Unmarshal
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
// m.Support() its support-set size, for metrics. At a checkpoint, store
// m.MarshalBinary() (it holds the evaluator too); to continue, Unmarshal
// it. eval and replay drive the same type, so their numbers are the
// service's by construction.
package model

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"strings"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/features"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/prequential"
	"github.com/streamlearner/streamlearner/rng"
	"github.com/streamlearner/streamlearner/sparse"
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
	// Labels maps label tokens to +1/−1 in binary mode.
	Labels codec.LabelMap
	// Classes selects many-class one-vs-rest: {"auto"} discovers classes
	// online, a list fixes them in its order. Empty: binary.
	Classes []string
	// MaxClasses bounds auto discovery. Default DefaultMaxClasses (100).
	MaxClasses int
	// Window is the evaluator's window. Default prequential.DefaultWindow.
	Window int
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
}

// Model is one partition's model. See the package comment.
type Model struct {
	cfg    Config
	multi  bool
	auto   bool
	spec   string // canonical learner spec
	ls     []learners.Learner
	class  []string
	index  map[string]int
	dec    *codec.EventDecoder
	feat   *features.Featurizer
	ev     codec.Event
	eval   prequential.Evaluator
	margin []float64
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
	m := &Model{cfg: cfg, index: map[string]int{}, eval: prequential.Evaluator{Window: cfg.Window}}
	probe, err := learners.New(cfg.Learner, cfg.Kernel, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	m.spec = probe.Spec()
	switch {
	case len(cfg.Classes) == 0:
		if len(cfg.Labels.Positive) == 0 && len(cfg.Labels.Negative) > 0 {
			return nil, errors.New("model: negative labels need positive ones")
		}
		m.ls = []learners.Learner{probe}
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
		if m.dec, err = codec.NewEventDecoder(cfg.Event); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
		if m.feat, err = features.New(cfg.Features); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
	}
	return m, nil
}

func (m *Model) addClass(tok string) error {
	k := len(m.class)
	l, err := learners.New(m.cfg.Learner, m.cfg.Kernel, ClassSeed(m.cfg.Seed, k))
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	m.class = append(m.class, tok)
	m.index[tok] = k
	m.ls = append(m.ls, l)
	m.margin = append(m.margin, 0)
	return nil
}

// Step decodes one message, predicts, learns from its label and updates
// the evaluator. A message that cannot be decoded, or whose label cannot be
// taken, is an error (a *codec.Error, with its reason) and changes nothing.
func (m *Model) Step(b []byte) (Result, error) {
	x, label, key, err := m.decode(b)
	if err != nil {
		return Result{}, err
	}
	r, err := m.step(x, label, true)
	r.Key = key
	return r, err
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
	x, label, key, err := m.decode(b)
	if err != nil {
		return Result{}, err
	}
	r, err := m.step(x, label, false)
	r.Key = key
	return r, err
}

// PredictVector is Predict for an indexed record.
func (m *Model) PredictVector(x sparse.Vector, label []byte) (Result, error) {
	return m.step(x, label, false)
}

func (m *Model) decode(b []byte) (sparse.Vector, []byte, []byte, error) {
	if !m.cfg.Events {
		ex, err := codec.Decode(b, m.cfg.Limits)
		if err != nil {
			return sparse.Vector{}, nil, nil, err
		}
		return ex.X, []byte(ex.Label), nil, nil
	}
	if err := m.dec.Decode(b, &m.ev); err != nil {
		return sparse.Vector{}, nil, nil, err
	}
	x, err := m.feat.Vector(&m.ev)
	if err != nil {
		return sparse.Vector{}, nil, nil, err
	}
	return x, m.ev.Label(), m.ev.Key(), nil
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
			y = 0
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
		return 0, false, &codec.Error{Reason: codec.ReasonBadLabel, Detail: fmt.Sprintf("label %q is not one of the classes %s", label, strings.Join(m.class, ","))}
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
	if why := m.cfg.Kernel.Refuses(x); why != "" {
		return Result{}, refused(why)
	}
	if !m.multi {
		l := m.ls[0]
		var o learners.Outcome
		if learn {
			o = l.Round(x, y)
		} else {
			o.Margin = l.Predict(x)
		}
		if o.Refused != "" || math.IsNaN(o.Margin) || math.IsInf(o.Margin, 0) {
			return Result{}, refused(learners.RefusedMargin)
		}
		r := Result{Labeled: y != 0, Label: y, Predicted: prequential.Predict(o.Margin), Margin: o.Margin,
			Mistake: prequential.IsMistake(o.Margin, y), Updated: o.Updated}
		if learn {
			m.eval.Binary(o.Margin, y, o.Updated, l.Size())
		}
		return r, nil
	}
	r := Result{Label: y, Labeled: y >= 0, Predicted: -1}
	// Predict among the classes known before this round, then learn.
	for k, l := range m.ls {
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
				// Only a margin can be refused here (x passed the kernel
				// check): the learners before this one have learned.
				return Result{}, refused(o.Refused)
			}
			m.margin[k] = o.Margin
			r.Updated = r.Updated || o.Updated
		} else {
			m.margin[k] = l.Predict(x)
		}
		if r.Predicted < 0 || m.margin[k] > r.Margin {
			r.Predicted, r.Margin = k, m.margin[k]
		}
	}
	r.Margins = m.margin
	if r.Predicted >= 0 {
		r.Class = m.class[r.Predicted]
	}
	r.Mistake = r.Labeled && r.Predicted != y
	if learn && isNew {
		if err := m.addClass(string(label)); err != nil {
			return Result{}, err
		}
		o := m.ls[y].Round(x, 1)
		r.Updated = r.Updated || o.Updated
		r.Margins = m.margin[:len(m.margin)-1]
	}
	if learn {
		m.eval.Class(r.Predicted, y, r.Updated, m.Support())
	}
	return r, nil
}

// FromLearner builds a binary record model around a learner and its
// evaluator: how a partition's state was kept before this type held it
// (checkpoint format 1), so that such a checkpoint continues as if it had
// never been converted. cfg must describe that learner (same spec and
// kernel) with neither events nor classes.
func FromLearner(cfg Config, l learners.Learner, ev prequential.Evaluator) (*Model, error) {
	if cfg.Events || len(cfg.Classes) > 0 {
		return nil, errors.New("model: a lone learner is a binary record model; events and classes need a model snapshot")
	}
	m, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if l.Spec() != m.spec || l.Kernel() != cfg.Kernel {
		return nil, fmt.Errorf("model: learner %s with %s, configured %s with %s", l.Spec(), l.Kernel(), m.spec, cfg.Kernel)
	}
	m.ls[0], m.eval = l, ev
	return m, nil
}

// LearnerSpec is the canonical spec of the model's learner(s).
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

// Support is the number of support vectors over all learners.
func (m *Model) Support() int {
	n := 0
	for _, l := range m.ls {
		n += l.Size()
	}
	return n
}

// Eval is the model's prequential evaluator (read it, do not keep it
// across steps).
func (m *Model) Eval() *prequential.Evaluator { return &m.eval }

// Classes lists the class tokens in index order (nil in binary mode).
func (m *Model) Classes() []string { return slices.Clone(m.class) }

// Learners returns the learners: the binary learner, or one per class.
func (m *Model) Learners() []learners.Learner { return slices.Clone(m.ls) }

// Multi reports whether the model is many-class.
func (m *Model) Multi() bool { return m.multi }

// Featurizer is the event featurizer (nil for record models).
func (m *Model) Featurizer() *features.Featurizer { return m.feat }

// Spec describes the model in one line: learner, kernel, mode and, for
// events, the featurizer.
func (m *Model) Spec() string {
	s := m.spec + " kernel=" + m.cfg.Kernel.String()
	if m.multi {
		s += " classes=" + strings.Join(m.cfg.Classes, ",")
	}
	if m.cfg.Events {
		fc := m.feat.Config()
		s += fmt.Sprintf(" events hash-bits=%d scale=%s", fc.HashBits, fc.Scale)
	}
	return s
}

// Config returns the configuration the model was built with.
func (m *Model) Config() Config { return m.cfg }

// Snapshot format.
const (
	snapshotMagic   = "SLMODEL"
	snapshotVersion = 1
)

// ErrChecksum is the error for a snapshot whose bytes were damaged.
var ErrChecksum = errors.New("model snapshot: checksum mismatch")

// snapConfig is the configuration as the snapshot stores it.
type snapConfig struct {
	Learner    string                     `json:"learner"`
	Kernel     string                     `json:"kernel"`
	Seed       uint64                     `json:"seed"`
	Limits     codec.Limits               `json:"limits"`
	Events     bool                       `json:"events"`
	LabelField string                     `json:"label_field,omitempty"`
	KeyField   string                     `json:"key_field,omitempty"`
	Ignore     []string                   `json:"ignore,omitempty"`
	Schema     map[string]codec.FieldKind `json:"schema,omitempty"`
	Positive   []string                   `json:"positive,omitempty"`
	Negative   []string                   `json:"negative,omitempty"`
	Classes    []string                   `json:"classes,omitempty"`
	MaxClasses int                        `json:"max_classes"`
	Window     int                        `json:"window"`
}

// MarshalBinary encodes the whole model: magic, version, configuration,
// featurizer, classes, learners, evaluator, CRC-32C.
func (m *Model) MarshalBinary() ([]byte, error) {
	c := m.cfg
	conf, err := json.Marshal(snapConfig{Learner: c.Learner, Kernel: c.Kernel.String(), Seed: c.Seed, Limits: c.Limits,
		Events: c.Events, LabelField: c.Event.LabelField, KeyField: c.Event.KeyField, Ignore: c.Event.Ignore,
		Schema: c.Event.Schema, Positive: c.Labels.Positive, Negative: c.Labels.Negative, Classes: c.Classes,
		MaxClasses: c.MaxClasses, Window: c.Window})
	if err != nil {
		return nil, fmt.Errorf("model snapshot: %w", err)
	}
	b := append([]byte(snapshotMagic), snapshotVersion)
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
	b = binary.AppendUvarint(b, uint64(len(m.ls)))
	for _, l := range m.ls {
		s, err := l.MarshalBinary()
		if err != nil {
			return nil, err
		}
		b = appendBytes(b, s)
	}
	ev, err := m.eval.MarshalBinary()
	if err != nil {
		return nil, err
	}
	b = appendBytes(b, ev)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
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

// Unmarshal restores a model from MarshalBinary's output.
func Unmarshal(data []byte) (*Model, error) {
	if len(data) < len(snapshotMagic)+1+4 || string(data[:len(snapshotMagic)]) != snapshotMagic {
		return nil, errors.New("model snapshot: not a model snapshot (bad magic)")
	}
	if v := data[len(snapshotMagic)]; v != snapshotVersion {
		return nil, fmt.Errorf("model snapshot: format version %d not supported (this build reads %d)", v, snapshotVersion)
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, ErrChecksum
	}
	r := &reader{b: body[len(snapshotMagic)+1:]}
	var sc snapConfig
	conf := r.bytes("configuration")
	if r.err != nil {
		return nil, r.err
	}
	if err := json.Unmarshal(conf, &sc); err != nil {
		return nil, fmt.Errorf("model snapshot: configuration: %w", err)
	}
	kern, err := learners.ParseKernel(sc.Kernel)
	if err != nil {
		return nil, fmt.Errorf("model snapshot: %w", err)
	}
	cfg := Config{Learner: sc.Learner, Kernel: kern, Seed: sc.Seed, Limits: sc.Limits, Events: sc.Events,
		Event:  codec.EventConfig{LabelField: sc.LabelField, KeyField: sc.KeyField, Ignore: sc.Ignore, Schema: sc.Schema},
		Labels: codec.LabelMap{Positive: sc.Positive, Negative: sc.Negative}, Classes: sc.Classes,
		MaxClasses: sc.MaxClasses, Window: sc.Window}
	feat := r.bytes("featurizer")
	if r.err != nil {
		return nil, r.err
	}
	if sc.Events {
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
	if sc.Events {
		m.feat, _ = features.Unmarshal(feat)
	}
	nc := r.uvarint("class count")
	if r.err == nil && nc > uint64(max(m.cfg.MaxClasses, len(m.class))) {
		return nil, fmt.Errorf("model snapshot: %d classes", nc)
	}
	var classes []string
	for range nc {
		classes = append(classes, string(r.bytes("class")))
	}
	nl := r.uvarint("learner count")
	if r.err != nil {
		return nil, r.err
	}
	if !slices.Equal(classes, m.class) && !(m.auto && len(m.class) == 0) {
		return nil, fmt.Errorf("model snapshot: classes %q do not match the configuration's %q", classes, m.class)
	}
	want := uint64(len(classes))
	if !m.multi {
		want = 1
	}
	if nl != want {
		return nil, fmt.Errorf("model snapshot: %d learners for %d classes", nl, len(classes))
	}
	m.ls, m.class, m.margin, m.index = m.ls[:0], nil, nil, map[string]int{}
	for k := range nl {
		s := r.bytes("learner")
		if r.err != nil {
			return nil, r.err
		}
		l, err := learners.Unmarshal(s)
		if err != nil {
			return nil, fmt.Errorf("model snapshot: learner %d: %w", k, err)
		}
		if !m.multi && l.Spec() != m.spec {
			return nil, fmt.Errorf("model snapshot: learner %q, configuration %q", l.Spec(), m.spec)
		}
		m.ls = append(m.ls, l)
	}
	for k, c := range classes {
		m.class = append(m.class, c)
		m.index[c] = k
		m.margin = append(m.margin, 0)
	}
	evb := r.bytes("evaluator")
	if r.err != nil {
		return nil, r.err
	}
	if err := m.eval.UnmarshalBinary(evb); err != nil {
		return nil, fmt.Errorf("model snapshot: %w", err)
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("model snapshot: %d trailing bytes", len(r.b))
	}
	return m, nil
}
