package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
)

// The worker's loop is a small state machine. Each step — fetch a batch,
// play a record, play the labels due, settle (flush and commit) — ends in
// one of three outcomes, and the caller does what the outcome says:
//
//	goOn    carry on with the next record or batch;
//	reread  a rewind moved the readers back to the committed snapshot: the
//	        records in hand are dropped and the next fetch reads from there;
//	stop    the generation ended (the last commit was made or abandoned):
//	        the worker returns.
//
// What a failed commit leads to is the output's (output.failed): retried
// in place under at-least-once, aborted and rewound under exactly-once.
type step int

const (
	goOn step = iota
	reread
	stop
)

// run serves the partition for the generation: ready its producer,
// restore its model, then fetch and play until the generation ends. gen
// is kafka-go's context of the generation, ends one of the member's that
// ends with it (see generationContext).
func (w *worker) run(gen, ends context.Context) {
	// gctx ends with the generation or, earlier, when the member is
	// leaving: then the worker makes its last flush and commit while the
	// generation is still alive — its member still heartbeating, so the
	// commit is not fenced however long the last snapshot takes — and
	// tells the member it is done.
	drained := sync.OnceFunc(w.m.drained.Done)
	defer drained()
	gctx, cancel := context.WithCancel(ends)
	defer cancel()
	context.AfterFunc(w.m.ctx, cancel)
	defer func() {
		if gen.Err() == nil && w.m.ctx.Err() != nil {
			drained()
			<-gen.Done()
		}
	}()
	w.label = strconv.Itoa(w.part.ID)
	w.srcHdrs = []kafka.Header{{Key: HeaderSourcePartition, Value: []byte(w.label)}}
	w.out = w.m.newOutput(w.gen, w.part)
	defer w.out.leave()
	if !w.assign(gctx) {
		return
	}
	mt := w.m.cfg.Metrics
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
	// The member's fetcher reads the partition with all the others; the
	// label topic's partition, read on demand between records, has a
	// reader of its own.
	w.reader = w.m.fetcher.Open(w.part.Topic, w.part.ID, w.st.NextOffset)
	defer w.reader.Close()
	if !w.openLabels(gctx) {
		return
	}
	w.skipped = mt.Skipped.WithLabelValues(w.label)
	w.pos = w.m.track(w.part)
	defer w.m.untrack(w.part)
	w.pos.Store(w.st.NextOffset)
	for w.next(gctx) != stop {
	}
}

// assign readies the partition: its producer (initialising the member's
// transactional producer first, under exactly-once), its model, its
// series. false: the generation ended first (or the model needs an
// operator, and the partition was held unserved until then).
func (w *worker) assign(ctx context.Context) bool {
	if !w.until(ctx, "initialise the partition's producer", w.out.start) {
		return false
	}
	var hold error
	if !w.until(ctx, "restore the partition's model", func(ctx context.Context) error {
		err := w.restore(ctx)
		if errors.Is(err, ErrNeedsOperator) {
			hold = err
			return nil
		}
		return err
	}) {
		return false
	}
	if hold != nil {
		// Returning would end the whole generation and rejoin in a loop;
		// hold the partition, unserved and loudly reported, until the
		// generation ends.
		w.m.cfg.Metrics.health.halt(w.label, "cannot restore the partition's model: "+hold.Error())
		defer w.m.cfg.Metrics.health.resume(w.label)
		w.log.Error().Err(hold).Msg("cannot restore the partition's model; partition not served")
		<-ctx.Done()
		return false
	}
	w.log.Info().Int64("offset", w.st.NextOffset).Int("support", w.st.Model.Support()).Msg("partition assigned")
	w.series()
	w.hwm = -1
	_, none := w.m.cfg.Checkpoints.(NoCheckpoints)
	w.keeps = !none
	w.markDurable() // the model is what the store holds
	return true
}

