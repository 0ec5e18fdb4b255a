package embedded

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkatest"
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
	w := &kafka.Writer{Transport: &kafka.Transport{}, Addr: kafka.TCP(b.Addr()), Topic: "t", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond,
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
	defer kafkatest.CloseReader(t, r)
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

func TestTopicsAreCreatedInAnExistingDataDir(t *testing.T) {
	dir := t.TempDir()
	b, err := Start(Config{DataDir: dir, Partitions: 2, Topics: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	b, err = Start(Config{DataDir: dir, Partitions: 3, Topics: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl := &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}}
	md, err := cl.Metadata(context.Background(), &kafka.MetadataRequest{Topics: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string]int{}
	for _, tp := range md.Topics {
		if tp.Error != nil {
			t.Fatalf("topic %s: %v", tp.Name, tp.Error)
		}
		parts[tp.Name] = len(tp.Partitions)
	}
	// "a" keeps the partitions it was created with.
	if parts["a"] != 2 || parts["b"] != 3 {
		t.Fatalf("partitions after restart: %v, want a:2 b:3", parts)
	}
}

func TestMetadataCreatesTopicsOnlyWhenAsked(t *testing.T) {
	b, err := Start(Config{Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	// kafka-go's Client asks without auto-creation.
	cl := &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}}
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Topics) != 1 || !errors.Is(md.Topics[0].Error, kafka.UnknownTopicOrPartition) {
		t.Fatalf("metadata without auto-creation of a missing topic: %+v", md.Topics)
	}
	// Its Conn asks with it: the topic is created with the default
	// partition count.
	c, err := kafka.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ps, err := c.ReadPartitions("x")
	if err != nil || len(ps) != 3 {
		t.Fatalf("metadata with auto-creation: %d partitions, %v; want 3", len(ps), err)
	}
}

// Tests stop a broker midway to stage an outage and close it again when
// they end: the second Close does nothing.
func TestCloseTwice(t *testing.T) {
	b, err := Start(Config{})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	b.Close()
}
