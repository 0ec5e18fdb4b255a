package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

// txn is the member's transactional producer under exactly-once
// (docs/architecture.md §3): its requests and its producer state. What is
// written in which transaction, and when it commits, is memberTxn's; a
// txn is used under memberTxn's rules (its maps under memberTxn.mu).
type txn struct {
	client  *kafka.Client
	id      string
	timeout time.Duration
	pid     int
	epoch   int
	// seq is the next sequence number per output partition, since the
	// producer id was initialised; a batch retried keeps its number.
	seq map[topicPartition]int32
	// added holds the partitions added to the open transaction.
	added map[topicPartition]bool
	// open: a record was written since the last commit or abort.
	open    bool
	started time.Time
}

type topicPartition struct {
	topic     string
	partition int
}

// fenced reports whether err means the group moved on: the offsets are
// refused because another generation owns the partition (errFenced, as a
// commit of a newer generation's partition is). Only that stops a
// partition: a producer error, even PRODUCER_FENCED, is first taken for
// what it most often is — the coordinator aborting a transaction that
// outlived its timeout, or sequence state lost to a produce in doubt — and
// answered by bumping the epoch (txn.bump), which is refused only when a
// newer owner initialised the transactional id.
func fenced(err error) bool {
	return errors.Is(err, errFenced) ||
		// TxnOffsetCommit from a generation the group left behind.
		errors.Is(err, kafka.IllegalGeneration) || errors.Is(err, kafka.UnknownMemberId) || errors.Is(err, kafka.FencedInstanceID)
}

// fence marks err as fencing when it is one.
func fence(err error) error {
	if err != nil && fenced(err) && !errors.Is(err, errFenced) {
		return fmt.Errorf("%w: %w", errFenced, err)
	}
	return err
}

// producerFenced reports the answers to a bump that mean another holder
// initialised the transactional id since this producer did: the
// partition's next owner.
func producerFenced(err error) bool {
	return errors.Is(err, kafka.ProducerFenced) || errors.Is(err, kafka.InvalidProducerEpoch) ||
		errors.Is(err, kafka.TransactionCoordinatorFenced)
}

// retriable reports the coordinator answers that a retry after a pause
// resolves: a coordinator moving or loading, or the previous
// transaction's end still in progress.
func retriable(err error) bool {
	return errors.Is(err, kafka.ConcurrentTransactions) || errors.Is(err, kafka.GroupLoadInProgress) ||
		errors.Is(err, kafka.GroupCoordinatorNotAvailable) || errors.Is(err, kafka.NotCoordinatorForGroup) || temporary(err)
}

// retry runs op until it succeeds, fails for good, or ctx ends.
func retry(ctx context.Context, what string, op func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		err := op(ctx)
		if err == nil {
			return nil
		}
		if !retriable(err) || attempt+1 == produceAttempts {
			return fence(fmt.Errorf("%s: %w", what, err))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(min(time.Duration(attempt+1)*produceBackoffMin, produceBackoffMax)):
		}
	}
}

// init (re)initialises the producer id: the coordinator aborts any
// transaction the id left open (this member's or a previous owner's) and
// fences every earlier holder of the id.
func (t *txn) init(ctx context.Context) error {
	return t.initProducer(ctx, "init producer id "+t.id, -1, -1)
}

// initProducer sends InitProducerID for the transactional id, as its
// holder pid at epoch (−1, −1: a new holder), and starts afresh with the
// id and epoch the coordinator answers.
func (t *txn) initProducer(ctx context.Context, what string, pid, epoch int) error {
	return retry(ctx, what, func(ctx context.Context) error {
		res, err := t.client.InitProducerID(ctx, &kafka.InitProducerIDRequest{
			TransactionalID: t.id, TransactionTimeoutMs: int(t.timeout.Milliseconds()), ProducerID: pid, ProducerEpoch: epoch,
		})
		if err != nil {
			return err
		}
		if res.Error != nil {
			return res.Error
		}
		t.pid, t.epoch = res.Producer.ProducerID, res.Producer.ProducerEpoch
		t.seq, t.added, t.open = map[topicPartition]int32{}, map[topicPartition]bool{}, false
		return nil
	})
}

