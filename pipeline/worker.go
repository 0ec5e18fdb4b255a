package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/learners"
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
	preds []kafka.Message
	dead  []kafka.Message
	since time.Time // when the oldest buffered output was added
	// pending counts records since the last commit, committedAt its time
	// and committed its offset.
	pending     int
	committedAt time.Time
	committed   int64
	srcHdr      kafka.Header
	buf         []byte

	// The partition's counters, resolved once: a label lookup per record
	// would cost more than timing the round.
	consumed, predicted, learned, mistakes prometheus.Counter
	// hwm is the partition's high-water mark as of the last fetched
	// record (−1: none fetched yet), for the lag gauge.
	hwm int64
	// keeps says whether checkpoints keep models (not NoCheckpoints);
	// durableAt is when everything learned was last in a committed
	// checkpoint.
	keeps     bool
	durableAt time.Time
}

func (w *worker) run(gctx context.Context) {
	cfg := w.m.cfg
	w.label = strconv.Itoa(w.part.ID)
	w.srcHdr = kafka.Header{Key: HeaderSourcePartition, Value: []byte(w.label)}
	if err := w.restore(gctx); err != nil {
		// Returning would end the whole generation and rejoin in a loop;
		// hold the partition, unserved and loudly reported, until the
		// generation ends.
		if gctx.Err() == nil {
			w.log.Error().Err(err).Msg("cannot restore the partition's model; partition not served")
			<-gctx.Done()
		}
		return
	}
	w.log.Info().Int64("offset", w.st.NextOffset).Int("support", w.st.Learner.Size()).Msg("partition assigned")
	mt := cfg.Metrics
	w.consumed, w.predicted = mt.Consumed.WithLabelValues(w.label), mt.Predicted.WithLabelValues(w.label)
	w.learned, w.mistakes = mt.Learned.WithLabelValues(w.label), mt.Mistakes.WithLabelValues(w.label)
	mt.assigned(w.label)
	w.hwm = -1
	_, none := cfg.Checkpoints.(NoCheckpoints)
	w.keeps = !none
	mt.Support.WithLabelValues(w.label).Set(float64(w.st.Learner.Size()))
	mt.WindowRate.WithLabelValues(w.label).Set(w.st.Eval.WindowRate())
	w.markDurable() // the model is what the store holds
	defer func() {
		// Revoked in a rebalance: the gauges would describe a model held
		// elsewhere now. Shutting down: keep the last values, for whoever
		// reads them after Run returns; the process is leaving anyway.
		if w.m.ctx.Err() == nil {
			mt.forget(w.label)
		}
	}()
	mt.ReadyGauge.Inc()
	defer mt.ReadyGauge.Dec()

	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:     cfg.Conn.Brokers,
		Topic:       w.part.Topic,
		Partition:   w.part.ID,
		Dialer:      w.m.dialer,
		MinBytes:    1,
		MaxBytes:    max(16<<20, 2*cfg.Limits.MaxBytes),
		MaxWait:     time.Second, // shorter waits time out against the embedded broker
		ErrorLogger: kafka.LoggerFunc(func(f string, a ...any) { w.log.Warn().Msgf(f, a...) }),
	})
	defer closeWithin(r, cfg.ShutdownTimeout, w.log)
	if err := r.SetOffset(w.st.NextOffset); err != nil {
		w.log.Error().Err(err).Msg("set fetch offset")
		<-gctx.Done()
		return
	}

	for {
		// Wake up for the next flush, and for the next checkpoint while
		// progress is uncommitted: an idle partition must still commit
		// what it learned.
		var wake time.Time
		if len(w.preds)+len(w.dead) > 0 {
			wake = w.since.Add(cfg.FlushInterval)
		}
		// An idle, wholly checkpointed partition wakes at the interval
		// too, to say so (the checkpoint-age gauge), when models are kept.
		var due time.Time
		switch {
		case w.pending > 0:
			due = w.committedAt.Add(cfg.CheckpointInterval)
		case w.keeps:
			due = w.durableAt.Add(cfg.CheckpointInterval)
		}
		if !due.IsZero() && (wake.IsZero() || due.Before(wake)) {
			wake = due
		}
		fctx, cancel := gctx, context.CancelFunc(func() {})
		if !wake.IsZero() {
			fctx, cancel = context.WithDeadline(gctx, wake)
		}
		msg, err := r.FetchMessage(fctx)
		cancel()
		switch {
		case gctx.Err() != nil:
			w.stop()
			return
		case err == nil:
			w.handle(msg)
			if len(w.preds)+len(w.dead) < cfg.FlushRecords {
				continue
			}
		case errors.Is(err, context.DeadlineExceeded):
		default:
			w.log.Warn().Err(err).Msg("fetch")
			continue
		}
		if err := w.checkpoint(gctx, false); err != nil {
			if errors.Is(err, errFenced) {
				w.log.Warn().Err(err).Msg("commit refused; dropping the partition's model")
				<-gctx.Done()
				return
			}
			if gctx.Err() != nil {
				w.stop()
				return
			}
			w.log.Warn().Err(err).Msg("checkpoint; will retry")
			select { // do not hammer a broker that refuses
			case <-gctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
}

// restore finds where the partition stands: the committed offset and its
// metadata, then the checkpoint it names, else a new model.
func (w *worker) restore(ctx context.Context) error {
	cfg := w.m.cfg
	committed, meta, err := w.m.committed(ctx, w.part)
	if err != nil {
		return err
	}
	st, err := cfg.Checkpoints.Restore(ctx, w.part, committed, meta)
	if err != nil {
		return fmt.Errorf("restore partition %d: %w", w.part.ID, err)
	}
	if st == nil {
		l, err := learners.New(cfg.Learner, cfg.Kernel, cfg.Seed+uint64(w.part.ID))
		if err != nil {
			return err
		}
		st = &State{Learner: l, NextOffset: committed}
		if committed < 0 {
			st.NextOffset = kafka.FirstOffset
			if cfg.StartOffset == "latest" {
				st.NextOffset = kafka.LastOffset
			}
		}
	}
	w.st, w.spec = st, st.Learner.Spec()
	w.committed, w.committedAt = st.NextOffset, time.Now()
	return nil
}

// handle plays one record: dead-letter it, or predict, learn and buffer
// the prediction.
func (w *worker) handle(msg kafka.Message) {
	cfg, mt := w.m.cfg, w.m.cfg.Metrics
	w.consumed.Inc()
	w.st.NextOffset = msg.Offset + 1
	w.hwm = msg.HighWaterMark
	w.pending++
	if len(w.preds)+len(w.dead) == 0 {
		w.since = time.Now()
	}
	ex, err := codec.Decode(msg.Value, cfg.Limits)
	y, keep := 0, true
	if err == nil {
		y, keep, err = cfg.Labels.Map(ex.Label)
	}
	if err != nil {
		reason, detail := ReasonInternal, err.Error()
		var ce *codec.Error
		if errors.As(err, &ce) {
			reason, detail = ce.Reason, ce.Detail
		}
		mt.DeadLetters.WithLabelValues(w.label, string(reason)).Inc()
		w.bad.Warn().Int64("offset", msg.Offset).Str("reason", string(reason)).Str("detail", detail).Msg("dead letter")
		w.dead = append(w.dead, deadLetter(msg, reason, detail))
		return
	}
	if !keep {
		y = 0 // a label outside both classes: predict, do not learn
	}
	var o learners.Outcome
	if !cfg.PassThrough {
		t0 := time.Now()
		o = w.st.Learner.Round(ex.X, y)
		if y != 0 {
			mt.Round.Observe(time.Since(t0).Seconds())
		}
	}
	seq := w.st.Eval.Updates
	w.st.Eval.Observe(o, y != 0, w.st.Learner.Size())
	p := codec.Prediction{
		Topic: msg.Topic, Partition: int32(msg.Partition), Offset: msg.Offset, Key: string(msg.Key),
		Predicted: -1, Margin: o.Margin, Label: y, Learner: w.spec, Support: w.st.Learner.Size(), ModelSeq: seq,
	}
	if o.Margin > 0 {
		p.Predicted = 1
	}
	if y != 0 {
		mistake := o.Mistake
		p.Mistake = &mistake
		w.learned.Inc()
		if mistake {
			w.mistakes.Inc()
		}
	}
	w.predicted.Inc()
	w.buf, err = codec.AppendPrediction(w.buf[:0], &p)
	if err != nil { // a NaN margin cannot occur with finite inputs; keep the record anyway
		w.dead = append(w.dead, deadLetter(msg, ReasonInternal, err.Error()))
		return
	}
	w.preds = append(w.preds, kafka.Message{
		Key:     []byte(codec.PredictionKey(msg.Topic, int32(msg.Partition), msg.Offset)),
		Value:   append([]byte(nil), w.buf...),
		Headers: []kafka.Header{w.srcHdr},
	})
}

// checkpoint runs the commit protocol: flush every buffered output and
// wait for its acknowledgement; then, when the cadence says so (or force),
// save the state, commit the offset with the checkpoint's name, and only
// then let older checkpoints go.
func (w *worker) checkpoint(ctx context.Context, force bool) error {
	if err := w.flush(ctx); err != nil {
		return err
	}
	cfg, mt := w.m.cfg, w.m.cfg.Metrics
	mt.Support.WithLabelValues(w.label).Set(float64(w.st.Learner.Size()))
	mt.WindowRate.WithLabelValues(w.label).Set(w.st.Eval.WindowRate())
	if w.hwm >= 0 {
		mt.Lag.WithLabelValues(w.label).Set(float64(max(0, w.hwm-w.st.NextOffset)))
	}
	if w.st.NextOffset < 0 || w.st.NextOffset == w.committed {
		w.markDurable() // nothing learned since the last checkpoint
		return nil
	}
	if !force && w.pending < cfg.CheckpointEvery && time.Since(w.committedAt) < cfg.CheckpointInterval {
		return nil
	}
	t0 := time.Now()
	meta, size, err := cfg.Checkpoints.Save(ctx, w.part, w.gen.ID, w.st)
	took := time.Since(t0)
	if w.keeps {
		mt.CheckpointDuration.Observe(took.Seconds())
		if err != nil {
			mt.CheckpointSaves.WithLabelValues("error").Inc()
		} else {
			mt.CheckpointSaves.WithLabelValues("ok").Inc()
			mt.CheckpointBytes.WithLabelValues(w.label).Set(float64(size))
		}
	}
	if err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	if err := w.m.commit(ctx, w.gen, w.part, w.st.NextOffset, meta); err != nil {
		return err
	}
	w.pending, w.committedAt, w.committed = 0, time.Now(), w.st.NextOffset
	w.markDurable()
	// Routine, so at debug level; failures are warnings in run.
	w.log.Debug().Str("snapshot", meta).Int64("offset", w.committed).Int("bytes", size).Dur("took", took).Msg("checkpoint")
	cfg.Checkpoints.Committed(ctx, w.part, meta)
	return nil
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

// flush writes the buffered predictions and dead letters, retrying until
// they are acknowledged or ctx ends: nothing is dropped.
func (w *worker) flush(ctx context.Context) error {
	for _, out := range []struct {
		wr   *kafka.Writer
		msgs *[]kafka.Message
	}{{w.m.out, &w.preds}, {w.m.dlq, &w.dead}} {
		backoff := 50 * time.Millisecond
		for len(*out.msgs) > 0 {
			err := out.wr.WriteMessages(ctx, *out.msgs...)
			if err == nil {
				if out.wr == w.m.out {
					w.m.cfg.Metrics.Produced.Add(float64(len(*out.msgs)))
				}
				clear(*out.msgs)
				*out.msgs = (*out.msgs)[:0]
				break
			}
			w.m.cfg.Metrics.ProduceErrors.Inc()
			if ctx.Err() != nil {
				return fmt.Errorf("write to %s: %w", out.wr.Topic, err)
			}
			w.log.Warn().Err(err).Str("topic", out.wr.Topic).Dur("retry_in", backoff).Msg("write failed")
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
		}
	}
	return nil
}

// stop makes a last flush and commit when the generation ends, bounded by
// the shutdown timeout. A refused commit only means the predictions will be
// made again, identically, by the next owner.
func (w *worker) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), w.m.cfg.ShutdownTimeout)
	defer cancel()
	if err := w.checkpoint(ctx, true); err != nil {
		w.log.Info().Err(err).Msg("final commit not taken")
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
