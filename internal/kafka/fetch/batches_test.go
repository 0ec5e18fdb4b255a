package fetch

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamlearner/streamlearner/internal/dev/embedded"
)

// rec is a record to encode: its offset delta and value (a nil value is
// null).
type rec struct {
	delta int32
	value []byte
}

// encodeBatch writes a record batch of magic 2, as a producer (or a
// broker's compaction) would: base offset, attributes, producer, last
// offset delta and records given.
func encodeBatch(base int64, attrs int16, producer int64, lastDelta int32, recs ...rec) []byte {
	var body []byte
	for _, r := range recs {
		var one []byte
		one = kbin.AppendInt8(one, 0)
		one = kbin.AppendVarlong(one, int64(r.delta))
		one = kbin.AppendVarint(one, r.delta)
		one = kbin.AppendVarintBytes(one, []byte(fmt.Sprint("k", base+int64(r.delta))))
		one = kbin.AppendVarintBytes(one, r.value)
		one = kbin.AppendVarint(one, 1)
		one = kbin.AppendVarintString(one, "h")
		one = kbin.AppendVarintBytes(one, []byte("H"))
		body = kbin.AppendVarint(body, int32(len(one)))
		body = append(body, one...)
	}
	b := kmsg.RecordBatch{
		FirstOffset: base, Magic: 2, Attributes: attrs, LastOffsetDelta: lastDelta,
		FirstTimestamp: 1_700_000_000_000, MaxTimestamp: 1_700_000_000_000 + int64(lastDelta),
		ProducerID: producer, ProducerEpoch: 0, FirstSequence: -1, NumRecords: int32(len(recs)), Records: body,
		Length: int32(49 + len(body)),
	}
	out := b.AppendTo(nil)
	crc := crc32.Checksum(out[batchCRCFrom:], castagnoli)
	kbin.AppendInt32(out[:17], int32(crc))
	return out
}

// marker is a transaction marker batch: abort (true) or commit.
func marker(offset, producer int64, abort bool) []byte {
	typ := byte(1)
	if abort {
		typ = 0
	}
	var body []byte
	body = kbin.AppendInt8(body, 0)
	body = kbin.AppendVarlong(body, 0)
	body = kbin.AppendVarint(body, 0)
	body = kbin.AppendVarintBytes(body, []byte{0, 0, 0, typ})
	body = kbin.AppendVarintBytes(body, []byte{0, 0, 0, 0, 0, 0})
	body = kbin.AppendVarint(body, 0)
	b := kmsg.RecordBatch{FirstOffset: offset, Magic: 2, Attributes: attrTransactional | attrControl, ProducerID: producer, FirstSequence: -1, NumRecords: 1,
		Records: kbin.AppendVarint(nil, int32(len(body))), Length: 0}
	b.Records = append(b.Records, body...)
	b.Length = int32(49 + len(b.Records))
	out := b.AppendTo(nil)
	kbin.AppendInt32(out[:17], int32(crc32.Checksum(out[batchCRCFrom:], castagnoli)))
	return out
}

// decodeAll reads one partition's answer from offset from, returning the
// delivered records as "offset=value" and what was covered.
func decodeAll(t *testing.T, readCommitted bool, rp *kmsg.FetchResponseTopicPartition, from int64) ([]string, walked, error) {
	t.Helper()
	var got []string
	w, err := newDecoder(readCommitted).partition(rp, from, func(r *rawRecord) {
		if string(r.Key) != fmt.Sprint("k", r.Offset) && r.Key != nil {
			t.Errorf("offset %d: key %q", r.Offset, r.Key)
		}
		got = append(got, fmt.Sprintf("%d=%s", r.Offset, r.Value))
	})
	return got, w, err
}

func TestDecoderReadsTransactionsFromAnyOffset(t *testing.T) {
	const tx, other = 7, 9
	// Producer 7's aborted transaction spans two batches (offsets 0–3),
	// its marker is at 4; producer 9 commits at 5–6 (marker 7); plain
	// records follow at 8–9.
	var data []byte
	data = append(data, encodeBatch(0, attrTransactional, tx, 1, rec{0, []byte("a0")}, rec{1, []byte("a1")})...)
	data = append(data, encodeBatch(2, attrTransactional, tx, 1, rec{0, []byte("a2")}, rec{1, []byte("a3")})...)
	data = append(data, marker(4, tx, true)...)
	data = append(data, encodeBatch(5, attrTransactional, other, 1, rec{0, []byte("c5")}, rec{1, []byte("c6")})...)
	data = append(data, marker(7, other, false)...)
	data = append(data, encodeBatch(8, 0, -1, 1, rec{0, []byte("p8")}, rec{1, nil})...)
	rp := &kmsg.FetchResponseTopicPartition{RecordBatches: data,
		AbortedTransactions: []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: tx, FirstOffset: 0}}}
	for _, c := range []struct {
		from          int64
		committed     bool
		want          string
		skipped, next int
	}{
		{0, true, "[5=c5 6=c6 8=p8 9=]", 6, 10},
		// From inside the aborted transaction: its first batch lies
		// wholly before from, and still opens it.
		{2, true, "[5=c5 6=c6 8=p8 9=]", 4, 10},
		{3, true, "[5=c5 6=c6 8=p8 9=]", 3, 10},
		{3, false, "[3=a3 5=c5 6=c6 8=p8 9=]", 2, 10},
		{9, true, "[9=]", 0, 10},
	} {
		got, w, err := decodeAll(t, c.committed, rp, c.from)
		if err != nil || fmt.Sprint(got) != c.want || w.skipped != c.skipped || w.next != int64(c.next) {
			t.Errorf("from %d (committed %v): %v, skipped %d, next %d, %v; want %s, %d, %d", c.from, c.committed, got, w.skipped, w.next, err, c.want, c.skipped, c.next)
		}
	}
}

