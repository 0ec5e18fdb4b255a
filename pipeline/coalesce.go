package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	produceAPI "github.com/segmentio/kafka-go/protocol/produce"
	"github.com/segmentio/kafka-go/protocol/rawproduce"
)

// sendQueue coalesces the record batches of many partitions of one topic
// into one Produce request a broker. A request per partition batch made
// the requests, their connections and their goroutines grow with the
// partitions a member serves: at 1,024 partitions each flush of each
// partition was a request of its own. Here at most cap requests of the
// topic are in flight; a batch that finds them all taken waits, and the
// request that ends next hands the waiting batches on, as many as go to
// one broker, in one request. A lone batch goes at once: nothing waits
// for company when the broker keeps up.
//
// Each batch keeps its own outcome: the broker answers every partition
// of a request apart, and that answer (or the request's failure) is what
// the batch's producer sees, as if it had been sent alone; its retries,
// sequence numbers and fencing are its producer's, as before.
type sendQueue struct {
	cap     int
	mu      sync.Mutex
	flying  int
	waiting []*queuedBatch
}

// queuedBatch is one partition's record batch waiting for its request.
type queuedBatch struct {
	part   int
	leader int32
	txnID  string
	set    []byte
	done   chan error   // the batch's outcome, or errLead
	r      bytes.Reader // set, as a request reads it (reset by send)
}

// queuedBatches holds the batches not in a request, their channels made:
// a batch, its channel and its reader made for each flush were 3 of a
// flush's allocations. A batch goes back once its outcome is handed on,
// when nothing refers to it (submit).
var queuedBatches = sync.Pool{New: func() any { return &queuedBatch{done: make(chan error, 1)} }}

// newQueuedBatch is a batch from the pool, as given.
func newQueuedBatch(part int, leader int32, txnID string, set []byte) *queuedBatch {
	pb := queuedBatches.Get().(*queuedBatch)
	pb.part, pb.leader, pb.txnID, pb.set = part, leader, txnID, set
	return pb
}

// free gives pb back to the pool. Its channel is empty: it carries one
// value a submit, received before submit returns.
func (pb *queuedBatch) free() {
	pb.txnID, pb.set = "", nil
	pb.r.Reset(nil)
	queuedBatches.Put(pb)
}

// errLead tells a waiting batch to send the next request itself.
var errLead = errors.New("lead the next request")

// Bounds of one coalesced request: far below a broker's
// socket.request.max.bytes (100 MiB by default) and its time to append.
const (
	requestMaxBytes   = 8 << 20
	requestMaxBatches = 256
	// sendsInFlight is the requests of one topic in flight at once: a
	// few, so that the flushes of many partitions meet in one request.
	sendsInFlight = 4
)

func newSendQueue() *sendQueue { return &sendQueue{cap: sendsInFlight} }

// submit sends pb, alone or with others bound for its broker, and
// returns the broker's answer for pb's partition.
func (p *producer) submit(ctx context.Context, pb *queuedBatch) error {
	q := p.q
	if q == nil {
		return p.send(ctx, []*queuedBatch{pb})[0]
	}
	q.mu.Lock()
	if q.flying < q.cap {
		q.flying++
		q.mu.Unlock()
	} else {
		q.waiting = append(q.waiting, pb)
		q.mu.Unlock()
		// Not given up with ctx: the request that will carry pb is
		// under way or next, and bounded by its timeout.
		if err := <-pb.done; err != errLead {
			return err
		}
	}
	return p.lead(ctx, pb)
}

// lead sends first with the waiting batches bound for its broker, hands
// each its outcome, and passes the turn to the next waiting batch.
func (p *producer) lead(ctx context.Context, first *queuedBatch) error {
	q := p.q
	group := q.take(first)
	errs := p.send(ctx, group)
	for i, pb := range group[1:] {
		pb.done <- errs[i+1]
	}
	q.mu.Lock()
	if len(q.waiting) == 0 {
		q.flying--
		q.mu.Unlock()
		return errs[0]
	}
	next := q.waiting[0]
	q.waiting = q.waiting[1:]
	q.mu.Unlock()
	next.done <- errLead
	return errs[0]
}

