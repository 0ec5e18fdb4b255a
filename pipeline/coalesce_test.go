package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamlearner/streamlearner/internal/dev/embedded"
)

// produceAll writes one record to each of n partitions of "out" at once,
// as n workers flushing together, and returns each write's outcome.
func produceAll(t *testing.T, b *embedded.Broker, n int) []error {
	t.Helper()
	tr := &kafka.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	p := &producer{client: &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: tr}, topic: "out", limit: 1 << 20, q: newSendQueue()}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			msg := []kafka.Message{{Key: []byte(fmt.Sprint(i)), Value: []byte(`{"p":1}`)}}
			errs[i] = p.once(context.Background(), i, msg, &buf, nil)
		}()
	}
	wg.Wait()
	return errs
}

// countProduce counts the Produce requests b serves and the partition
// batches in them; slow holds each request a while, as a busy broker
// does, so that the writes behind it meet.
func countProduce(b *embedded.Broker, slow time.Duration, answer func(*kmsg.ProduceRequest) kmsg.Response) (requests, batches func() int) {
	var mu sync.Mutex
	var reqs, parts int
	c := b.Cluster()
	c.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.ProduceRequest)
		mu.Lock()
		reqs++
		for _, t := range req.Topics {
			parts += len(t.Partitions)
		}
		mu.Unlock()
		time.Sleep(slow)
		if answer != nil {
			return answer(req), nil, true
		}
		return nil, nil, false
	})
	get := func(v *int) func() int {
		return func() int { mu.Lock(); defer mu.Unlock(); return *v }
	}
	return get(&reqs), get(&parts)
}

// TestFlushesOfManyPartitionsShareRequests: 64 partitions writing at once
// take a few Produce requests, not one each, and every batch is written
// to its own partition.
func TestFlushesOfManyPartitionsShareRequests(t *testing.T) {
	const n = 64
	b, err := embedded.Start(embedded.Config{Partitions: n, Topics: []string{"out"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	requests, batches := countProduce(b, 50*time.Millisecond, nil)
	for i, err := range produceAll(t, b, n) {
		if err != nil {
			t.Errorf("partition %d: %v", i, err)
		}
	}
	if r := requests(); r > n/4 {
		t.Errorf("%d Produce requests for %d partitions' batches, want at most %d", r, n, n/4)
	}
	if got := batches(); got != n {
		t.Errorf("%d partition batches sent, want %d", got, n)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		recs := readFetched(t, b.Addr(), "out", i, 1, true, 10*time.Second)
		if len(recs) != 1 || string(recs[0].Key) != fmt.Sprint(i) {
			t.Errorf("partition %d holds %d records, want its own 1", i, len(recs))
		}
	}
}

// TestSharedRequestAnswersEachPartitionApart: the broker refuses one
// partition's batch of a shared request; that write alone fails, with the
// broker's error, and the others succeed.
func TestSharedRequestAnswersEachPartitionApart(t *testing.T) {
	const n, refused = 32, 5
	b, err := embedded.Start(embedded.Config{Partitions: n, Topics: []string{"out"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	requests, _ := countProduce(b, 50*time.Millisecond, func(req *kmsg.ProduceRequest) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				if rp.Partition == refused {
					sp.ErrorCode = int16(kafka.InvalidRecord)
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	})
	for i, err := range produceAll(t, b, n) {
		switch {
		case i == refused && !errors.Is(err, kafka.InvalidRecord):
			t.Errorf("partition %d: %v, want %v", i, err, kafka.InvalidRecord)
		case i != refused && err != nil:
			t.Errorf("partition %d: %v", i, err)
		}
	}
	if r := requests(); r > n/4 {
		t.Errorf("%d Produce requests for %d partitions' batches, want at most %d", r, n, n/4)
	}
}

// TestRequestUnderWayOutlivesItsContext: a batch whose flush is given up
// (its context cancelled) while its request is at the broker is not
// cancelled with it: the broker's answer is what the producer reports,
// and the batch is written, as the writer's sequence numbers assume.
func TestRequestUnderWayOutlivesItsContext(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"out"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	requests, _ := countProduce(b, 300*time.Millisecond, nil)
	p, _ := layoutProducer(t, b, 0)
	if _, err := p.partitions(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	wr := &partitionsWriter{}
	var buf []byte
	if err := p.produce(ctx, 0, []kafka.Message{{Key: []byte("k"), Value: []byte(`{"p":1}`)}}, &buf, wr); err != nil {
		t.Fatalf("produce cancelled under way: %v, want the broker's answer", err)
	}
	if r := requests(); r != 1 {
		t.Errorf("%d Produce requests, want 1", r)
	}
	if recs := readFetched(t, b.Addr(), "out", 0, 1, true, 5*time.Second); len(recs) != 1 || len(wr.parts) != 1 {
		t.Errorf("%d records written, %d reported, want 1", len(recs), len(wr.parts))
	}
}
