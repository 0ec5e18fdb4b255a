package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
)

// kafkaGoRecords hands messages to kafka-go's own encoder as its Writer
// does.
type kafkaGoRecords struct {
	msgs []kafka.Message
	i    int
}

func (r *kafkaGoRecords) ReadRecord() (*kafka.Record, error) {
	if r.i >= len(r.msgs) {
		return nil, io.EOF
	}
	m := &r.msgs[r.i]
	r.i++
	rec := &kafka.Record{Time: m.Time, Headers: m.Headers}
	if m.Key != nil {
		rec.Key = protocol.NewBytes(m.Key)
	}
	if m.Value != nil {
		rec.Value = protocol.NewBytes(m.Value)
	}
	return rec, nil
}

func TestRecordBatchIsKafkaGosEncoding(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	long := []byte(strings.Repeat("x", 300)) // two-byte varint lengths
	cases := map[string][]kafka.Message{
		"one":   {{Key: []byte("in/0/7"), Value: []byte(`{"prediction":1}`), Time: t0}},
		"nulls": {{Time: t0}, {Key: []byte{}, Value: []byte{}, Time: t0.Add(time.Second)}},
		"headers": {
			{Key: []byte("k"), Value: long, Headers: []kafka.Header{{Key: HeaderSourcePartition, Value: []byte("3")}, {Key: "nil"}, {Key: "", Value: []byte{}}}, Time: t0.Add(time.Hour)},
			{Key: long, Value: []byte("v"), Headers: []kafka.Header{{Key: strings.Repeat("h", 200), Value: long}}, Time: t0.Add(-time.Minute)},
		},
	}
	var many []kafka.Message
	for i := range 300 { // offset deltas past one varint byte
		many = append(many, kafka.Message{Key: []byte{byte(i)}, Value: bytes.Repeat([]byte{'a' + byte(i%26)}, i), Time: t0.Add(time.Duration(i) * time.Millisecond)})
	}
	cases["many"] = many
	for name, msgs := range cases {
		var want bytes.Buffer
		rs := protocol.RecordSet{Version: 2, Records: &kafkaGoRecords{msgs: msgs}}
		if _, err := rs.WriteTo(&want); err != nil {
			t.Fatal(err)
		}
		got := appendRecordBatch([]byte("prefix"), msgs, t0, noProducer)
		if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[6:], want.Bytes()) {
			t.Errorf("%s: %d bytes differ from kafka-go's %d", name, len(got)-6, want.Len())
		}
	}
}

// Records without a time are stamped with the time given, as kafka-go
// stamps them with its clock; they read back as written.
func TestRecordBatchStampsAndReadsBack(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	msgs := []kafka.Message{
		{Key: []byte("a"), Value: []byte("1"), Headers: []kafka.Header{{Key: "h", Value: []byte("x")}}},
		{Value: []byte("2"), Time: now.Add(time.Second)},
	}
	var rs protocol.RecordSet
	if _, err := rs.ReadFrom(bytes.NewReader(appendRecordBatch(nil, msgs, now, noProducer))); err != nil {
		t.Fatal(err)
	}
	for i, m := range msgs {
		r, err := rs.Records.ReadRecord()
		if err != nil {
			t.Fatal(err)
		}
		want := m.Time
		if want.IsZero() {
			want = now
		}
		var key, value []byte
		if r.Key != nil {
			key, _ = io.ReadAll(r.Key)
		}
		value, _ = io.ReadAll(r.Value)
		if r.Offset != int64(i) || !r.Time.Equal(want) || !bytes.Equal(key, m.Key) || !bytes.Equal(value, m.Value) || len(r.Headers) != len(m.Headers) {
			t.Errorf("record %d: offset %d time %v key %q value %q headers %v", i, r.Offset, r.Time, key, value, r.Headers)
		}
	}
}

// The size check refuses what kafka-go's Writer refused, before sending.
func TestWriterSizeMatchesKafkaGo(t *testing.T) {
	m := kafka.Message{Key: []byte("key"), Value: make([]byte, 1000), Headers: []kafka.Header{{Key: HeaderSourcePartition, Value: []byte("12")}}}
	limit := 0
	for lim := 900; lim < 1300; lim++ {
		// Nothing listens at the address: past the size check the write
		// fails otherwise, at once.
		w := &kafka.Writer{Addr: kafka.TCP("127.0.0.1:1"), BatchBytes: int64(lim), MaxAttempts: 1}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		err := w.WriteMessages(ctx, m)
		cancel()
		w.Close()
		if _, tooLarge := err.(kafka.MessageTooLargeError); !tooLarge {
			limit = lim
			break
		}
	}
	if got := writerSize(&m); got != limit {
		t.Errorf("writerSize %d, kafka-go's Writer takes the message from BatchBytes %d on", got, limit)
	}
}

