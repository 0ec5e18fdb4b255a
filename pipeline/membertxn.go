package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

// memberTxn is the member's one transactional producer under exactly-once
// (docs/architecture.md §3, KIP-447): the outputs of every partition the
// member serves, and their offsets, commit in one transaction a commit
// interval, so that what the brokers pay grows with members, not with
// partitions.
//
// A commit is a round. The first worker whose cadence says commit opens it
// by joining with its offsets; every worker that wrote into the open
// transaction (dirty) must join too before it ends, since a partition's
// outputs become visible only with its offset; a worker with only
// progress to commit joins if it comes in time. When every dirty worker
// has joined, the one that joined last ends the round: one
// AddOffsetsToTxn, one TxnOffsetCommit naming every joined partition's
// offsets and snapshot, one EndTxn. A worker whose write failed joins
// with its failure (or leaves with writes in the transaction): the round
// then aborts the transaction for everyone, bumps the epoch (KIP-360),
// and every joined worker rewinds to its committed snapshot.
//
// Zombies are fenced by the group, not by the transactional id: the
// TxnOffsetCommit carries the generation and member id, and the
// coordinator refuses an older generation's, so the round aborts.
type memberTxn struct {
	m *member
	t *txn

	mu   sync.Mutex
	cond *sync.Cond // broadcast when a round ends
	// gen is the generation the producer was readied for.
	gen   int32
	ready bool
	// broken: the last abort could not bump the epoch; the producer must
	// be bumped before anything more is written.
	broken bool
	// dirty are the workers with writes in the open transaction, joined
	// those in the round with what they commit.
	dirty  map[*exactlyOnce]bool
	joined map[*exactlyOnce]joinReq
	// awaited counts the dirty workers not joined yet: the round ends at
	// 0 (a count, not a scan: a round of 1,024 partitions has as many
	// joins).
	awaited int
	// open: a round collects; closing: its end is under way (no writes).
	open, closing bool
	// doomed is why the open transaction can only abort (nil: it can
	// commit).
	doomed error
	round  *round
	// collecting mirrors open || doomed != nil, read by the workers
	// after every batch without the lock; opened is closed when it turns
	// true, to end the fetch waits of the workers that are to join.
	collecting atomic.Bool
	opened     chan struct{}
	// ended is when the last round ended (Unix nanoseconds).
	ended atomic.Int64
	// tps serialises the writes to one output partition: its sequence
	// numbers are the member's, shared by every worker writing to it.
	tps map[topicPartition]*sync.Mutex
	// adding: an AddPartitionsToTxn is under way; toAdd collects the
	// output partitions asked for meanwhile, for the next (see add).
	adding bool
	toAdd  *addBatch
}

// addBatch is output partitions to add to the transaction in one
// request, err valid once done is closed.
type addBatch struct {
	tps  []topicPartition
	done chan struct{}
	err  error
}

// round is one commit round's outcome, err valid once done is closed.
type round struct {
	done chan struct{}
	err  error
}

// joinReq is what a worker brings to a round.
type joinReq struct {
	gen     *kafka.Generation
	offsets map[string][]kafka.TxnOffsetCommit
	fail    error // its writes failed: the transaction aborts
}

// errTxnAborted marks the error of a round that aborted the transaction
// because of another partition.
var errTxnAborted = errors.New("transaction aborted")

// newMemberTxn is the member's transactional producer; its id is the
// prefix and a random suffix, unique to this member instance, so that no
// two instances ever fence each other by id (generations fence them).
func newMemberTxn(m *member) *memberTxn {
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := m.cfg.TransactionalIDPrefix + "." + hex.EncodeToString(b[:])
	mt := &memberTxn{m: m, t: &txn{client: m.client, id: id, timeout: m.cfg.TransactionTimeout},
		dirty: map[*exactlyOnce]bool{}, joined: map[*exactlyOnce]joinReq{}, round: &round{done: make(chan struct{})},
		tps: map[topicPartition]*sync.Mutex{}, opened: make(chan struct{})}
	mt.cond = sync.NewCond(&mt.mu)
	return mt
}

// ensure readies the producer once per generation: the first time it
// initialises the id; later it bumps the epoch if the last generation
// left a transaction open (its final round failed), so that nothing of it
// becomes visible.
func (mt *memberTxn) ensure(ctx context.Context, gen int32) error {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	for mt.closing {
		mt.cond.Wait()
	}
	if mt.ready && mt.gen == gen && !mt.broken {
		return nil
	}
	var err error
	switch {
	case !mt.ready:
		err = mt.t.init(ctx)
	case mt.t.open || mt.broken:
		err = mt.t.bump(ctx)
	}
	if err != nil {
		return err
	}
	mt.ready, mt.gen, mt.broken = true, gen, false
	return nil
}

