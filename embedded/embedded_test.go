package embedded

import (
	"context"
	"net"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

func TestDataDirKeepsRecordsAndOffsetsAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	b, err := Start(Config{DataDir: dir, Partitions: 2, Topics: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := net.SplitHostPort(b.Addr())
	if host != "127.0.0.1" {
		t.Fatalf("listening on %s, want loopback only", b.Addr())
	}
	ctx := context.Background()
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Topic: "t", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond,
		Balancer: kafka.BalancerFunc(func(kafka.Message, ...int) int { return 1 })}
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("a")}, kafka.Message{Value: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	cl := &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}}
	if _, err := cl.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: "g", GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{"t": {{Partition: 1, Offset: 1, Metadata: "snap"}}}}); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(b.Addr())
	b.Close()

	var p int
	for _, c := range port {
		p = 10*p + int(c-'0')
	}
	b, err = Start(Config{DataDir: dir, Port: p})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b.Addr()}, Topic: "t", Partition: 1, MaxWait: time.Second})
	defer r.Close()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, want := range []string{"a", "b"} {
		m, err := r.ReadMessage(rctx)
		if err != nil || string(m.Value) != want {
			t.Fatalf("after restart: %q, %v; want %q", m.Value, err, want)
		}
	}
	// A new transport: the default one would reuse its pooled connections
	// to the broker that was closed.
	cl = &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}}
	resp, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: "g", Topics: map[string][]int{"t": {1}}})
	if err != nil {
		t.Fatal(err)
	}
	if op := resp.Topics["t"][0]; op.CommittedOffset != 1 || op.Metadata != "snap" {
		t.Fatalf("committed offset after restart: %+v", op)
	}
}
