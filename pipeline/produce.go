package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	kafka "github.com/segmentio/kafka-go"
	metadataAPI "github.com/segmentio/kafka-go/protocol/metadata"
)

// producer writes to one topic through kafka-go's Produce API, a whole
// group of records in one request to one partition, rather than through
// kafka.Writer: the Writer looks up the topic's partitions and asks the
// balancer once per record, sorts records into batches through goroutines
// and channels, and holds each batch for its BatchTimeout — a worker
// already hands over whole batches for one partition, so all of that was
// per-record cost for nothing. The guarantees are the Writer's as the
// service used it: acks from all in-sync replicas, a record larger than
// the topic takes refused before it is sent (kafka.MessageTooLargeError),
// retriable failures retried a few times before they are reported, and a
// request under way never cancelled (only its timeout bounds it).
type producer struct {
	client *kafka.Client
	topic  string
	// limit is the largest record batch the topic takes (its
	// max.message.bytes); a record is refused above limit−batchOverhead,
	// the Writer's BatchBytes.
	limit      int
	autoCreate bool
}

// Defaults of kafka.Writer, kept: attempts per write, the backoff between
// them (attempt² × produceBackoffMin, at most produceBackoffMax) and the
// bound of one request.
const (
	produceAttempts   = 10
	produceBackoffMin = 100 * time.Millisecond
	produceBackoffMax = time.Second
	produceTimeout    = 10 * time.Second
)

// produce writes msgs, in order, as one record batch to partition
// src mod (the topic's partitions) — so that the output of input
// partition src stays in order in one partition — and waits for the
// acknowledgement of all in-sync replicas. Errors that kafka-go's Writer
// retried (temporary broker errors, dropped connections) are retried here
// too, until ctx ends; the request under way is never cancelled.
func (p *producer) produce(ctx context.Context, src int, msgs []kafka.Message) error {
	for i := range msgs {
		if writerSize(&msgs[i]) > p.limit-batchOverhead {
			return kafka.MessageTooLargeError{Message: msgs[i]}
		}
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(min(time.Duration(attempt*attempt)*produceBackoffMin, produceBackoffMax)):
			}
		}
		err := p.once(context.WithoutCancel(ctx), src, msgs)
		if err == nil || attempt+1 == produceAttempts || !temporary(err) {
			return err
		}
	}
}

// once makes one attempt of produce.
func (p *producer) once(ctx context.Context, src int, msgs []kafka.Message) error {
	ctx, cancel := context.WithTimeout(ctx, produceTimeout)
	defer cancel()
	n, err := p.partitions(ctx)
	if err != nil {
		return fmt.Errorf("partitions of %s: %w", p.topic, err)
	}
	res, err := p.client.Produce(ctx, &kafka.ProduceRequest{
		Topic: p.topic, Partition: src % n, RequiredAcks: kafka.RequireAll, Records: &messageRecords{msgs: msgs},
	})
	if err != nil {
		return err
	}
	return res.Error
}

// partitions returns the topic's partition count, asking for the topic to
// be created when that is allowed (as the Writer did). The transport
// answers from its cached metadata.
func (p *producer) partitions(ctx context.Context) (int, error) {
	r, err := p.client.Transport.RoundTrip(ctx, p.client.Addr, &metadataAPI.Request{
		TopicNames: []string{p.topic}, AllowAutoTopicCreation: p.autoCreate,
	})
	if err != nil {
		return 0, err
	}
	for _, t := range r.(*metadataAPI.Response).Topics {
		if t.Name == p.topic {
			if t.ErrorCode != 0 {
				return 0, kafka.Error(t.ErrorCode)
			}
			if len(t.Partitions) == 0 {
				break
			}
			return len(t.Partitions), nil
		}
	}
	return 0, kafka.UnknownTopicOrPartition
}

// temporary says whether err is one that kafka.Writer retried: a broker
// error marked temporary, or a connection that failed under it.
func temporary(err error) bool {
	var t interface{ Temporary() bool }
	if errors.As(err, &t) && t.Temporary() {
		return true
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// writerSize is the size kafka.Writer measured a message by against its
// BatchBytes (a v1 message with its headers), so that the same records are
// refused before they are sent.
func writerSize(m *kafka.Message) int {
	n := 4 + 1 + 1 + 4 + len(m.Key) + 4 + len(m.Value) + 8
	n += varintLen(len(m.Headers))
	for _, h := range m.Headers {
		n += varintLen(len(h.Key)) + len(h.Key) + varintLen(len(h.Value)) + len(h.Value)
	}
	return n
}

// varintLen is the length of n as a zig-zag varint.
func varintLen(n int) int {
	u := uint64(n) << 1 // n ≥ 0
	l := 1
	for ; u >= 0x80; u >>= 7 {
		l++
	}
	return l
}

// messageRecords hands msgs to the Produce API as records, as the Writer
// does: key and value read from the message's bytes, time and headers as
// they are.
type messageRecords struct {
	msgs       []kafka.Message
	i          int
	rec        kafka.Record
	key, value bytesReader
}

func (r *messageRecords) ReadRecord() (*kafka.Record, error) {
	if r.i >= len(r.msgs) {
		return nil, io.EOF
	}
	m := &r.msgs[r.i]
	r.i++
	r.rec = kafka.Record{Time: m.Time, Headers: m.Headers}
	if m.Key != nil {
		r.key.Reset(m.Key)
		r.rec.Key = &r.key
	}
	if m.Value != nil {
		r.value.Reset(m.Value)
		r.rec.Value = &r.value
	}
	return &r.rec, nil
}

type bytesReader struct{ bytes.Reader }

func (*bytesReader) Close() error { return nil }