// A batch whose last records compaction removed keeps its last offset
// delta: the next fetch starts past it, not at its last record left.
func TestDecoderSkipsTheCompactedTailOfABatch(t *testing.T) {
	data := encodeBatch(0, 0, -1, 4, rec{0, []byte("v0")}, rec{2, []byte("v2")})
	data = append(data, encodeBatch(5, 0, -1, 2)...) // emptied whole
	got, w, err := decodeAll(t, true, &kmsg.FetchResponseTopicPartition{RecordBatches: data}, 0)
	if err != nil || fmt.Sprint(got) != "[0=v0 2=v2]" || w.next != 8 || w.batches != 2 {
		t.Fatalf("%v, next %d, %d batches, %v; want [0=v0 2=v2], next 8, 2 batches", got, w.next, w.batches, err)
	}
}

// Through a broker: the Reader asked for offsets 3 and 4 again and again
// when kafka-go's decoder placed the next offset after the last record.
func TestReaderGoesPastACompactedTail(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	batches := map[int64][]byte{
		0: encodeBatch(0, 0, -1, 4, rec{0, []byte("v0")}, rec{2, []byte("v2")}),
		5: encodeBatch(5, 0, -1, 1, rec{1, []byte("v6")}),
	}
	asked := 0
	c.ControlKey(int16(kmsg.Fetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.FetchRequest)
		asked++
		res := req.ResponseKind().(*kmsg.FetchResponse)
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = 7, 7, 0
		at := req.Topics[0].Partitions[0].FetchOffset
		switch {
		case at < 5:
			rp.RecordBatches = batches[0]
		case at < 7:
			rp.RecordBatches = batches[5]
		}
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.Partitions = "t", []kmsg.FetchResponseTopicPartition{rp}
		res.Topics = []kmsg.FetchResponseTopic{rt}
		return res, nil, true
	})
	r, err := NewReader(Config{Addr: kafka.TCP(c.ListenAddrs()[0]), Transport: &kafka.Transport{}, Topic: "t"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := 0; i < 5 && r.Offset() < 7; i++ {
		b, err := r.Fetch(context.Background(), 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range b.Records {
			got = append(got, fmt.Sprintf("%d=%s", rec.Offset, rec.Value))
		}
	}
	if fmt.Sprint(got) != "[0=v0 2=v2 6=v6]" || r.Offset() != 7 || asked != 2 {
		t.Fatalf("read %v, at %d after %d requests; want [0=v0 2=v2 6=v6] at 7 after 2", got, r.Offset(), asked)
	}
}

func TestDecoderRefusesCorruptBatches(t *testing.T) {
	good := encodeBatch(0, 0, -1, 1, rec{0, []byte("v0")}, rec{1, []byte("v1")})
	flipped := slices.Clone(good)
	flipped[len(flipped)-3] ^= 0x40
	short := slices.Clone(good)
	kbin.AppendInt32(short[:8], 20) // a length below a batch header's
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"a flipped bit":  {flipped, "CRC"},
		"a short length": {short, "too short"},
		"magic 3":        {append(slices.Clone(good[:16]), 3, 0, 0, 0, 0), "unknown magic 3"},
	} {
		_, _, err := decodeAll(t, true, &kmsg.FetchResponseTopicPartition{RecordBatches: c.data}, 0)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
		}
	}
	// Found by FuzzDecoder: offsets 0 and 1, then 1 again. After good
	// batches, a batch that cannot be read ends the answer before it.
	overlap := append(slices.Clone(good), encodeBatch(1, 0, -1, 0, rec{0, []byte("again")})...)
	if got, w, err := decodeAll(t, true, &kmsg.FetchResponseTopicPartition{RecordBatches: overlap}, 0); err != nil || len(got) != 2 || w.next != 2 {
		t.Errorf("overlapping batches: %v, next %d, %v; want offsets 0 and 1, next 2", got, w.next, err)
	}
	// First in what a fetch covers, it is a *CorruptError that says
	// where the next good batch begins, if the answer holds one.
	third := encodeBatch(4, 0, -1, 1, rec{0, []byte("v4")}, rec{1, []byte("v5")})
	bad := encodeBatch(2, 0, -1, 1, rec{0, []byte("v2")}, rec{1, []byte("v3")})
	bad[len(bad)-3] ^= 0x40
	for _, c := range []struct {
		data     []byte
		from     int64
		at, next int64
		whole    bool
	}{
		{slices.Concat(bad, third), 2, 2, 4, true},
		{slices.Concat(bad, third), 3, 3, 4, true},
		{bad, 2, 2, -1, true},
		{slices.Concat(bad, third[:30]), 2, 2, -1, true}, // the next batch cut short
	} {
		_, _, err := decodeAll(t, true, &kmsg.FetchResponseTopicPartition{RecordBatches: c.data}, c.from)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Offset != c.at || ce.Next != c.next || !bytes.Equal(ce.Raw, bad) {
			t.Errorf("from %d: %v (%+v); want a CorruptError at %d, next %d, with the batch", c.from, err, ce, c.at, c.next)
		}
	}
	// A batch cut by the broker at the end of the answer is left for the
	// next request, without error.
	got, w, err := decodeAll(t, true, &kmsg.FetchResponseTopicPartition{RecordBatches: append(slices.Clone(good), good[:30]...)}, 0)
	if err != nil || len(got) != 2 || w.next != 2 || w.batches != 1 || w.bytes != len(good) {
		t.Fatalf("cut batch: %v, next %d, %d batches of %d bytes, %v; want 2 records, next 2, 1 batch of %d bytes", got, w.next, w.batches, w.bytes, err, len(good))
	}
}

