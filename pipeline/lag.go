package pipeline

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

// The lag gauge must keep telling the truth when a worker stops fetching
// — a partition stuck retrying a write is exactly when lag matters — so
// besides each fetch's own high-water mark, the member asks the brokers
// for every assigned partition's end every Config.LagInterval and
// subtracts the worker's position.

// track registers p's position (the next offset its worker will use) for
// the lag poller; untrack removes it when the worker ends.
func (m *member) track(p Partition) *atomic.Int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.positions == nil {
		m.positions = map[int]*atomic.Int64{}
	}
	pos := new(atomic.Int64)
	pos.Store(-1)
	m.positions[p.ID] = pos
	return pos
}

func (m *member) untrack(p Partition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.positions, p.ID)
}

// pollLag sets the lag gauges every interval until ctx ends.
func (m *member) pollLag(ctx context.Context) {
	t := time.NewTicker(m.cfg.LagInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// A partition held inside a record says nothing itself: the
		// stuck gauge is brought up to date here.
		m.cfg.Metrics.health.stuckNow()
		m.mu.Lock()
		var reqs []kafka.OffsetRequest
		for id := range m.positions {
			reqs = append(reqs, kafka.LastOffsetOf(id))
		}
		m.mu.Unlock()
		if len(reqs) == 0 {
			continue
		}
		iso := kafka.ReadCommitted
		if m.cfg.ReadUncommitted {
			iso = kafka.ReadUncommitted
		}
		rctx, cancel := context.WithTimeout(ctx, m.cfg.LagInterval)
		resp, err := m.client.ListOffsets(rctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{m.cfg.Topic: reqs}, IsolationLevel: iso})
		cancel()
		if err != nil {
			m.cfg.Log.Debug().Err(err).Msg("list offsets for lag")
			continue
		}
		m.mu.Lock()
		for _, po := range resp.Topics[m.cfg.Topic] {
			pos := m.positions[po.Partition]
			if po.Error != nil || pos == nil || pos.Load() < 0 {
				continue
			}
			m.cfg.Metrics.Lag.WithLabelValues(strconv.Itoa(po.Partition)).Set(float64(max(0, po.LastOffset-pos.Load())))
		}
		m.mu.Unlock()
	}
}
