package pipeline

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	fetchapi "github.com/segmentio/kafka-go/protocol/fetch"
	produceapi "github.com/segmentio/kafka-go/protocol/produce"
)

// slowTransport answers after a while, counting the requests in flight.
type slowTransport struct{ now, peak atomic.Int64 }

func (s *slowTransport) RoundTrip(ctx context.Context, _ net.Addr, _ kafka.Request) (kafka.Response, error) {
	n := s.now.Add(1)
	defer s.now.Add(-1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	select {
	case <-time.After(5 * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return nil, nil
}

// ownFetch is a Fetch request of a type of its own, as package fetch
// sends them.
type ownFetch struct{}

func (ownFetch) ApiKey() protocol.ApiKey { return protocol.Fetch }

// The member's requests wait for a slot beyond the limit (each would be a
// connection of its own), but fetches never do, whatever their type, and
// a waiting request gives up with its context.
func TestLimitedTransportBoundsRequestsInFlight(t *testing.T) {
	slow := &slowTransport{}
	l := &limitedTransport{rt: slow, slots: make(chan struct{}, 4)}
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.RoundTrip(context.Background(), nil, &produceapi.Request{})
		}()
	}
	wg.Wait()
	if p := slow.peak.Load(); p != 4 {
		t.Errorf("%d produce requests in flight at most, want the limit, 4", p)
	}

	slow.peak.Store(0)
	for range 4 { // the slots are all taken
		l.slots <- struct{}{}
	}
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			req := []kafka.Request{&fetchapi.Request{}, ownFetch{}}[i%2]
			if _, err := l.RoundTrip(ctx, nil, req); err != nil {
				t.Errorf("a fetch (%T) waited for a slot: %v", req, err)
			}
		}()
	}
	wg.Wait()
	if p := slow.peak.Load(); p < 4 {
		t.Errorf("fetches waited for a slot: %d in flight at most", p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := l.RoundTrip(ctx, nil, &produceapi.Request{}); err != context.DeadlineExceeded {
		t.Errorf("a request waiting for a slot past its deadline: %v", err)
	}
}
