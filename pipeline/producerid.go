package pipeline

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// writer is who a worker's record batches are written as: a plain
// producer (nil), an idempotent one (at-least-once, the default) or the
// partition's transactional one (exactly-once). produce asks it for each
// batch's header and tells it what was written, so that a batch retried
// carries the same producer id, epoch and sequence numbers and the broker
// keeps one copy of it.
type writer interface {
	// prepare readies partition p of topic for a batch (a transaction
	// adds it) and returns what the batch header says of its producer,
	// and the transactional id of the request ("" for none).
	prepare(ctx context.Context, topic string, p int) (batchID, string, error)
	// wrote advances partition p's sequence past n records written.
	wrote(topic string, p, n int)
	// release ends the write that prepare began, written or not.
	release(topic string, p int)
	// resend says, after a produce failed with err, whether the batch is
	// to be sent again at once, having readied the producer for it.
	resend(ctx context.Context, err error) (bool, error)
}

// nextSeq is seq advanced by n records. Sequence numbers are int32 and
// wrap to 0 after math.MaxInt32, as Kafka's do
// (DefaultRecordBatch.incrementSequence): a producer that writes 2^31
// records in one epoch goes on at 0, which the broker expects.
func nextSeq(seq int32, n int) int32 {
	if int64(seq)+int64(n) > math.MaxInt32 {
		return int32(int64(seq) + int64(n) - math.MaxInt32 - 1)
	}
	return seq + int32(n)
}

// idempotent is the producer of a worker under at-least-once: a producer
// id without a transactional id (InitProducerID), and a sequence number
// per output partition, so that a batch sent again after a timeout — which
// Kafka may answer after appending it — is acknowledged as the duplicate it
// is instead of written twice. It is the worker's alone: two workers
// writing to one output partition have ids of their own.
//
// A sequence error (OUT_OF_ORDER_SEQUENCE, UNKNOWN_PRODUCER_ID: the broker
// lost the producer's state, or a batch in doubt was never written) bumps
// the epoch, as Kafka's producers do since 2.5 (KIP-360): sequences start
// again at 0 and the batch is sent once more. That can write a batch twice
// only when an earlier attempt of it was appended and its answer lost.
type idempotent struct {
	client *kafka.Client
	pid    int64
	epoch  int16
	seq    map[topicPartition]int32
}

func (i *idempotent) init(ctx context.Context) error {
	return retry(ctx, "init idempotent producer id", func(ctx context.Context) error {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionTimeoutMillis = math.MaxInt32 // as Kafka's producer: no transaction
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp := kmsg.NewPtrInitProducerIDResponse()
		if err := kmsgRoundTrip(ctx, i.client, req, resp); err != nil {
			return err
		}
		if err := kafkaError(resp.ErrorCode); err != nil {
			return err
		}
		i.pid, i.epoch, i.seq = resp.ProducerID, resp.ProducerEpoch, map[topicPartition]int32{}
		return nil
	})
}

func (i *idempotent) prepare(_ context.Context, topic string, p int) (batchID, string, error) {
	return batchID{producer: i.pid, epoch: i.epoch, seq: i.seq[topicPartition{topic, p}]}, "", nil
}

func (i *idempotent) release(string, int) {}

func (i *idempotent) wrote(topic string, p, n int) {
	tp := topicPartition{topic, p}
	i.seq[tp] = nextSeq(i.seq[tp], n)
}

// resend: a sequence error means the broker's sequence for the producer
// is not ours; a new epoch starts, and the batch goes again.
func (i *idempotent) resend(ctx context.Context, err error) (bool, error) {
	if !sequenceLost(err) {
		return false, nil
	}
	if err := i.bump(ctx); err != nil {
		return false, err
	}
	return true, nil
}

// bump starts a new epoch of the producer id, its sequences at 0; past the
// last epoch it takes a new producer id.
func (i *idempotent) bump(ctx context.Context) error {
	if i.epoch == math.MaxInt16 {
		return i.init(ctx)
	}
	i.epoch++
	clear(i.seq)
	return nil
}

// sequenceLost reports the produce errors after which an idempotent
// producer's sequence numbers no longer match the broker's.
func sequenceLost(err error) bool {
	return errors.Is(err, kafka.OutOfOrderSequenceNumber) || errors.Is(err, kafka.UnknownProducerId) ||
		errors.Is(err, kafka.InvalidProducerEpoch) || errors.Is(err, kafka.InvalidProducerIDMapping)
}

// kafkaError is the kafka-go error of a Kafka error code (nil for 0), so
// that answers decoded with kmsg are classified as kafka-go's are.
func kafkaError(code int16) error {
	if code == 0 {
		return nil
	}
	return kafka.Error(int(code))
}

