package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/internal/pending"
)

// errFenced means the group moved on: this member no longer owns the
// partition, and its commits are refused.
var errFenced = errors.New("fenced: partition owned by a newer generation")

// worker serves one partition for one generation: fetch, decode, predict,
// learn, emit, and at each flush save and commit. It owns its learner; no
// other goroutine touches it.
type worker struct {
	m     *member
	gen   *kafka.Generation
	part  Partition
	label string // partition as a metric label
	log   zerolog.Logger
	bad   zerolog.Logger // rate-limited, for bad records
	st    *State
	spec  string
	// rec decodes records in pass-through mode as the model decodes them
	// when learning.
	rec *codec.Decoder
	// preds are the buffered predictions, by position in arena: a
	// kafka.Message each (152 bytes) cost as much as the prediction's own
	// bytes, for every partition between its flushes.
	preds []pred
	dead  []kafka.Message
	since time.Time // when the oldest buffered output was added
	// pending counts records since the last commit, committedAt its time
	// and committed its offset.
	pending     int
	committedAt time.Time
	committed   int64
	// committedLabel is the label topic's committed offset (LabelTopic).
	committedLabel int64
	// labels is the label topic's side of the partition (nil without one).
	labels *labelSide
	// srcHdrs is every prediction's headers (shared, never changed).
	srcHdrs []kafka.Header
	// arena holds the keys and values of the buffered predictions.
	arena []byte

	// posName and negName name a binary model's sides when labels are
	// read through a --positive list (codec.LabelMap.ClassNames).
	posName, negName string
	// out is how the partition's outputs and commits reach Kafka under
	// its guarantee; reader is its input reader, which a rewind moves;
	// pos publishes its position (for the lag poll).
	out    output
	reader *fetch.Partition
	pos    *atomic.Int64
	// reset is the --reset-offsets value last applied to the partition,
	// carried in every commit's metadata (see splitMeta).
	reset string
	// unused counts the records dead-lettered in a row (reset by a record
	// the model takes), undelivered the predictions the brokers refused in
	// a row (reset by one delivered); either reaching degradedAfter marks
	// the partition degraded (degraded) until it is reset.
	unused, undelivered int
	degraded            bool
	// unlabeledWarned: the first record without a label refused before
	// any learning (model.ReasonMissingLabel) has been logged.
	unlabeledWarned bool
	busy            *busy // the record in hand, for health
	// aborts counts the transactions aborted in a row since the last
	// commit; abortLoop of them halt the partition in /readyz.
	aborts int
	// failing counts this partition's own failed writes, snapshots or
	// commits in a row under exactly-once (not the aborts another
	// partition caused), since its last commit; see holdOff.
	failing int
	// snap is the partition's last snapshot (the one the commits name
	// until the next), and replay the records a restore plays learn-only
	// from that snapshot's offset to the committed one.
	snap   snapshotState
	replay replayState

	// The partition's counters, resolved once: a label lookup per record
	// would cost more than timing the round.
	consumed, predicted, learned, mistakes, skipped *Series
	// The partition's gauges, resolved once too: set at every flush, their
	// lookups were 0.1 s of CPU a million records at 1,024 partitions.
	support, window, lag *Series
	// hwm is the partition's high-water mark as of the last fetched
	// record (−1: none fetched yet), for the lag gauge.
	hwm int64
	// keeps says whether checkpoints keep models (not NoCheckpoints);
	// durableAt is when everything learned was last in a committed
	// checkpoint.
	keeps     bool
	durableAt time.Time
	// names are the model's learners (candidates) as metric labels, with
	// their mistake counters; switches counts champion changes.
	names           []string
	learnerMistakes []*Series
	learnerWindow   []*Series
	learnerSupport  []*Series
	switches        *Series
	reopens         *Series
	// msg is reused for each record handed to handle, margins for each
	// many-class prediction.
	msg     kafka.Message
	margins []codec.ClassMargin
	// evicted is the pending store's eviction count already exported;
	// waiting, expired and evictions its series, resolved once.
	// rounds are the round durations not yet in the histogram (added at
	// each flush).
	rounds    roundCounts
	corrupt   corruptRun
	evicted   uint64
	waiting   *Series
	expired   *Series
	evictions *Series
}

// corruptRetries is how many fetches in a row must find the same batch
// corrupt before it is skipped: one damaged on the way reads whole when
// fetched again; one damaged in the broker's log never will.
const corruptRetries = 5

// corruptBatch counts a fetch that found the batch at the partition's
// offset corrupt. At the corruptRetries-th in a row it dead-letters the
// batch whole (its bytes as the broker sent them: its records cannot be
// told apart) and moves the offset past it, to where the next good batch
// begins, as a dead-lettered record's offset is passed; it says whether
// it did. Where the next batch is not known yet (none followed it in the
// answer), the partition waits for one.
func (w *worker) corruptBatch(topic string, run *corruptRun, next *int64, r offsetReader, ce *fetch.CorruptError) bool {
	at := *next
	if at < 0 {
		// Nothing read or committed yet: the position is a symbolic start
		// (kafka.FirstOffset), which the reader resolved at its fetch.
		at = r.Offset()
	}
	if ce.Offset != at || ce.Next <= ce.Offset {
		*run = corruptRun{}
		return false
	}
	if run.at != ce.Offset {
		*run = corruptRun{at: ce.Offset}
	}
	if run.n++; run.n < corruptRetries {
		return false
	}
	*run = corruptRun{}
	if len(w.preds)+len(w.dead) == 0 {
		w.since = time.Now()
	}
	msg := kafka.Message{Topic: topic, Partition: w.part.ID, Offset: ce.Offset, Value: ce.Raw}
	w.deadLetter(&msg, ReasonCorruptBatch, fmt.Sprintf("%v (in %d fetches); offsets %d to %d skipped", ce.Err, corruptRetries, ce.Offset, ce.Next-1))
	w.log.Error().Str("log", topic).Int64("offset", ce.Offset).Int64("next", ce.Next).Int("bytes", len(ce.Raw)).
		Msg("record batch corrupt in every fetch: dead-lettered whole, its offsets skipped")
	r.SetOffset(ce.Next)
	*next = ce.Next
	w.pending++
	return true
}

// offsetReader is where a reader stands, and moving it.
type offsetReader interface {
	Offset() int64
	SetOffset(int64)
}

// corruptRun counts the fetches in a row that found the batch at offset
// at corrupt.
type corruptRun struct {
	at int64
	n  int
}

// full says whether the output buffers are to be flushed now: as many
// records as Config.FlushRecords, or the partition's part of
// Config.FlushMaxBytes with less than a prediction's room left.
func (w *worker) full() bool {
	if len(w.preds)+len(w.dead) >= w.m.cfg.FlushRecords {
		return true
	}
	fb := w.m.flushBytes.Load()
	return fb > 0 && int64(len(w.arena)) > fb-min(arenaSlack, fb/4)
}

