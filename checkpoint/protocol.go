package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/prequential"
)

// Protocol is the service's checkpoint protocol (pipeline.Checkpointer)
// backed by a Store.
type Protocol struct {
	Store Store
	// Model is the configured model of a partition (pipeline.Config's
	// ModelConfig): a snapshot of another model (learner, kernel, classes,
	// features) is refused unless ResetModel is set, which starts a new
	// model at the committed offset.
	Model      func(partition int) model.Config
	ResetModel bool
	// Keep is how many snapshots of a partition survive garbage collection:
	// the committed one and Keep−1 predecessors, the fallbacks should the
	// newest be damaged. Default 2.
	Keep int
	Log  zerolog.Logger
	// OnReset, if set, is told each time ResetModel starts a new model in
	// place of a stored one, with the reason: "mismatch" (another learner
	// or kernel) or "unreadable" (no intact snapshot).
	OnReset func(p Partition, reason string)
	// Now stamps snapshots; default time.Now.
	Now func() time.Time

	mu    sync.Mutex
	seq   map[Partition]uint64
	size  map[Partition]int      // the last snapshot's bytes
	known map[Partition][]string // snapshots in the store, oldest first, as far as this member knows
}

// ErrMismatch is wrapped when a snapshot belongs to another model
// configuration (learner, kernel, input, classes, challengers, delayed
// labels) than the configured one.
var ErrMismatch = errors.New("snapshot made with another model configuration")

func (p *Protocol) keep() int {
	if p.Keep < 1 {
		return 2
	}
	return p.Keep
}

func (p *Protocol) setSeq(part Partition, seq uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seq == nil {
		p.seq = map[Partition]uint64{}
	}
	p.seq[part] = max(p.seq[part], seq)
}

// Restore loads the snapshot the committed metadata names. A damaged or
// missing snapshot is reported loudly and the newest older snapshot of the
// partition that is intact is used instead (the stream is replayed from
// its offset, which rebuilds the same model); with none, Restore fails
// (ErrNeedsOperator) and the partition is not served — never
// silently an empty model. A store that does not answer concludes
// nothing about the snapshot: Restore fails without looking further, and
// the worker asks again.
func (p *Protocol) Restore(ctx context.Context, part Partition, committed int64, metadata string) (*State, error) {
	// What the store holds for the partition, once per assignment: later
	// collections work from this list plus this member's own saves,
	// without reading the store again.
	log := p.logFor(part)
	names, err := p.Store.List(ctx, fmt.Sprintf("%s/%d/", part.Topic, part.ID))
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.known == nil {
		p.known = map[Partition][]string{}
	}
	p.known[part] = names
	p.mu.Unlock()
	if metadata == "" {
		if committed >= 0 {
			log.Warn().Int64("offset", committed).
				Msg("committed offset without a snapshot: starting a new model there")
		}
		return nil, nil
	}
	if off, ok := NewModelOffset(metadata); ok {
		// Nothing stored to load: the worker begins the configured model
		// at off and replays up to the committed offset.
		log.Info().Int64("offset", off).Int64("committed", committed).Int64("to_replay", max(0, committed-off)).
			Msg("no snapshot yet: a new model from its first offset, the records up to the committed offset replayed")
		return nil, nil
	}
	snap, m, err := p.loadModel(ctx, metadata)
	if isUnavailable(err) {
		// The store did not answer: nothing is known about the snapshot,
		// so neither an older one nor --reset-model is called for; the
		// worker asks again.
		return nil, err
	}
	if err != nil && !errors.Is(err, ErrMismatch) {
		// Damaged bytes, or a model its decoder refuses: either way the
		// previous snapshot (and a replay of the records after it) serves.
		log.Error().Err(err).Str("snapshot", metadata).Msg("committed snapshot unusable; looking for an older one")
		snap, m, err = p.fallback(ctx, part, metadata)
		if isUnavailable(err) {
			return nil, err
		}
		if err != nil {
			if p.ResetModel {
				return p.reset(part, committed, metadata, "unreadable", err)
			}
			return nil, needsOperator{err}
		}
		log.Error().Str("snapshot", snap.Name()).Int64("offset", snap.NextOffset).
			Msg("restored from an OLDER snapshot: records after its offset are replayed")
	}
	if errors.Is(err, ErrMismatch) {
		if !p.ResetModel {
			return nil, needsOperator{err}
		}
		return p.reset(part, committed, metadata, "mismatch", err)
	}
	st := &State{Model: m, NextOffset: snap.NextOffset, LabelTopic: snap.LabelTopic, LabelOffset: snap.LabelOffset,
		Snapshot: snap.Name(), SnapshotBytes: len(snap.Model)}
	p.setSeq(part, snap.Seq)
	ev := log.Info().Str("snapshot", snap.Name()).Int64("offset", snap.NextOffset).Int("support", m.Support())
	if committed > snap.NextOffset {
		// A commit that named an earlier snapshot (--snapshot-max-rate):
		// the worker plays the records in between again, learn-only.
		ev = ev.Int64("committed", committed).Int64("to_replay", committed-snap.NextOffset)
	}
	ev.Msg("model restored")
	return st, nil
}

