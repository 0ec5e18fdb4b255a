// Package fetch reads one partition of a topic, batch by batch, the way
// the service and replay must read it: transactional data as the
// transactions decided, and nothing the application should not see.
//
// kafka-go's Reader reads uncommitted data and, in v0.4.51, hands
// transaction markers (control records) to the application as messages;
// it also loops quietly on Offset Out Of Range. A Reader here talks the
// Fetch protocol directly through a kafka.Transport (which routes each
// request to the partition's leader) and so:
//   - reads committed data by default: the broker serves records up to the
//     last stable offset, and the records of aborted transactions are
//     dropped here, from the aborted-transaction list each response
//     carries (the algorithm of the Java consumer);
//   - never returns a control record;
//   - returns an *OutOfRangeError with the log's bounds instead of
//     retrying, so the caller decides loudly where to go;
//   - reports each response's high-water mark, last stable offset and log
//     start offset, for lag gauges.
//
// Memory: the records of a Batch (keys, values, header values) live in
// buffers the Reader owns and reuses; they are valid until the next call
// to Fetch. A Reader is not safe for concurrent use.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	fetchapi "github.com/segmentio/kafka-go/protocol/fetch"
)

// Config says what to read and how. Zero values take the documented
// defaults.
type Config struct {
	// Addr is a bootstrap broker; the transport finds the partition's
	// leader from the cluster's metadata. Required.
	Addr net.Addr
	// Transport sends the requests; default kafka.DefaultTransport. Give
	// each service its own: the default's pooled connections outlive a
	// restarted broker.
	Transport kafka.RoundTripper
	Topic     string // required
	Partition int
	// ReadUncommitted reads every record written, including those of open
	// and aborted transactions. Default false: read committed.
	ReadUncommitted bool
	// MaxBytes bounds one response; default 16 MiB. A first batch larger
	// than this is still returned whole (brokers do so, so that a
	// consumer cannot get stuck on it).
	MaxBytes int
	// RequestTimeout bounds one request beyond the broker's wait; default
	// 10 s.
	RequestTimeout time.Duration
}

// Record is one record of the partition. Key, Value and header values are
// valid until the Reader's next Fetch.
type Record struct {
	Offset  int64
	Time    time.Time
	Key     []byte
	Value   []byte
	Headers []kafka.Header
}

// Batch is what one Fetch returned.
type Batch struct {
	Records []Record
	// Next is the offset to fetch next: past every record this response
	// covered, delivered or skipped (aborted data, markers).
	Next int64
	// HighWatermark, LastStable and LogStart describe the partition as
	// the leader saw it when it answered.
	HighWatermark, LastStable, LogStart int64
	// Skipped counts records left out: aborted transactions' records and
	// transaction markers.
	Skipped int
}

// OutOfRangeError says the offset asked for is not in the partition's
// log: below its start (deleted by retention) or past its end (the log
// was truncated or recreated).
type OutOfRangeError struct {
	Topic            string
	Partition        int
	Offset           int64
	LogStart, LogEnd int64
}

func (e *OutOfRangeError) Error() string {
	return fmt.Sprintf("%s/%d: offset %d is out of range: the log holds [%d, %d)", e.Topic, e.Partition, e.Offset, e.LogStart, e.LogEnd)
}

func (e *OutOfRangeError) Unwrap() error { return kafka.OffsetOutOfRange }

// Reader reads one partition from an offset on.
type Reader struct {
	cfg    Config
	client *kafka.Client
	offset int64
	arena  []byte
	recs   []Record
	hdrs   []kafka.Header
	spans  []span
	hspans []hspan
	// aborted are the producers whose aborted transaction is open at the
	// batch being read; reused between responses.
	aborted map[int64]struct{}
}

