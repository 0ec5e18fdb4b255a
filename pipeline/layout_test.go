package pipeline

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamlearner/streamlearner/internal/dev/embedded"
)

// countingTransport counts the requests it passes on, by API.
type countingTransport struct {
	rt kafka.RoundTripper
	mu sync.Mutex
	n  map[protocol.ApiKey]int
}

func (c *countingTransport) RoundTrip(ctx context.Context, addr net.Addr, req kafka.Request) (kafka.Response, error) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[protocol.ApiKey]int{}
	}
	c.n[req.ApiKey()]++
	c.mu.Unlock()
	return c.rt.RoundTrip(ctx, addr, req)
}

func (c *countingTransport) count(k protocol.ApiKey) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

func (c *countingTransport) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.n)
}

// partitionsWriter is a writer without a producer id that records the
// output partition of each batch written.
type partitionsWriter struct{ parts []int }

func (w *partitionsWriter) prepare(context.Context, string, int) (batchID, string, error) {
	return noProducer, "", nil
}
func (w *partitionsWriter) wrote(_ string, p, _ int)                    { w.parts = append(w.parts, p) }
func (w *partitionsWriter) release(string, int)                         {}
func (w *partitionsWriter) resend(context.Context, error) (bool, error) { return false, nil }

// layoutProducer is a producer of topic "out" on b whose transport
// refreshes its metadata every ttl, and that counts its requests.
func layoutProducer(t *testing.T, b *embedded.Broker, ttl time.Duration) (*producer, *countingTransport) {
	t.Helper()
	tr := &kafka.Transport{MetadataTTL: ttl}
	t.Cleanup(tr.CloseIdleConnections)
	counted := &countingTransport{rt: tr}
	return &producer{client: &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: counted}, topic: "out", limit: 1 << 20, q: newSendQueue()}, counted
}

// produceOne writes one prediction of input partition src through p.
func produceOne(t *testing.T, p *producer, src int, wr writer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var buf []byte
	if err := p.produce(ctx, src, []kafka.Message{{Key: []byte("k"), Value: []byte(`{"p":1}`)}}, &buf, wr); err != nil {
		t.Fatal(err)
	}
}

// TestProducerReadsPartitionsOncePerAge: batch after batch, the producer
// goes by the topic's partitions as it read them, instead of asking the
// transport for its metadata each time (about a microsecond and 5 allocations
// a batch, and a turn of the member's requests in flight).
func TestProducerReadsPartitionsOncePerAge(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 8, Topics: []string{"out"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	p, counted := layoutProducer(t, b, 0)
	wr := &partitionsWriter{}
	const batches = 50
	for i := range batches {
		produceOne(t, p, i, wr)
	}
	if n := counted.count(protocol.Metadata); n != 1 {
		t.Errorf("%d metadata requests for %d batches, want 1", n, batches)
	}
	for i, part := range wr.parts {
		if part != i%8 {
			t.Fatalf("batch of input partition %d written to %d, want %d", i, part, i%8)
		}
	}
}

// TestProducerFollowsGrownTopic: an output topic that gains partitions
// takes input partition p's predictions to p mod the new count once the
// producer's layout is layoutMaxAge old; until then they stay where they
// went.
func TestProducerFollowsGrownTopic(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 2, Topics: []string{"out"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	p, _ := layoutProducer(t, b, 20*time.Millisecond)
	wr := &partitionsWriter{}
	produceOne(t, p, 3, wr)
	admin := &kafka.Client{Addr: kafka.TCP(b.Addr())}
	res, err := admin.CreatePartitions(context.Background(), &kafka.CreatePartitionsRequest{
		Topics: []kafka.TopicPartitionsConfig{{Name: "out", Count: 4}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Errors["out"]; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the transport to see 4 partitions", 10*time.Second, func() bool {
		l, err := p.readLayout(context.Background())
		return err == nil && len(l.leaders) == 4
	})
	produceOne(t, p, 3, wr) // the layout read at the first batch
	l := p.layout.Load()
	p.layout.Store(&topicLayout{leaders: l.leaders, read: l.read.Add(-layoutMaxAge)})
	produceOne(t, p, 3, wr)
	if want := []int{1, 1, 3}; !slices.Equal(wr.parts, want) {
		t.Errorf("input partition 3 written to output partitions %v, want %v", wr.parts, want)
	}
}

// TestProducerFollowsMovedLeader: a batch refused as sent to a
// partition's old leader drops the producer's layout, and the next
// attempt goes by the leader the transport has learnt since, without
// waiting for the layout to age.
func TestProducerFollowsMovedLeader(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"out"}, Brokers: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	p, _ := layoutProducer(t, b, 20*time.Millisecond)
	wr := &partitionsWriter{}
	produceOne(t, p, 0, wr)
	c := b.Cluster()
	from := c.LeaderFor("out", 0)
	to := 1 - from
	if err := c.MoveTopicPartition("out", 0, to); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the transport to see the new leader", 10*time.Second, func() bool {
		l, err := p.readLayout(context.Background())
		return err == nil && l.leaders[0] == to
	})
	// As the old leader answers a client that has not seen the move.
	c.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		req := r.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		st := kmsg.NewProduceResponseTopic()
		st.Topic = "out"
		sp := kmsg.NewProduceResponseTopicPartition()
		sp.ErrorCode = int16(kafka.NotLeaderForPartition)
		st.Partitions = append(st.Partitions, sp)
		resp.Topics = append(resp.Topics, st)
		return resp, nil, true
	})
	produceOne(t, p, 0, wr)
	if got := p.layout.Load().leaders[0]; got != to {
		t.Errorf("after the leader moved from %d to %d the producer goes by %d", from, to, got)
	}
}
