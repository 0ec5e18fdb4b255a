package fetch

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawRecord is a deliverable record as read from an answer. Its slices
// are the answer's bytes, or a compressed batch's inflated bytes: valid
// only while the decoder's keep function runs.
type rawRecord struct {
	Offset int64
	Time   time.Time
	Key    []byte // nil: a null key
	Value  []byte // nil: a null value
	// Headers is reused from record to record.
	Headers []kafka.Header
}

// decoder reads the record batches of one partition's part of an answer,
// in order, as the Java consumer does: with read committed, the records
// of aborted transactions and every transaction marker are left out;
// batches are checked against their CRC; the next offset is past the last
// batch read whole, as its header says (compaction may have removed the
// batch's last records, or all of them: the next fetch must not ask for
// them again).
//
// A decoder is reused from answer to answer by one goroutine.
type decoder struct {
	readCommitted bool
	// aborted are the producers whose aborted transaction is open at the
	// batch being read.
	aborted map[int64]struct{}
	txns    []kmsg.FetchResponseTopicPartitionAbortedTransaction
	// inflated holds a compressed batch's records.
	inflated []byte
	rec      rawRecord
}

func newDecoder(readCommitted bool) *decoder {
	return &decoder{readCommitted: readCommitted, aborted: map[int64]struct{}{}}
}

// walked is what a partition's part of an answer covered.
type walked struct {
	// next is past everything covered (from, if nothing was).
	next int64
	// skipped counts records left out: aborted data and markers.
	skipped int
	// batches counts the whole batches read, bytes their size on the
	// wire (not a batch the broker cut at the end of the answer: it says
	// nothing of what the partition's batches cost).
	batches, bytes int
	// kept counts the records handed over.
	kept int
}

// Record batch layout (magic 2): base offset (8), length (4), leader
// epoch (4), magic (1), CRC (4), then what the CRC covers: attributes (2),
// last offset delta (4), first and max timestamps (8, 8), producer id (8),
// producer epoch (2), base sequence (4), record count (4), records.
const (
	batchMagicAt    = 16
	batchCRCFrom    = 21
	batchMinLength  = 49 // the length field counts from the leader epoch on
	batchLengthFrom = 12 // bytes before the length's count starts

	attrCodec         = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maxInflated bounds what one compressed batch may inflate to, so that a
// corrupt or hostile batch cannot take the member's memory: 64 times
// Kafka's default largest batch (1 MiB).
const maxInflated = 64 << 20

// partition reads rp's record batches from offset from on and hands each
// deliverable record to keep. A batch cut short at the end of the answer
// (brokers cut at the partition's share) is left for the next request.
func (d *decoder) partition(rp *kmsg.FetchResponseTopicPartition, from int64, keep func(*rawRecord)) (walked, error) {
	w := walked{next: from}
	clear(d.aborted)
	// Ordered by first offset, as they are applied.
	d.txns = append(d.txns[:0], rp.AbortedTransactions...)
	slices.SortFunc(d.txns, func(a, b kmsg.FetchResponseTopicPartitionAbortedTransaction) int {
		return cmp.Compare(a.FirstOffset, b.FirstOffset)
	})
	txns := d.txns
	b := rp.RecordBatches
	prevEnd := int64(math.MinInt64) // past the last batch read
	for len(b) > batchMagicAt {
		switch magic := b[batchMagicAt]; {
		case magic < 2:
			// Messages written before Kafka 0.11's format, never
			// converted: kafka-go reads those (they have no transactions).
			return w, d.legacy(b, from, &w, keep)
		case magic > 2:
			return w, fmt.Errorf("record batch at offset %d: unknown magic %d", int64(binary.BigEndian.Uint64(b)), magic)
		}
		length := int(int32(binary.BigEndian.Uint32(b[8:])))
		if length < batchMinLength {
			return w, fmt.Errorf("record batch at offset %d: length %d is too short", int64(binary.BigEndian.Uint64(b)), length)
		}
		size := batchLengthFrom + length
		if size > len(b) {
			break // cut by the broker
		}
		raw := b[:size]
		b = b[size:]
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw); err != nil {
			return d.corrupt(w, from, raw, b, fmt.Errorf("record batch at offset %d: %w", rb.FirstOffset, err))
		}
		if got := crc32.Checksum(raw[batchCRCFrom:], castagnoli); got != uint32(rb.CRC) {
			return d.corrupt(w, from, raw, b, fmt.Errorf("record batch at offset %d: CRC %08x, its header says %08x: corrupt", rb.FirstOffset, got, uint32(rb.CRC)))
		}
		if rb.FirstOffset < prevEnd {
			// A log's batches follow each other; an overlap would hand
			// over offsets already delivered.
			return d.corrupt(w, from, raw, b, fmt.Errorf("record batch at offset %d overlaps the one before, which ends at %d: corrupt", rb.FirstOffset, prevEnd))
		}
		prevEnd = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
		w.batches++
		w.bytes += size
		if d.readCommitted {
			// Every batch, even one wholly before from: a transaction
			// opened there is open in the batches that follow.
			for len(txns) > 0 && txns[0].FirstOffset <= rb.FirstOffset {
				d.aborted[txns[0].ProducerID] = struct{}{}
				txns = txns[1:]
			}
		}
		before := w
		if err := d.batch(&rb, from, &w, keep); err != nil {
			if w.kept > before.kept || w.skipped > before.skipped {
				// Records of the batch went out already: the answer
				// cannot be cut before it.
				return w, fmt.Errorf("record batch at offset %d: %w", rb.FirstOffset, err)
			}
			return d.corrupt(before, from, raw, b, fmt.Errorf("record batch at offset %d: %w", rb.FirstOffset, err))
		}
	}
	return w, nil
}

