package embedded

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinRequest is what kafka-go's ConsumerGroup sends: JoinGroup v1 with
// the range and round-robin protocols, for topic t.
func joinRequest(member string, session, rebalance time.Duration) *kmsg.JoinGroupRequest {
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version = 1
	join.Group, join.MemberID, join.ProtocolType = "g", member, "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = int32(session/time.Millisecond), int32(rebalance/time.Millisecond)
	meta := kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}
	for _, name := range []string{"range", "roundrobin"} {
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = name, meta.AppendTo(nil)
		join.Protocols = append(join.Protocols, p)
	}
	return join
}

// send writes req on c; with a response wanted, it reads and decodes it.
func send(t *testing.T, c net.Conn, req kmsg.Request, resp kmsg.Response) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)); err != nil {
		t.Fatal(err)
	}
	if resp == nil {
		return
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		t.Fatal(err)
	}
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body[4:]); err != nil { // after the correlation id
		t.Fatal(err)
	}
}

// nextWithAll waits for a generation that gives the member every one of
// n partitions of t, and returns how long that took.
func nextWithAll(t *testing.T, b *Broker, cg *kafka.ConsumerGroup, n int, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for {
		gen, err := cg.Next(ctx)
		if ctx.Err() != nil {
			if gi := b.c.GroupInfo("g"); gi != nil {
				t.Logf("group: %s, generation %d, %d members", gi.State, gi.Epoch, len(gi.Members))
			}
			t.Fatalf("no generation with all %d partitions within %v", n, within)
		}
		if err != nil {
			t.Logf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
			continue
		}
		got := len(gen.Assignments["t"])
		t.Logf("generation %d after %v: %d partitions", gen.ID, time.Since(start).Round(time.Millisecond), got)
		if got == n {
			return time.Since(start)
		}
	}
}

// TestMemberWhoseJoinReplyWasLostExpires: members that sent a JoinGroup
// and vanished before the answer (processes killed while joining) are in
// the next generation with partitions; they must expire like any silent
// member, and the live member then gets every partition. kfake alone
// never expires one whose reply it could not deliver, and it dropped the
// live member while the rebalance waited for them.
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
	nextWithAll(t, b, cg, 8, 10*time.Second)

	// Vanishing members: a JoinGroup written, the connection closed.
	// Whether kfake still delivers the reply or loses it is a race, so
	// six of them.
	for range 6 {
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		send(t, c, joinRequest("", session, session), nil)
		c.Close()
	}
	// The live member leads the next generation, shared with the dead
	// ones; once their sessions are over, it gets every partition again.
	if d := nextWithAll(t, b, cg, 8, 12*time.Second); d > 3*session {
		t.Errorf("every partition back after %v, want about the session timeout %v", d, session)
	}
}

// TestMemberWaitingInSyncIsKept: the leader of a generation dies before it
// sends the assignment, so the coordinator holds the live member's
// SyncGroup until it drops the leader, a rebalance timeout later. The live
// member must still be a member then, though that is longer than its
// session timeout; it rejoins and gets every partition. (kfake dropped it
// at its session timeout without answering, and its client waited out the
// request timeout before joining again.)
func TestMemberWaitingInSyncIsKept(t *testing.T) {
	b, err := Start(Config{Partitions: 4, Topics: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const session, rebalance = 2 * time.Second, 4 * time.Second

	// The leader-to-be: first in the group, with a long session of its
	// own so that only the rebalance timeout removes it.
	lc, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	joined := kmsg.NewPtrJoinGroupResponse()
	send(t, lc, joinRequest("", 30*time.Second, rebalance), joined)
	if joined.ErrorCode != 0 || joined.LeaderID != joined.MemberID {
		t.Fatalf("first join: error %d, leader %q, member %q", joined.ErrorCode, joined.LeaderID, joined.MemberID)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = "g", joined.Generation, joined.MemberID
	assignment := kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: []int32{0, 1, 2, 3}}}}
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: joined.MemberID, MemberAssignment: assignment.AppendTo(nil)}}
	synced := kmsg.NewPtrSyncGroupResponse()
	send(t, lc, sync, synced)
	if synced.ErrorCode != 0 {
		t.Fatalf("first sync: error %d", synced.ErrorCode)
	}

	// The live member joins; once the coordinator waits for the leader
	// to rejoin, it does, and dies before syncing.
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{ID: "g", Brokers: []string{b.Addr()}, Topics: []string{"t"},
		HeartbeatInterval: 200 * time.Millisecond, SessionTimeout: session, RebalanceTimeout: rebalance, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if gi := b.c.GroupInfo("g"); gi != nil && gi.State == "PreparingRebalance" && len(gi.Members) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the live member did not join")
		}
	}
	send(t, lc, joinRequest(joined.MemberID, 30*time.Second, rebalance), nil)
	lc.Close()

	if d := nextWithAll(t, b, cg, 4, 20*time.Second); d > rebalance+3*time.Second {
		t.Errorf("every partition after %v, want about the rebalance timeout %v", d, rebalance)
	}
}