// A compressed batch reads back as written, through kafka-go's decoder
// (with its CRC check), for every codec; its header names the codec and
// what it holds is smaller than the records it compresses.
// TestBatchesThatWouldNotShrinkStayUncompressed: a one-prediction flush
// (most of them at 1,024 partitions with a short --flush-interval) and a
// batch of noise are sent as they are, valid and saying so, not larger
// than without compression.
func TestBatchesThatWouldNotShrinkStayUncompressed(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	one := []kafka.Message{{Key: []byte("in/0/7"), Value: []byte(`{"topic":"in","partition":0,"offset":7,"prediction":1,"margin":0.25,"label":1,"mistake":false}`)}}
	noise := make([]byte, 4000)
	r := rand.New(rand.NewPCG(3, 4))
	for j := range noise {
		noise[j] = byte(r.Uint32())
	}
	for _, name := range []string{"gzip", "snappy", "lz4", "zstd"} {
		c, err := (&Config{Compression: name}).codec()
		if err != nil {
			t.Fatal(err)
		}
		for what, msgs := range map[string][]kafka.Message{"one prediction": one, "noise": {{Key: []byte("k"), Value: noise}}} {
			plain := appendRecordBatch(nil, msgs, now, noProducer)
			got, err := compressBatch(appendRecordBatch(nil, msgs, now, noProducer), c)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, plain) {
				t.Errorf("%s, %s: %d bytes, want the plain batch's %d as it is", name, what, len(got), len(plain))
			}
		}
	}
}

func TestCompressedBatchReadsBack(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var msgs []kafka.Message
	for i := range 200 {
		msgs = append(msgs, kafka.Message{Key: fmt.Appendf(nil, "in/0/%d", i), Value: fmt.Appendf(nil, `{"topic":"in","partition":0,"offset":%d,"prediction":1,"margin":0.%d}`, i, i), Headers: []kafka.Header{{Key: HeaderSourcePartition, Value: []byte("0")}}})
	}
	plain := appendRecordBatch(nil, msgs, now, noProducer)
	for _, name := range []string{"gzip", "snappy", "lz4", "zstd"} {
		cfg := Config{Compression: name}
		c, err := cfg.codec()
		if err != nil {
			t.Fatal(err)
		}
		got, err := compressBatch(appendRecordBatch(nil, msgs, now, batchID{producer: 7, epoch: 1, seq: 42}), c)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) >= len(plain)/2 {
			t.Errorf("%s: %d bytes, the plain batch %d", name, len(got), len(plain))
		}
		if attrs := binary.BigEndian.Uint16(got[4+21:]); int8(attrs&7) != c.Code() {
			t.Errorf("%s: attributes %#x", name, attrs)
		}
		var rs protocol.RecordSet
		if _, err := rs.ReadFrom(bytes.NewReader(got)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, m := range msgs {
			r, err := rs.Records.ReadRecord()
			if err != nil {
				t.Fatalf("%s: record %d: %v", name, i, err)
			}
			key, _ := io.ReadAll(r.Key)
			value, _ := io.ReadAll(r.Value)
			if r.Offset != int64(i) || !bytes.Equal(key, m.Key) || !bytes.Equal(value, m.Value) || len(r.Headers) != 1 {
				t.Fatalf("%s: record %d: offset %d key %q value %q", name, i, r.Offset, key, value)
			}
		}
	}
	// Past one 64 KiB lz4 block of repeats, then incompressible: the
	// later blocks stored as they are.
	noise := append([]kafka.Message(nil), msgs...)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		v := make([]byte, 1000)
		if i >= 100 {
			for j := range v {
				v[j] = byte(r.Uint32())
			}
		}
		noise = append(noise, kafka.Message{Key: fmt.Appendf(nil, "in/0/%d", i), Value: v})
	}
	got, err := compressBatch(appendRecordBatch(nil, noise, now, noProducer), lz4Codec{})
	if err != nil {
		t.Fatal(err)
	}
	if attrs := binary.BigEndian.Uint16(got[4+21:]); attrs&7 != 3 {
		t.Errorf("lz4, partly incompressible: attributes %#x, want lz4", attrs)
	}
	var rs protocol.RecordSet
	if _, err := rs.ReadFrom(bytes.NewReader(got)); err != nil {
		t.Fatalf("lz4, incompressible: %v", err)
	}
	for i, m := range noise {
		r, err := rs.Records.ReadRecord()
		if err != nil {
			t.Fatalf("lz4, incompressible: record %d: %v", i, err)
		}
		value, _ := io.ReadAll(r.Value)
		if !bytes.Equal(value, m.Value) {
			t.Fatalf("lz4, incompressible: record %d differs", i)
		}
	}
	if _, err := (&Config{Compression: "brotli"}).codec(); err == nil {
		t.Error("compression brotli accepted")
	}
}

// Sequence numbers wrap as Kafka's do (DefaultRecordBatch.incrementSequence):
// after math.MaxInt32 comes 0.
func TestSequenceNumbersWrapAsKafkas(t *testing.T) {
	for _, c := range []struct {
		seq  int32
		n    int
		want int32
	}{
		{0, 5, 5},
		{math.MaxInt32 - 5, 5, math.MaxInt32},
		{math.MaxInt32 - 5, 6, 0},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32 - 1, 10, 8},
	} {
		if got := nextSeq(c.seq, c.n); got != c.want {
			t.Errorf("nextSeq(%d, %d) = %d, want %d", c.seq, c.n, got, c.want)
		}
	}
}