// NewReader returns a Reader positioned at offset (kafka.FirstOffset and
// kafka.LastOffset are resolved at the first Fetch).
func NewReader(cfg Config, offset int64) (*Reader, error) {
	if cfg.Addr == nil || cfg.Topic == "" {
		return nil, errors.New("fetch: no broker address or topic")
	}
	if cfg.Transport == nil {
		cfg.Transport = kafka.DefaultTransport
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 16 << 20
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	return &Reader{
		cfg:     cfg,
		client:  &kafka.Client{Addr: cfg.Addr, Transport: cfg.Transport},
		offset:  offset,
		aborted: map[int64]struct{}{},
	}, nil
}

// Offset is the next offset Fetch reads (negative until a symbolic start
// is resolved).
func (r *Reader) Offset() int64 { return r.offset }

// SetOffset moves the Reader to offset.
func (r *Reader) SetOffset(offset int64) { r.offset = offset }

func (r *Reader) isolation() kafka.IsolationLevel {
	if r.cfg.ReadUncommitted {
		return kafka.ReadUncommitted
	}
	return kafka.ReadCommitted
}

// Bounds returns the partition's log start offset and its end: the
// high-water mark, or with read committed the last stable offset.
func (r *Reader) Bounds(ctx context.Context) (start, end int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
	defer cancel()
	resp, err := r.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{
		Topics:         map[string][]kafka.OffsetRequest{r.cfg.Topic: {kafka.FirstOffsetOf(r.cfg.Partition), kafka.LastOffsetOf(r.cfg.Partition)}},
		IsolationLevel: r.isolation(),
	})
	if err != nil {
		return 0, 0, fmt.Errorf("list offsets of %s/%d: %w", r.cfg.Topic, r.cfg.Partition, err)
	}
	for _, p := range resp.Topics[r.cfg.Topic] {
		if p.Partition == r.cfg.Partition {
			if p.Error != nil {
				return 0, 0, fmt.Errorf("list offsets of %s/%d: %w", r.cfg.Topic, r.cfg.Partition, p.Error)
			}
			return p.FirstOffset, p.LastOffset, nil
		}
	}
	return 0, 0, fmt.Errorf("list offsets of %s/%d: partition missing from the answer", r.cfg.Topic, r.cfg.Partition)
}