// Message sets written before Kafka 0.11 (magic 0 and 1) are read too.
func TestDecoderReadsLegacyMessageSets(t *testing.T) {
	var buf bytes.Buffer
	rs := protocol.RecordSet{Version: 1, Records: protocol.NewRecordReader(
		protocol.Record{Offset: 0, Key: protocol.NewBytes([]byte("k0")), Value: protocol.NewBytes([]byte("old0"))},
		protocol.Record{Offset: 1, Key: protocol.NewBytes([]byte("k1")), Value: protocol.NewBytes([]byte("old1"))},
		protocol.Record{Offset: 2, Value: protocol.NewBytes([]byte("old2"))},
	)}
	if _, err := rs.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()[4:] // without the set's size
	got, w, err := decodeAll(t, true, &kmsg.FetchResponseTopicPartition{RecordBatches: data}, 1)
	if err != nil || fmt.Sprint(got) != "[1=old1 2=old2]" || w.next != 3 {
		t.Fatalf("%v, next %d, %v; want [1=old1 2=old2], next 3", got, w.next, err)
	}
	// An offset that does not rise is a corrupt set, not a duplicate: the
	// second message's offset (a message is offset, size, body; the CRC
	// is in the body) made 0 again.
	again := slices.Clone(data)
	binary.BigEndian.PutUint64(again[12+binary.BigEndian.Uint32(again[8:]):], 0)
	if got, _, err := decodeAll(t, true, &kmsg.FetchResponseTopicPartition{RecordBatches: again}, 0); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("offsets 0, 0, 2: read %v, %v; want a corrupt set", got, err)
	}
}