// kmsgRoundTrip sends req through the client's transport to any broker
// and decodes the answer into resp. It serves the requests kafka-go
// encodes in a way that would route them wrongly: an InitProducerID
// without a transactional id is a TransactionalMessage to kafka-go, which
// would look up a transaction coordinator for the empty id.
func kmsgRoundTrip(ctx context.Context, c *kafka.Client, req kmsg.Request, resp kmsg.Response) error {
	x := &rawExchange{req: req, resp: resp}
	return roundTrip(ctx, c, x, x)
}

// roundTrip sends msg (x, or x wrapped to route it) and reports x's error.
func roundTrip(ctx context.Context, c *kafka.Client, msg kafka.Request, x *rawExchange) error {
	if _, err := c.Transport.RoundTrip(ctx, c.Addr, msg); err != nil {
		return err
	}
	return x.err
}

// rawExchange is one kmsg request and its answer on a connection kafka-go
// dialled (and authenticated), at the highest version both sides speak.
type rawExchange struct {
	req     kmsg.Request
	resp    kmsg.Response
	version int16
	// maxVersion, if above 0, caps the version sent; probe asks the
	// broker for its versions first (see RawExchange).
	maxVersion int16
	probe      bool
	err        error
}

func (x *rawExchange) ApiKey() protocol.ApiKey { return protocol.ApiKey(x.req.Key()) }

func (x *rawExchange) Required(versions map[protocol.ApiKey]int16) bool {
	v, ok := versions[x.ApiKey()]
	if !ok {
		v = -1
	}
	x.version = min(v, x.req.MaxVersion())
	if x.maxVersion > 0 {
		x.version = min(x.version, x.maxVersion)
	}
	return true
}

func (x *rawExchange) RawExchange(rw io.ReadWriter) (protocol.Message, error) {
	if x.probe {
		// kafka-go negotiated no higher than the versions it speaks
		// itself: the broker's own maximum decides.
		v, err := brokerMax(rw, x.req.Key())
		if err != nil {
			return nil, err
		}
		x.version = min(max(x.version, v), x.req.MaxVersion())
		if x.maxVersion > 0 {
			x.version = min(x.version, x.maxVersion)
		}
	}
	if err := exchange(rw, x.req, x.resp, x.version); err != nil {
		var de *decodeError
		if errors.As(err, &de) {
			x.err = de.err // the answer was read whole: the connection is fine
			return x, nil
		}
		return nil, err
	}
	return x, nil
}

// decodeError is an answer read whole that did not decode.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }

// brokerMax asks the broker (ApiVersions v0) for the highest version of
// key it serves (−1: none).
func brokerMax(rw io.ReadWriter, key int16) (int16, error) {
	req, resp := kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrApiVersionsResponse()
	if err := exchange(rw, req, resp, 0); err != nil {
		return 0, err
	}
	if err := kafkaError(resp.ErrorCode); err != nil {
		return 0, fmt.Errorf("api versions: %w", err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key {
			return k.MaxVersion, nil
		}
	}
	return -1, nil
}

// exchange sends req at version on rw and decodes the answer into resp;
// an error decoding the answer is returned too (the connection stays
// usable: the answer was read whole).
func exchange(rw io.ReadWriter, req kmsg.Request, resp kmsg.Response, version int16) error {
	key := kmsg.NameForKey(req.Key())
	if version < 0 {
		return fmt.Errorf("the broker does not serve %s", key)
	}
	req.SetVersion(version)
	const correlationID = 1 // one request at a time on the connection
	buf := kmsg.NewRequestFormatter().AppendRequest(nil, req, correlationID)
	if _, err := rw.Write(buf); err != nil {
		return fmt.Errorf("send %s: %w", key, err)
	}
	var size [4]byte
	if _, err := io.ReadFull(rw, size[:]); err != nil {
		return fmt.Errorf("read %s answer: %w", key, err)
	}
	n := int(int32(binary.BigEndian.Uint32(size[:])))
	if n < 4 || n > 1<<20 {
		return fmt.Errorf("read %s answer: its length %d is not that of an answer", key, n)
	}
	buf = make([]byte, n)
	if _, err := io.ReadFull(rw, buf); err != nil {
		return fmt.Errorf("read %s answer: %w", key, err)
	}
	if id := int32(binary.BigEndian.Uint32(buf)); id != correlationID {
		return fmt.Errorf("read %s answer: correlation id %d, not %d", key, id, correlationID)
	}
	resp.SetVersion(version)
	body := buf[4:]
	if resp.IsFlexible() && req.Key() != 18 { // ApiVersions answers with the v0 header
		// The flexible response header ends in tagged fields: none are
		// defined, so a broker sends a count of 0.
		if len(body) == 0 || body[0] != 0 {
			return fmt.Errorf("read %s answer: unexpected tagged header fields", key)
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return &decodeError{fmt.Errorf("decode %s answer (v%d): %w", key, version, err)}
	}
	return nil
}