// series resolves the partition's metric series once, and makes those
// that dashboards read as 0 exist from the start.
func (w *worker) series() {
	cfg, mt := w.m.cfg, w.m.cfg.Metrics
	w.consumed, w.predicted = mt.Consumed.WithLabelValues(w.label), mt.Predicted.WithLabelValues(w.label)
	w.learned, w.mistakes = mt.Learned.WithLabelValues(w.label), mt.Mistakes.WithLabelValues(w.label)
	w.names = w.names[:0]
	w.learnerMistakes, w.learnerWindow, w.learnerSupport = w.learnerMistakes[:0], w.learnerWindow[:0], w.learnerSupport[:0]
	for i := range w.st.Model.Candidates() {
		name := w.st.Model.CandidateName(i)
		w.names = append(w.names, name)
		w.learnerMistakes = append(w.learnerMistakes, mt.LearnerMistakes.WithLabelValues(w.label, name))
		w.learnerWindow = append(w.learnerWindow, mt.LearnerWindowRate.WithLabelValues(w.label, name))
		w.learnerSupport = append(w.learnerSupport, mt.LearnerSupport.WithLabelValues(w.label, name))
	}
	w.support, w.window, w.lag = mt.Support.WithLabelValues(w.label), mt.WindowRate.WithLabelValues(w.label), mt.Lag.WithLabelValues(w.label)
	w.switches = mt.ChampionSwitches.WithLabelValues(w.label)
	w.reopens = mt.SearchReopens.WithLabelValues(w.label)
	w.setChampion(mt)
	w.modelGauges()
	mt.assigned(w.label, cfg.Reasons())
	w.busy = mt.health.track(w.label)
	if cfg.Registry != nil {
		mt.RegistryErrors.WithLabelValues(w.label)
	}
	// The delayed-label series exist (at 0 without delayed labels) for
	// every assigned partition, so that dashboards and alerts read 0, not
	// "no data".
	waiting := 0
	if p := w.st.Model.Pending(); p != nil {
		w.evicted = p.Evicted // counted by whoever held the partition before
		waiting = p.Len()
	}
	w.waiting, w.expired, w.evictions = mt.PendingRecords.WithLabelValues(w.label), mt.PendingExpired.WithLabelValues(w.label), mt.PendingEvicted.WithLabelValues(w.label)
	w.waiting.Set(float64(waiting))
	for _, r := range labelReasons {
		mt.OrphanLabels.WithLabelValues(w.label, string(r))
	}
}

// openLabels opens the label topic's partition, if there is one. false:
// it cannot (the partition is held until the generation ends).
func (w *worker) openLabels(ctx context.Context) bool {
	cfg := w.m.cfg
	if cfg.LabelTopic == "" {
		return true
	}
	lr, err := fetch.NewReader(fetch.Config{
		Addr: kafka.TCP(cfg.Conn.Brokers...), Transport: w.m.transport, Topic: cfg.LabelTopic, Partition: w.part.ID,
		ReadUncommitted: cfg.ReadUncommitted, MaxBytes: cfg.FetchPartitionMaxBytes, ClientID: cfg.Conn.ClientID,
	}, w.st.LabelOffset)
	if err != nil {
		w.log.Error().Err(err).Msg("label partition reader")
		<-ctx.Done()
		return false
	}
	w.labels = &labelSide{r: lr}
	return true
}

// wake is when the partition must act even without records: its next
// flush, and its next checkpoint while progress is uncommitted — an idle
// partition must still commit what it learned — or, when models are
// kept, to say it is wholly checkpointed (the checkpoint-age gauge).
// Zero: nothing due.
func (w *worker) wake() time.Time {
	var wake time.Time
	if len(w.preds)+len(w.dead) > 0 {
		wake = w.since.Add(w.m.cfg.FlushInterval)
	}
	var due time.Time
	interval := w.out.interval()
	switch {
	case w.pending > 0:
		due = w.out.due(w.committedAt)
	case w.keeps:
		due = w.durableAt.Add(interval)
	}
	if !due.IsZero() && (wake.IsZero() || due.Before(wake)) {
		wake = due
	}
	return wake
}