// bump recovers the producer after an aborted transaction (KIP-360):
// InitProducerID with the current producer id and epoch aborts whatever
// is still open and bumps the epoch, so that the sequence numbers start
// again at 0. Without it a replay would carry the aborted batches'
// numbers, which the broker keeps across the abort: a batch of the same
// size is acknowledged as a duplicate of the aborted one and never
// written (the replay lost, silently), one of another size is out of
// order for ever. A transaction the coordinator aborted on its timeout
// bumped the epoch already; the coordinator accepts the previous one here.
//
// The id is this member instance's alone, so a bump refused as fenced
// (the coordinator bumped the epoch itself, twice) or for a producer id it
// no longer knows (expired) is answered by a fresh InitProducerID, which
// aborts whatever the id left open: no other holder can be fenced by it.
func (t *txn) bump(ctx context.Context) error {
	err := t.initProducer(ctx, "bump the epoch of "+t.id, t.pid, t.epoch)
	if err != nil && (producerFenced(err) || errors.Is(err, kafka.InvalidProducerIDMapping)) {
		return t.init(ctx)
	}
	return err
}

// addPartitions adds tps to the open transaction of the producer (pid,
// epoch), before the first batch written to each in the transaction: one
// request for all of them.
func (t *txn) addPartitions(ctx context.Context, tps []topicPartition, pid, epoch int) error {
	topics := map[string][]kafka.AddPartitionToTxn{}
	for _, tp := range tps {
		topics[tp.topic] = append(topics[tp.topic], kafka.AddPartitionToTxn{Partition: tp.partition})
	}
	return retry(ctx, fmt.Sprintf("add %d output partitions to the transaction", len(tps)), func(ctx context.Context) error {
		res, err := t.client.AddPartitionsToTxn(ctx, &kafka.AddPartitionsToTxnRequest{
			TransactionalID: t.id, ProducerID: pid, ProducerEpoch: epoch, Topics: topics,
		})
		if err != nil {
			return err
		}
		return partitionError(res.Topics, func(r kafka.AddPartitionToTxnPartition) error { return r.Error })
	})
}

// partitionError is the first per-partition error of a response: kafka-go
// reports them inside a nil error.
func partitionError[P any](topics map[string][]P, errOf func(P) error) error {
	for _, parts := range topics {
		for _, r := range parts {
			if err := errOf(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// commit commits the open transaction together with the consumed
// offsets, committed for group in its generation gen as member: the
// offsets become the group's exactly when the records written in the
// transaction become visible to read_committed consumers.
func (t *txn) commit(ctx context.Context, group string, gen int, member string, offsets map[string][]kafka.TxnOffsetCommit) error {
	err := retry(ctx, "add offsets to the transaction", func(ctx context.Context) error {
		res, err := t.client.AddOffsetsToTxn(ctx, &kafka.AddOffsetsToTxnRequest{
			TransactionalID: t.id, ProducerID: t.pid, ProducerEpoch: t.epoch, GroupID: group,
		})
		if err != nil {
			return err
		}
		return res.Error
	})
	if err != nil {
		return err
	}
	err = retry(ctx, "commit offsets in the transaction", func(ctx context.Context) error {
		res, err := t.client.TxnOffsetCommit(ctx, &kafka.TxnOffsetCommitRequest{
			TransactionalID: t.id, GroupID: group, ProducerID: t.pid, ProducerEpoch: t.epoch,
			GenerationID: gen, MemberID: member, Topics: offsets,
		})
		if err != nil {
			return err
		}
		return partitionError(res.Topics, func(r kafka.TxnOffsetCommitPartition) error { return r.Error })
	})
	if err != nil {
		return err
	}
	return t.end(ctx, true)
}

// abort aborts the open transaction: nothing written in it becomes
// visible to read_committed consumers, and its offsets are not committed.
func (t *txn) abort(ctx context.Context) error {
	if !t.open {
		return nil
	}
	return t.end(ctx, false)
}

func (t *txn) end(ctx context.Context, commit bool) error {
	what := map[bool]string{true: "commit", false: "abort"}[commit] + " transaction " + t.id
	err := retry(ctx, what, func(ctx context.Context) error {
		res, err := t.client.EndTxn(ctx, &kafka.EndTxnRequest{
			TransactionalID: t.id, ProducerID: t.pid, ProducerEpoch: t.epoch, Committed: commit,
		})
		if err != nil {
			return err
		}
		return res.Error
	})
	if err == nil {
		t.open, t.added = false, map[topicPartition]bool{}
	}
	return err
}
