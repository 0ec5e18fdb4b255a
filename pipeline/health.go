package pipeline

import (
	"slices"
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

	// degraded holds the partitions whose last DegradedAfter records all
	// came to nothing, with why: each was dead-lettered, or its prediction
	// was refused by the brokers. Such a partition reads and commits, so
	// it is never stuck, yet serves nobody.
	degraded      map[string]string
	degradedGauge prometheus.Gauge // streamlearner_degraded_partitions
}

// degrade marks a partition whose recent records all came to nothing.
func (h *health) degrade(partition, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.degraded == nil {
		h.degraded = map[string]string{}
	}
	h.degraded[partition] = why
	h.setDegraded()
}

// served clears the mark: a prediction of the partition was delivered,
// or the member no longer holds it.
func (h *health) served(partition string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.degraded[partition]; ok {
		delete(h.degraded, partition)
		h.setDegraded()
	}
}

func (h *health) setDegraded() {
	if h.degradedGauge != nil {
		h.degradedGauge.Set(float64(len(h.degraded)))
	}
}

// why lists the degraded partitions and their reasons, for /readyz.
func (h *health) why() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for p, why := range h.degraded {
		out = append(out, "partition "+p+": "+why)
	}
	slices.Sort(out)
	return out
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
