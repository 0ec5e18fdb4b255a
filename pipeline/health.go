package pipeline

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// health tracks, per partition, since when it has made no progress:
// unable to flush its output or commit its offset, waiting for the
// registry, held inside a record or a snapshot save, or saving no
// snapshot. /readyz turns 503 once any partition has been stuck longer
// than Config.StuckAfter, naming it and why, so a member that consumes
// nothing useful does not look healthy.
type health struct {
	mu    sync.Mutex
	since map[string]time.Time
	after time.Duration
	gauge prometheus.Gauge // streamlearner_stuck_partitions

	// stuckWhy says why each partition of since is held (absent: it
	// cannot flush or commit).
	stuckWhy map[string]string
	// overdue holds the partitions whose snapshots have failed since a
	// time, with the last error: commits without a snapshot may go
	// through meanwhile (and clear since), yet the partition is stuck
	// once its snapshot is overdue by the threshold.
	overdue map[string]failing
	// busy holds each served partition's record in hand, to show a
	// partition held inside one record (a decode, a validation, a
	// learning step that does not end), which flushes and commits
	// nothing that could say so.
	busy map[string]*busy

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
	for p, why := range h.stuckPast(time.Now()) {
		out = append(out, "partition "+p+" stuck: "+why)
	}
	slices.Sort(out)
	return out
}

// failing is since when something has failed, and the last error.
type failing struct {
	since time.Time
	err   string
}

// busy is the record a partition has in hand: its offset, and since when
// (unix nanoseconds; 0 when none); and since when a snapshot is being
// saved. A nil busy tracks nothing.
type busy struct {
	since, offset, saving atomic.Int64
}

func (b *busy) begin(offset int64) {
	if b != nil {
		b.offset.Store(offset)
		b.since.Store(time.Now().UnixNano())
	}
}

func (b *busy) end() {
	if b != nil {
		b.since.Store(0)
	}
}

func (b *busy) save(on bool) {
	switch {
	case b == nil:
	case on:
		b.saving.Store(time.Now().UnixNano())
	default:
		b.saving.Store(0)
	}
}

func (h *health) stuck(partition string, now time.Time) {
	h.stuckFor(partition, "", now)
}

// stuckFor marks partition held since now (unless it already was), for
// why ("" is: it cannot flush or commit).
func (h *health) stuckFor(partition, why string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.since == nil {
		h.since, h.stuckWhy = map[string]time.Time{}, map[string]string{}
	}
	if _, ok := h.since[partition]; !ok {
		h.since[partition] = now
	}
	if why != "" {
		h.stuckWhy[partition] = why
	}
	h.update(now)
}

// ok clears the stuck mark of a partition that made progress. Every
// partition calls it at each checkpoint, so it recounts only when there
// was a mark to clear: a recount walks every partition the member serves,
// which at 1,024 partitions made each checkpoint cost O(partitions). The
// gauge still rises for others on pollLag's tick.
func (h *health) ok(partition string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, marked := h.since[partition]
	_, why := h.stuckWhy[partition]
	if !marked && !why {
		return
	}
	delete(h.since, partition)
	delete(h.stuckWhy, partition)
	h.update(time.Now())
}

// snapshotFailed notes a snapshot of partition that could not be saved.
func (h *health) snapshotFailed(partition string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.overdue == nil {
		h.overdue = map[string]failing{}
	}
	f, ok := h.overdue[partition]
	if !ok {
		f.since = time.Now()
	}
	f.err = err.Error()
	h.overdue[partition] = f
	h.update(time.Now())
}

// snapshotSaved clears snapshotFailed's mark.
func (h *health) snapshotSaved(partition string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.overdue[partition]; ok {
		delete(h.overdue, partition)
		h.update(time.Now())
	}
}

// track returns the record tracker of a partition the member now serves.
func (h *health) track(partition string) *busy {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.busy == nil {
		h.busy = map[string]*busy{}
	}
	b := &busy{}
	h.busy[partition] = b
	return b
}

// forget drops the stuck marks of a partition the member no longer
// serves.
func (h *health) forget(partition string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.busy, partition)
	delete(h.overdue, partition)
	h.update(time.Now())
}

// stuckPast lists the partitions stuck past the threshold as of now, with
// why; with h.mu held.
func (h *health) stuckPast(now time.Time) map[string]string {
	out := map[string]string{}
	for p, t := range h.since {
		if d := now.Sub(t); d >= h.after {
			why := h.stuckWhy[p]
			if why == "" {
				why = "cannot flush its output or commit"
			}
			out[p] = fmt.Sprintf("%s (for %v)", why, d.Round(time.Second))
		}
	}
	for p, f := range h.overdue {
		if d := now.Sub(f.since); d >= h.after {
			out[p] = fmt.Sprintf("no snapshot saved for %v (last error: %s)", d.Round(time.Second), f.err)
		}
	}
	for p, b := range h.busy {
		if at := b.since.Load(); at != 0 {
			if d := now.Sub(time.Unix(0, at)); d >= h.after {
				out[p] = fmt.Sprintf("no progress on the record at offset %d for %v", b.offset.Load(), d.Round(time.Second))
			}
		}
		if at := b.saving.Load(); at != 0 {
			if d := now.Sub(time.Unix(0, at)); d >= h.after {
				out[p] = fmt.Sprintf("a snapshot save under way for %v", d.Round(time.Second))
			}
		}
	}
	return out
}

// update sets the gauge to the partitions stuck past the threshold; with
// h.mu held.
func (h *health) update(now time.Time) int {
	n := len(h.stuckPast(now))
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