// rewind undoes the work since the last commit: the buffered outputs
// are dropped (under exactly-once the brokers discard what was written),
// producer readies the producer for the replay (output.recover after a
// failure, output.start to take a partition back), the model and
// positions go back to the last committed snapshot, and the readers to
// its offsets, so that the records are played again from there — giving,
// by determinism, the outputs the aborted transaction held, byte for
// byte.
func (w *worker) rewind(ctx context.Context, producer func(context.Context) error) error {
	clear(w.preds)
	clear(w.dead)
	w.preds, w.dead = w.preds[:0], w.dead[:0]
	w.releaseArena()
	if producer != nil {
		// No EndTxn(abort) first: InitProducerID aborts what is open, and
		// an abort refused for an epoch the coordinator already bumped
		// would say nothing more.
		if err := producer(ctx); err != nil {
			return err
		}
	}
	if err := w.restore(ctx); err != nil {
		return err
	}
	w.reader.SetOffset(w.st.NextOffset)
	if w.labels != nil {
		w.labels.r.SetOffset(w.st.LabelOffset)
		w.labels.queue, w.labels.caughtUp = w.labels.queue[:0], false
	}
	w.pending = 0
	return nil
}

// abortLoop is how many transactions aborted in a row halt a partition
// in /readyz: one or two are a broker's passing fault, recovered from by
// the replay; more mean the partition is not getting its work out.
const abortLoop = 5

// A partition whose own writes or commits failed failingAfter times in a
// row is left out of the member's transactions for a commit interval,
// twice as long at each failure after, up to maxHoldOff (holdOff).
const (
	failingAfter = 2
	maxHoldOff   = 30 * time.Second
)

// fencedWait holds a partition whose commit was refused as fenced (the
// group or the transaction coordinator says another member owns it now).
// Usually the generation is ending: this member's next heartbeat learns
// of the rebalance, and the wait ends with ctx (false). A generation that
// outlives the session timeout plus two heartbeats is still the group's
// — no rebalance took the partition — so the fence was the coordinator's
// doing (a transaction it aborted, an id it expired): the worker takes
// the partition back, a new producer and the committed snapshot, and
// goes on (true). Meanwhile /readyz names the partition as unserved.
func (w *worker) fencedWait(ctx context.Context, err error) bool {
	mt := w.m.cfg.Metrics
	mt.health.halt(w.label, "fenced: "+err.Error())
	defer mt.health.resume(w.label)
	w.log.Warn().Err(err).Msg("commit refused (another member owns the partition now); the partition waits for the rebalance")
	wait := w.m.cfg.SessionTimeout + 2*w.m.cfg.HeartbeatInterval
	select {
	case <-ctx.Done():
		return false
	case <-time.After(wait):
	}
	w.log.Warn().Dur("after", wait).Msg("no rebalance came: this member still owns the partition; taking it back from its last committed snapshot")
	return w.until(ctx, "take the partition back", func(ctx context.Context) error { return w.rewind(ctx, w.out.start) })
}