// newModelPrefix starts the metadata of a commit made before the
// partition's first snapshot (NewModelAt).
const newModelPrefix = "new@"

// NewModelAt is what a commit names before the partition's first
// snapshot: the new model it began as, at offset. A restore begins that
// model again and replays the records from offset, as it would from a
// snapshot there (Restore returns no state for it: the worker, which
// makes new models, does). So a member that begins P new partitions
// saves none of them until the snapshot rate and interval call for it,
// instead of P snapshots at its first commit.
func NewModelAt(offset int64) string { return newModelPrefix + strconv.FormatInt(offset, 10) }

// NewModelOffset reads metadata written by NewModelAt: the offset at which
// the new model began, and whether metadata is one.
func NewModelOffset(metadata string) (int64, bool) {
	rest, ok := strings.CutPrefix(metadata, newModelPrefix)
	if !ok {
		return 0, false
	}
	off, err := strconv.ParseInt(rest, 10, 64)
	return off, err == nil && off >= 0
}

// reset gives up the stored model under ResetModel, loudly: a new model
// starts at the committed offset (nil State), and snapshot numbers go on
// after the committed one.
func (p *Protocol) reset(part Partition, committed int64, metadata, reason string, cause error) (*State, error) {
	p.logFor(part).Error().Err(cause).Str("reason", reason).Str("snapshot", metadata).Int64("offset", committed).
		Msg("reset-model: DISCARDING the stored model and starting a new one at the committed offset")
	if p.OnReset != nil {
		p.OnReset(part, reason)
	}
	p.setSeq(part, seqOf(metadata))
	return nil, nil
}

// logFor tags the log with the partition, as every line about one is.
func (p *Protocol) logFor(part Partition) *zerolog.Logger {
	l := p.Log.With().Str("topic", part.Topic).Int("partition", part.ID).Logger()
	return &l
}

func seqOf(name string) uint64 {
	_, _, _, s, _ := ParseName(name)
	return s
}

// needsOperator marks a Restore error no retry cures
// (ErrNeedsOperator), its message unchanged.
type needsOperator struct{ error }

func (e needsOperator) Unwrap() error        { return e.error }
func (e needsOperator) Is(target error) bool { return target == ErrNeedsOperator }

// unavailable wraps a store's failure to answer (not a snapshot it
// reports missing or damaged): a broker between leaders, a coordinator
// restarting, a disk error. It says nothing about the snapshot.
type unavailable struct{ error }

func (e unavailable) Unwrap() error { return e.error }

func isUnavailable(err error) bool {
	var u unavailable
	return errors.As(err, &u)
}

