package embedded

import (
	"context"
	"net"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMemberWhoseJoinReplyWasLostExpires: members that sent a JoinGroup
// and vanished before the answer (processes killed while joining) are in
// the next generation with partitions; they must expire like any silent
// member, and the live member then gets every partition. (kfake alone
// never expires one whose reply it could not deliver: the group stays
// stable with its partitions unserved.)
func TestMemberWhoseJoinReplyWasLostExpires(t *testing.T) {
	b, err := Start(Config{Partitions: 8, Topics: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const session = 2 * time.Second
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{ID: "g", Brokers: []string{b.Addr()}, Topics: []string{"t"},
		HeartbeatInterval: 200 * time.Millisecond, SessionTimeout: session, RebalanceTimeout: session, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
	defer cancel()
	gen, err := cg.Next(ctx)
	if err != nil || len(gen.Assignments["t"]) != 8 {
		t.Fatalf("first generation: %v, %v", gen, err)
	}

	// Vanishing members: a JoinGroup written, the connection closed. kfake
	// loses the reply to a closed connection only about every other time
	// (it may still queue it), so six of them.
	for range 6 {
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		join := kmsg.NewPtrJoinGroupRequest()
		join.Version = 1
		join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g", int32(session/time.Millisecond), int32(session/time.Millisecond)
		join.ProtocolType = "consumer"
		meta := kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}
		for _, name := range []string{"range", "roundrobin"} {
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = name, meta.AppendTo(nil)
			join.Protocols = append(join.Protocols, p)
		}
		if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, join, 1)); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}

	// The live member leads the next generation, shared with the dead
	// ones; once their sessions are over, a generation gives the live
	// member every partition again.
	start := time.Now()
	shared := false
	for {
		gen, err = cg.Next(ctx)
		if err != nil {
			if gi := b.c.GroupInfo("g"); gi != nil {
				t.Logf("group: %s generation %d, %d members", gi.State, gi.Epoch, len(gi.Members))
			}
			t.Fatalf("no generation with every partition %v after the dead member joined (shared one: %v): %v", time.Since(start), shared, err)
		}
		n := len(gen.Assignments["t"])
		t.Logf("generation %d after %v: %d partitions", gen.ID, time.Since(start).Round(time.Millisecond), n)
		if n < 8 {
			shared = true
			continue
		}
		if shared {
			break
		}
	}
	if d := time.Since(start); d > 3*session {
		t.Errorf("every partition back after %v, want about the session timeout %v", d, session)
	}
}
