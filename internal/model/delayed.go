package model

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/pending"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

// At is where a message sits in its stream, for delayed labels: the key
// it was sent with (used when the message names none of its own), its
// time (milliseconds) and its offset.
type At struct {
	Key    []byte
	Time   int64
	Offset int64
	// LabelTopic says the message comes from a topic of labels: anything
	// but a label message is refused (bad_label) instead of predicted.
	LabelTopic bool
}

var errLabelOnly = &codec.Error{Reason: codec.ReasonEmptyFeatures, Detail: "a label message has no feature to predict from"}

// StepAt is Step for a model with delayed labels (Config.Delayed; without
// it, StepAt is Step). The message's key is the event's key field, else
// at.Key. A message with features and a label is learned at once, as
// Step does; one with features, a key and no label is predicted and held
// until its label comes (Result.Held); one with a label and no feature is
// that label (Result.Late): its record is taken from the store, learned,
// and its emitted prediction scored. A label whose record is not held is
// refused naming why (label_unknown, label_expired, label_evicted,
// label_without_key) and changes nothing. After every message that is not
// refused, records older than the store's MaxAge by at.Time expire.
func (m *Model) StepAt(b []byte, at At) (Result, error) {
	if m.pend == nil {
		return m.Step(b)
	}
	r, err := m.stepAt(b, at)
	return r, m.undo(err)
}

func (m *Model) stepAt(b []byte, at At) (Result, error) {
	x, label, key, labelOnly, err := m.decode(b)
	if err != nil {
		return Result{}, err
	}
	if len(key) == 0 {
		key = at.Key
	}
	if at.LabelTopic && !labelOnly {
		return Result{}, &codec.Error{Reason: codec.ReasonBadLabel, Detail: "a message of the label topic has features: the label topic takes label messages (a key and a label, no feature)"}
	}
	var r Result
	switch {
	case labelOnly:
		r, err = m.Resolve(key, label, at)
	case len(label) == 0 && len(key) > 0:
		r, err = m.HoldVector(x, key, at)
	default:
		r, err = m.step(x, label, true)
		if err == nil {
			r.Expired = m.pend.Expire(at.Time)
		}
	}
	if m.cfg.Events && !labelOnly {
		r.Key = m.ev.Key()
	}
	return r, err
}

// Hold decodes a message that carries its label and plays it as if the
// label were still to come: predicted and held under key (HoldVector), the
// label returned (a copy) for the caller to Resolve later — how eval and
// replay delay labels. An unlabeled message is stepped as usual (nil label).
func (m *Model) Hold(b []byte, key []byte, at At) (Result, []byte, error) {
	if m.pend == nil {
		return Result{}, nil, errors.New("model: Hold without delayed labels")
	}
	r, label, err := m.hold(b, key, at)
	return r, label, m.undo(err)
}

func (m *Model) hold(b []byte, key []byte, at At) (Result, []byte, error) {
	x, label, evKey, labelOnly, err := m.decode(b)
	if err != nil {
		return Result{}, nil, err
	}
	if labelOnly {
		return Result{}, nil, errLabelOnly
	}
	label = append([]byte(nil), label...)
	var r Result
	if len(label) == 0 {
		r, err = m.step(x, nil, true)
	} else {
		r, err = m.HoldVector(x, key, at)
	}
	r.Key = evKey
	return r, label, err
}

// HoldVector predicts x as an unlabeled record and holds it under key
// until Resolve brings its label; a record already held under key is
// replaced. Delayed-label models only.
func (m *Model) HoldVector(x sparse.Vector, key []byte, at At) (Result, error) {
	if m.pend == nil {
		return Result{}, errors.New("model: HoldVector without delayed labels")
	}
	if !m.pend.KeyFits(key) {
		return Result{}, &codec.Error{Reason: codec.ReasonKeyTooLarge,
			Detail: fmt.Sprintf("key of %d bytes; the pending store holds keys of up to %d (--pending-max-key-bytes)", len(key), m.pend.Config().MaxKeyBytes)}
	}
	r, err := m.step(x, nil, true)
	if err != nil {
		return r, err
	}
	e := pending.Entry{X: sparse.Vector{Idx: append([]uint32(nil), x.Idx...), Val: append([]float64(nil), x.Val...)},
		Time: at.Time, Offset: at.Offset, Predicted: r.Predicted, Margin: r.Margin}
	if len(m.cands) > 1 {
		e.Champion = r.Candidate
		e.Scores = make([]pending.Score, len(m.cands))
		for i, c := range m.cands {
			e.Scores[i] = pending.Score{Predicted: c.pred, Margin: c.f}
		}
	}
	m.pend.Put(string(key), e)
	r.Held = true
	r.Expired = m.pend.Expire(at.Time)
	return r, nil
}