// load fetches and checks one snapshot against the configuration.
func (p *Protocol) load(ctx context.Context, name string) (*Snapshot, error) {
	b, err := p.Store.Load(ctx, name)
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrChecksum) {
		return nil, unavailable{fmt.Errorf("load snapshot %s: %w", name, err)}
	}
	if err != nil {
		return nil, err
	}
	snap, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", name, err)
	}
	if snap.Name() != name {
		return nil, fmt.Errorf("snapshot %s: %w: it calls itself %s", name, ErrChecksum, snap.Name())
	}
	cfg := p.Model(snap.Partition)
	want, err := model.New(cfg)
	if err != nil {
		return nil, err
	}
	wantSpec := want.Spec()
	if snap.Version == 1 {
		// A lone learner: what a binary record model with that learner is.
		wantSpec = want.LearnerSpec()
		if want.Multi() || cfg.Events {
			wantSpec = want.Spec()
		}
	}
	if snap.Learner != wantSpec {
		// A snapshot saved before a learner gained a parameter (or a
		// default changed) names its spec as that build wrote it; the
		// learner it decodes to has this build's canonical spec.
		if c := canonicalSpec(snap.Learner); c == wantSpec {
			snap.Learner = c
		}
	}
	if snap.Learner != wantSpec || snap.Kernel != cfg.Kernel.String() {
		return nil, fmt.Errorf("%w: snapshot %s differs from the configuration: %s (pass --reset-model to discard it, or run with the settings it was made with: %s)",
			ErrMismatch, name, specDiff(snap.Learner+" kernel="+snap.Kernel, wantSpec+" kernel="+cfg.Kernel.String()), snap.Learner)
	}
	return snap, nil
}

// canonicalSpec is a model spec with each learner spec in it (the first
// field, and each challenger=) as this build writes it: the spec of the
// learner it builds, every parameter named, new ones at their defaults.
// A field that does not build is left as it is.
func canonicalSpec(spec string) string {
	fields := strings.Fields(spec)
	canon := func(s string) string {
		l, err := learners.New(s, learners.Kernel{Kind: learners.Linear}, 0)
		if err != nil {
			return s
		}
		return l.Spec()
	}
	for i, f := range fields {
		switch {
		case i == 0:
			fields[i] = canon(f)
		case strings.HasPrefix(f, "challenger="):
			fields[i] = "challenger=" + canon(strings.TrimPrefix(f, "challenger="))
		}
	}
	return strings.Join(fields, " ")
}

// specDiff names what differs between a snapshot's model spec and the
// configured one, setting by setting ("kernel=rbf:gamma=0.1"), so that an
// operator sees the one flag that changed instead of two long lines that
// look alike.
func specDiff(stored, configured string) string {
	a, b := strings.Fields(stored), strings.Fields(configured)
	only := func(x, y []string) string {
		var out []string
		for _, t := range x {
			if !slices.Contains(y, t) {
				out = append(out, t)
			}
		}
		if len(out) == 0 {
			return "nothing more"
		}
		return strings.Join(out, " ")
	}
	return "the snapshot has " + only(a, b) + "; the configuration has " + only(b, a)
}

// decodeModel rebuilds the partition model a snapshot holds: version 2
// holds it whole; version 1 a learner and its evaluator, which become the
// binary record model they were.
func (p *Protocol) decodeModel(snap *Snapshot) (*model.Model, error) {
	if snap.Version >= 2 {
		m, err := model.Unmarshal(snap.Model)
		if err != nil {
			return nil, err
		}
		// How records are written is the configuration's, not the
		// snapshot's (see model.ReadAs).
		cfg := p.Model(snap.Partition)
		if err := m.ReadAs(cfg.Format, cfg.Schemas); err != nil {
			return nil, err
		}
		return m, nil
	}
	l, err := learners.Unmarshal(snap.Model)
	if err != nil {
		return nil, err
	}
	var ev prequential.Evaluator
	if err := ev.UnmarshalBinary(snap.Eval); err != nil {
		return nil, err
	}
	return model.FromLearner(p.Model(snap.Partition), l, ev)
}

