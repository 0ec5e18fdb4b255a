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
//     start offset, for lag gauges;
//   - reads the answers itself (wire.go, batches.go): the transport hands
//     over the connection it set up, kmsg decodes the answer's structure
//     and this package its record batches, checking their CRC, with
//     kafka-go's codecs for compressed ones. kafka-go's decoder took a
//     64 KiB page for every record batch of an answer, which made a
//     member reading hundreds of partitions of small batches pay tens of
//     times the answer's size.
//
// Memory: the records of a Batch (keys, values, header values) live in
// buffers the Reader owns and reuses; they are valid until the next call
// to Fetch. A Reader is not safe for concurrent use.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	// ClientID names the reader in its requests; default "streamlearner".
	ClientID string
}

const defaultClientID = "streamlearner"

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
	// Stale says that no answer came within the wait (a Partition's
	// Fetch only): the partition's ends are as last seen, and records may
	// be on their way. A Reader's batches are never stale.
	Stale bool
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
	arena  arena
	recs   []Record
	hdrs   []kafka.Header
	dec    *decoder
	// buf holds an answer while it is read.
	buf []byte
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
	if cfg.ClientID == "" {
		cfg.ClientID = defaultClientID
	}
	return &Reader{
		cfg:    cfg,
		client: &kafka.Client{Addr: cfg.Addr, Transport: cfg.Transport},
		offset: offset,
		dec:    newDecoder(!cfg.ReadUncommitted),
	}, nil
}

// Offset is the next offset Fetch reads (negative until a symbolic start
// is resolved).
func (r *Reader) Offset() int64 { return r.offset }

// SetOffset moves the Reader to offset.
func (r *Reader) SetOffset(offset int64) { r.offset = offset }

// isolation is a Fetch request's isolation level.
func isolation(uncommitted bool) int8 {
	if uncommitted {
		return int8(kafka.ReadUncommitted)
	}
	return int8(kafka.ReadCommitted)
}

// Bounds returns the partition's log start offset and its end: the
// high-water mark, or with read committed the last stable offset.
func (r *Reader) Bounds(ctx context.Context) (start, end int64, err error) {
	return bounds(ctx, r.client, r.cfg.Topic, r.cfg.Partition, r.cfg.ReadUncommitted, r.cfg.RequestTimeout)
}