// until runs op until it succeeds (true) or ctx ends (false), with a
// growing pause between tries, the partition halted in /readyz meanwhile.
func (w *worker) until(ctx context.Context, what string, op func(context.Context) error) bool {
	mt := w.m.cfg.Metrics
	for backoff := 500 * time.Millisecond; ; backoff = min(2*backoff, 10*time.Second) {
		err := op(ctx)
		if err == nil {
			mt.health.resume(w.label)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		mt.health.halt(w.label, "cannot "+what+": "+err.Error())
		w.log.Error().Err(err).Dur("retry_in", backoff).Msg("cannot " + what + "; partition not served meanwhile")
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
	}
}

// restore finds where the partition stands: the committed offset and its
// metadata, then the checkpoint it names, else a new model.
func (w *worker) restore(ctx context.Context) (rerr error) {
	cfg := w.m.cfg
	committed, meta, err := w.m.committed(ctx, w.part)
	if err != nil {
		return err
	}
	meta, w.reset = splitMeta(meta)
	committed, meta, rewound, err := w.applyResetOffsets(ctx, committed, meta)
	if err != nil {
		return err
	}
	st, err := cfg.Checkpoints.Restore(ctx, w.part, committed, meta)
	if err != nil {
		return fmt.Errorf("restore partition %d: %w", w.part.ID, err)
	}
	if kept := w.m.retained(w.part); st == nil && kept != nil && !rewound {
		// A restore that fails after this is tried again: the kept model
		// must still be there then.
		defer func() {
			if rerr != nil {
				w.m.retain(w.part, kept)
			}
		}()
		st = w.keptModel(kept, committed)
	}
	if st == nil {
		if st, err = w.fresh(committed, meta); err != nil {
			return err
		}
	}
	if err := w.labelPosition(ctx, st, rewound); err != nil {
		return err
	}
	if rewound {
		// The reset is committed at once, as kafka-consumer-groups does: an
		// empty partition, or a member that stops before its first
		// checkpoint, keeps it (a new model at the target) and is not
		// rewound again.
		if err := w.m.commit(ctx, w.gen, w.part, st.NextOffset, joinMeta("", w.reset), st.LabelTopic, st.LabelOffset); err != nil {
			return fmt.Errorf("commit --reset-offsets %s: %w", w.reset, err)
		}
	}
	w.st, w.spec = st, st.Model.LearnerSpec()
	w.committed, w.committedLabel, w.committedAt = st.NextOffset, st.LabelOffset, time.Now()
	w.snap = w.lastSnapshot(st)
	w.replay = replayState{}
	if st.Snapshot != "" && !rewound && committed > st.NextOffset {
		return w.planReplay(ctx, st, committed)
	}
	return nil
}

// applyResetOffsets moves the partition to Config.ResetOffsets' target,
// once: the commit metadata remembers that it was applied. It returns
// the offset and snapshot to restore from, and whether it moved
// (rewound: a new model at the target).
func (w *worker) applyResetOffsets(ctx context.Context, committed int64, meta string) (int64, string, bool, error) {
	cfg := w.m.cfg
	spec := cfg.ResetOffsets
	switch {
	case spec == "":
		return committed, meta, false, nil
	case w.reset == spec:
		w.log.Info().Str("reset_offsets", spec).Msg("--reset-offsets was already applied to this partition; going on from its checkpoints")
		return committed, meta, false, nil
	}
	// The group moves to the target with a new model: the stored one
	// has learned records the rewind is to play again (or, forward,
	// not those it skips).
	target, err := w.m.resetTarget(ctx, w.part.Topic, w.part.ID, spec)
	if err != nil {
		return 0, "", false, err
	}
	w.log.Warn().Str("reset_offsets", spec).Int64("committed", committed).Int64("offset", target).Str("snapshot", meta).
		Msg("--reset-offsets: the partition starts over at the offset with a NEW model (once: a restart with the same value goes on from its checkpoints)")
	cfg.Metrics.ModelResets.WithLabelValues("reset_offsets").Inc()
	w.reset = spec
	return target, "", true, nil
}

// keptModel is the model this member kept in memory across the rebalance
// (no checkpoint store), if the partition is still where it left it;
// nil if it moved on elsewhere meanwhile.
func (w *worker) keptModel(kept *State, committed int64) *State {
	if kept.NextOffset == committed {
		w.log.Info().Int64("offset", committed).Int("support", kept.Model.Support()).Msg("model kept in memory across the rebalance")
		return kept
	}
	w.log.Warn().Int64("offset", committed).Int64("kept_offset", kept.NextOffset).
		Msg("the partition moved on elsewhere since this member held it: starting a new model (no checkpoint store)")
	return nil
}

// fresh is a new model: at the base a commit named
// (checkpoint.NewModelAt), to replay up to the committed offset; else at
// the committed offset (newState).
func (w *worker) fresh(committed int64, meta string) (*State, error) {
	off, ok := checkpoint.NewModelOffset(meta)
	if !ok || committed < off {
		return w.newState(committed)
	}
	st, err := w.newState(off)
	if err != nil {
		return nil, err
	}
	st.Snapshot = meta
	return st, nil
}

// lastSnapshot is what the partition's commits name until it saves a
// snapshot: the one st was restored from, or, for a new model, the model
// as it began (checkpoint.NewModelAt) — named once the log says where
// that is (begin), when it began at the log's start or end. A model
// restored from such a commit is new too: its first snapshot is paced
// alike, so that a member restarted soon after its partitions began does
// not save them all at its first commit.
func (w *worker) lastSnapshot(st *State) snapshotState {
	s := snapshotState{name: st.Snapshot, offset: st.NextOffset, at: time.Now(), bytes: st.SnapshotBytes}
	cfg := w.m.cfg
	_, none := cfg.Checkpoints.(NoCheckpoints)
	_, restored := checkpoint.NewModelOffset(s.name)
	if (s.name == "" || restored) && !none && !cfg.SnapshotEveryCommit && cfg.LabelTopic == "" {
		s.base = true
		if s.offset >= 0 {
			s.name = checkpoint.NewModelAt(s.offset)
		}
	}
	return s
}

// newState is a new model at the committed offset, or, with none, at the
// log's start or end as Config.StartOffset says.
func (w *worker) newState(committed int64) (*State, error) {
	cfg := w.m.cfg
	m, err := model.New(cfg.ModelConfig(w.part.ID))
	if err != nil {
		return nil, err
	}
	st := &State{Model: m, NextOffset: committed}
	if committed < 0 {
		st.NextOffset = kafka.FirstOffset
		if cfg.StartOffset == "latest" {
			st.NextOffset = kafka.LastOffset
		}
	}
	return st, nil
}

// labelPosition sets where the partition reads the label topic: rewound
// with its records to the reset's bound, else the snapshot's position,
// else the group's, else the log's start or end.
func (w *worker) labelPosition(ctx context.Context, st *State, rewound bool) error {
	cfg := w.m.cfg
	lt := cfg.LabelTopic
	if lt == "" {
		return nil
	}
	if rewound {
		// The labels rewind with their records, to the same bound.
		off, err := w.m.resetTarget(ctx, lt, w.part.ID, cfg.ResetOffsets)
		if err != nil {
			return err
		}
		st.LabelTopic, st.LabelOffset = lt, off
		return nil
	}
	if st.LabelTopic == lt {
		return nil
	}
	// No position in this label topic yet (a new model, or a snapshot
	// from before labels had a topic): the group's, else the start.
	off, _, err := w.m.committed(ctx, Partition{Topic: lt, ID: w.part.ID})
	if err != nil {
		return err
	}
	if off < 0 {
		off = kafka.FirstOffset
		if cfg.StartOffset == "latest" {
			off = kafka.LastOffset
		}
	}
	st.LabelTopic, st.LabelOffset = lt, off
	return nil
}

// planReplay sets up the replay of a commit that named an earlier
// snapshot: the records after it were learned and emitted by whoever
// played them first. They are played again learn-only, which rebuilds
// the committed model bit for bit, and nothing is committed before the
// replay reaches the committed offsets.
func (w *worker) planReplay(ctx context.Context, st *State, committed int64) error {
	labelTo := st.LabelOffset
	if lt := w.m.cfg.LabelTopic; lt != "" {
		off, _, err := w.m.committed(ctx, Partition{Topic: lt, ID: w.part.ID})
		if err != nil {
			return err
		}
		labelTo = max(off, labelTo)
	}
	w.replay = replayState{from: st.NextOffset, to: committed, labelTo: labelTo, started: time.Now()}
	w.committed, w.committedLabel = committed, labelTo
	return nil
}

// resetOffset moves a partition whose next offset left its log to the
// log's start or end, as Config.StartOffset says, loudly: the model is
// kept (it is still what was learned), the records in between are not
// there to learn.
func (w *worker) resetOffset(r interface{ SetOffset(int64) }, oor *fetch.OutOfRangeError, next *int64) {
	to := oor.LogStart
	if w.m.cfg.StartOffset == "latest" {
		to = oor.LogEnd
	}
	w.m.cfg.Metrics.OffsetResets.WithLabelValues(w.label).Inc()
	w.log.Error().Str("log", oor.Topic).Int64("offset", oor.Offset).Int64("log_start", oor.LogStart).Int64("log_end", oor.LogEnd).Int64("reset_to", to).
		Str("start", w.m.cfg.StartOffset).Msg("next offset is not in the partition's log (retention, or a recreated topic); reading from the log's " + map[bool]string{true: "end", false: "start"}[to == oor.LogEnd && to != oor.LogStart])
	r.SetOffset(to)
	*next = to
	w.pending++
}

// registryWait counts and reports a registry that could not answer.
func (w *worker) registryWait(err error, attempt int) {
	mt := w.m.cfg.Metrics
	mt.RegistryErrors.WithLabelValues(w.label).Inc()
	mt.health.stuckFor(w.label, "waiting for the schema registry: "+err.Error(), time.Now())
	if attempt == 1 || attempt%20 == 0 {
		w.log.Warn().Err(err).Int("attempt", attempt).Msg("schema registry unavailable; the partition waits for it (nothing is dead-lettered for this)")
	}
}

// handle plays one record: dead-letter it, or predict, learn and buffer
// the prediction. The record's bytes belong to the reader; whatever is
// kept is copied.
func (w *worker) handle(rec *fetch.Record) { w.play(rec, false) }

// play plays one message of the partition: a record of the input topic,
// or (fromLabels) a message of the label topic.
func (w *worker) play(rec *fetch.Record, fromLabels bool) {
	cfg, mt := w.m.cfg, w.m.cfg.Metrics
	w.busy.begin(rec.Offset)
	defer w.busy.end()
	topic := w.part.Topic
	replay := w.replaying(rec.Offset, fromLabels)
	switch {
	case fromLabels:
		topic = cfg.LabelTopic
		w.st.LabelOffset = rec.Offset + 1
	case replay:
		w.st.NextOffset = rec.Offset + 1
		w.replay.records++
		// Counted when it was played first; from the last of them on,
		// records are emitted again.
		defer w.replayed()
	default:
		w.consumed.Inc()
		w.st.NextOffset = rec.Offset + 1
	}
	w.pending++
	if len(w.preds)+len(w.dead) == 0 {
		w.since = time.Now()
	}
	w.msg = kafka.Message{Topic: topic, Partition: w.part.ID, Offset: rec.Offset, Key: rec.Key, Value: rec.Value, Headers: rec.Headers, Time: rec.Time}
	msg := &w.msg
	m := w.st.Model
	seq := m.Eval().Updates
	var t0 time.Duration
	if !cfg.PassThrough {
		t0 = monotonic() // for the round histogram
	}
	var (
		r   model.Result
		err error
	)
	switch {
	case cfg.PassThrough:
		r, err = w.passThrough(msg.Value)
	case cfg.DelayedLabels:
		r, err = m.StepAt(msg.Value, model.At{Key: rec.Key, Time: rec.Time.UnixMilli(), Offset: rec.Offset, LabelTopic: fromLabels})
	default:
		r, err = m.Step(msg.Value)
	}
	if err != nil && replay {
		return // dead-lettered when it was played first
	}
	if err != nil {
		w.rejected(msg, err)
		return
	}
	if w.unused > 0 {
		w.unused = 0
		w.health("")
	}
	if p := m.Pending(); p != nil {
		w.pendingGauges(p, r.Expired)
	}
	if replay {
		// Learned again; its outputs and counts went out the first time.
		if r.Switched || r.SearchTo != "" {
			w.setChampion(mt)
		}
		return
	}
	if r.Labeled && !cfg.PassThrough {
		w.rounds.observe(mt.Round, (monotonic() - t0).Seconds())
	}
	w.emit(msg, &r, seq)
}

// rejected dead-letters a record the model refused: nothing of it
// entered the model, neither predicted nor learned.
func (w *worker) rejected(msg *kafka.Message, err error) {
	reason, detail := ReasonInternal, err.Error()
	var ce *codec.Error
	if errors.As(err, &ce) {
		reason, detail = ce.Reason, ce.Detail
	}
	if isLabelReason(reason) {
		w.m.cfg.Metrics.OrphanLabels.WithLabelValues(w.label, string(reason)).Inc()
	}
	if reason == model.ReasonMissingLabel && !w.unlabeledWarned {
		w.unlabeledWarned = true
		w.log.Warn().Int64("offset", msg.Offset).Str("detail", detail).
			Msg("nothing is being learned: records without a label are dead-lettered (missing_label) until one with a label comes")
	}
	w.deadLetter(msg, reason, detail)
	w.unused++
	w.health(string(reason))
}

// emit counts what the model did with a record played for the first
// time and buffers its prediction (none for a late label: its record's
// went out when the record came); seq is the model's update count before
// the record.
func (w *worker) emit(msg *kafka.Message, r *model.Result, seq uint64) {
	cfg, m := w.m.cfg, w.st.Model
	p := codec.Prediction{
		Topic: msg.Topic, Partition: int32(msg.Partition), Offset: msg.Offset,
		Predicted: r.Predicted, Margin: r.Margin, Learner: w.spec, Support: m.Support(), ModelSeq: seq,
	}
	if len(w.names) > 1 {
		p.Learner = r.Learner // the champion that made the prediction
	}
	for b := r.Mistakes; b != 0; b &= b - 1 {
		w.learnerMistakes[bits.TrailingZeros64(b)].Inc()
	}
	w.noteChampion(msg.Offset, r)
	if r.Late {
		// A label: its record's prediction went out when the record came.
		if r.Labeled {
			w.learned.Inc()
			if r.Mistake {
				w.mistakes.Inc()
			}
			cfg.Metrics.LabelDelay.Observe(float64(r.Delay) / 1000)
		}
		return
	}
	key := msg.Key
	if r.Key != nil {
		key = r.Key // the event's own id (--key-field)
	}
	boundKey(&p, key, cfg.MaxKeyBytes)
	w.classes(&p, r)
	if r.Labeled {
		// The model's verdict follows the one rule for a mistake: the
		// prediction is not the label.
		mistake := r.Mistake
		p.Mistake = &mistake
		w.learned.Inc()
		if mistake {
			w.mistakes.Inc()
		}
	}
	// Key and value go into the flush's arena: no allocation per record.
	// A flush that wrote everything in it hands it back to the member's
	// workers (see releaseArena).
	if w.arena == nil {
		w.arena = w.newArena()
	}
	start := len(w.arena)
	w.arena = codec.AppendPredictionKey(w.arena, msg.Topic, int32(msg.Partition), msg.Offset)
	keyEnd := len(w.arena)
	var err error
	w.arena, err = codec.AppendPrediction(w.arena, &p)
	if err != nil { // the learners refuse non-finite margins, so this is a bug; keep the record anyway
		w.arena = w.arena[:start]
		w.deadLetter(msg, ReasonInternal, err.Error())
		return
	}
	w.predicted.Inc()
	w.preds = append(w.preds, pred{key: start, value: keyEnd, end: len(w.arena)})
}

// noteChampion counts and logs a change of the champion (a switch among
// the candidates, or an auto learner's choice) and a reopened search.
func (w *worker) noteChampion(offset int64, r *model.Result) {
	mt, m := w.m.cfg.Metrics, w.st.Model
	if r.Switched {
		w.switches.Inc()
		w.setChampion(mt)
		sel := m.Selector()
		w.log.Info().Int64("offset", offset).Str("from", w.names[r.From]).Str("to", w.names[r.To]).
			Float64("from_rate", sel.Rate(r.From)).Float64("to_rate", sel.Rate(r.To)).Msg("champion switched")
	}
	if r.SearchTo != "" {
		// An auto learner chose another configuration (docs/auto.md).
		w.switches.Inc()
		w.setChampion(mt)
		w.logSearchChange(offset, *r)
	}
	if r.SearchReopened {
		w.reopens.Inc()
		w.log.Info().Int64("offset", offset).Str("champion", m.SearchChampion()).Msg("search reopened: the mistake rate rose")
	}
}

// classes names the prediction's classes: a many-class model's class and
// margins, a binary one's sides when labels are named (--positive).
func (w *worker) classes(p *codec.Prediction, r *model.Result) {
	m := w.st.Model
	if m.Multi() {
		p.Class = r.Class
		w.margins = w.margins[:0]
		for k, f := range r.Margins {
			w.margins = append(w.margins, codec.ClassMargin{Class: m.Class(k), Margin: f})
		}
		p.Margins = w.margins
		if r.Labeled {
			p.LabelClass = m.Class(r.Label)
		}
		return
	}
	p.Label = r.Label
	if w.posName != "" {
		// Named labels (--positive fraud) read as names downstream.
		p.Class = w.sideName(r.Predicted)
		if r.Labeled {
			p.LabelClass = w.sideName(r.Label)
		}
	}
}

// clockBase is monotonic's origin.
var clockBase = time.Now()

// monotonic reads the monotonic clock alone: a round's two readings cost
// 0.05 µs this way, 0.07 with time.Now's wall clock read as well.
func monotonic() time.Duration { return time.Since(clockBase) }

// pred is a buffered prediction: key arena[key:value], value
// arena[value:end].
type pred struct{ key, value, end int }

// labelSide is the label topic's partition beside the input's: its
// reader and the labels fetched and not yet played, in offset order
// (copies: a fetched batch lives only until the next fetch).
type labelSide struct {
	r        *fetch.Reader
	corrupt  corruptRun
	queue    []fetch.Record
	caughtUp bool // fetched to the partition's end since the last input batch
	arena    []byte
}

// What playLabels did: played every label due, stopped with the output
// buffers full (settle, then call again), or stopped because the
// generation ended.
const (
	labelsDone = iota
	labelsFull
	labelsStopped
)

// playLabels plays, in offset order, the fetched labels stamped before
// before (all of them when before is zero), fetching more while the queue
// does not reach past before and the label partition has more. It stops
// early when the output buffers are full, so that the caller settles.
func (w *worker) playLabels(ctx context.Context, before time.Time) int {
	ls := w.labels
	for {
		n := 0
		full := false
		for n < len(ls.queue) && (before.IsZero() || ls.queue[n].Time.Before(before)) && !full {
			if reg := w.m.cfg.Registry; reg != nil {
				// A label message waits for the registry in place (no
				// settling: the caller settles between batches).
				if reg.Ensure(ctx, ls.queue[n].Value, func(err error, attempt int) { w.registryWait(err, attempt) }) != nil {
					return labelsStopped
				}
				w.m.cfg.Metrics.health.ok(w.label)
			}
			w.play(&ls.queue[n], true)
			n++
			full = w.full()
		}
		ls.queue = ls.queue[n:]
		switch {
		case full:
			return labelsFull
		case len(ls.queue) > 0 || ls.caughtUp:
			return labelsDone
		}
		ls.arena = ls.arena[:0] // nothing points into it any more
		b, err := ls.r.Fetch(ctx, 0)
		if err != nil {
			if ctx.Err() != nil {
				return labelsStopped
			}
			var oor *fetch.OutOfRangeError
			if errors.As(err, &oor) {
				w.resetOffset(ls.r, oor, &w.st.LabelOffset)
				continue
			}
			w.m.cfg.Metrics.FetchErrors.Inc()
			w.log.Warn().Err(err).Msg("fetch labels")
			// A batch of labels corrupt in the broker's log is dead-lettered
			// and passed as an input batch is: its labels are lost (their
			// records expire from the pending store, counted), where
			// retrying it would stop the partition's learning for good.
			var ce *fetch.CorruptError
			if errors.As(err, &ce) && w.corruptBatch(w.st.LabelTopic, &ls.corrupt, &w.st.LabelOffset, ls.r, ce) {
				continue
			}
			ls.caughtUp = true // try again with the next input batch
			return labelsDone
		}
		for _, rec := range b.Records {
			start := len(ls.arena)
			ls.arena = append(ls.arena, rec.Key...)
			ls.arena = append(ls.arena, rec.Value...)
			k := ls.arena[start : start+len(rec.Key) : start+len(rec.Key)]
			v := ls.arena[start+len(rec.Key) : len(ls.arena) : len(ls.arena)]
			var hs []kafka.Header // kept for a dead letter's provenance
			for _, h := range rec.Headers {
				at := len(ls.arena)
				ls.arena = append(ls.arena, h.Value...)
				hs = append(hs, kafka.Header{Key: h.Key, Value: ls.arena[at:len(ls.arena):len(ls.arena)]})
			}
			ls.queue = append(ls.queue, fetch.Record{Offset: rec.Offset, Key: k, Value: v, Time: rec.Time, Headers: hs})
		}
		if len(ls.queue) == 0 && b.Next > w.st.LabelOffset {
			w.st.LabelOffset = b.Next // markers and aborted records
			w.pending++
		}
		ls.caughtUp = b.Next >= b.HighWatermark
	}
}

// isLabelReason says whether a dead letter is a label that found no
// record awaiting it.
func isLabelReason(r codec.Reason) bool { return slices.Contains(labelReasons, r) }

// labelReasons are the dead-letter reasons of a label that found no
// record awaiting it.
var labelReasons = []codec.Reason{codec.ReasonLabelUnknown, codec.ReasonLabelExpired, codec.ReasonLabelEvicted, codec.ReasonLabelNoKey}

// pendingGauges brings the delayed-label series up to date after a
// message that expired expired records.
func (w *worker) pendingGauges(p *pending.Store, expired int) {
	w.waiting.Set(float64(p.Len()))
	if expired > 0 {
		w.expired.Add(float64(expired))
	}
	if p.Evicted > w.evicted {
		w.evictions.Add(float64(p.Evicted - w.evicted))
	}
	w.evicted = p.Evicted
}

// passThrough decodes a record as the model would and predicts nothing
// (margin 0): the service's path without learning, for measuring what
// learning costs. Records only.
func (w *worker) passThrough(b []byte) (model.Result, error) {
	cfg := w.m.cfg
	if w.rec == nil {
		w.rec = codec.NewRecordDecoder(cfg.Model.Limits)
	}
	w.rec.Reset()
	ex, err := w.rec.Decode(b)
	if err != nil {
		return model.Result{}, err
	}
	y, keep, err := cfg.Model.Labels.Map(ex.Label)
	if err != nil {
		return model.Result{}, err
	}
	if !keep {
		y = 0
	}
	return model.Result{Labeled: y != 0, Label: y, Predicted: -1}, nil
}

// deadLetter buffers the dead letter of msg, cut to fit the dead-letter
// topic, and counts it.
func (w *worker) deadLetter(msg *kafka.Message, reason codec.Reason, detail string) {
	w.m.cfg.Metrics.DeadLetters.WithLabelValues(w.label, string(reason)).Inc()
	w.bad.Warn().Int64("offset", msg.Offset).Str("reason", string(reason)).Str("detail", detail).Msg("dead letter")
	dl := deadLetter(*msg, reason, detail, w.m.dlqLimit)
	// What it kept of the record still points into the reader's buffers.
	dl.Key, dl.Value = bytes.Clone(dl.Key), bytes.Clone(dl.Value)
	for i := range dl.Headers {
		dl.Headers[i].Value = bytes.Clone(dl.Headers[i].Value)
	}
	w.dead = append(w.dead, dl)
}

// checkpoint runs the commit protocol: flush every buffered output and
// wait for its acknowledgement; then, when the cadence says so (or force),
// save the state, commit the offset with the checkpoint's name, and only
// then let older checkpoints go.
func (w *worker) checkpoint(ctx context.Context, when commitWhen) error {
	if w.replay.active() {
		// Everything played so far was committed by whoever played it
		// first: a commit now would move the offset back.
		return nil
	}
	if err := w.flush(ctx); err != nil {
		return err
	}
	cfg, mt := w.m.cfg, w.m.cfg.Metrics
	w.modelGauges()
	if w.hwm >= 0 {
		w.lag.Set(float64(max(0, w.hwm-w.st.NextOffset)))
	}
	caughtUp := w.st.NextOffset == w.committed && w.st.LabelOffset == w.committedLabel
	// behind: the commits name an earlier snapshot. A handover, or a
	// partition gone idle once a snapshot is due, takes one, so that what
	// a restore replays does not outlive the traffic.
	behind := w.keeps && w.snap.name != "" && w.snap.offset != w.st.NextOffset
	if w.st.NextOffset < 0 || caughtUp && !(behind && (when == withSnapshot || w.snapshotDue())) {
		w.markDurable() // nothing learned since the last checkpoint
		return nil
	}
	if when == onCadence && w.pending < cfg.CheckpointEvery && time.Now().Before(w.out.due(w.committedAt)) && !w.out.wanted() {
		return nil
	}
	meta, size, saved := w.snap.name, 0, false
	var took time.Duration
	if when == withSnapshot || w.snapshotDue() {
		t0 := time.Now()
		var err error
		w.busy.save(true)
		meta, size, err = cfg.Checkpoints.Save(ctx, w.part, w.gen.ID, w.st)
		w.busy.save(false)
		took = time.Since(t0)
		if w.keeps {
			mt.CheckpointDuration.Observe(took.Seconds())
			w.snapshotHealth(err)
			if err != nil {
				mt.CheckpointSaves.WithLabelValues("error").Inc()
			} else {
				mt.CheckpointSaves.WithLabelValues("ok").Inc()
				mt.CheckpointBytes.WithLabelValues(w.label).Set(float64(size))
				mt.CheckpointWritten.Add(float64(size))
			}
		}
		if err != nil {
			return fmt.Errorf("save checkpoint: %w", err)
		}
		saved = true
	}
	if err := w.out.commit(ctx, w, joinMeta(meta, w.reset)); err != nil {
		return err
	}
	w.pending, w.committedAt, w.committed, w.committedLabel = 0, time.Now(), w.st.NextOffset, w.st.LabelOffset
	w.failing = 0
	w.markDurable()
	if !saved {
		w.log.Debug().Str("snapshot", meta).Int64("offset", w.committed).Int64("snapshot_offset", w.snap.offset).Msg("commit")
		return nil
	}
	w.snap = snapshotState{name: meta, offset: w.st.NextOffset, at: w.committedAt, bytes: size}
	// Routine, so at debug level; failures are warnings in run.
	w.log.Debug().Str("snapshot", meta).Int64("offset", w.committed).Int("bytes", size).Dur("took", took).Msg("checkpoint")
	cfg.Checkpoints.Committed(ctx, w.part, meta)
	return nil
}

// commitWhen says what a call to checkpoint asks for: a commit when the
// cadence says so, a commit now (before a wait, say), or a commit now
// with a snapshot (a handover: the next owner should not replay).
type commitWhen int

const (
	onCadence commitWhen = iota
	commitNow
	withSnapshot
)

// snapshotState is the partition's last snapshot: its name (what commits
// name until the next), the offset it stands at, when it was taken and
// its size. A zero at makes the next commit take one. base: there is
// none yet, and commits name the new model the partition began as.
type snapshotState struct {
	name   string
	offset int64
	at     time.Time
	bytes  int
	base   bool
}

// begin names a new model's base once the log says where the model
// began: at the first record a batch delivers, or where the reader
// stands after one that delivered none (an empty log's end, or past
// skipped markers and aborted records).
func (s *snapshotState) begin(b *fetch.Batch) {
	if !s.base || s.offset >= 0 {
		return
	}
	switch {
	case len(b.Records) > 0:
		s.offset = b.Records[0].Offset
	case b.Next >= 0:
		s.offset = b.Next
	default:
		return
	}
	s.name = checkpoint.NewModelAt(s.offset)
}

// snapshotDue says whether this commit is to carry a snapshot: one of S
// bytes at most every S/SnapshotMaxRate, and every S×P/SnapshotMemberMaxRate
// when the member serves P partitions, at least every SnapshotInterval
// (Config.SnapshotMaxRate).
func (w *worker) snapshotDue() bool {
	cfg := w.m.cfg
	if cfg.SnapshotEveryCommit || cfg.LabelTopic != "" || w.snap.at.IsZero() || w.snap.name == "" {
		return true
	}
	bytes := w.snap.bytes
	if w.snap.base {
		// A new model's size is not known before it is encoded: paced on
		// the configured learner's estimate, the member's new partitions
		// do not all save at their first commit.
		bytes = w.m.newSnapshot
		if bytes <= 0 {
			return time.Since(w.snap.at) >= cfg.SnapshotInterval
		}
	}
	rate := min(float64(cfg.SnapshotMaxRate), float64(cfg.SnapshotMemberMaxRate)/float64(max(w.m.parts.Load(), 1)))
	gap := time.Duration(float64(bytes) / rate * float64(time.Second))
	return time.Since(w.snap.at) >= min(gap, cfg.SnapshotInterval)
}

// replayState is a restore's replay: the records from the snapshot's
// offset up to the committed offset (to; labels up to labelTo) were
// learned and their outputs committed by whoever played them first, so
// they are played again learn-only, without outputs or counts.
type replayState struct {
	to, labelTo int64 // −1 or below the position: no replay
	from        int64
	records     int
	started     time.Time
}

func (r *replayState) active() bool { return r.to > r.from && !r.started.IsZero() }

// replaying says whether the record at offset (of the label topic when
// fromLabels) was played before, so is learned again without outputs.
func (w *worker) replaying(offset int64, fromLabels bool) bool {
	if !w.replay.active() {
		return false
	}
	if fromLabels {
		return offset < w.replay.labelTo
	}
	return offset < w.replay.to
}

// replayed ends the replay once the partition's position reached the
// committed offset: from there on records are predicted and emitted. The
// next commit carries a snapshot, so that a replay never grows across
// owners.
func (w *worker) replayed() {
	if !w.replay.active() || w.st.NextOffset < w.replay.to {
		return
	}
	took := time.Since(w.replay.started)
	mt := w.m.cfg.Metrics
	mt.RestoreReplayed.Add(float64(w.replay.records))
	mt.RestoreReplay.Observe(took.Seconds())
	w.log.Info().Int64("from", w.replay.from).Int64("to", w.replay.to).Int("records", w.replay.records).Dur("took", took).
		Msg("replayed the records after the snapshot learn-only, up to the committed offset")
	w.replay = replayState{}
	w.pending, w.committedAt, w.snap.at = 0, time.Now(), time.Time{}
}

// setChampion makes the partition's champion gauge name the learner whose
// predictions it emits: the candidate, or the configuration an auto
// learner chose.
func (w *worker) setChampion(mt *Metrics) {
	name := w.st.Model.SearchChampion()
	if name == "" {
		name = w.names[w.st.Model.Champion()]
	}
	mt.Champion.DeletePartition(w.label)
	mt.Champion.WithLabelValues(w.label, name).Set(1)
}

// modelGauges sets the model's support and windowed mistake ratio, and
// each learner's.
func (w *worker) modelGauges() {
	m := w.st.Model
	w.support.Set(float64(m.Support()))
	w.window.Set(m.Eval().WindowRate())
	for i := range w.names {
		w.learnerWindow[i].Set(m.CandidateEval(i).WindowRate())
		w.learnerSupport[i].Set(float64(m.CandidateSupport(i)))
	}
}

// markDurable records that everything the model learned is in a committed
// checkpoint as of now.
func (w *worker) markDurable() {
	if !w.keeps {
		return
	}
	w.durableAt = time.Now()
	w.m.cfg.Metrics.CheckpointTime.WithLabelValues(w.label).Set(float64(w.durableAt.UnixNano()) / 1e9)
}

// flush writes the buffered predictions, then the dead letters, and
// waits for their acknowledgement. Retriable failures are retried until ctx
// ends; a record the broker refuses for good (too large, invalid) does not
// hold the partition: a prediction becomes a dead letter (output_refused),
// a dead letter is cut smaller. A write under way is never cancelled —
// cancelling after the broker appended a batch would make the next flush
// write it again — so ctx only stops the retries; the writer's timeout
// bounds each attempt.
func (w *worker) flush(ctx context.Context) error {
	w.m.cfg.Metrics.Round.add(&w.rounds)
	if len(w.preds)+len(w.dead) == 0 {
		return nil
	}
	// A flush under way holds its records as messages and their encoded
	// batch while it waits for the broker. With hundreds of partitions
	// flushing at once, all waiting for the member's few requests in
	// flight, that was most of the memory beyond the models; as many
	// flushes as requests go at once. Not given up with ctx: the last
	// flush of a partition is made with a cancelled one.
	if w.m.writes != nil {
		w.m.writes <- struct{}{}
		defer func() { <-w.m.writes }()
	}
	if len(w.preds) > 0 {
		msgs := predMsgs.Get().(*[]kafka.Message)
		for _, p := range w.preds {
			*msgs = append(*msgs, kafka.Message{Key: w.arena[p.key:p.value:p.value], Value: w.arena[p.value:p.end:p.end], Headers: w.srcHdrs})
		}
		err := w.write(ctx, w.m.out, msgs, true)
		if err != nil {
			w.preds = w.preds[len(w.preds)-len(*msgs):] // the rest, for the next flush
		}
		clear(*msgs)
		*msgs = (*msgs)[:0]
		predMsgs.Put(msgs)
		if err != nil {
			return err
		}
		w.preds = w.preds[:0]
	}
	w.releaseArena() // every prediction in it is written
	return w.write(ctx, w.m.dlq, &w.dead, false)
}

// newArena returns a kept arena (member.spare), or a new one. A small
// share of Config.FlushMaxBytes (many partitions) is allocated whole —
// grown by append, the arena would double past it — and the partition
// flushes when less than a prediction's room is left (full). A large one
// (a few partitions, where Config.FlushRecords binds first) grows as the
// predictions come.
func (w *worker) newArena() []byte {
	if a := w.m.spare.get(); a != nil {
		return a
	}
	return make([]byte, 0, arenaCap(w.m.flushBytes.Load()))
}

// arenaCap is the capacity of a new arena for a flush share: the share
// itself, no room past it for the prediction that crosses it, which made
// 8 KiB arenas take 9.25 KiB (a larger size class) each.
func arenaCap(share int64) int64 { return min(share, arenaWhole) }

// arenaWhole is the largest share allocated whole; arenaSlack is the
// room a prediction needs (one takes 100–300 bytes; a larger one grows
// the arena as append does), which a partition flushes before lacking.
const (
	arenaWhole = 64 << 10
	arenaSlack = 1 << 10
)

// releaseArena hands the worker's arena, nothing buffered in it, to the
// other workers. Each kept its own between flushes, grown to its share
// of Config.FlushMaxBytes: at 1,024 partitions 20 MB held for nothing by
// the partitions waiting for records.
func (w *worker) releaseArena() {
	if cap(w.arena) == 0 {
		return
	}
	w.m.spare.put(w.arena[:0], int(w.m.parts.Load()))
	w.arena = nil
}

// spareArenas keeps the arenas of the partitions with nothing buffered,
// for the next partition to buffer predictions. A sync.Pool gave them to
// the collector every other cycle, and at 1,024 partitions their
// replacements came as fresh pages: the page faults of their first
// writes cost 0.13 s of CPU a million records. At most one arena a
// partition is kept, which the flush bound already counts.
type spareArenas struct {
	mu   sync.Mutex
	free [][]byte
}

// get returns a kept arena, or nil.
func (s *spareArenas) get() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.free)
	if n == 0 {
		return nil
	}
	a := s.free[n-1]
	s.free[n-1] = nil
	s.free = s.free[:n-1]
	return a
}

