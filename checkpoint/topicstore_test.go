package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkatest"
)

func TestTopicStoreChunksLargeSnapshots(t *testing.T) {
	// A broker that takes at most 64 KiB per batch, and a snapshot of 300 KB.
	b, err := embedded.Start(embedded.Config{Partitions: 3, Topics: []string{"ckpt"}, MaxMessageBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	st := &TopicStore{Brokers: []string{b.Addr()}, Topic: "ckpt", ChunkBytes: 32 << 10}
	defer st.Close()
	if err := st.Ensure(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := (&TopicStore{Brokers: []string{b.Addr()}, Topic: "fresh"}).Ensure(ctx, 1); err != nil {
		t.Fatalf("creating a compacted topic: %v", err)
	}
	big := make([]byte, 300_000)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	names := []string{Name("in", 0, 1, 1), Name("in", 0, 1, 2), Name("in", 1, 1, 1)}
	for i, n := range names {
		if err := st.Save(ctx, n, big[:100_000*(i+1)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Save(ctx, Name("in", 2, 1, 1), nil); err != nil {
		t.Fatal(err)
	}
	// A second store, with nothing in memory, reads them back.
	other := &TopicStore{Brokers: []string{b.Addr()}, Topic: "ckpt"}
	defer other.Close()
	for i, n := range names {
		got, err := other.Load(ctx, n)
		if err != nil || !bytes.Equal(got, big[:100_000*(i+1)]) {
			t.Fatalf("%s: %d bytes, %v", n, len(got), err)
		}
	}
	if got, err := other.Load(ctx, Name("in", 2, 1, 1)); err != nil || len(got) != 0 {
		t.Fatalf("empty snapshot: %d bytes, %v", len(got), err)
	}
	list, _ := other.List(ctx, "in/0/")
	if !slices.Equal(list, names[:2]) {
		t.Fatalf("List = %v", list)
	}
	if err := st.Delete(ctx, names[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Load(ctx, names[0]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if list, _ := other.List(ctx, "in/0/"); !slices.Equal(list, names[1:2]) {
		t.Fatalf("List after delete = %v", list)
	}
}

// TestTopicStoreAfterCompaction: once compaction has removed the
// tombstones at the end of the log, a new store still reads the topic to
// its end instead of waiting for a record that will never come.
func TestTopicStoreAfterCompaction(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, CompactionInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	st := &TopicStore{Brokers: []string{b.Addr()}, Topic: "ckpt", ChunkBytes: 10}
	defer st.Close()
	if err := st.Ensure(ctx, 1); err != nil {
		t.Fatal(err)
	}
	keep, gone := Name("in", 0, 1, 2), Name("in", 0, 1, 1)
	st.Save(ctx, gone, []byte("old snapshot bytes"))
	st.Save(ctx, keep, []byte("new snapshot bytes"))
	if err := st.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // compaction runs every 100 ms
	fresh := &TopicStore{Brokers: []string{b.Addr()}, Topic: "ckpt"}
	defer fresh.Close()
	start := time.Now()
	names, err := fresh.List(ctx, "")
	if err != nil || !slices.Equal(names, []string{keep}) {
		t.Fatalf("List = %v, %v", names, err)
	}
	if got, err := fresh.Load(ctx, keep); err != nil || string(got) != "new snapshot bytes" {
		t.Fatalf("Load = %q, %v", got, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("reading the compacted topic took %v", d)
	}
}

// TestTopicStoreKeepsNoSnapshotBytes: a store that wrote snapshots, or read
// the topic, holds each snapshot's manifest and where its chunks are, not
// their bytes: the topic holds two snapshots of every partition of the
// group, which every member held in memory once a restore had read it.
func TestTopicStoreKeepsNoSnapshotBytes(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 2, Topics: []string{"ckpt"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	st := &TopicStore{Brokers: []string{b.Addr()}, Topic: "ckpt", ChunkBytes: 64 << 10}
	defer st.Close()
	r := rand.New(rand.NewPCG(1, 1))
	snaps := map[string][]byte{}
	for p := range 4 {
		for seq := range 2 {
			data := make([]byte, 200_000)
			for i := range data {
				data[i] = byte(r.Uint32())
			}
			name := Name("in", p, 1, uint64(seq+1))
			snaps[name] = data
			if err := st.Save(ctx, name, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	other := &TopicStore{Brokers: []string{b.Addr()}, Topic: "ckpt"}
	defer other.Close()
	if names, err := other.List(ctx, ""); err != nil || len(names) != len(snaps) {
		t.Fatalf("List = %v, %v", names, err)
	}
	for name, want := range snaps {
		if got, err := other.Load(ctx, name); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes, %v", name, len(got), err)
		}
	}
	for _, s := range []*TopicStore{st, other} {
		held := 0
		for _, v := range s.index {
			held += len(v)
		}
		t.Logf("the store holds %d bytes of 8 snapshots", held)
		if held > 100*len(snaps) {
			t.Errorf("after 8 snapshots of 200 kB the store holds %d bytes of them", held)
		}
	}
}

// TestTopicStoreLoadHonoursContext: a load from a broker that accepts
// connections and never answers ends when its context does, with the
// context's error. (It read through kafka-go Readers and leader
// connections: the partition list was asked for with no deadline at all,
// and a Reader's Close could hang, segmentio/kafka-go#1248.)
func TestTopicStoreLoadHonoursContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	st := &TopicStore{Brokers: []string{ln.Addr().String()}, Topic: "ckpt"}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := st.Load(ctx, Name("in", 0, 1, 1))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Load = %v, want the context's error", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("Load returned %v after its context was cancelled", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Load still running 15 s after its context was cancelled")
	}
	st.Close()
}

// TestTopicStoreReadsToARecordlessEnd: a partition whose last offsets hold
// no record the store sees (here a transaction marker; compaction can
// leave such an end too) is read to its end at once, not fetched again
// and again.
func TestTopicStoreReadsToARecordlessEnd(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"ckpt"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := &TopicStore{Brokers: []string{b.Addr()}, Topic: "ckpt"}
	defer st.Close()
	name := Name("in", 0, 1, 1)
	if err := st.Save(ctx, name, []byte("snapshot bytes")); err != nil {
		t.Fatal(err)
	}
	// A keyless tombstone in a committed transaction: a record the store
	// ignores, then the commit marker, the partition's last offset.
	if err := embedded.ProduceTransaction(ctx, b.Addr(), "ckpt", 0, "tx", [][]byte{nil}, true); err != nil {
		t.Fatal(err)
	}
	fresh := &TopicStore{Brokers: []string{b.Addr()}, Topic: "ckpt"}
	defer fresh.Close()
	start := time.Now()
	if names, err := fresh.List(ctx, ""); err != nil || !slices.Equal(names, []string{name}) {
		t.Fatalf("List = %v, %v", names, err)
	}
	if got, err := fresh.Load(ctx, name); err != nil || string(got) != "snapshot bytes" {
		t.Fatalf("Load = %q, %v", got, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("reading the topic took %v", d)
	}
	if next, want := fresh.next[0], int64(4); next != want {
		t.Fatalf("the store stopped at offset %d of the partition, its end is %d", next, want)
	}
}

// A broker that misbehaves as real ones do — a leader that moved, a
// partition whose leader is not there yet, a request that timed out, a
// broker restarting under a ListOffsets (UNKNOWN_SERVER_ERROR, as
// kafka-go reports it: the broker-kill test met it) —
// costs the store retries, not the snapshot: a fresh store still lists
// and loads it whole. An error that will not pass is returned at once,
// named, not waited on.
func TestTopicStoreReadsThroughBrokerFaults(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 2, Topics: []string{"ckpt"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	data := make([]byte, 100<<10)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	st := &TopicStore{Brokers: []string{b.Addr()}, Topic: "ckpt", ChunkBytes: 16 << 10}
	defer st.Close()
	if err := st.Save(ctx, "in/0/1/1", data); err != nil {
		t.Fatal(err)
	}
	key := func(k kmsg.Key) []kmsg.Key { return []kmsg.Key{k} }
	h := b.Cluster().Fault(
		kfake.Fault{Keys: key(kmsg.Metadata), Topic: "ckpt", Err: kerr.LeaderNotAvailable},
		kfake.Fault{Keys: key(kmsg.ListOffsets), Topic: "ckpt", Err: kerr.NotLeaderForPartition},
		kfake.Fault{Keys: key(kmsg.Fetch), Topic: "ckpt", Err: kerr.NotLeaderForPartition, Count: 2},
		kfake.Fault{Keys: key(kmsg.Fetch), Topic: "ckpt", Err: kerr.RequestTimedOut},
	)
	fresh := &TopicStore{Brokers: []string{b.Addr()}, Topic: "ckpt"}
	defer fresh.Close()
	got, err := fresh.Load(ctx, "in/0/1/1")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("load through faults: %d bytes, %v", len(got), err)
	}
	if n := h.Hits(); n != 5 {
		t.Fatalf("the faults answered %d requests, want 5", n)
	}
	h.Remove()
	// What kafka-go reports for the part of a ListOffsets that met a
	// broker restarting (alone: beside NOT_LEADER the partition's error
	// could be either).
	h = b.Cluster().Fault(kfake.Fault{Keys: key(kmsg.ListOffsets), Topic: "ckpt", Err: kerr.UnknownServerError})
	restarted := &TopicStore{Brokers: []string{b.Addr()}, Topic: "ckpt"}
	defer restarted.Close()
	if got, err := restarted.Load(ctx, "in/0/1/1"); err != nil || !bytes.Equal(got, data) || h.Hits() != 1 {
		t.Fatalf("load through UNKNOWN_SERVER_ERROR: %d bytes, %v, %d faults", len(got), err, h.Hits())
	}
	h.Remove()

	h = b.Cluster().Fault(kfake.Fault{Keys: key(kmsg.Fetch), Topic: "ckpt", Err: kerr.TopicAuthorizationFailed, Count: -1})
	defer h.Remove()
	start := time.Now()
	other := &TopicStore{Brokers: []string{b.Addr()}, Topic: "ckpt"}
	defer other.Close()
	if _, err := other.Load(ctx, "in/0/1/1"); !errors.Is(err, kerr.TopicAuthorizationFailed) && (err == nil || !bytes.Contains([]byte(err.Error()), []byte("Topic Authorization Failed"))) {
		t.Fatalf("a fault that will not pass: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("a fault that will not pass took %v: retried as if it might", d)
	}
}

// TestTopicStoreRestoresShareCatchUps: 64 partitions listing their
// snapshots at once (a generation's restores) share catch-ups: a List
// that waited while another caught up, begun after it asked, reads
// nothing again. Each still sees a snapshot saved before it asked. One
// catch-up each (a Metadata, a ListOffsets and a Fetch under the store's
// lock) left 1,024 partitions unserved for up to 29 s after a rebalance.
func TestTopicStoreRestoresShareCatchUps(t *testing.T) {
	const parts = 64
	b, err := embedded.Start(embedded.Config{Partitions: 2, Topics: []string{"ckpt"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	writer := &TopicStore{Brokers: []string{b.Addr()}, Topic: "ckpt"}
	defer writer.Close()
	for p := range parts {
		if err := writer.Save(ctx, Name("in", p, 1, 1), []byte{byte(p)}); err != nil {
			t.Fatal(err)
		}
	}
	st := &TopicStore{Brokers: []string{b.Addr()}, Topic: "ckpt"}
	defer st.Close()
	// The first catch-up is held until every List has been called, and a
	// little longer, so that each asks before it ends; the List's own time
	// is not visible from here.
	var called atomic.Int32
	listOffsets := kafkatest.CountRequests(b.Cluster(), kmsg.ListOffsets, func(kmsg.Request) {
		kafkatest.WaitFor(func() bool { return called.Load() == parts })
		time.Sleep(20 * time.Millisecond)
	})
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			called.Add(1)
			names, err := st.List(ctx, fmt.Sprintf("in/%d/", p))
			if err != nil || len(names) != 1 || names[0] != Name("in", p, 1, 1) {
				t.Errorf("partition %d: %v, %v", p, names, err)
			}
		}()
	}
	wg.Wait()
	// Four requests a catch-up here (256 for the 64 Lists before): the
	// first, and one for all that asked meanwhile, 8; a List that asked
	// only once that one had begun would need one more.
	if n := listOffsets(); n > parts/4 {
		t.Errorf("%d ListOffsets requests for %d Lists, want at most %d", n, parts, parts/4)
	}
	// A snapshot saved after the last catch-up is still found.
	if err := writer.Save(ctx, Name("in", 0, 1, 2), []byte{1}); err != nil {
		t.Fatal(err)
	}
	if names, err := st.List(ctx, "in/0/"); err != nil || len(names) != 2 {
		t.Errorf("after a new save: %v, %v", names, err)
	}
}

// TestTopicStoreLoadAsksForItsChunksOnly: a load's fetches ask for about
// its snapshot's bytes, not for fetchBytes (64 MiB): at a chunk's offset
// the partition's log holds every later snapshot of the group, which a
// generation's restores each read.
func TestTopicStoreLoadAsksForItsChunksOnly(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"ckpt"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	st := &TopicStore{Brokers: []string{b.Addr()}, Topic: "ckpt", ChunkBytes: 16 << 10}
	defer st.Close()
	snap := bytes.Repeat([]byte("s"), 40<<10)
	for p := range 16 {
		if err := st.Save(ctx, Name("in", p, 1, 1), snap); err != nil {
			t.Fatal(err)
		}
	}
	fresh := &TopicStore{Brokers: []string{b.Addr()}, Topic: "ckpt"}
	defer fresh.Close()
	if _, err := fresh.List(ctx, ""); err != nil { // caught up: what follows is the load's own
		t.Fatal(err)
	}
	var most atomic.Int32
	c := b.Cluster()
	c.ControlKey(int16(kmsg.Fetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		for _, rt := range r.(*kmsg.FetchRequest).Topics {
			for _, rp := range rt.Partitions {
				if rp.PartitionMaxBytes > most.Load() {
					most.Store(rp.PartitionMaxBytes)
				}
			}
		}
		return nil, nil, false
	})
	got, err := fresh.Load(ctx, Name("in", 0, 1, 1))
	if err != nil || !bytes.Equal(got, snap) {
		t.Fatalf("load: %d bytes, %v", len(got), err)
	}
	if m := most.Load(); m > int32(len(snap))+chunkSlack {
		t.Errorf("a fetch asked for %d bytes, for a snapshot of %d", m, len(snap))
	}
}
