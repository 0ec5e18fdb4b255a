package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// stableCommitted is committed under exactly-once: an OffsetFetch that
// requires stable offsets (v7, KIP-447). A partition's previous owner may
// have its offsets in a transaction not yet ended (a member paused between
// its TxnOffsetCommit and its EndTxn); read then, the committed offset
// would be the one before that transaction, and if the transaction then
// commits, the records between would be predicted twice. The coordinator
// answers UNSTABLE_OFFSET_COMMIT until the transaction ends, and the
// restore waits. With per-member transactional ids the new owner cannot
// abort the old owner's transaction by initialising its id, so this wait
// is what keeps a takeover exact. Brokers before 2.5 (no v7) answer
// without the guarantee.
func (m *member) stableCommitted(ctx context.Context, p Partition) (int64, string, error) {
	for backoff := 50 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		off, meta, err := m.fetchStable(ctx, p)
		if err == nil {
			return off, meta, nil
		}
		if errors.Is(err, kafka.UnstableOffsetCommit) {
			m.cfg.Log.Debug().Int("partition", p.ID).Msg("committed offset in a transaction still open; waiting for it to end")
		} else {
			m.cfg.Log.Warn().Err(err).Int("partition", p.ID).Msg("fetch committed offset; retrying")
		}
		select {
		case <-ctx.Done():
			return 0, "", ctx.Err()
		case <-time.After(backoff):
		}
	}
}

// fetchStable sends one OffsetFetch for p requiring stable offsets.
func (m *member) fetchStable(ctx context.Context, p Partition) (int64, string, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group, req.RequireStable = m.cfg.Group, true
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = p.Topic, []int32{int32(p.ID)}
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrOffsetFetchResponse()
	x := &rawExchange{req: req, resp: resp, maxVersion: 7, probe: true} // v8 asks for many groups
	if err := roundTrip(ctx, m.client, &groupExchange{rawExchange: x, group: m.cfg.Group}, x); err != nil {
		return 0, "", fmt.Errorf("offset fetch: %w", err)
	}
	if err := kafkaError(resp.ErrorCode); err != nil {
		return 0, "", err
	}
	for _, t := range resp.Topics {
		for _, r := range t.Partitions {
			if t.Topic != p.Topic || r.Partition != int32(p.ID) {
				continue
			}
			if err := kafkaError(r.ErrorCode); err != nil {
				return 0, "", err
			}
			meta := ""
			if r.Metadata != nil {
				meta = *r.Metadata
			}
			return r.Offset, meta, nil
		}
	}
	return -1, "", nil
}

// groupExchange is a rawExchange sent to the group's coordinator.
type groupExchange struct {
	*rawExchange
	group string
}

func (g *groupExchange) Group() string { return g.group }
