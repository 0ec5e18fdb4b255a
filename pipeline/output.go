package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/rs/zerolog"
	kafka "github.com/segmentio/kafka-go"
)

// output is a partition's way to Kafka under its processing guarantee:
// who its batches are written as, how often and how its offsets commit,
// and what a failed flush or commit leads to. The worker — fetch, model,
// buffer, flush, checkpoint — runs the same loop whichever it has:
// atLeastOnce or exactlyOnce.
type output interface {
	writer
	// start readies the producer: before the partition is served, and
	// again when the worker takes a partition back after a fence.
	start(ctx context.Context) error
	// interval is the longest time between two commits; due is when the
	// partition, last committed at committed, is to commit again.
	interval() time.Duration
	due(committed time.Time) time.Time
	// began notes the timestamp of a record whose output joins what the
	// next commit makes visible.
	began(t time.Time)
	// commit makes what was flushed since the last commit and the
	// worker's consumed offsets the partition's, the commit's metadata
	// naming the snapshot just saved.
	commit(ctx context.Context, w *worker, meta string) error
	// rewinds says whether a failed flush or commit is undone — the
	// outputs since the last commit discarded, the partition played again
	// from its committed snapshot — rather than retried in place.
	rewinds() bool
	// failed deals with a failed flush or commit (err, not a fencing):
	// retried in place after a pause, or undone by a rewind (reread).
	failed(ctx context.Context, w *worker, err error) step
	// abandon gives up what is open when the generation ends without its
	// last commit (err).
	abandon(ctx context.Context, err error, log zerolog.Logger)
	// wanted says whether the partition is to commit now, whatever its
	// own cadence: the member's transaction is ending; woken is closed
	// when that begins (nil: never).
	wanted() bool
	woken() <-chan struct{}
	// leave is called once the worker is done with the partition.
	leave()
}

// newOutput is the output of a partition served in gen under the
// member's guarantee.
func (m *member) newOutput(gen *kafka.Generation, p Partition) output {
	cfg := m.cfg
	if cfg.ProcessingGuarantee == ExactlyOnce {
		return &exactlyOnce{m: m, mt: m.txn, gen: gen, part: p.ID}
	}
	o := &atLeastOnce{m: m, phase: time.Duration(float64(cfg.CheckpointInterval) * spread(p.ID))}
	if !cfg.DisableIdempotence {
		o.idem = &idempotent{client: m.client}
	}
	return o
}

// atLeastOnce writes each flush as it comes (as an idempotent producer,
// unless disabled) and commits the offsets with the group's generation: a
// failed write or commit is retried in place, and a member that stops
// before its commit leaves the records since to be predicted again.
type atLeastOnce struct {
	m    *member
	idem *idempotent // nil: batches without a producer id
	// phase brings the partition's first checkpoint forward by its own
	// part of the interval, so that the member's partitions, all
	// assigned at once, do not checkpoint at once every interval after:
	// at 1,024 partitions those bursts of snapshot saves held records
	// back for up to a second (the p99 record → prediction). 0 after the
	// first commit.
	phase time.Duration
}

// spread is i's place in [0, 1): consecutive partitions fall far apart
// (multiples of the golden ratio's fraction), and so do any n of them.
func spread(i int) float64 {
	_, f := math.Modf(float64(i) * 0.6180339887498949)
	return f
}

func (o *atLeastOnce) prepare(ctx context.Context, topic string, p int) (batchID, string, error) {
	if o.idem == nil {
		return noProducer, "", nil
	}
	return o.idem.prepare(ctx, topic, p)
}

func (o *atLeastOnce) release(string, int) {}

func (o *atLeastOnce) wrote(topic string, p, n int) {
	if o.idem != nil {
		o.idem.wrote(topic, p, n)
	}
}

func (o *atLeastOnce) resend(ctx context.Context, err error) (bool, error) {
	if o.idem == nil {
		return false, nil
	}
	return o.idem.resend(ctx, err)
}

func (o *atLeastOnce) start(ctx context.Context) error {
	if o.idem == nil {
		return nil
	}
	return o.idem.init(ctx)
}

func (o *atLeastOnce) interval() time.Duration { return o.m.cfg.CheckpointInterval }
func (o *atLeastOnce) due(committed time.Time) time.Time {
	return committed.Add(o.m.cfg.CheckpointInterval - o.phase)
}
func (o *atLeastOnce) began(time.Time) {}
func (o *atLeastOnce) rewinds() bool   { return false }
func (o *atLeastOnce) failed(ctx context.Context, w *worker, err error) step {
	return w.retryLater(ctx, err)
}
func (o *atLeastOnce) wanted() bool           { return false }
func (o *atLeastOnce) woken() <-chan struct{} { return nil }
func (o *atLeastOnce) leave()                 {}

func (o *atLeastOnce) commit(ctx context.Context, w *worker, meta string) error {
	o.phase = 0
	return o.m.commit(ctx, w.gen, w.part, w.st.NextOffset, meta, w.st.LabelTopic, w.st.LabelOffset)
}

