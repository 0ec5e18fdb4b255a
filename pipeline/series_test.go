package pipeline

import (
	"bytes"
	"math"
	"runtime"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
)

// TestSeriesExposeAsClientGolangDoes: a SeriesVec scrapes as the same text
// as client_golang's CounterVec and GaugeVec holding the same values.
func TestSeriesExposeAsClientGolangDoes(t *testing.T) {
	ours, theirs := prometheus.NewRegistry(), prometheus.NewRegistry()
	c := newPartitionCounters("x_total", "Counted.", "partition", "reason")
	g := newPartitionGauges("y", "Gauged.", "partition")
	cv := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "Counted."}, []string{"partition", "reason"})
	gv := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "y", Help: "Gauged."}, []string{"partition"})
	ours.MustRegister(c, g)
	theirs.MustRegister(cv, gv)
	for p := range 3 {
		l := strconv.Itoa(p)
		for i, r := range []string{"a", "b"} {
			c.WithLabelValues(l, r).Add(float64(p*10 + i))
			cv.WithLabelValues(l, r).Add(float64(p*10 + i))
		}
		c.WithLabelValues(l, "a").Inc()
		cv.WithLabelValues(l, "a").Inc()
		g.WithLabelValues(l).Set(0.25 * float64(p))
		gv.WithLabelValues(l).Set(0.25 * float64(p))
	}
	g.DeleteLabelValues("1")
	gv.DeleteLabelValues("1")
	c.DeletePartition("2")
	cv.DeletePartialMatch(prometheus.Labels{"partition": "2"})
	if a, b := scrape(t, ours), scrape(t, theirs); a != b {
		t.Fatalf("ours:\n%s\nclient_golang's:\n%s", a, b)
	}
	if v := testutil.ToFloat64(c.WithLabelValues("1", "a")); v != 11 {
		t.Fatalf("partition 1, a: %v, want 11", v)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a counter went down")
		}
	}()
	c.WithLabelValues("0", "a").Add(-1)
}

func scrape(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestPartitionSeriesCostLittle: the series every assigned partition
// starts with at 0 (its records, model and checkpoint series, and its
// dead letters by reason) cost under 300 bytes each to make, counting the
// maps' growth (156 measured); client_golang children cost 632 each so
// measured, 528 of it kept (21 MB of heap at 1,024 partitions). Bytes allocated, not held: other tests'
// goroutines can free memory meanwhile, never unallocate it; the least of
// three tries leaves out what they allocate.
func TestPartitionSeriesCostLittle(t *testing.T) {
	labels := make([]string, 2048)
	for p := range labels {
		labels[p] = strconv.Itoa(p)
	}
	best := math.Inf(1)
	for range 3 {
		best = min(best, seriesBytes(labels))
	}
	t.Logf("%.0f bytes a series", best)
	if best > 300 {
		t.Fatalf("%.0f bytes a series, want ≤ 300", best)
	}
}

// seriesBytes is what making the series of a partition's start, for
// each of labels, allocated a series.
func seriesBytes(labels []string) float64 {
	m := NewMetrics(prometheus.NewRegistry())
	reasons := Reasons()
	single := []*SeriesVec{m.Consumed, m.Predicted, m.Learned, m.Mistakes, m.Support, m.WindowRate, m.Skipped,
		m.Lag, m.OffsetResets, m.RegistryErrors, m.CheckpointBytes, m.CheckpointTime, m.ChampionSwitches,
		m.SearchReopens, m.PendingRecords, m.PendingExpired, m.PendingEvicted}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, l := range labels {
		m.assigned(l, reasons)
		for _, v := range single {
			v.WithLabelValues(l)
		}
		for _, r := range labelReasons {
			m.OrphanLabels.WithLabelValues(l, string(r))
		}
	}
	runtime.ReadMemStats(&after)
	n := len(labels) * (len(reasons) + len(single) + len(labelReasons))
	return float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
}