// prepare readies output partition p of topic for a batch of worker o:
// o becomes dirty (it must join the round), p joins the transaction, and
// the batch gets p's next sequence number. It waits while a round ends;
// a worker whose transaction is doomed gets the reason, so that it joins
// with it at once. The caller holds p's lock until release.
func (mt *memberTxn) prepare(ctx context.Context, o *exactlyOnce, topic string, p int) (batchID, string, error) {
	mt.mu.Lock()
	for mt.closing || mt.doomed != nil && !mt.dirty[o] {
		mt.cond.Wait()
	}
	if mt.doomed != nil {
		err := mt.doomed
		mt.mu.Unlock()
		return batchID{}, "", fmt.Errorf("%w: %w", errTxnAborted, err)
	}
	if mt.broken {
		if err := mt.t.bump(ctx); err != nil {
			mt.mu.Unlock()
			return batchID{}, "", err
		}
		mt.broken = false
	}
	if !mt.dirty[o] {
		mt.dirty[o] = true
		mt.awaited++
	}
	tp := topicPartition{topic, p}
	l := mt.tps[tp]
	if l == nil {
		l = &sync.Mutex{}
		mt.tps[tp] = l
	}
	mt.mu.Unlock()
	l.Lock()
	if err := mt.add(ctx, tp); err != nil {
		l.Unlock()
		return batchID{}, "", err
	}
	mt.mu.Lock()
	defer mt.mu.Unlock()
	return batchID{producer: int64(mt.t.pid), epoch: int16(mt.t.epoch), seq: mt.t.seq[tp], transactional: true}, mt.t.id, nil
}

// add adds tp to the open transaction, once per transaction. The output
// partitions asked for while a request is under way go together in the
// next, sent by whoever asked first: after a round every worker adds its
// output partition at once, and one request each cost a round trip an
// output partition a round (1,024 at 1,024 partitions). The requests go
// without the member's lock.
func (mt *memberTxn) add(ctx context.Context, tp topicPartition) error {
	mt.mu.Lock()
	if mt.t.added[tp] {
		mt.mu.Unlock()
		return nil
	}
	if mt.toAdd == nil {
		mt.toAdd = &addBatch{done: make(chan struct{})}
	}
	b := mt.toAdd
	if !slices.Contains(b.tps, tp) {
		b.tps = append(b.tps, tp)
	}
	if !mt.adding {
		mt.adding = true
		mt.sendAdds(ctx) // unlocks
	} else {
		mt.mu.Unlock()
	}
	select {
	case <-b.done:
		return b.err
	case <-ctx.Done():
		return fmt.Errorf("add %s to the transaction: %w", tp.topic, ctx.Err())
	}
}

// sendAdds sends the collected output partitions, and those collected
// meanwhile, until none is left; called with mt.mu held, which it
// releases.
func (mt *memberTxn) sendAdds(ctx context.Context) {
	for mt.toAdd != nil {
		b, pid, epoch := mt.toAdd, mt.t.pid, mt.t.epoch
		mt.toAdd = nil
		mt.mu.Unlock()
		err := mt.t.addPartitions(ctx, b.tps, pid, epoch)
		mt.mu.Lock()
		if err == nil {
			if !mt.t.open {
				mt.t.open, mt.t.started = true, time.Now()
			}
			for _, tp := range b.tps {
				mt.t.added[tp] = true
			}
		}
		b.err = err
		close(b.done)
	}
	mt.adding = false
	mt.mu.Unlock()
}

// wrote advances p's sequence past n records written.
func (mt *memberTxn) wrote(topic string, p, n int) {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	tp := topicPartition{topic, p}
	mt.t.seq[tp] = nextSeq(mt.t.seq[tp], n)
}

// release ends the write to p that prepare began.
func (mt *memberTxn) release(topic string, p int) {
	mt.mu.Lock()
	l := mt.tps[topicPartition{topic, p}]
	mt.mu.Unlock()
	l.Unlock()
}

// wanted says whether a round collects: a worker with progress joins it.
func (mt *memberTxn) wanted() bool { return mt.collecting.Load() }

// lastEnd is when the last round ended (zero before the first).
func (mt *memberTxn) lastEnd() time.Time {
	if n := mt.ended.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// collect marks the round as collecting; mt.mu held.
func (mt *memberTxn) collect() {
	if !mt.collecting.Load() {
		mt.collecting.Store(true)
		close(mt.opened)
	}
}

// woken is closed when a round begins to collect.
func (mt *memberTxn) woken() <-chan struct{} {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	return mt.opened
}

// join brings o's offsets (or its failure) to the round and waits for the
// round's end: nil once they are committed with every other joined
// partition's, else why not (errFenced when the group refused the
// generation). Joining again (after ctx ended) waits for the same round.
func (mt *memberTxn) join(ctx context.Context, o *exactlyOnce, req joinReq) error {
	mt.mu.Lock()
	for mt.closing {
		if _, in := mt.joined[o]; in {
			break
		}
		mt.cond.Wait()
	}
	r := mt.round
	if _, in := mt.joined[o]; !in || !mt.closing {
		if req.fail != nil && mt.doomed == nil {
			mt.doomed = req.fail
		}
		if _, in := mt.joined[o]; !in && mt.dirty[o] {
			mt.awaited--
		}
		mt.joined[o] = req
		mt.open = true
		mt.collect()
	}
	mt.endIfDue(ctx) // unlocks
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return fmt.Errorf("wait for the member's transaction: %w", ctx.Err())
	}
}