func bounds(ctx context.Context, client *kafka.Client, topic string, partition int, uncommitted bool, timeout time.Duration) (start, end int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	isolation := kafka.ReadCommitted
	if uncommitted {
		isolation = kafka.ReadUncommitted
	}
	resp, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{
		Topics:         map[string][]kafka.OffsetRequest{topic: {kafka.FirstOffsetOf(partition), kafka.LastOffsetOf(partition)}},
		IsolationLevel: isolation,
	})
	if err != nil {
		return 0, 0, fmt.Errorf("list offsets of %s/%d: %w", topic, partition, err)
	}
	for _, p := range resp.Topics[topic] {
		if p.Partition == partition {
			if p.Error != nil {
				return 0, 0, fmt.Errorf("list offsets of %s/%d: %w", topic, partition, p.Error)
			}
			return p.FirstOffset, p.LastOffset, nil
		}
	}
	return 0, 0, fmt.Errorf("list offsets of %s/%d: partition missing from the answer", topic, partition)
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
	x := newExchange(r.cfg.ClientID, &r.buf, maxWait, r.cfg.ReadUncommitted)
	// The partition's limit is the one that binds: a broker may leave the
	// aborted-transaction list out of a response cut by the request-wide
	// limit (the embedded broker does), and without it aborted records
	// would pass as committed.
	x.req.MaxBytes = int32(min(2*r.cfg.MaxBytes, math.MaxInt32))
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(r.cfg.Partition), r.offset, int32(r.cfg.MaxBytes)
	x.req.Topics = []kmsg.FetchRequestTopic{{Topic: r.cfg.Topic, Partitions: []kmsg.FetchRequestTopicPartition{rp}}}
	res, err := answerOf(r.cfg.Transport.RoundTrip(rctx, r.cfg.Addr, x))
	if err != nil {
		return nil, fmt.Errorf("fetch %s/%d at %d: %w", r.cfg.Topic, r.cfg.Partition, r.offset, err)
	}
	if len(res.Topics) == 0 || len(res.Topics[0].Partitions) == 0 {
		return nil, fmt.Errorf("fetch %s/%d: malformed response", r.cfg.Topic, r.cfg.Partition)
	}
	if res.ErrorCode != 0 {
		return nil, fmt.Errorf("fetch %s/%d: %w", r.cfg.Topic, r.cfg.Partition, kafka.Error(res.ErrorCode))
	}
	p := &res.Topics[0].Partitions[0]
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
func (r *Reader) collect(p *kmsg.FetchResponseTopicPartition, b *Batch) error {
	r.arena.reset()
	r.recs, r.hdrs = r.recs[:0], r.hdrs[:0]
	w, err := r.dec.partition(p, r.offset, func(rec *rawRecord) {
		// Chunks never move, so a record points into the arena as soon
		// as it is copied there.
		out := Record{Offset: rec.Offset, Time: rec.Time}
		if rec.Key != nil {
			out.Key = r.arena.copy(rec.Key)
		}
		out.Value = r.arena.copy(rec.Value)
		if len(rec.Headers) > 0 {
			from := len(r.hdrs)
			for _, h := range rec.Headers {
				r.hdrs = append(r.hdrs, kafka.Header{Key: h.Key, Value: r.arena.copy(h.Value)})
			}
			out.Headers = r.hdrs[from:len(r.hdrs):len(r.hdrs)]
		}
		if len(r.recs) == cap(r.recs) {
			// Doubling, not append's 1.25× for large slices: a first
			// response of a backlog holds tens of thousands of records,
			// and every growth copies them all.
			r.recs = slices.Grow(r.recs, max(len(r.recs), 256))
		}
		r.recs = append(r.recs, out)
	})
	if w.next > b.Next {
		b.Next = w.next
	}
	b.Skipped += w.skipped
	b.Records = r.recs
	return err
}

// arena holds the bytes of one response's records in chunks that are
// reused by the next response and never move: a single growing slice
// would copy everything read so far each time it grows, which on the
// first response of a backlog (megabytes of records) cost as much as
// decoding them.
type arena struct {
	chunks [][]byte // every chunk; the first used are this response's
	used   int
}

// arenaChunk is a chunk's size: large enough that a chunk change is rare,
// small enough that an idle partition keeps little.
const arenaChunk = 256 << 10

// reset makes all the arena's room free again; what it held is dropped.
func (a *arena) reset() { a.used = 0 }

// room makes the chunk being filled, chunks[used-1], one with n free
// bytes.
func (a *arena) room(n int) []byte {
	if a.used > 0 {
		if c := a.chunks[a.used-1]; cap(c)-len(c) >= n {
			return c
		}
	}
	switch {
	case a.used == len(a.chunks):
		a.chunks = append(a.chunks, make([]byte, 0, max(arenaChunk, n)))
	case cap(a.chunks[a.used]) < n:
		// A record larger than the chunk there: a larger chunk takes its
		// place, so the arena holds no more chunks than a response needs.
		a.chunks[a.used] = make([]byte, 0, n)
	}
	a.used++
	a.chunks[a.used-1] = a.chunks[a.used-1][:0]
	return a.chunks[a.used-1]
}

// copy copies b into the arena and returns the copy, its capacity capped
// so that appending to it cannot run into the next record; never nil, as
// values and header values always were (a null value reads as empty).
func (a *arena) copy(b []byte) []byte {
	c := a.room(len(b))
	from := len(c)
	c = append(c, b...)
	a.chunks[a.used-1] = c
	return c[from : from+len(b) : from+len(b)]
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