// take removes from the waiting batches those that can share first's
// request: same broker, same transaction, a partition not in it yet,
// within the request's bounds.
func (q *sendQueue) take(first *queuedBatch) []*queuedBatch {
	group := []*queuedBatch{first}
	q.mu.Lock()
	defer q.mu.Unlock()
	size, rest := len(first.set), q.waiting[:0]
	for _, pb := range q.waiting {
		if len(group) < requestMaxBatches && size+len(pb.set) <= requestMaxBytes &&
			pb.leader == first.leader && pb.txnID == first.txnID && !hasPartition(group, pb.part) {
			group = append(group, pb)
			size += len(pb.set)
			continue
		}
		rest = append(rest, pb)
	}
	clear(q.waiting[len(rest):])
	q.waiting = rest
	return group
}

func hasPartition(group []*queuedBatch, part int) bool {
	for _, pb := range group {
		if pb.part == part {
			return true
		}
	}
	return false
}

// send makes one Produce request of group and returns each batch's
// outcome. A request the transport refuses for a group (its metadata saw
// the leaders change meanwhile) is sent again a batch at a time.
func (p *producer) send(ctx context.Context, group []*queuedBatch) []error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), produceTimeout)
	defer cancel()
	req := &rawproduce.Request{
		TransactionalID: group[0].txnID, Acks: int16(kafka.RequireAll), Timeout: timeoutMs(ctx),
		Topics: []rawproduce.RequestTopic{{Topic: p.topic, Partitions: make([]rawproduce.RequestPartition, len(group))}},
	}
	for i, pb := range group {
		pb.r.Reset(pb.set)
		req.Topics[0].Partitions[i] = rawproduce.RequestPartition{
			Partition: int32(pb.part), RecordSet: protocol.RawRecordSet{Reader: &pb.r},
		}
	}
	errs := make([]error, len(group))
	r, err := p.client.Transport.RoundTrip(ctx, p.client.Addr, req)
	if err != nil && len(group) > 1 && !temporary(err) {
		// The leaders the batches were grouped by are not the
		// transport's: read them again for the next batches.
		p.layout.Store(nil)
		for i := range group {
			errs[i] = p.send(ctx, group[i:i+1])[0]
		}
		return errs
	}
	if err != nil {
		err = fmt.Errorf("produce to %s: %w", p.topic, err)
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	answerEach(r.(*produceAPI.Response), p.topic, group, errs)
	return errs
}

// answerEach sets errs[i] to the broker's answer for group[i]'s partition
// (protocol.ErrNoPartition for none).
func answerEach(res *produceAPI.Response, topic string, group []*queuedBatch, errs []error) {
	for i := range errs {
		errs[i] = errUnanswered
	}
	for _, t := range res.Topics {
		if t.Topic != topic {
			continue
		}
		for _, rp := range t.Partitions {
			for i, pb := range group {
				if int32(pb.part) == rp.Partition {
					errs[i] = brokerError(rp.ErrorCode, rp.ErrorMessage)
				}
			}
		}
	}
	for i := range errs {
		if errs[i] == errUnanswered {
			errs[i] = fmt.Errorf("produce to %s: %w", topic, protocol.ErrNoPartition)
		}
	}
}

// errUnanswered marks a batch the answer has not named yet: its error,
// made for every batch beforehand, was 3 allocations a batch.
var errUnanswered = errors.New("no answer")

// brokerError is kafka-go's error for a partition's error code.
func brokerError(code int16, msg string) error {
	switch {
	case code == 0:
		return nil
	case msg == "":
		return kafka.Error(code)
	default:
		return fmt.Errorf("%w: %s", kafka.Error(code), msg)
	}
}

// timeoutMs is the time ctx leaves, as the request's timeout.
func timeoutMs(ctx context.Context) int32 {
	d := produceTimeout
	if dl, ok := ctx.Deadline(); ok {
		d = time.Until(dl)
	}
	return int32(max(d, time.Millisecond) / time.Millisecond)
}