// put keeps a, unless as many arenas as the member's partitions are kept
// (fewer partitions since: a drops to the collector).
func (s *spareArenas) put(a []byte, parts int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.free) < max(parts, 1) {
		s.free = append(s.free, a)
	}
}

// predMsgs holds the messages of predictions being written: a flush's
// worth, shared by the workers.
var predMsgs = sync.Pool{New: func() any { return new([]kafka.Message) }}

// wireBufs holds the buffers of record batches being written.
var wireBufs = sync.Pool{New: func() any { return new([]byte) }}

func (w *worker) write(ctx context.Context, wr *producer, msgs *[]kafka.Message, preds bool) error {
	mt := w.m.cfg.Metrics
	backoff := 50 * time.Millisecond
	start := *msgs // to reuse from its start once all is written
	// The record batch being written: the member's workers share a few
	// (one a write in flight), where one a partition, kept between its
	// flushes, cost as much as the output buffers themselves.
	batch := wireBufs.Get().(*[]byte)
	defer wireBufs.Put(batch)
	for len(*msgs) > 0 {
		// As many as fit one request.
		limit := wr.limit
		n, size := 0, batchOverhead
		for n < len(*msgs) && (n == 0 || size+recordSize(&(*msgs)[n]) <= limit) {
			size += recordSize(&(*msgs)[n])
			n++
		}
		group := (*msgs)[:n]
		err := wr.produce(ctx, w.part.ID, group, batch, w.out)
		if err == nil {
			if preds {
				mt.Produced.Add(float64(n))
				w.delivered()
			}
			clear(group)
			*msgs = (*msgs)[n:]
			backoff = 50 * time.Millisecond
			continue
		}
		mt.ProduceErrors.Inc()
		if errors.Is(err, errFenced) {
			return fmt.Errorf("write to %s: %w", wr.topic, err)
		}
		if refused(err) {
			// Find the records refused for good, one by one.
			bare := 0
			for i := range group {
				if err := wr.produce(ctx, w.part.ID, group[i:i+1], batch, w.out); err != nil {
					if !refused(err) {
						*msgs = (*msgs)[i:]
						return fmt.Errorf("write to %s: %w", wr.topic, err)
					}
					if !w.refusedOutput(group[i], err, preds, limit) {
						bare++
					}
				} else if preds {
					mt.Produced.Inc()
					w.delivered()
				}
			}
			clear(group)
			*msgs = (*msgs)[n:]
			if bare > 0 {
				// Dead letters refused even bare went back in the queue:
				// the flush fails, and the partition retries after a
				// pause rather than in a loop.
				return fmt.Errorf("write to %s: %d dead letters refused even without their record: %w", wr.topic, bare, err)
			}
			continue
		}
		if ctx.Err() != nil || w.out.rewinds() {
			// Under exactly-once the transaction is aborted and the
			// partition rewound rather than the write retried here.
			return fmt.Errorf("write to %s: %w", wr.topic, err)
		}
		w.m.cfg.Metrics.health.stuck(w.label, time.Now())
		w.log.Warn().Err(err).Str("topic", wr.topic).Dur("retry_in", backoff).Msg("write failed")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	*msgs = start[:0]
	return nil
}

// refusedOutput deals with a record the broker refused for good: a
// prediction goes to the dead-letter topic in its place; a dead letter is
// cut to half the room and queued again, down to its headers alone.
//
// It reports false for a dead letter refused even bare, queued again as
// it is.
func (w *worker) refusedOutput(m kafka.Message, err error, pred bool, limit int) bool {
	// Rate-limited: a topic that refuses everything would log each
	// record (the refusals are counted in the metrics).
	w.bad.Error().Err(err).Int("bytes", recordSize(&m)).Bool("prediction", pred).Msg("record refused by the broker for good")
	if pred {
		// The prediction's bytes are in the arena, reused after the flush.
		src := kafka.Message{Topic: w.part.Topic, Partition: w.part.ID, Key: bytes.Clone(m.Key), Value: bytes.Clone(m.Value)}
		src.Offset, _ = offsetOfKey(string(m.Key))
		w.m.cfg.Metrics.DeadLetters.WithLabelValues(w.label, string(ReasonOutputRefused)).Inc()
		w.dead = append(w.dead, deadLetter(src, ReasonOutputRefused, "prediction refused: "+err.Error(), w.m.dlqLimit))
		w.undelivered++
		w.health(string(ReasonOutputRefused) + ": " + err.Error())
		return true
	}
	own := min(5, len(m.Headers))
	if recordSize(&m) <= 4096 {
		// Even the bare dead letter is refused: retrying is all that is
		// left, and the partition shows as stuck.
		w.m.cfg.Metrics.health.stuck(w.label, time.Now())
		w.dead = append(w.dead, m)
		return false
	}
	w.dead = append(w.dead, fit(m, own, max(4096, min(limit, recordSize(&m))/2)))
	return true
}

// degradedAfter is how many records in a row must come to nothing (all
// dead-lettered, or all their predictions refused) before a partition is
// degraded: enough that a burst of bad records does not flap readiness,
// few enough that a topic of the wrong kind shows within seconds.
const degradedAfter = 1000

// health marks or clears the partition's degradation as the counts say;
// why is the last reason, for /readyz and the log.
func (w *worker) health(why string) {
	bad := w.unused >= degradedAfter || w.undelivered >= degradedAfter
	switch {
	case bad && !w.degraded:
		what := "were all dead-lettered"
		if w.undelivered >= degradedAfter {
			what = "all had their predictions refused by the brokers"
		}
		msg := fmt.Sprintf("the last %d records %s (last reason %s)", degradedAfter, what, why)
		if why == string(model.ReasonMissingLabel) {
			msg += ": nothing is being learned, the records have no label field (see the dead letters' reason detail)"
		}
		w.log.Error().Msg("partition degraded: " + msg)
		w.m.cfg.Metrics.health.degrade(w.label, msg)
	case !bad && w.degraded:
		w.log.Info().Msg("partition no longer degraded: a record was used and its prediction delivered")
		w.m.cfg.Metrics.health.served(w.label)
	}
	w.degraded = bad
}

// delivered notes a prediction the brokers took.
func (w *worker) delivered() {
	if w.undelivered > 0 {
		w.undelivered = 0
		w.health("")
	}
}

// offsetOfKey reads the input offset back from a prediction's key
// (topic/partition/offset).
func offsetOfKey(key string) (int64, error) {
	i := strings.LastIndexByte(key, '/')
	return strconv.ParseInt(key[i+1:], 10, 64)
}

// refused says whether err means the broker will never take the record as
// it is, as opposed to a failure worth retrying.
func refused(err error) bool {
	var tooLarge kafka.MessageTooLargeError
	if errors.As(err, &tooLarge) {
		return true
	}
	var werrs kafka.WriteErrors
	if errors.As(err, &werrs) {
		for _, e := range werrs {
			if e != nil && !refused(e) {
				return false
			}
		}
		return werrs.Count() > 0
	}
	for _, code := range []kafka.Error{kafka.MessageSizeTooLarge, kafka.RecordListTooLarge, kafka.InvalidRecord, kafka.InvalidMessage, kafka.InvalidTimestamp} {
		if errors.Is(err, code) {
			return true
		}
	}
	return false
}

// stop makes a last flush and commit when the generation ends, bounded by
// the shutdown timeout. A refused commit only means the predictions will be
// made again, identically, by the next owner.
func (w *worker) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), w.m.cfg.ShutdownTimeout)
	defer cancel()
	err := w.checkpoint(ctx, withSnapshot)
	switch {
	case err != nil:
		w.out.abandon(ctx, err, w.log)
	case !w.keeps:
		// Without a store the model would be lost with the generation;
		// keep it, in case the next generation gives the partition back.
		w.m.retain(w.part, w.st)
	}
	w.log.Info().Int64("offset", w.st.NextOffset).Msg("partition revoked")
}

