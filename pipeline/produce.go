package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/protocol"
	metadataAPI "github.com/segmentio/kafka-go/protocol/metadata"
)

// producer writes to one topic through kafka-go's Produce API, a whole
// group of records in one request to one partition, as a record batch it
// encodes itself (appendRecordBatch), rather than through kafka.Writer:
// the Writer looks up the topic's partitions and asks the balancer once
// per record, sorts records into batches through goroutines and channels,
// and holds each batch for its BatchTimeout — a worker already hands over
// whole batches for one partition, so all of that was per-record cost for
// nothing. The guarantees are the Writer's as the service used it: acks
// from all in-sync replicas, a record larger than the topic takes refused
// before it is sent (kafka.MessageTooLargeError), retriable failures
// retried a few times before they are reported, and a request under way
// never cancelled (only its timeout bounds it).
type producer struct {
	client *kafka.Client
	topic  string
	// limit is the largest record batch the topic takes (its
	// max.message.bytes); a record is refused above limit−batchOverhead,
	// the Writer's BatchBytes.
	limit      int
	autoCreate bool
	// codec compresses each batch's records; nil writes them as they are.
	codec compress.Codec
	// q coalesces the batches of the member's partitions into shared
	// requests; nil sends each alone.
	q *sendQueue
	// layout is the topic's partitions as last read (nil: read them
	// again), shared by the member's workers; refresh serialises the
	// reads.
	layout  atomic.Pointer[topicLayout]
	refresh sync.Mutex
}

// topicLayout is a topic's partitions as the transport's metadata had
// them: their count, each one's leader, and when they were read.
type topicLayout struct {
	leaders []int32 // by partition; −1 for none known
	read    time.Time
}

// layoutMaxAge bounds how long the producer goes by a layout it read.
// Asked for each batch, the transport's cached metadata — a RoundTrip
// through the member's limit of requests in flight, a response filtered
// and copied — cost about a microsecond and 5 allocations a batch, at
// 1,024 partitions 128,000 times in 5,000,000 records. The transport
// itself refreshes its metadata every few seconds (kafka-go: at a random
// point of every 6 s), so the copy adds at most a second to the time an
// output topic's new partitions or moved leaders take to be used; an
// error saying the layout is wrong drops it at once (staleLayout).
const layoutMaxAge = time.Second

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
//
// With wr (an idempotent or transactional producer), the batch carries
// wr's producer id and the partition's next sequence number, the same on
// every retry, so that the broker keeps one copy of a batch sent twice;
// a transactional one adds the partition to its open transaction first.
func (p *producer) produce(ctx context.Context, src int, msgs []kafka.Message, buf *[]byte, wr writer) error {
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
		err := p.once(ctx, src, msgs, buf, wr)
		if err != nil && wr != nil && attempt+1 < produceAttempts {
			again, rerr := wr.resend(ctx, err)
			if rerr != nil {
				return fmt.Errorf("after %w: %w", err, rerr)
			}
			if again {
				continue
			}
		}
		if err == nil || attempt+1 == produceAttempts || !temporary(err) {
			return err
		}
	}
}

// once makes one attempt of produce. What it asks of the brokers is
// bounded by produceTimeout and not given up with ctx: the partitions
// here, the request in send, a transaction's additions in the writer's
// prepare. A context and its timer for each of those, rather than one an
// attempt, spares a batch that takes none (at-least-once, the layout
// read, carried by another batch's request) three allocations and a
// timer.
func (p *producer) once(ctx context.Context, src int, msgs []kafka.Message, buf *[]byte, wr writer) error {
	l, err := p.partitions(ctx)
	if err != nil {
		return fmt.Errorf("partitions of %s: %w", p.topic, err)
	}
	part, id, txnID := src%len(l.leaders), noProducer, ""
	if wr != nil {
		if id, txnID, err = wr.prepare(ctx, p.topic, part); err != nil {
			return err
		}
		defer wr.release(p.topic, part)
	}
	*buf = appendRecordBatch((*buf)[:0], msgs, time.Now(), id)
	if p.codec != nil {
		if *buf, err = compressBatch(*buf, p.codec); err != nil {
			return fmt.Errorf("compress a batch for %s: %w", p.topic, err)
		}
	}
	pb := newQueuedBatch(part, l.leaders[part], txnID, *buf)
	err = p.submit(ctx, pb)
	pb.free()
	if staleLayout(err) {
		p.layout.CompareAndSwap(l, nil)
	}
	if wr != nil && (err == nil || errors.Is(err, kafka.DuplicateSequenceNumber)) {
		// Written (a duplicate is a retry of a batch the broker has).
		wr.wrote(p.topic, part, len(msgs))
		return nil
	}
	return fence(err)
}