// A CorruptError is a record batch that cannot be read: its CRC, its
// framing or its records are wrong. It is returned only when the batch
// comes first in what a fetch covered (after good batches the answer ends
// before it, without error), so that Offset is where the reader stands.
// Next is the base offset of the well-formed batch that follows it in the
// same answer, the first offset past it that can be trusted (the CRC does
// not cover the base offset, and covers the last offset delta, which is
// what is in doubt); −1 when the answer held none. Raw is the batch as
// the broker sent it, at most MaxCorruptRaw bytes.
type CorruptError struct {
	Offset, Next int64
	Raw          []byte
	Err          error
}

// MaxCorruptRaw bounds CorruptError.Raw.
const MaxCorruptRaw = 1 << 20

func (e *CorruptError) Error() string { return e.Err.Error() }
func (e *CorruptError) Unwrap() error { return e.Err }

// corrupt ends partition at a batch that cannot be read (raw; rest is
// what follows it in the answer): without error when batches before it
// covered anything, for the next fetch to start at it; else as a
// *CorruptError.
func (d *decoder) corrupt(w walked, from int64, raw, rest []byte, err error) (walked, error) {
	base := int64(binary.BigEndian.Uint64(raw))
	if w.next > from {
		return w, nil
	}
	e := &CorruptError{Offset: base, Next: -1, Raw: bytes.Clone(raw[:min(len(raw), MaxCorruptRaw)]), Err: err}
	if base < from {
		// The batch holds from: the reader stands inside it.
		e.Offset = from
	}
	// The next batch that is whole, of magic 2, and checks out.
	if len(rest) > batchCRCFrom && rest[batchMagicAt] == 2 {
		if size := batchLengthFrom + int(int32(binary.BigEndian.Uint32(rest[8:]))); size > batchCRCFrom && size <= len(rest) &&
			crc32.Checksum(rest[batchCRCFrom:size], castagnoli) == binary.BigEndian.Uint32(rest[17:]) {
			if next := int64(binary.BigEndian.Uint64(rest)); next > e.Offset {
				e.Next = next
			}
		}
	}
	return w, e
}

