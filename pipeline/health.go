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
	// it is never stuck, yet serves nobody
	// (streamlearner_degraded_partitions).
	degraded marks
	// halted holds the assigned partitions not served now, with why: a
	// producer that cannot be initialised, a commit fenced while the
	// generation lives on, transactions aborted again and again. Unlike
	// stuck, a halted partition shows at once
	// (streamlearner_unserved_partitions).
	halted marks
}

// marks is a set of partitions, each with why, counted by a gauge.
type marks struct {
	why   map[string]string
	gauge prometheus.Gauge
}

func (m *marks) set(partition, why string) {
	if m.why == nil {
		m.why = map[string]string{}
	}
	m.why[partition] = why
	m.count()
}

func (m *marks) clear(partition string) {
	if _, ok := m.why[partition]; ok {
		delete(m.why, partition)
		m.count()
	}
}

func (m *marks) count() {
	if m.gauge != nil {
		m.gauge.Set(float64(len(m.why)))
	}
}

// degrade marks a partition whose recent records all came to nothing.
func (h *health) degrade(partition, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.degraded.set(partition, why)
}

// served clears the mark: a prediction of the partition was delivered,
// or the member no longer holds it.
func (h *health) served(partition string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.degraded.clear(partition)
}

// halt marks a partition that is not served, with why.
func (h *health) halt(partition, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.halted.set(partition, why)
}

// resume clears halt's mark.
func (h *health) resume(partition string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.halted.clear(partition)
}

// why lists the degraded and unserved partitions and their reasons, for
// /readyz.
func (h *health) why() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for p, why := range h.degraded.why {
		out = append(out, "partition "+p+": "+why)
	}
	for p, why := range h.halted.why {
		out = append(out, "partition "+p+" not served: "+why)
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