func (o *atLeastOnce) abandon(_ context.Context, err error, log zerolog.Logger) {
	log.Info().Err(err).Msg("final commit not taken")
}

// exactlyOnce makes the partition's outputs between two commits, and its
// offsets, part of the member's transaction (memberTxn,
// docs/architecture.md §3): a failure aborts it for every partition of
// the member, and each is played again from its committed snapshot, with
// a new epoch.
type exactlyOnce struct {
	m   *member
	mt  *memberTxn
	gen *kafka.Generation
	// oldest is the timestamp of the oldest record whose output is in
	// the open transaction (for the visibility latency).
	oldest time.Time
	part   int
}

// prepare may add the partition to the transaction: a request, bounded as
// the batch's own and not given up with ctx (producer.once).
func (o *exactlyOnce) prepare(ctx context.Context, topic string, p int) (batchID, string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), produceTimeout)
	defer cancel()
	return o.mt.prepare(ctx, o, topic, p)
}
func (o *exactlyOnce) wrote(topic string, p, n int) { o.mt.wrote(topic, p, n) }
func (o *exactlyOnce) release(topic string, p int)  { o.mt.release(topic, p) }

// resend: a transaction's produce error aborts it (recover) rather than
// sending the batch again under a new epoch.
func (o *exactlyOnce) resend(context.Context, error) (bool, error) { return false, nil }

func (o *exactlyOnce) start(ctx context.Context) error {
	o.oldest = time.Time{}
	return o.mt.ensure(ctx, o.gen.ID)
}

func (o *exactlyOnce) interval() time.Duration { return o.m.cfg.CommitInterval }

// due: a commit interval after the member's last round, or the
// partition's own commit if later. A partition that sat out rounds (it had
// nothing to commit) must not open one as soon as a record comes: with
// 1,024 partitions, each of those did, and the member ended 8.9 rounds a
// second instead of 2.
func (o *exactlyOnce) due(committed time.Time) time.Time {
	if last := o.mt.lastEnd(); last.After(committed) {
		committed = last
	}
	return committed.Add(o.m.cfg.CommitInterval)
}

func (o *exactlyOnce) began(t time.Time) {
	if o.oldest.IsZero() {
		o.oldest = t
	}
}

func (o *exactlyOnce) rewinds() bool { return true }

func (o *exactlyOnce) recover(ctx context.Context) error {
	o.oldest = time.Time{}
	return o.mt.recover(ctx, o, fmt.Errorf("partition %d: its write or commit failed", o.part))
}

// failed: the member's transaction is aborted (the round counts it),
// and the partition rewinds.
func (o *exactlyOnce) failed(ctx context.Context, w *worker, err error) step {
	return w.abortAndRewind(ctx, err, o.recover)
}

func (o *exactlyOnce) wanted() bool           { return o.mt.wanted() }
func (o *exactlyOnce) woken() <-chan struct{} { return o.mt.woken() }
func (o *exactlyOnce) leave()                 { o.mt.leave(o) }

// commit joins the member's round with the partition's consumed offsets
// (and the label topic's) and metadata naming the snapshot just saved:
// the outputs and the offsets become visible together, or neither does.
func (o *exactlyOnce) commit(ctx context.Context, w *worker, meta string) error {
	mt := o.m.cfg.Metrics
	offsets := map[string][]kafka.TxnOffsetCommit{w.part.Topic: {{Partition: w.part.ID, Offset: w.st.NextOffset, Metadata: meta}}}
	if lt := w.st.LabelTopic; lt != "" && w.st.LabelOffset >= 0 {
		offsets[lt] = []kafka.TxnOffsetCommit{{Partition: w.part.ID, Offset: w.st.LabelOffset}}
	}
	if err := o.mt.join(ctx, o, joinReq{gen: w.gen, offsets: offsets}); err != nil {
		return err
	}
	if !o.oldest.IsZero() {
		mt.VisibleLatency.Observe(max(0, time.Since(o.oldest).Seconds()))
		o.oldest = time.Time{}
	}
	mt.Commits.WithLabelValues("ok").Inc()
	return nil
}

func (o *exactlyOnce) abandon(ctx context.Context, err error, log zerolog.Logger) {
	if errors.Is(err, errFenced) {
		// The group refused the generation's commit: the round aborted
		// the transaction, and nothing this member wrote since its last
		// commit becomes visible.
		log.Warn().Err(err).Msg("fenced: another member owns the partition now; nothing this member wrote since its last commit becomes visible")
		return
	}
	if rerr := o.mt.recover(ctx, o, err); rerr != nil {
		// The next generation's first worker bumps the epoch, or the
		// transaction timeout aborts it.
		log.Info().Err(rerr).Msg("abort transaction")
	}
	log.Info().Err(err).Msg("final commit not taken; transaction aborted")
}