// next is one turn of the loop: fetch a batch (the broker holds the
// fetch until records come or the wake is due; a request is never
// cancelled midway, so no connection is lost), play it, and settle when
// the buffers are full or something is due.
func (w *worker) next(ctx context.Context) step {
	wake := w.wake()
	wait := time.Second
	if !wake.IsZero() {
		wait = min(wait, max(time.Until(wake), time.Millisecond))
	}
	// A partition with progress to commit stops waiting when the
	// member's round begins: the round waits for it.
	var woken <-chan struct{}
	if (w.pending > 0 || len(w.preds)+len(w.dead) > 0) && !w.replay.active() {
		woken = w.out.woken()
	}
	b, err := w.reader.FetchUntil(ctx, wait, woken)
	switch {
	case ctx.Err() != nil:
		w.stop()
		return stop
	case err != nil:
		w.fetchFailed(ctx, err)
		return goOn
	}
	w.snap.begin(b)
	if s := w.playBatch(ctx, b); s != goOn {
		// reread: the rest of the batch is read again from the
		// snapshot's offset.
		w.pos.Store(w.st.NextOffset)
		return s
	}
	if b.Next > w.st.NextOffset {
		// Skipped records (markers, aborted data) are consumed too: the
		// next commit must not point before them.
		w.st.NextOffset = b.Next
		w.pending++
	}
	w.replayed()
	if w.labels != nil && !b.Stale && w.st.NextOffset >= b.HighWatermark {
		// All of the input there is has been read: the labels left have
		// no record still to come before them.
		if s := w.labelsBefore(ctx, time.Time{}); s != goOn {
			return s
		}
	}
	w.pos.Store(w.st.NextOffset)
	w.lag.Set(float64(max(0, w.hwm-w.st.NextOffset)))
	if !w.full() && !w.out.wanted() && (wake.IsZero() || time.Now().Before(wake)) {
		return goOn
	}
	return w.settle(ctx, onCadence)
}

// playBatch plays a fetched batch's records, the labels due before each,
// settling whenever the buffers fill.
func (w *worker) playBatch(ctx context.Context, b *fetch.Batch) step {
	if b.Skipped > 0 {
		w.skipped.Add(float64(b.Skipped))
	}
	w.hwm = b.HighWatermark
	if w.labels != nil {
		w.labels.caughtUp = false // there may be more labels since
	}
	// The batch goes back to the fetcher's budget at the next Fetch: the
	// last record must not keep its memory alive beyond that, uncounted.
	defer func() { w.msg = kafka.Message{} }()
	for i := range b.Records {
		rec := &b.Records[i]
		if w.labels != nil {
			if s := w.labelsBefore(ctx, rec.Time); s != goOn {
				return s
			}
		}
		if w.m.cfg.Registry != nil {
			// Before waiting out a registry outage, everything is
			// committed: a transaction left open through it would be
			// aborted by the coordinator on its timeout.
			if s := w.schemaReady(ctx, rec.Value); s != goOn {
				return s
			}
		}
		w.out.began(rec.Time)
		w.handle(rec)
		if w.full() {
			w.pos.Store(w.st.NextOffset)
			if s := w.settle(ctx, onCadence); s != goOn {
				return s
			}
		}
	}
	return goOn
}

// fetchFailed deals with a failed fetch: an offset out of the log resets
// it, a batch corrupt in every fetch is passed, anything else is counted
// and retried after a pause (a broker that answers with errors is not
// hammered).
func (w *worker) fetchFailed(ctx context.Context, err error) {
	var oor *fetch.OutOfRangeError
	if errors.As(err, &oor) {
		w.resetOffset(w.reader, oor, &w.st.NextOffset)
		return
	}
	w.m.cfg.Metrics.FetchErrors.Inc()
	w.log.Warn().Err(err).Msg("fetch")
	var ce *fetch.CorruptError
	if errors.As(err, &ce) && w.corruptBatch(w.part.Topic, &w.corrupt, &w.st.NextOffset, w.reader, ce) {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(200 * time.Millisecond):
	}
}

// labelsBefore plays the labels stamped before t (all, for zero t),
// settling whenever the output buffers fill: a flood of labels for
// nothing is a flood of dead letters, and memory must not follow it.
func (w *worker) labelsBefore(ctx context.Context, t time.Time) step {
	for {
		switch w.playLabels(ctx, t) {
		case labelsDone:
			return goOn
		case labelsStopped:
			w.stop()
			return stop
		}
		w.pos.Store(w.st.NextOffset)
		if s := w.settle(ctx, onCadence); s != goOn {
			return s // reread: both readers went back to the snapshot
		}
	}
}

