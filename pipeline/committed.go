package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// committed returns the group's committed offset for p (−1 if none) and
// its metadata, retrying transient failures until ctx ends.
//
// Under exactly-once the OffsetFetch requires stable offsets (v7,
// KIP-447). A partition's previous owner may have its offsets in a
// transaction not yet ended (a member paused between its TxnOffsetCommit
// and its EndTxn); read then, the committed offset would be the one
// before that transaction, and if the transaction then commits, the
// records between would be predicted twice. The coordinator answers
// UNSTABLE_OFFSET_COMMIT until the transaction ends, and the restore
// waits. With per-member transactional ids the new owner cannot abort
// the old owner's transaction by initialising its id, so this wait is
// what keeps a takeover exact. Brokers before 2.5 (no v7) answer without
// the guarantee.
func (m *member) committed(ctx context.Context, p Partition) (int64, string, error) {
	first, most := 100*time.Millisecond, 5*time.Second
	if m.cfg.ProcessingGuarantee == ExactlyOnce {
		first, most = 50*time.Millisecond, time.Second
	}
	for backoff := first; ; backoff = min(2*backoff, most) {
		a := m.offsets.get(ctx, m, p)
		if a.err == nil {
			return a.offset, a.meta, nil
		}
		if ctx.Err() != nil {
			return 0, "", ctx.Err()
		}
		if errors.Is(a.err, kafka.UnstableOffsetCommit) {
			m.cfg.Log.Debug().Int("partition", p.ID).Msg("committed offset in a transaction still open; waiting for it to end")
		} else {
			m.cfg.Log.Warn().Err(a.err).Int("partition", p.ID).Msg("fetch committed offset; retrying")
		}
		select {
		case <-ctx.Done():
			return 0, "", ctx.Err()
		case <-time.After(backoff):
		}
	}
}

// committedOffsets coalesces the workers' OffsetFetch requests: the
// partitions asked for while a request is in flight go together in the
// next, as Kafka's consumer asks for all its partitions' offsets at once.
// At a generation's start every partition restores at the same moment,
// and the coordinator answers a group's requests one at a time: at 1,024
// partitions a request each took 3.4 s at the median and 8.3 s at worst
// to be answered, most of the time the partitions took to be served
// again after a rebalance.
type committedOffsets struct {
	mu      sync.Mutex
	waiting map[Partition][]chan committedAnswer
	sending bool
}

// offsetFetchTimeout bounds a shared OffsetFetch, which no worker's
// context ends.
const offsetFetchTimeout = 15 * time.Second

// committedAnswer is a partition's committed offset (−1: none) and
// metadata, or why there is none.
type committedAnswer struct {
	offset int64
	meta   string
	err    error
}

// get returns p's answer from m's next request, or ctx's error.
func (c *committedOffsets) get(ctx context.Context, m *member, p Partition) committedAnswer {
	ch := make(chan committedAnswer, 1)
	c.mu.Lock()
	if c.waiting == nil {
		c.waiting = map[Partition][]chan committedAnswer{}
	}
	c.waiting[p] = append(c.waiting[p], ch)
	start := !c.sending
	c.sending = true
	c.mu.Unlock()
	if start {
		// The request is not the asking worker's: the others wait on it
		// too. Each ends within offsetFetchTimeout.
		go c.send(context.WithoutCancel(ctx), m)
	}
	select {
	case a := <-ch:
		return a
	case <-ctx.Done():
		return committedAnswer{err: ctx.Err()}
	}
}

// send sends requests until no partition waits.
func (c *committedOffsets) send(ctx context.Context, m *member) {
	for {
		c.mu.Lock()
		asked := c.waiting
		c.waiting = nil
		if len(asked) == 0 {
			c.sending = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		parts := make([]Partition, 0, len(asked))
		for p := range asked {
			parts = append(parts, p)
		}
		rctx, cancel := context.WithTimeout(ctx, offsetFetchTimeout)
		answers, err := m.fetchCommitted(rctx, parts)
		cancel()
		for p, chs := range asked {
			a, ok := answers[p]
			switch {
			case err != nil:
				a = committedAnswer{err: err}
			case !ok:
				a = committedAnswer{offset: -1}
			}
			for _, ch := range chs {
				ch <- a
			}
		}
	}
}

// fetchCommitted sends one OffsetFetch for parts (requiring stable
// offsets under exactly-once) and returns the answer of each partition
// the coordinator named.
func (m *member) fetchCommitted(ctx context.Context, parts []Partition) (map[Partition]committedAnswer, error) {
	if m.cfg.ProcessingGuarantee == ExactlyOnce {
		return m.fetchStable(ctx, parts)
	}
	topics := map[string][]int{}
	for _, p := range parts {
		topics[p.Topic] = append(topics[p.Topic], p.ID)
	}
	resp, err := m.client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: m.cfg.Group, Topics: topics})
	if err == nil {
		err = resp.Error
	}
	if err != nil {
		return nil, fmt.Errorf("offset fetch: %w", err)
	}
	answers := make(map[Partition]committedAnswer, len(parts))
	for topic, ops := range resp.Topics {
		for _, op := range ops {
			answers[Partition{Topic: topic, ID: op.Partition}] = committedAnswer{offset: op.CommittedOffset, meta: op.Metadata, err: op.Error}
		}
	}
	return answers, nil
}

// fetchStable sends one OffsetFetch for parts requiring stable offsets.
func (m *member) fetchStable(ctx context.Context, parts []Partition) (map[Partition]committedAnswer, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group, req.RequireStable = m.cfg.Group, true
	index := map[string]int{}
	for _, p := range parts {
		i, ok := index[p.Topic]
		if !ok {
			i = len(req.Topics)
			index[p.Topic] = i
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic = p.Topic
			req.Topics = append(req.Topics, rt)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, int32(p.ID))
	}
	resp := kmsg.NewPtrOffsetFetchResponse()
	x := &rawExchange{req: req, resp: resp, maxVersion: 7, probe: true} // v8 asks for many groups
	if err := roundTrip(ctx, m.client, &groupExchange{rawExchange: x, group: m.cfg.Group}, x); err != nil {
		return nil, fmt.Errorf("offset fetch: %w", err)
	}
	if err := kafkaError(resp.ErrorCode); err != nil {
		return nil, err
	}
	answers := make(map[Partition]committedAnswer, len(parts))
	for _, t := range resp.Topics {
		for _, r := range t.Partitions {
			a := committedAnswer{offset: r.Offset, err: kafkaError(r.ErrorCode)}
			if r.Metadata != nil {
				a.meta = *r.Metadata
			}
			answers[Partition{Topic: t.Topic, ID: int(r.Partition)}] = a
		}
	}
	return answers, nil
}

// groupExchange is a rawExchange sent to the group's coordinator.
type groupExchange struct {
	*rawExchange
	group string
}

func (g *groupExchange) Group() string { return g.group }