// Fetch returns the next records, waiting up to maxWait for some to
// arrive (an empty Batch when none did). It does not retry: a broker
// error comes back wrapped, Offset Out Of Range as *OutOfRangeError.
func (r *Reader) Fetch(ctx context.Context, maxWait time.Duration) (*Batch, error) {
	if r.offset < 0 {
		start, end, err := r.Bounds(ctx)
		if err != nil {
			return nil, err
		}
		if r.offset == kafka.LastOffset {
			r.offset = end
		} else {
			r.offset = start
		}
	}
	maxWait = max(maxWait, time.Millisecond)
	rctx, cancel := context.WithTimeout(ctx, maxWait+r.cfg.RequestTimeout)
	defer cancel()
	m, err := r.cfg.Transport.RoundTrip(rctx, r.cfg.Addr, &fetchapi.Request{
		ReplicaID:   -1,
		MaxWaitTime: int32(maxWait.Milliseconds()),
		MinBytes:    1,
		// The partition's limit is the one that binds: a broker may leave
		// the aborted-transaction list out of a response cut by the
		// request-wide limit (the embedded broker does), and without it
		// aborted records would pass as committed.
		MaxBytes:       int32(min(2*r.cfg.MaxBytes, math.MaxInt32)),
		IsolationLevel: int8(r.isolation()),
		SessionID:      -1,
		SessionEpoch:   -1,
		Topics: []fetchapi.RequestTopic{{
			Topic: r.cfg.Topic,
			Partitions: []fetchapi.RequestPartition{{
				Partition: int32(r.cfg.Partition), CurrentLeaderEpoch: -1, FetchOffset: r.offset,
				LogStartOffset: -1, PartitionMaxBytes: int32(r.cfg.MaxBytes),
			}},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("fetch %s/%d at %d: %w", r.cfg.Topic, r.cfg.Partition, r.offset, err)
	}
	res, ok := m.(*fetchapi.Response)
	if !ok || len(res.Topics) == 0 || len(res.Topics[0].Partitions) == 0 {
		return nil, fmt.Errorf("fetch %s/%d: malformed response", r.cfg.Topic, r.cfg.Partition)
	}
	if res.ErrorCode != 0 {
		return nil, fmt.Errorf("fetch %s/%d: %w", r.cfg.Topic, r.cfg.Partition, kafka.Error(res.ErrorCode))
	}
	p := &res.Topics[0].Partitions[0]
	if p.RecordSet.Records != nil {
		// The records reference pooled pages until closed.
		defer closeRecords(p.RecordSet.Records)
	}
	if p.ErrorCode != 0 {
		kerr := kafka.Error(p.ErrorCode)
		if errors.Is(kerr, kafka.OffsetOutOfRange) {
			start, end, berr := r.Bounds(ctx)
			if berr != nil {
				return nil, fmt.Errorf("fetch %s/%d at %d: %w (and %v)", r.cfg.Topic, r.cfg.Partition, r.offset, kerr, berr)
			}
			return nil, &OutOfRangeError{Topic: r.cfg.Topic, Partition: r.cfg.Partition, Offset: r.offset, LogStart: start, LogEnd: end}
		}
		return nil, fmt.Errorf("fetch %s/%d at %d: %w", r.cfg.Topic, r.cfg.Partition, r.offset, kerr)
	}
	b := &Batch{Next: r.offset, HighWatermark: p.HighWatermark, LastStable: p.LastStableOffset, LogStart: p.LogStartOffset}
	if err := r.collect(p, b); err != nil {
		return nil, fmt.Errorf("fetch %s/%d at %d: %w", r.cfg.Topic, r.cfg.Partition, r.offset, err)
	}
	r.offset = b.Next
	return b, nil
}

// collect copies the response's deliverable records into the Reader's
// buffers, skipping aborted data and markers, and advances b.Next past
// everything the response covered.
func (r *Reader) collect(p *fetchapi.ResponsePartition, b *Batch) error {
	r.arena, r.recs, r.hdrs, r.spans, r.hspans = r.arena[:0], r.recs[:0], r.hdrs[:0], r.spans[:0], r.hspans[:0]
	clear(r.aborted)
	aborted := p.AbortedTransactions // ordered by first offset
	readCommitted := !r.cfg.ReadUncommitted
	var batches []protocol.RecordReader
	switch rs := p.RecordSet.Records.(type) {
	case nil:
	case *protocol.RecordStream:
		batches = rs.Records
	default:
		batches = []protocol.RecordReader{rs}
	}
	for _, batch := range batches {
		var (
			base      int64
			producer  int64 = -1
			txn, ctrl bool
		)
		switch bt := batch.(type) {
		case *protocol.RecordBatch:
			base, producer, txn = bt.BaseOffset, bt.ProducerID, bt.Attributes.Transactional()
		case *protocol.ControlBatch:
			base, producer, ctrl = bt.BaseOffset, bt.ProducerID, true
		case *protocol.MessageSet:
			base = bt.BaseOffset
		}
		if readCommitted {
			for len(aborted) > 0 && aborted[0].FirstOffset <= base {
				r.aborted[aborted[0].ProducerID] = struct{}{}
				aborted = aborted[1:]
			}
		}
		_, abortedBatch := r.aborted[producer]
		skip := ctrl || (readCommitted && txn && abortedBatch)
		for {
			rec, err := batch.ReadRecord()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			if rec.Offset < r.offset {
				closeRecord(rec)
				continue // brokers may answer from the start of a batch
			}
			b.Next = rec.Offset + 1
			if skip {
				if ctrl && readCommitted && abortedBatch && isAbortMarker(rec) {
					delete(r.aborted, producer) // the transaction ends here
				} else {
					closeRecord(rec)
				}
				b.Skipped++
				continue
			}
			// The arena may move while it grows, so records keep spans
			// into it until the response is read.
			s := span{key: -1, hdrFrom: len(r.hspans)}
			if rec.Key != nil {
				s.key = len(r.arena)
				r.arena = appendBytes(r.arena, rec.Key)
			}
			s.from = len(r.arena)
			r.arena = appendBytes(r.arena, rec.Value)
			s.to = len(r.arena)
			for _, h := range rec.Headers {
				from := len(r.arena)
				r.arena = append(r.arena, h.Value...)
				r.hspans = append(r.hspans, hspan{key: h.Key, from: from, to: len(r.arena)})
			}
			s.hdrTo = len(r.hspans)
			r.spans = append(r.spans, s)
			r.recs = append(r.recs, Record{Offset: rec.Offset, Time: rec.Time})
			closeRecord(rec)
		}
	}
	for _, h := range r.hspans {
		r.hdrs = append(r.hdrs, kafka.Header{Key: h.key, Value: r.arena[h.from:h.to:h.to]})
	}
	for i, s := range r.spans {
		rec := &r.recs[i]
		if s.key >= 0 {
			rec.Key = r.arena[s.key:s.from:s.from]
		}
		rec.Value = r.arena[s.from:s.to:s.to]
		if s.hdrTo > s.hdrFrom {
			rec.Headers = r.hdrs[s.hdrFrom:s.hdrTo:s.hdrTo]
		}
	}
	b.Records = r.recs
	return nil
}

// span locates a record's key (−1: none), value and headers in the arena.
type span struct{ key, from, to, hdrFrom, hdrTo int }

type hspan struct {
	key      string
	from, to int
}

// isAbortMarker reads a control record's key: version, then type (0 abort,
// 1 commit). It consumes and closes the record.
func isAbortMarker(rec *protocol.Record) bool {
	cr, err := protocol.ReadControlRecord(rec)
	return err == nil && cr.Type == 0
}

func appendBytes(dst []byte, b protocol.Bytes) []byte {
	if b == nil {
		return dst
	}
	n := b.Len()
	dst = slices.Grow(dst, n)
	io.ReadFull(b, dst[len(dst):len(dst)+n])
	return dst[:len(dst)+n]
}

func closeRecord(rec *protocol.Record) {
	if rec.Key != nil {
		rec.Key.Close()
	}
	if rec.Value != nil {
		rec.Value.Close()
	}
}

func closeRecords(rr protocol.RecordReader) {
	for {
		rec, err := rr.ReadRecord()
		if err != nil {
			return
		}
		closeRecord(rec)
	}
}