// leave takes o out of the member's rounds for good (its worker returns).
// A worker that leaves with writes in the open transaction without
// joining dooms it: its outputs cannot commit without its offsets.
func (mt *memberTxn) leave(o *exactlyOnce) {
	mt.mu.Lock()
	if _, in := mt.joined[o]; mt.dirty[o] && !in {
		delete(mt.dirty, o)
		mt.awaited--
		if mt.doomed == nil {
			mt.doomed = errors.New("a partition stopped with writes in the transaction")
			mt.collect()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), mt.m.cfg.ShutdownTimeout)
	defer cancel()
	mt.endIfDue(ctx) // unlocks
}

// endIfDue ends the round when every dirty worker has joined (or a doomed
// transaction has no writer left), then releases the lock it was called
// with.
func (mt *memberTxn) endIfDue(ctx context.Context) {
	if !(mt.open || mt.doomed != nil) || mt.awaited > 0 || mt.closing {
		mt.mu.Unlock()
		return
	}
	mt.closing = true
	r, joined, doomed := mt.round, mt.joined, mt.doomed
	mt.mu.Unlock()
	// The round ends even if the joiner's generation ends meanwhile:
	// its requests are bounded, and an open transaction would hold back
	// every partition's read_committed consumers.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mt.t.timeout)
	defer cancel()
	err := mt.end(ctx, joined, doomed)
	mt.mu.Lock()
	mt.dirty, mt.joined, mt.awaited, mt.open, mt.doomed, mt.closing = map[*exactlyOnce]bool{}, map[*exactlyOnce]joinReq{}, 0, false, nil, false
	mt.collecting.Store(false)
	mt.opened = make(chan struct{})
	mt.ended.Store(time.Now().UnixNano())
	r.err = err
	mt.round = &round{done: make(chan struct{})}
	close(r.done)
	mt.cond.Broadcast()
	mt.mu.Unlock()
}

// end commits the round's transaction with every joined partition's
// offsets, or aborts it (doomed, or the commit failed) and bumps the
// epoch, so that the replays write with fresh sequence numbers.
func (mt *memberTxn) end(ctx context.Context, joined map[*exactlyOnce]joinReq, doomed error) error {
	met := mt.m.cfg.Metrics
	var gen *kafka.Generation
	offsets := map[string][]kafka.TxnOffsetCommit{}
	for _, req := range joined {
		if req.offsets == nil {
			continue
		}
		gen = req.gen
		for t, os := range req.offsets {
			offsets[t] = append(offsets[t], os...)
		}
	}
	err := doomed
	if err == nil && gen != nil {
		started := mt.t.started
		if !mt.t.open {
			started = time.Now() // offsets alone
		}
		if err = mt.t.commit(ctx, mt.m.cfg.Group, int(gen.ID), gen.MemberID, offsets); err == nil {
			met.Transactions.WithLabelValues("committed", "").Inc()
			met.TransactionDuration.Observe(time.Since(started).Seconds())
			return nil
		}
	}
	if err == nil {
		return nil // nobody had anything to commit
	}
	reason := "error"
	if errors.Is(err, errFenced) {
		reason = "fenced"
	}
	met.Transactions.WithLabelValues("aborted", reason).Inc()
	// InitProducerID with the producer's id and epoch aborts what is open
	// and bumps the epoch; no EndTxn first (an abort refused for an epoch
	// the coordinator bumped on its timeout says nothing more).
	if berr := mt.t.bump(ctx); berr != nil {
		mt.mu.Lock()
		mt.broken = true
		mt.mu.Unlock()
		mt.m.cfg.Log.Warn().Err(berr).Msg("bump the producer epoch after an abort; will retry before the next write")
	}
	return fmt.Errorf("%w: %w", errTxnAborted, err)
}

// recover makes sure the transaction o wrote in is aborted: joining with
// its failure when it is still open, bumping the producer when the last
// abort could not.
func (mt *memberTxn) recover(ctx context.Context, o *exactlyOnce, cause error) error {
	mt.mu.Lock()
	dirty := mt.dirty[o]
	mt.mu.Unlock()
	if dirty {
		if err := mt.join(ctx, o, joinReq{fail: cause}); err != nil && !errors.Is(err, errTxnAborted) {
			return err
		}
	}
	mt.mu.Lock()
	defer mt.mu.Unlock()
	for mt.closing {
		mt.cond.Wait()
	}
	if mt.broken {
		if err := mt.t.bump(ctx); err != nil {
			return err
		}
		mt.broken = false
	}
	return nil
}