// fallback returns the newest snapshot of the partition older than bad
// that loads and decodes, with its model.
func (p *Protocol) fallback(ctx context.Context, part Partition, bad string) (*Snapshot, *model.Model, error) {
	names, err := p.Store.List(ctx, fmt.Sprintf("%s/%d/", part.Topic, part.ID))
	if err != nil {
		return nil, nil, unavailable{fmt.Errorf("list the snapshots of partition %d: %w", part.ID, err)}
	}
	for i := len(names) - 1; i >= 0; i-- {
		if !nameLess(names[i], bad) {
			continue
		}
		snap, m, err := p.loadModel(ctx, names[i])
		if err == nil || isUnavailable(err) {
			return snap, m, err
		}
		p.logFor(part).Error().Err(err).Str("snapshot", names[i]).Msg("older snapshot unusable too")
	}
	return nil, nil, fmt.Errorf("partition %d: committed snapshot %s is unusable and no intact older snapshot exists; not serving the partition "+
		"('streamlearner checkpoint list' shows what is stored; pass --reset-model to start a new model at the committed offset)", part.ID, bad)
}

// loadModel is load, then the snapshot's model decoded.
func (p *Protocol) loadModel(ctx context.Context, name string) (*Snapshot, *model.Model, error) {
	snap, err := p.load(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	m, err := p.decodeModel(snap)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: %w", name, err)
	}
	return snap, m, nil
}

// verifyState decodes an encoded model as a restore would; a variable so
// that a test can make it refuse.
var verifyState = func(state []byte) error {
	_, err := model.Unmarshal(state)
	return err
}

// Save writes a new snapshot of st and returns its name for the commit
// and its encoded size.
func (p *Protocol) Save(ctx context.Context, part Partition, generation int32, st *State) (string, int, error) {
	p.mu.Lock()
	seq := p.seq[part] + 1
	// The model is encoded straight into the snapshot, in a buffer sized
	// after the partition's last one: what a save holds is one encoding,
	// not the model's and then the snapshot's copy of it, nor the garbage
	// of growing either.
	last := p.size[part]
	p.mu.Unlock()
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	snap := &Snapshot{
		Topic: part.Topic, Partition: part.ID, Generation: generation, Seq: seq,
		Learner: st.Model.Spec(), Kernel: st.Model.Config().Kernel.String(), NextOffset: st.NextOffset,
		Created: now(), LabelTopic: st.LabelTopic, LabelOffset: st.LabelOffset,
	}
	data, from, to, err := snap.encode(make([]byte, 0, last+last/8+4096), st.Model.AppendBinary)
	if err != nil {
		return "", 0, err
	}
	// A snapshot is what the partition's next owner restores: one that
	// would not decode must never be written, let alone committed, or the
	// partition could not be served after a restart. Decoding costs about
	// what encoding does, once per checkpoint; the decoded copy is garbage
	// as soon as it is checked.
	if err := verifyState(data[from:to]); err != nil {
		return "", 0, fmt.Errorf("partition %d: the model's snapshot would not restore, so it is not saved: %w", part.ID, err)
	}
	p.setSeq(part, seq)
	p.mu.Lock()
	if p.size == nil {
		p.size = map[Partition]int{}
	}
	p.size[part] = len(data)
	p.mu.Unlock()
	if err := p.Store.Save(ctx, snap.Name(), data); err != nil {
		return "", 0, err
	}
	p.mu.Lock()
	if p.known == nil {
		p.known = map[Partition][]string{}
	}
	p.known[part] = append(p.known[part], snap.Name())
	p.mu.Unlock()
	return snap.Name(), len(data), nil
}

// Committed deletes the partition's snapshots older than the Keep newest
// up to the committed one.
func (p *Protocol) Committed(ctx context.Context, part Partition, name string) {
	p.mu.Lock()
	names := slices.Clone(p.known[part])
	p.mu.Unlock()
	sortNames(names)
	var upTo, rest []string
	for _, n := range names {
		if n == name || nameLess(n, name) {
			upTo = append(upTo, n)
		} else {
			rest = append(rest, n)
		}
	}
	cut := max(0, len(upTo)-p.keep())
	var kept []string
	for i, n := range upTo {
		if i < cut {
			if err := p.Store.Delete(ctx, n); err != nil {
				p.logFor(part).Warn().Err(err).Str("snapshot", n).Msg("delete old snapshot; will try again at the next commit")
				kept = append(kept, n)
			}
			continue
		}
		kept = append(kept, n)
	}
	p.mu.Lock()
	p.known[part] = append(kept, rest...)
	p.mu.Unlock()
}