// settle runs the commit protocol (when: as the cadence says, a commit at
// once, or one with a snapshot) until it goes through. While it retries
// the partition reads nothing more, so its lag shows. reread: the commit
// was undone (or the partition taken back) and the readers rewound.
func (w *worker) settle(ctx context.Context, when commitWhen) step {
	mt := w.m.cfg.Metrics
	s := goOn
	for {
		err := w.checkpoint(ctx, when)
		switch {
		case err == nil:
			mt.health.ok(w.label)
			if w.aborts > 0 {
				w.aborts = 0
				mt.health.resume(w.label)
			}
			return s
		case errors.Is(err, errFenced):
			if !w.fencedWait(ctx, err) {
				return stop
			}
			s = reread
		case ctx.Err() != nil:
			w.stop()
			return stop
		default:
			switch w.out.failed(ctx, w, err) {
			case stop:
				return stop
			case reread:
				s = reread
			}
		}
	}
}

// retryLater is a failed commit retried in place (at-least-once): the
// partition shows as stuck, and waits before the next attempt, not to
// hammer a broker that refuses.
func (w *worker) retryLater(ctx context.Context, err error) step {
	w.m.cfg.Metrics.health.stuck(w.label, time.Now())
	w.log.Warn().Err(err).Msg("checkpoint; will retry")
	select {
	case <-ctx.Done():
	case <-time.After(500 * time.Millisecond):
	}
	return goOn
}

// abortAndRewind is a failed flush or commit undone (exactly-once):
// nothing since the last commit is visible, and the model learned what it
// covered, so it goes back to the committed snapshot and reads the
// records again. Nothing is committed until the rewind is whole: the
// model would be ahead of the outputs.
func (w *worker) abortAndRewind(ctx context.Context, err error, recover func(context.Context) error) step {
	mt := w.m.cfg.Metrics
	if w.aborts++; w.aborts >= abortLoop {
		mt.health.halt(w.label, fmt.Sprintf("%d transactions aborted in a row (last: %v)", w.aborts, err))
	}
	if !errors.Is(err, errTxnAborted) {
		w.failing++ // its own write, snapshot or commit, not another's abort
	}
	w.log.Warn().Err(err).Int("in_a_row", w.aborts).Msg("transaction aborted; restoring the committed snapshot and reading again from its offset")
	cause := err
	for {
		err := w.rewind(ctx, recover)
		switch {
		case err == nil:
			if !w.holdOff(ctx, cause) {
				return stop
			}
			return reread
		case ctx.Err() != nil:
			return stop // the generation ended; the member's next round or producer aborts what is open
		case errors.Is(err, errFenced):
			if !w.fencedWait(ctx, err) {
				return stop
			}
			return reread
		}
		mt.health.stuck(w.label, time.Now())
		w.log.Error().Err(err).Msg("rewind after an aborted transaction; will retry")
		select {
		case <-ctx.Done():
			return stop
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// holdOff keeps a partition whose own writes or commits keep failing out
// of the member's transactions for a while, longer each time: each of
// its failures aborts the round for every partition that joined it, and
// they read their records again, so a partition failing every round
// would keep all the others from committing. Rewound, it has nothing in
// the transaction, and the rounds meanwhile commit without it; then it
// tries again, aborting at most one round a hold-off. It reports false
// when the generation ended meanwhile.
func (w *worker) holdOff(ctx context.Context, cause error) bool {
	if w.failing < failingAfter {
		return true
	}
	d := min(w.m.cfg.CommitInterval<<min(w.failing-failingAfter, 16), maxHoldOff)
	w.m.cfg.Metrics.health.halt(w.label, fmt.Sprintf("its own commits failed %d times in a row (last: %v): left out of the member's transactions for %v", w.failing, cause, d))
	w.log.Warn().Int("failed_in_a_row", w.failing).Dur("retry_in", d).
		Msg("this partition's commits keep failing: left out of the member's transactions meanwhile, so that the other partitions commit")
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// schemaReady makes sure the schema of record value v is at hand (see
// schemareg.Client.Ensure). While the registry cannot answer, the
// partition first commits what it has done (a transaction must not stay
// open through an outage), then waits, counted and shown as stuck; no
// record is dead-lettered for it.
func (w *worker) schemaReady(ctx context.Context, v []byte) step {
	settled, s := false, goOn
	err := w.m.cfg.Registry.Ensure(ctx, v, func(err error, attempt int) {
		w.registryWait(err, attempt)
		if !settled && (w.pending > 0 || len(w.preds)+len(w.dead) > 0) {
			settled = true
			s = w.settle(ctx, commitNow)
		}
	})
	switch {
	case s == stop:
		return stop
	case err != nil:
		w.stop()
		return stop
	}
	if settled {
		w.m.cfg.Metrics.health.ok(w.label)
	}
	return s
}