// batch reads one whole record batch.
func (d *decoder) batch(rb *kmsg.RecordBatch, from int64, w *walked, keep func(*rawRecord)) error {
	end := rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
	if end <= from {
		return nil // brokers answer from the start of the batch holding from
	}
	attrs := rb.Attributes
	ctrl := attrs&attrControl != 0
	_, abortedBatch := d.aborted[rb.ProducerID]
	skip := ctrl || (d.readCommitted && attrs&attrTransactional != 0 && abortedBatch)
	recs := rb.Records
	if codec := attrs & attrCodec; codec != 0 {
		var err error
		if recs, err = d.inflate(compress.Compression(codec), recs); err != nil {
			return err
		}
	}
	r := kbin.Reader{Src: recs}
	rec := &d.rec
	prev := rb.FirstOffset - 1
	for range max(rb.NumRecords, 0) {
		body := kbin.Reader{Src: r.Span(int(r.Varint()))}
		body.Int8() // a record's attributes: none are defined
		tsDelta := body.Varlong()
		rec.Offset = rb.FirstOffset + int64(body.Varint())
		rec.Key = body.VarintBytes()
		rec.Value = body.VarintBytes()
		rec.Headers = rec.Headers[:0]
		for n := body.Varint(); n > 0 && body.Ok(); n-- {
			k := body.VarintString()
			rec.Headers = append(rec.Headers, kafka.Header{Key: k, Value: body.VarintBytes()})
		}
		if !r.Ok() || !body.Ok() {
			return errors.New("a record is cut short: corrupt")
		}
		if rec.Offset <= prev || rec.Offset >= end {
			// The rest of the pipeline counts on offsets that rise.
			return fmt.Errorf("record offset %d after %d, in a batch ending at %d: corrupt", rec.Offset, prev, end)
		}
		prev = rec.Offset
		if rec.Offset < from {
			continue
		}
		if skip {
			if ctrl && d.readCommitted && abortedBatch && isAbortKey(rec.Key) {
				delete(d.aborted, rb.ProducerID) // the transaction ends here
			}
			w.skipped++
			continue
		}
		ts := rb.FirstTimestamp + tsDelta
		if attrs&attrLogAppendTime != 0 {
			ts = rb.MaxTimestamp
		}
		rec.Time = time.UnixMilli(ts)
		w.kept++
		keep(rec)
	}
	w.next = max(w.next, end)
	return nil
}

// isAbortKey reads a control record's key: version (2), then type (2): 0
// abort, 1 commit.
func isAbortKey(key []byte) bool {
	return len(key) >= 4 && binary.BigEndian.Uint16(key[2:]) == 0
}

// inflate returns a compressed batch's records, in the decoder's buffer.
func (d *decoder) inflate(c compress.Compression, src []byte) ([]byte, error) {
	codec := c.Codec()
	if codec == nil {
		return nil, fmt.Errorf("unknown compression codec %d", c)
	}
	zr := codec.NewReader(bytes.NewReader(src))
	defer zr.Close()
	out := d.inflated[:0]
	for {
		if len(out) == cap(out) {
			out = slices.Grow(out, max(len(out), 4*len(src), 4<<10))
		}
		n, err := zr.Read(out[len(out):cap(out)])
		out = out[:len(out)+n]
		if len(out) > maxInflated {
			return nil, fmt.Errorf("%s batch inflates to over %d bytes", c, maxInflated)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("inflate %s batch: %w", c, err)
		}
	}
	d.inflated = out
	return out, nil
}

// legacy reads message sets of magic 0 and 1 with kafka-go's decoder.
// They hold no transactions and no markers.
func (d *decoder) legacy(b []byte, from int64, w *walked, keep func(*rawRecord)) (err error) {
	defer func() {
		// kafka-go v0.4.51's decoder slices with lengths read from the
		// data unchecked: a corrupt message set panics it (found by
		// FuzzDecoder). Here that is a corrupt answer, not a crash.
		if r := recover(); r != nil {
			err = fmt.Errorf("read message set: corrupt (%v)", r)
		}
	}()
	framed := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(framed, uint32(len(b)))
	framed = append(framed, b...)
	var rs protocol.RecordSet
	if _, err := rs.ReadFrom(bytes.NewBuffer(framed)); err != nil {
		return fmt.Errorf("read message set: %w", err)
	}
	if rs.Records == nil {
		return nil
	}
	defer closeRecords(rs.Records) // what was not read
	rec := &d.rec
	for {
		r, err := rs.Records.ReadRecord()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read message set: %w", err)
		}
		rec.Offset, rec.Time, rec.Key, rec.Value = r.Offset, r.Time, nil, nil
		if r.Key != nil {
			rec.Key, err = io.ReadAll(r.Key)
		}
		if r.Value != nil && err == nil {
			rec.Value, err = io.ReadAll(r.Value)
		}
		closeRecord(r)
		if err != nil {
			return fmt.Errorf("read message set: %w", err)
		}
		if rec.Offset < from {
			continue // brokers answer from the start of a compressed set
		}
		if rec.Offset < w.next {
			// The rest of the pipeline counts on offsets that rise.
			return fmt.Errorf("read message set: offset %d after %d: corrupt", rec.Offset, w.next-1)
		}
		rec.Headers = rec.Headers[:0]
		w.next = max(w.next, rec.Offset+1)
		w.batches++
		w.bytes = len(b) // of the whole set, the cut message included
		keep(rec)
	}
}