// Compressed batches, as kafka-go's writer makes them with each codec,
// read as plain ones through the Reader and the Fetcher.
func TestCompressedBatchesAreRead(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"gzip", "snappy", "lz4", "zstd"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var values []string
	for i := range 300 {
		values = append(values, strings.Repeat(fmt.Sprint("value ", i, " "), 1+i%7))
	}
	f, err := NewFetcher(FetcherConfig{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, codec := range []compress.Compression{compress.Gzip, compress.Snappy, compress.Lz4, compress.Zstd} {
		topic := codec.String()
		w := &kafka.Writer{Transport: &kafka.Transport{}, Addr: kafka.TCP(b.Addr()), Topic: topic, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: 100, Compression: codec}
		var msgs []kafka.Message
		for _, v := range values {
			msgs = append(msgs, kafka.Message{Key: []byte("k" + v), Value: []byte(v), Headers: []kafka.Header{{Key: "h", Value: []byte("H" + v)}}})
		}
		if err := w.WriteMessages(context.Background(), msgs...); err != nil {
			t.Fatal(err)
		}
		w.Close()
		r, _ := NewReader(Config{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}, Topic: topic, MaxBytes: 2000}, 17)
		var got []string
		for r.Offset() < int64(len(values)) {
			batch, err := r.Fetch(context.Background(), time.Second)
			if err != nil {
				t.Fatalf("%s: %v", topic, err)
			}
			for _, rec := range batch.Records {
				v := string(rec.Value)
				if string(rec.Key) != "k"+v || len(rec.Headers) != 1 || string(rec.Headers[0].Value) != "H"+v || rec.Offset != int64(17+len(got)) {
					t.Fatalf("%s offset %d: %q %q %v", topic, rec.Offset, rec.Key, rec.Value, rec.Headers)
				}
				got = append(got, v)
			}
		}
		if !slices.Equal(got, values[17:]) {
			t.Fatalf("%s: read %d values, not those written", topic, len(got))
		}
		p := f.Open(topic, 0, 0)
		if err := drain(context.Background(), p, int64(len(values)), values); err != nil {
			t.Fatalf("%s through the Fetcher: %v", topic, err)
		}
		p.Close()
	}
}

// Whatever the bytes, the decoder returns an error or records in offset
// order from the offset asked for, and never panics.
func FuzzDecoder(f *testing.F) {
	f.Add(encodeBatch(0, 0, -1, 1, rec{0, []byte("v0")}, rec{1, []byte("v1")}), int64(0))
	f.Add(append(encodeBatch(0, attrTransactional, 3, 0, rec{0, []byte("a")}), marker(1, 3, true)...), int64(0))
	f.Add(encodeBatch(0, 0, -1, 4, rec{0, nil}, rec{3, []byte("v3")}), int64(2))
	f.Fuzz(func(t *testing.T, data []byte, from int64) {
		// With the CRCs right, or the fuzzer would hardly get past them.
		for b := data; len(b) > batchCRCFrom; {
			size := batchLengthFrom + int(int32(binary.BigEndian.Uint32(b[8:])))
			if size < batchCRCFrom || size > len(b) {
				break
			}
			binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[batchCRCFrom:size], castagnoli))
			b = b[size:]
		}
		d := newDecoder(true)
		rp := &kmsg.FetchResponseTopicPartition{RecordBatches: data,
			AbortedTransactions: []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 3, FirstOffset: 0}}}
		last := from - 1
		w, err := d.partition(rp, from, func(r *rawRecord) {
			if r.Offset <= last {
				t.Fatalf("offset %d after %d (from %d)", r.Offset, last, from)
			}
			last = r.Offset
		})
		if err == nil && last >= w.next {
			t.Fatalf("next %d, but offset %d was delivered", w.next, last)
		}
	})
}

// librdkafka, through kcat, compresses its batches independently of
// kafka-go: they read back whole. Only zstd: librdkafka 2.0 judges from
// the embedded broker's API versions that it takes no gzip, snappy or
// lz4 ("Broker does not support compression type gzip: not compressing
// batch") and sends those plain; kafka-go's writer covers them above.
func TestBatchesCompressedByLibrdkafkaAreRead(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("STREAMLEARNER_REQUIRE_KCAT") != "" {
			t.Fatal("kcat not installed")
		}
		t.Skip("kcat not installed (Debian package kcat)")
	}
	codecs := []string{"zstd"}
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: codecs})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var values []string
	var input strings.Builder
	for i := range 500 {
		v := strings.Repeat(fmt.Sprint("value-", i, " "), 1+i%5)
		values = append(values, v)
		fmt.Fprintf(&input, "k%s\t%s\n", v, v)
	}
	for _, codec := range codecs {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, kcat, "-P", "-b", b.Addr(), "-t", codec, "-p", "0", "-z", codec, "-K", "\t", "-H", "h=H",
			"-X", "acks=all", "-X", "linger.ms=50", "-X", "batch.num.messages=200")
		cmd.Stdin = strings.NewReader(input.String())
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("kcat -z %s: %v\n%s", codec, err, out)
		}
		r, _ := NewReader(Config{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}, Topic: codec}, 0)
		var got []string
		for r.Offset() < int64(len(values)) {
			batch, err := r.Fetch(context.Background(), time.Second)
			if err != nil {
				t.Fatalf("%s: %v", codec, err)
			}
			if len(batch.Records) == 0 {
				t.Fatalf("%s: nothing at %d", codec, r.Offset())
			}
			for _, rec := range batch.Records {
				v := string(rec.Value)
				if string(rec.Key) != "k"+v || len(rec.Headers) != 1 || rec.Headers[0].Key != "h" || string(rec.Headers[0].Value) != "H" {
					t.Fatalf("%s offset %d: %q %q %v", codec, rec.Offset, rec.Key, rec.Value, rec.Headers)
				}
				got = append(got, v)
			}
		}
		if !slices.Equal(got, values) {
			t.Fatalf("%s: read %d values, not those written", codec, len(got))
		}
	}
}
