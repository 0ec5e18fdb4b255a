package pipeline

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// SeriesVec is a family of per-partition series (a partition label, and
// optionally one more: reason or learner), kept as plain atomics and
// turned into Prometheus metrics only when scraped.
//
// client_golang's CounterVec and GaugeVec hold about 500 bytes a series
// (label pairs, a created timestamp, a map entry) and a partition has
// up to about 50 series, most of them dead-letter reasons at 0: 21 MB of
// heap at 1,024 partitions, which the garbage collector's headroom
// doubles in the member's resident memory. A Series here is 48 bytes and
// its map entry. What /metrics shows is the same: names, help, labels,
// types and values (TestSeriesExposeAsClientGolangDoes).
type SeriesVec struct {
	desc   *prometheus.Desc
	typ    prometheus.ValueType
	labels int // 1 or 2 label values a series
	mu     sync.RWMutex
	// one holds the series of a family labeled by partition alone; two,
	// a partition's series by their second label value, so that a
	// revoked partition's go at once. (A map a partition for the first
	// kind would cost more than its one series.)
	one map[string]*Series
	two map[string]map[string]*Series
	// zeros are the second label values each partition shows at 0
	// until its series exists (ShowZeros): the dead-letter reasons of
	// every assigned partition, 19 series a partition of which most stay
	// 0, were 3.5 MB of heap at 1,024 partitions as series of their own.
	zeros map[string][]string
}

type seriesKey struct{ partition, second string }

// Series is one series of a SeriesVec: a counter or a gauge, as its
// family's type says. Its methods are safe for concurrent use.
type Series struct {
	bits atomic.Uint64 // the value, a float64
	vec  *SeriesVec
	key  seriesKey
}

func newSeriesVec(typ prometheus.ValueType, name, help string, labels ...string) *SeriesVec {
	if len(labels) < 1 || len(labels) > 2 || labels[0] != "partition" {
		panic(fmt.Sprintf("series %s: labels %v: want partition and at most one more", name, labels))
	}
	return &SeriesVec{desc: prometheus.NewDesc(name, help, labels, nil), typ: typ, labels: len(labels), one: map[string]*Series{}, two: map[string]map[string]*Series{}}
}

// newPartitionCounters and newPartitionGauges make a family of counters
// or gauges labeled partition (and a second label, if given).
func newPartitionCounters(name, help string, labels ...string) *SeriesVec {
	return newSeriesVec(prometheus.CounterValue, name, help, labels...)
}

func newPartitionGauges(name, help string, labels ...string) *SeriesVec {
	return newSeriesVec(prometheus.GaugeValue, name, help, labels...)
}

func (v *SeriesVec) key(values []string) seriesKey {
	if len(values) != v.labels {
		panic(fmt.Sprintf("%s: %d label values, want %d", v.desc, len(values), v.labels))
	}
	k := seriesKey{partition: values[0]}
	if v.labels == 2 {
		k.second = values[1]
	}
	return k
}

// WithLabelValues returns the series of these label values (partition
// first), creating it at 0.
func (v *SeriesVec) WithLabelValues(values ...string) *Series {
	k := v.key(values)
	v.mu.RLock()
	s := v.lookup(k)
	v.mu.RUnlock()
	if s != nil {
		return s
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if s = v.lookup(k); s != nil {
		return s
	}
	s = &Series{vec: v, key: k}
	if v.labels == 1 {
		v.one[k.partition] = s
		return s
	}
	p := v.two[k.partition]
	if p == nil {
		p = map[string]*Series{}
		v.two[k.partition] = p
	}
	p[k.second] = s
	return s
}

func (v *SeriesVec) lookup(k seriesKey) *Series {
	if v.labels == 1 {
		return v.one[k.partition]
	}
	return v.two[k.partition][k.second]
}

// DeleteLabelValues deletes the series of these label values and says
// whether there was one.
func (v *SeriesVec) DeleteLabelValues(values ...string) bool {
	k := v.key(values)
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.lookup(k) == nil {
		return false
	}
	if v.labels == 1 {
		delete(v.one, k.partition)
		return true
	}
	delete(v.two[k.partition], k.second)
	if len(v.two[k.partition]) == 0 {
		delete(v.two, k.partition)
	}
	return true
}

// DeletePartition deletes every series of the partition and says how
// many there were.
func (v *SeriesVec) DeletePartition(partition string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.one[partition]; ok {
		delete(v.one, partition)
		return 1
	}
	n := len(v.two[partition])
	delete(v.two, partition)
	delete(v.zeros, partition)
	return n
}

// ShowZeros makes the partition's series of the second label values
// seconds (shared, never changed) show at 0 until they are created, so
// that dashboards and alerts read 0 rather than no data.
func (v *SeriesVec) ShowZeros(partition string, seconds []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.zeros == nil {
		v.zeros = map[string][]string{}
	}
	v.zeros[partition] = seconds
}

// Describe implements prometheus.Collector.
func (v *SeriesVec) Describe(ch chan<- *prometheus.Desc) { ch <- v.desc }

// Collect implements prometheus.Collector. The series are copied out
// first, so that a worker creating one never waits for a scrape.
func (v *SeriesVec) Collect(ch chan<- prometheus.Metric) {
	v.mu.RLock()
	all := make([]*Series, 0, len(v.one))
	for _, s := range v.one {
		all = append(all, s)
	}
	for _, p := range v.two {
		for _, s := range p {
			all = append(all, s)
		}
	}
	var zeros []seriesKey
	for part, seconds := range v.zeros {
		for _, second := range seconds {
			if v.two[part][second] == nil {
				zeros = append(zeros, seriesKey{part, second})
			}
		}
	}
	v.mu.RUnlock()
	for _, s := range all {
		ch <- s.metric()
	}
	for _, k := range zeros {
		ch <- prometheus.MustNewConstMetric(v.desc, v.typ, 0, k.partition, k.second)
	}
}

func (s *Series) metric() prometheus.Metric {
	if s.vec.labels == 1 {
		return prometheus.MustNewConstMetric(s.vec.desc, s.vec.typ, s.Value(), s.key.partition)
	}
	return prometheus.MustNewConstMetric(s.vec.desc, s.vec.typ, s.Value(), s.key.partition, s.key.second)
}

// Describe and Collect make a series a Collector of itself alone, as a
// client_golang child is (testutil.ToFloat64 reads one).
func (s *Series) Describe(ch chan<- *prometheus.Desc) { ch <- s.vec.desc }

// Collect implements prometheus.Collector.
func (s *Series) Collect(ch chan<- prometheus.Metric) { ch <- s.metric() }

// Value returns the series' value.
func (s *Series) Value() float64 { return math.Float64frombits(s.bits.Load()) }

// Set sets a gauge to v.
func (s *Series) Set(v float64) { s.bits.Store(math.Float64bits(v)) }

// Inc adds 1.
func (s *Series) Inc() { s.Add(1) }

// Add adds v; a counter refuses to go down, as client_golang's does.
func (s *Series) Add(v float64) {
	if v < 0 && s.vec.typ == prometheus.CounterValue {
		panic(fmt.Sprintf("%s: counter cannot decrease", s.vec.desc))
	}
	for {
		old := s.bits.Load()
		if s.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}