// partitions returns the topic's layout: the one last read while it is
// younger than layoutMaxAge, else a new one.
func (p *producer) partitions(ctx context.Context) (*topicLayout, error) {
	if l := p.layout.Load(); l != nil && time.Since(l.read) < layoutMaxAge {
		return l, nil
	}
	p.refresh.Lock()
	defer p.refresh.Unlock()
	if l := p.layout.Load(); l != nil && time.Since(l.read) < layoutMaxAge {
		return l, nil // read by another batch meanwhile
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), produceTimeout)
	defer cancel()
	l, err := p.readLayout(ctx)
	if err != nil {
		return nil, err
	}
	p.layout.Store(l)
	return l, nil
}

// readLayout reads the topic's partitions and their leaders, asking for
// the topic to be created when that is allowed (as the Writer did). The
// transport answers from its cached metadata.
func (p *producer) readLayout(ctx context.Context) (*topicLayout, error) {
	read := time.Now()
	r, err := p.client.Transport.RoundTrip(ctx, p.client.Addr, &metadataAPI.Request{
		TopicNames: []string{p.topic}, AllowAutoTopicCreation: p.autoCreate,
	})
	if err != nil {
		return nil, err
	}
	for _, t := range r.(*metadataAPI.Response).Topics {
		if t.Name == p.topic {
			if t.ErrorCode != 0 {
				return nil, kafka.Error(t.ErrorCode)
			}
			if len(t.Partitions) == 0 {
				break
			}
			l := &topicLayout{leaders: make([]int32, len(t.Partitions)), read: read}
			for i := range l.leaders {
				l.leaders[i] = leaderOf(t.Partitions, i)
			}
			return l, nil
		}
	}
	return nil, kafka.UnknownTopicOrPartition
}

// staleLayout says whether a produce error means the topic's partitions
// or leaders are no longer what the producer read: they are read again
// for the next batch.
func staleLayout(err error) bool {
	return err != nil && (errors.Is(err, kafka.NotLeaderForPartition) || errors.Is(err, kafka.LeaderNotAvailable) ||
		errors.Is(err, kafka.UnknownTopicOrPartition) || errors.Is(err, kafka.BrokerNotAvailable) ||
		errors.Is(err, protocol.ErrNoPartition) || errors.Is(err, protocol.ErrNoLeader) || errors.Is(err, protocol.ErrNoTopic))
}

