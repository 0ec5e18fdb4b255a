package pipeline

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// health tracks, per partition, since when it has been unable to flush
// its output or commit its offset: /readyz turns 503 once any partition
// has been stuck longer than Config.StuckAfter, so a member that consumes
// nothing useful does not look healthy.
type health struct {
	mu    sync.Mutex
	since map[string]time.Time
	after time.Duration
	gauge prometheus.Gauge // streamlearner_stuck_partitions
}

func (h *health) stuck(partition string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.since == nil {
		h.since = map[string]time.Time{}
	}
	if _, ok := h.since[partition]; !ok {
		h.since[partition] = now
	}
	h.update(now)
}

func (h *health) ok(partition string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.since, partition)
	h.update(time.Now())
}

// update sets the gauge to the partitions stuck past the threshold; with
// h.mu held.
func (h *health) update(now time.Time) int {
	n := 0
	for _, t := range h.since {
		if now.Sub(t) >= h.after {
			n++
		}
	}
	if h.gauge != nil {
		h.gauge.Set(float64(n))
	}
	return n
}

// stuckNow counts the partitions stuck past the threshold as of now.
func (h *health) stuckNow() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.update(time.Now())
}
