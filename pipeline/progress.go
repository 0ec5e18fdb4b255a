package pipeline

import (
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// PartitionStats is what a member's metrics say of one input partition,
// for progress lines and the summary a member logs when it stops.
type PartitionStats struct {
	Partition                    int
	Consumed, Predicted, Learned float64 // records, since the member started
	Mistakes, DeadLetters        float64
	WindowRate                   float64 // windowed mistake ratio (partitions the member serves)
	Support                      float64 // support size (likewise)
	Served                       bool    // the member serves the partition now
}

// Partitions reads the per-partition series, in partition order: the
// counters of every partition the member has served, the gauges of those
// it serves now.
func (m *Metrics) Partitions() []PartitionStats {
	by := map[int]*PartitionStats{}
	get := func(p string) *PartitionStats {
		id, err := strconv.Atoi(p)
		if err != nil {
			return nil
		}
		if by[id] == nil {
			by[id] = &PartitionStats{Partition: id}
		}
		return by[id]
	}
	each := func(c prometheus.Collector, f func(*PartitionStats, *dto.Metric)) {
		ch := make(chan prometheus.Metric, 64)
		go func() { c.Collect(ch); close(ch) }()
		for pm := range ch {
			var d dto.Metric
			if pm.Write(&d) != nil {
				continue
			}
			for _, l := range d.GetLabel() {
				if l.GetName() == "partition" {
					if s := get(l.GetValue()); s != nil {
						f(s, &d)
					}
				}
			}
		}
	}
	each(m.Consumed, func(s *PartitionStats, d *dto.Metric) { s.Consumed = d.GetCounter().GetValue() })
	each(m.Predicted, func(s *PartitionStats, d *dto.Metric) { s.Predicted = d.GetCounter().GetValue() })
	each(m.Learned, func(s *PartitionStats, d *dto.Metric) { s.Learned = d.GetCounter().GetValue() })
	each(m.Mistakes, func(s *PartitionStats, d *dto.Metric) { s.Mistakes = d.GetCounter().GetValue() })
	each(m.DeadLetters, func(s *PartitionStats, d *dto.Metric) { s.DeadLetters += d.GetCounter().GetValue() })
	each(m.WindowRate, func(s *PartitionStats, d *dto.Metric) { s.WindowRate, s.Served = d.GetGauge().GetValue(), true })
	each(m.Support, func(s *PartitionStats, d *dto.Metric) { s.Support = d.GetGauge().GetValue() })
	out := make([]PartitionStats, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b PartitionStats) int { return a.Partition - b.Partition })
	return out
}