// leaderOf is the leader of partition part in ps (−1 if unknown).
func leaderOf(ps []metadataAPI.ResponsePartition, part int) int32 {
	if part < len(ps) && ps[part].PartitionIndex == int32(part) {
		return ps[part].LeaderID
	}
	for _, p := range ps {
		if p.PartitionIndex == int32(part) {
			return p.LeaderID
		}
	}
	return -1
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

// appendRecordBatch appends msgs as a record set of one v2 record batch,
// size first, byte for byte as kafka-go's RecordSet.WriteTo encodes them
// through the Writer (no compression, no producer id, records without a
// time stamped now; the tests compare the two). kafka-go's encoder goes
// through an interface per record and writes varints a byte at a time,
// which cost more than everything else the service does to a prediction.
//
// id is what the batch header says of its producer: noProducer for the
// plain writes, a transactional producer's id, epoch and first sequence
// number under exactly-once.
func appendRecordBatch(dst []byte, msgs []kafka.Message, now time.Time, id batchID) []byte {
	const header = 61 // base offset … record count
	start := len(dst)
	dst = append(dst, make([]byte, 4+header)...)
	nowMs := millis(now)
	var first, maxT int64
	for i := range msgs {
		m := &msgs[i]
		t := millis(m.Time)
		if t == 0 {
			t = nowMs
		}
		if i == 0 {
			first = t
		}
		maxT = max(maxT, t)
		size := 1 + varlen(t-first) + varlen(int64(i)) + nullBytesLen(m.Key) + nullBytesLen(m.Value) + varlen(int64(len(m.Headers)))
		for _, h := range m.Headers {
			size += varlen(int64(len(h.Key))) + len(h.Key) + nullBytesLen(h.Value)
		}
		dst = binary.AppendVarint(dst, int64(size))
		dst = append(dst, 0) // attributes
		dst = binary.AppendVarint(dst, t-first)
		dst = binary.AppendVarint(dst, int64(i))
		dst = appendNullBytes(dst, m.Key)
		dst = appendNullBytes(dst, m.Value)
		dst = binary.AppendVarint(dst, int64(len(m.Headers)))
		for _, h := range m.Headers {
			dst = binary.AppendVarint(dst, int64(len(h.Key)))
			dst = append(dst, h.Key...)
			dst = appendNullBytes(dst, h.Value)
		}
	}
	b := dst[start+4:]
	be := binary.BigEndian
	// Base offset 0 (zeroed), then the length of what follows it.
	be.PutUint32(b[8:], uint32(len(b)-12))
	be.PutUint32(b[12:], math.MaxUint32) // partition leader epoch −1
	b[16] = 2                            // magic
	if id.transactional {
		be.PutUint16(b[21:], 1<<4) // attributes: transactional
	}
	be.PutUint32(b[23:], uint32(len(msgs)-1)) // last offset delta
	be.PutUint64(b[27:], uint64(first))
	be.PutUint64(b[35:], uint64(maxT))
	be.PutUint64(b[43:], uint64(id.producer))
	be.PutUint16(b[51:], uint16(id.epoch))
	be.PutUint32(b[53:], uint32(id.seq))
	be.PutUint32(b[57:], uint32(len(msgs)))
	be.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	be.PutUint32(dst[start:], uint32(len(b)))
	return dst
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// compressMin is the least size of a batch's records worth compressing.
// One prediction (about 290 bytes) never comes out smaller from lz4 (299)
// and takes 835 ns against 58 uncompressed; two (520) come out at 335
// (BenchmarkCompressBatch). At 1,024 partitions with a short
// --flush-interval most batches hold one.
const compressMin = 512

// compressBatch compresses the records of the one record batch in set
// (as appendRecordBatch wrote it) with c, in place: the header then says
// so in its attributes, and its length and CRC cover the compressed
// records. A batch whose records are under compressMin bytes, or that
// would not come out smaller, stays as it is, as franz-go's producer
// does: the attributes name the codec batch by batch, and every consumer
// reads both.
func compressBatch(set []byte, c compress.Codec) ([]byte, error) {
	const header = 61
	if len(set)-4-header < compressMin {
		return set, nil
	}
	zb := compressBufs.Get().(*bytes.Buffer)
	defer compressBufs.Put(zb)
	zb.Reset()
	if a, ok := c.(interface{ appendCompressed(dst, src []byte) []byte }); ok {
		// lz4: straight into the buffer, no writer between.
		*zb = *bytes.NewBuffer(a.appendCompressed(zb.Bytes(), set[4+header:]))
	} else {
		zw := c.NewWriter(zb)
		if _, err := zw.Write(set[4+header:]); err != nil {
			zw.Close()
			return set, err
		}
		if err := zw.Close(); err != nil {
			return set, err
		}
	}
	if zb.Len() >= len(set)-4-header {
		return set, nil
	}
	set = append(set[:4+header], zb.Bytes()...)
	b := set[4:]
	be := binary.BigEndian
	be.PutUint32(b[8:], uint32(len(b)-12))
	be.PutUint16(b[21:], be.Uint16(b[21:])|uint16(c.Code()))
	be.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	be.PutUint32(set, uint32(len(b)))
	return set, nil
}

// compressBufs holds the buffers batches are compressed into.
var compressBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// batchID is a record batch's producer: id, epoch, the sequence number of
// its first record, and whether it belongs to a transaction.
type batchID struct {
	producer      int64
	epoch         int16
	seq           int32
	transactional bool
}

// noProducer is the header of a batch written without a producer id.
var noProducer = batchID{producer: -1, epoch: -1, seq: -1}

// millis is kafka-go's timestamp: milliseconds since the epoch, 0 for the
// zero time.
func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano() / int64(time.Millisecond)
}

// varlen is the length of i as a zig-zag varint.
func varlen(i int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], i)
}

// nullBytesLen and appendNullBytes are a nullable byte field: its
// varint length (−1 for nil), then its bytes.
func nullBytesLen(b []byte) int {
	if b == nil {
		return 1
	}
	return varlen(int64(len(b))) + len(b)
}

func appendNullBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}
