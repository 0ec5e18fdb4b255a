package pipeline

import (
	"context"
	"errors"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

// TestStaleOwnerCannotCommit: a member that lost its partitions (an old
// generation) tries to commit an offset naming its snapshot; the commit is
// refused as fenced, and the group's committed metadata still names the
// current owner's snapshot, so the stale snapshot is never loaded.
func TestStaleOwnerCannotCommit(t *testing.T) {
	b := startBroker(t, "in", "out", "in.dlq")
	ctx := context.Background()
	cfg := testConfig(t, b, "perceptron")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	dialer, _ := cfg.Conn.Dialer()
	transport, _ := cfg.Conn.Transport()
	m := &member{cfg: &cfg, dialer: dialer, client: &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: transport}}

	// The stale member: joins alone and owns everything in generation g1.
	stale, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{ID: "g", Brokers: []string{b.Addr()}, Topics: []string{"in"},
		HeartbeatInterval: 200 * time.Millisecond, SessionTimeout: 3 * time.Second, RebalanceTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	g1, err := stale.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := Partition{Topic: "in", ID: 0}
	if err := m.commit(ctx, g1, p, 5, "in/0/1/1", "", -1); err != nil {
		t.Fatalf("the owner's commit: %v", err)
	}
	stale.Close() // it leaves; a new member takes over in a newer generation

	_, assigned := runMember(t, cfg)
	waitFor(t, "the new member to own the partitions", 30*time.Second, func() bool {
		g, parts := assigned()
		return g > g1.ID && len(parts) == 4
	})
	err = m.commit(ctx, g1, p, 9, "in/0/1/2", "", -1)
	if !errors.Is(err, errFenced) {
		t.Fatalf("stale commit: %v, want fenced", err)
	}
	off, meta, err := m.committed(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if meta == "in/0/1/2" || off == 9 {
		t.Fatalf("the stale commit took effect: offset %d metadata %q", off, meta)
	}
}