// Resolve is the label of the record held under key: the record is
// learned with it (every learner plays the round on the current model),
// and the prediction emitted for it, kept in the store, is what the
// evaluators score. See StepAt for the refusals. A label that the binary
// label map neither maps nor refuses (not learned, as for any record)
// releases its record unlearned.
func (m *Model) Resolve(key, label []byte, at At) (Result, error) {
	if m.pend == nil {
		return Result{}, errors.New("model: Resolve without delayed labels")
	}
	switch {
	case len(label) == 0:
		return Result{}, &codec.Error{Reason: codec.ReasonBadLabel, Detail: "a message with neither features nor a label"}
	case len(key) == 0:
		return Result{}, &codec.Error{Reason: codec.ReasonLabelNoKey, Detail: "a label message has no key to find its record by"}
	}
	if _, ok := m.pend.Peek(string(key)); !ok {
		if why, gone := m.pend.Gone(string(key)); gone {
			reason := codec.ReasonLabelEvicted
			if why == pending.LeftExpired {
				reason = codec.ReasonLabelExpired
			}
			return Result{}, &codec.Error{Reason: reason, Detail: fmt.Sprintf("the record keyed %q left the pending store (%s) before its label came", clip(key), why)}
		}
		return Result{}, &codec.Error{Reason: codec.ReasonLabelUnknown, Detail: fmt.Sprintf("no record keyed %q awaits a label", clip(key))}
	}
	y, isNew, err := m.target(label)
	if err != nil {
		return Result{}, err
	}
	held, _ := m.pend.Peek(string(key))
	ent := *held
	labeled := y != 0
	if m.multi {
		labeled = y >= 0
	}
	r := Result{Late: true, LateOffset: ent.Offset, Delay: at.Time - ent.Time, Predicted: ent.Predicted, Margin: ent.Margin, Label: y}
	if !labeled {
		m.pend.Take(string(key))
		r.Expired = m.pend.Expire(at.Time)
		return r, nil
	}
	// Learn on the model as it is now. The record leaves the store only
	// once it is learned: a refusal (a margin that has become non-finite)
	// keeps it, awaiting another label.
	updated, err := m.playAll(ent.X, y, isNew, label, true)
	if err != nil {
		return Result{}, err
	}
	m.pend.Take(string(key))
	// Score what was emitted, not what the model says now.
	for i, c := range m.cands {
		c.pred, c.f = ent.Predicted, ent.Margin
		if ent.Scores != nil {
			c.pred, c.f = ent.Scores[i].Predicted, ent.Scores[i].Margin
		}
	}
	champ := 0
	if ent.Scores != nil {
		champ = ent.Champion // who made the emitted prediction
	}
	late := m.settle(champ, y, true, updated, false, true, true)
	late.Late, late.LateOffset, late.Delay = true, ent.Offset, at.Time-ent.Time
	late.Expired = m.pend.Expire(at.Time)
	return late, nil
}

// Pending is the store of records awaiting their labels (nil without
// delayed labels): read its length and counters, do not change it.
func (m *Model) Pending() *pending.Store { return m.pend }

// clip shortens a key for an error message.
func clip(key []byte) string {
	if len(key) > 64 {
		return string(key[:64]) + "…"
	}
	return string(key)
}

// Delayer plays a labeled stream with every label revealed N records
// after its record — delayed progressive validation, as River's
// progressive_val_score(delay=…) and MOA's delayed evaluation do: each
// record is predicted when it comes and held; after record i, the label
// of record i−N is resolved; Flush resolves the labels still in flight,
// oldest first, so that every labeled record is scored whatever N.
// Unlabeled records are stepped as usual. N = 0 gives Step's margins and
// evaluators exactly. The model must have delayed labels with room for N
// records (DelayConfig).
type Delayer struct {
	m     *Model
	n     int
	seq   uint64
	queue []heldLabel
	key   []byte
}

type heldLabel struct {
	key   uint64
	label []byte
}

// DelayConfig is the pending store a Delayer of n needs.
// Only the count bounds it: a delay must hold its n records whatever
// they cost, or their labels would find nothing.
func DelayConfig(n int) *pending.Config {
	return &pending.Config{MaxRecords: n + 1, MaxBytes: math.MaxInt64}
}

// NewDelayer delays m's labels by n records.
func NewDelayer(m *Model, n int) (*Delayer, error) {
	if n < 0 {
		return nil, fmt.Errorf("model: delay %d: want 0 or more records", n)
	}
	if m.pend == nil || m.pend.Config().MaxRecords <= n || m.pend.Config().MaxAge != 0 {
		return nil, fmt.Errorf("model: a delay of %d records needs a pending store of %d records without a max age", n, n+1)
	}
	return &Delayer{m: m, n: n}, nil
}

// Step plays message b (Step's input), then any label now due; f sees
// the record's result (a prediction, Held when it waits for its label),
// then each resolved label's (Late).
func (d *Delayer) Step(b []byte, f func(Result)) error {
	d.key = binary.BigEndian.AppendUint64(d.key[:0], d.seq)
	r, label, err := d.m.Hold(b, d.key, At{Offset: int64(d.seq)})
	if err != nil {
		return err
	}
	return d.after(r, label, f)
}

// StepVector is Step for an indexed record and its label token.
func (d *Delayer) StepVector(x sparse.Vector, label []byte, f func(Result)) error {
	var r Result
	var err error
	if len(label) == 0 {
		r, err = d.m.step(x, nil, true)
	} else {
		d.key = binary.BigEndian.AppendUint64(d.key[:0], d.seq)
		r, err = d.m.HoldVector(x, d.key, At{Offset: int64(d.seq)})
		label = append([]byte(nil), label...)
	}
	if err != nil {
		return err
	}
	return d.after(r, label, f)
}

func (d *Delayer) after(r Result, label []byte, f func(Result)) error {
	if r.Held {
		d.queue = append(d.queue, heldLabel{d.seq, label})
	}
	d.seq++
	f(r)
	for len(d.queue) > d.n {
		if err := d.resolve(f); err != nil {
			return err
		}
	}
	return nil
}

func (d *Delayer) resolve(f func(Result)) error {
	h := d.queue[0]
	d.queue = d.queue[1:]
	d.key = binary.BigEndian.AppendUint64(d.key[:0], h.key)
	r, err := d.m.Resolve(d.key, h.label, At{Offset: int64(d.seq)})
	if err != nil {
		return fmt.Errorf("label of record %d: %w", h.key+1, err)
	}
	f(r)
	return nil
}

// Flush resolves every label still held back, oldest first.
func (d *Delayer) Flush(f func(Result)) error {
	for len(d.queue) > 0 {
		if err := d.resolve(f); err != nil {
			return err
		}
	}
	return nil
}
