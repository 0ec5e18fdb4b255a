package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

// buildBinary builds the command into a temporary directory: the
// process-level tests kill it, which an in-process command cannot survive.
// startBroker runs `streamlearner broker` on port with dataDir and waits
// until it accepts connections.
func startBroker(t *testing.T, bin, logPath string, port int, dataDir string, extra ...string) *proc {
	t.Helper()
	p := start(t, logPath, bin, append([]string{"broker", "--port", strconv.Itoa(port), "--data-dir", dataDir, "--partitions", "4"}, extra...)...)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitFor(t, "the broker", 10*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return p
}

// TestBrokerKeepsAutoCreatedTopicsAcrossKill: a topic the dev broker
// created because a producer wrote to it, its records and a group's
// committed offsets are all there after the broker is killed with SIGKILL
// and started again on the same data directory. (Before, the topic list
// was written only on CreateTopics or a clean shutdown, so an
// auto-created topic vanished and a consumer's committed offset pointed
// past an empty log.)
func TestBrokerKeepsAutoCreatedTopicsAcrossKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	t.Parallel() // a process test that mostly waits: it overlaps the others (make test sets -parallel)
	bin := testBinary(t)
	dir := t.TempDir()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	data, log := filepath.Join(dir, "kafka"), filepath.Join(dir, "broker.log")
	b := startBroker(t, bin, log, port, data)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	transport := &kafka.Transport{}
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "in", AllowAutoTopicCreation: true, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, Balancer: kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return int(m.Key[0]) }),
		Transport: transport}
	const perPartition = 25
	var msgs []kafka.Message
	for i := range 4 * perPartition {
		msgs = append(msgs, kafka.Message{Key: []byte{byte(i % 4)}, Value: fmt.Appendf(nil, "record %d", i)})
	}
	// The first write may see the topic still being created; the writer
	// retries on its own, but not on every error, so retry here too.
	var err error
	for range 20 {
		if err = w.WriteMessages(ctx, msgs...); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("produce to an auto-created topic: %v", err)
	}
	w.Close()
	cl := &kafka.Client{Addr: kafka.TCP(addr), Transport: transport}
	commits := []kafka.OffsetCommit{{Partition: 0, Offset: 10, Metadata: "m0"}, {Partition: 3, Offset: perPartition, Metadata: "m3"}}
	if _, err := cl.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: "g", GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{"in": commits}}); err != nil {
		t.Fatal(err)
	}
	transport.CloseIdleConnections()

	b.kill()
	startBroker(t, bin, log, port, data)

	// A metadata request that does not create topics (kafka-go's Conn, which
	// the checks below use, always asks for creation): the topic must have
	// come back from disk.
	md, err := (&kafka.Client{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}}).Metadata(ctx, &kafka.MetadataRequest{Topics: []string{"in"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) != 4 {
		t.Fatalf("after kill -9 and restart, metadata of the auto-created topic: %+v", md.Topics)
	}
	ends := partitionEnds(t, addr)
	for p := range 4 {
		if ends[p] != perPartition {
			t.Fatalf("after kill -9 and restart, partition %d ends at %d, want %d (all ends %v)", p, ends[p], perPartition, ends)
		}
	}
	n := 0
	readAll(t, addr, "in", func(m kafka.Message) {
		if m.Partition != int(m.Key[0]) {
			t.Fatalf("record %q in partition %d, written to %d", m.Value, m.Partition, m.Key[0])
		}
		n++
	})
	if n != len(msgs) {
		t.Fatalf("read %d records after restart, wrote %d", n, len(msgs))
	}
	cl = &kafka.Client{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}}
	resp, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: "g", Topics: map[string][]int{"in": {0, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]kafka.OffsetFetchPartition{}
	for _, op := range resp.Topics["in"] {
		got[op.Partition] = op
	}
	for _, c := range commits {
		if op := got[c.Partition]; op.CommittedOffset != c.Offset || op.Metadata != c.Metadata {
			t.Errorf("partition %d: committed %d %q after restart, want %d %q", c.Partition, op.CommittedOffset, op.Metadata, c.Offset, c.Metadata)
		}
	}
}
