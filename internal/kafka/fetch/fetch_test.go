package fetch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/internal/dev/embedded"
)

// produce writes plain records to partition 0 of topic.
func produce(t *testing.T, addr, topic string, values ...string) {
	t.Helper()
	w := &kafka.Writer{Transport: &kafka.Transport{}, Addr: kafka.TCP(addr), Topic: topic, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond,
		Balancer: kafka.BalancerFunc(func(kafka.Message, ...int) int { return 0 })}
	defer w.Close()
	var msgs []kafka.Message
	for _, v := range values {
		msgs = append(msgs, kafka.Message{Key: []byte("k" + v), Value: []byte(v), Headers: []kafka.Header{{Key: "h", Value: []byte("H" + v)}}})
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
}

func txn(t *testing.T, addr, topic, id string, commit bool, values ...string) {
	t.Helper()
	var vs [][]byte
	for _, v := range values {
		vs = append(vs, []byte(v))
	}
	if err := embedded.ProduceTransaction(context.Background(), addr, topic, 0, id, vs, commit); err != nil {
		t.Fatal(err)
	}
}

// transactions writes to partition 0 of "t" plain records and committed
// and aborted transactions, interleaved: read committed, the values are
// p1 p2 b1 b2 p3 c1 p4, with 5 aborted records and 4 markers skipped.
func transactions(t *testing.T, addr string) {
	t.Helper()
	produce(t, addr, "t", "p1", "p2")
	txn(t, addr, "t", "tx-a", false, "a1", "a2")
	txn(t, addr, "t", "tx-b", true, "b1", "b2")
	produce(t, addr, "t", "p3")
	txn(t, addr, "t", "tx-a", true, "c1")
	txn(t, addr, "t", "tx-b", false, "d1", "d2", "d3")
	produce(t, addr, "t", "p4")
}

// readAll reads partition 0 from the start to its end.
func readAll(t *testing.T, addr, topic string, uncommitted bool) (values []string, skipped int) {
	t.Helper()
	r, err := NewReader(Config{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}, Topic: topic, ReadUncommitted: uncommitted, MaxBytes: 300}, kafka.FirstOffset)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, end, err := r.Bounds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); r.Offset() < end; {
		if time.Now().After(deadline) {
			t.Fatalf("stuck at %d of %d", r.Offset(), end)
		}
		b, err := r.Fetch(ctx, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range b.Records {
			if want := "k" + string(rec.Value); rec.Key != nil && string(rec.Key) != want {
				t.Errorf("offset %d: key %q, want %q", rec.Offset, rec.Key, want)
			}
			values = append(values, string(rec.Value))
		}
		skipped += b.Skipped
	}
	return values, skipped
}

func TestReadCommittedSkipsAbortedTransactionsAndMarkers(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	addr := b.Addr()
	transactions(t, addr)

	got, skipped := readAll(t, addr, "t", false)
	want := []string{"p1", "p2", "b1", "b2", "p3", "c1", "p4"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read committed: %v, want %v", got, want)
	}
	// 5 aborted records and 4 markers.
	if skipped != 9 {
		t.Errorf("skipped %d, want 9 (5 aborted records, 4 markers)", skipped)
	}
	got, skipped = readAll(t, addr, "t", true)
	want = []string{"p1", "p2", "a1", "a2", "b1", "b2", "p3", "c1", "d1", "d2", "d3", "p4"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read uncommitted: %v, want %v", got, want)
	}
	if skipped != 4 {
		t.Errorf("read uncommitted skipped %d, want the 4 markers", skipped)
	}
}

func TestRecordsKeepKeysValuesHeadersAndOffsets(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var vs []string
	for i := range 50 {
		vs = append(vs, fmt.Sprintf("v%02d", i))
	}
	produce(t, b.Addr(), "t", vs...)
	r, _ := NewReader(Config{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}, Topic: "t"}, 10)
	batch, err := r.Fetch(context.Background(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(batch.Records) != 40 || batch.Next != 50 || batch.HighWatermark != 50 {
		t.Fatalf("%d records, next %d, hwm %d; want 40, 50, 50", len(batch.Records), batch.Next, batch.HighWatermark)
	}
	for i, rec := range batch.Records {
		v := vs[10+i]
		if rec.Offset != int64(10+i) || string(rec.Value) != v || string(rec.Key) != "k"+v ||
			len(rec.Headers) != 1 || rec.Headers[0].Key != "h" || string(rec.Headers[0].Value) != "H"+v {
			t.Fatalf("record %d: %d %q %q %v", i, rec.Offset, rec.Key, rec.Value, rec.Headers)
		}
	}
	// Nothing more: an empty batch after the wait, position unchanged.
	batch, err = r.Fetch(context.Background(), 50*time.Millisecond)
	if err != nil || len(batch.Records) != 0 || r.Offset() != 50 {
		t.Fatalf("at the end: %v, %d records, offset %d", err, len(batch.Records), r.Offset())
	}
}

func TestOffsetOutOfRangeIsReportedWithBounds(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	produce(t, b.Addr(), "t", "a", "b", "c")
	r, _ := NewReader(Config{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}, Topic: "t"}, 1000)
	_, err = r.Fetch(context.Background(), 50*time.Millisecond)
	var oor *OutOfRangeError
	if !errors.As(err, &oor) || oor.Offset != 1000 || oor.LogStart != 0 || oor.LogEnd != 3 {
		t.Fatalf("got %v, want out of range [0, 3) at 1000", err)
	}
	if !errors.Is(err, kafka.OffsetOutOfRange) {
		t.Errorf("%v does not wrap kafka.OffsetOutOfRange", err)
	}
}

// Records larger than an arena chunk, and more records than one chunk
// holds, come back whole and distinct, in the first response and in
// later ones that reuse the chunks.
func TestArenaChunksKeepEveryRecord(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var vs []string
	for i := range 40 {
		size := 20 << 10 // 40 of them fill more than one chunk
		if i%13 == 5 {
			size = arenaChunk + 1000 // one chunk is not room enough
		}
		vs = append(vs, fmt.Sprintf("%03d", i)+strings.Repeat(string(rune('a'+i%26)), size))
	}
	produce(t, b.Addr(), "t", vs[:20]...)
	produce(t, b.Addr(), "t", vs[20:]...)
	r, _ := NewReader(Config{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}, Topic: "t", MaxBytes: 1 << 20}, kafka.FirstOffset)
	next := 0
	for fetches := 0; next < len(vs); fetches++ {
		if fetches > 20 {
			t.Fatalf("stuck at %d of %d", next, len(vs))
		}
		batch, err := r.Fetch(context.Background(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range batch.Records {
			v := vs[next]
			if rec.Offset != int64(next) || string(rec.Value) != v || string(rec.Key) != "k"+v ||
				len(rec.Headers) != 1 || string(rec.Headers[0].Value) != "H"+v {
				t.Fatalf("record %d (fetch %d): offset %d, %d value bytes starting %.8q", next, fetches, rec.Offset, len(rec.Value), rec.Value)
			}
			if cap(rec.Value) != len(rec.Value) {
				t.Fatalf("record %d: value capacity %d beyond its %d bytes", next, cap(rec.Value), len(rec.Value))
			}
			next++
		}
	}
}