type closer interface{ Close() error }

// closeWithin closes c, giving up after d: kafka-go's Close can block on a
// connection that is gone.
func closeWithin(c closer, d time.Duration, log zerolog.Logger) {
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		if err != nil {
			log.Debug().Err(err).Msg("close")
		}
	case <-time.After(d):
		log.Warn().Dur("after", d).Msg("close did not finish; abandoned")
	}
}

// sideName is the name of a binary prediction or label y (±1).
func (w *worker) sideName(y int) string {
	if y > 0 {
		return w.posName
	}
	return w.negName
}

// snapshotHealth notes a snapshot saved, or not (err): snapshots that
// fail for longer than Config.StuckAfter make the partition stuck, even
// while commits without one go through.
func (w *worker) snapshotHealth(err error) {
	if err != nil && w.m.ctx.Err() == nil {
		w.m.cfg.Metrics.health.snapshotFailed(w.label, err)
	} else if err == nil {
		w.m.cfg.Metrics.health.snapshotSaved(w.label)
	}
}

// logSearchChange logs an auto learner's change of champion, numbered by
// labeled record as eval and replay number it, with what decided it. A
// change while the search halves is the rung's leader changing, many times
// in the first few thousand records: at debug level; a duel's at info.
func (w *worker) logSearchChange(offset int64, r model.Result) {
	ch := r.SearchChange
	ev := w.log.Info()
	if ch.Why != nil && ch.Why.Rule != "duel" {
		ev = w.log.Debug()
	}
	ev = ev.Int64("offset", offset).Uint64("labeled_record", ch.From()).Str("from", r.SearchFrom).Str("to", r.SearchTo)
	if ch.Why != nil {
		ev = ev.Str("why", ch.Why.String())
	}
	ev.Msg("champion switched")
}
