package pipeline

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Rounds counted by workers reach the histogram at a flush, each in the
// bucket of the least upper bound at or above it, as Prometheus counts.
func TestRoundHistogramAddsWorkersCounts(t *testing.T) {
	h := newRoundHistogram(prometheus.NewDesc("round", "", nil, nil), []float64{1, 2, 4})
	reg := prometheus.NewRegistry()
	reg.MustRegister(h)
	var a, b roundCounts
	for _, v := range []float64{1, 1.5} {
		a.observe(h, v)
	}
	for _, v := range []float64{3, 10} {
		b.observe(h, v)
	}
	h.add(&a)
	read := func() (uint64, float64, []uint64) {
		mfs, err := reg.Gather()
		if err != nil || len(mfs) != 1 {
			t.Fatalf("gather: %v, %d families", err, len(mfs))
		}
		hm := mfs[0].GetMetric()[0].GetHistogram()
		var cum []uint64
		for _, bk := range hm.GetBucket() {
			cum = append(cum, bk.GetCumulativeCount())
		}
		return hm.GetSampleCount(), hm.GetSampleSum(), cum
	}
	if n, sum, cum := read(); n != 2 || sum != 2.5 || cum[0] != 1 || cum[1] != 2 || cum[2] != 2 {
		t.Fatalf("after one worker's flush: count %d, sum %v, buckets %v; want 2, 2.5, [1 2 2]", n, sum, cum)
	}
	h.add(&b)
	h.add(&a) // emptied by the first add: nothing twice
	if n, sum, cum := read(); n != 4 || sum != 15.5 || cum[0] != 1 || cum[1] != 2 || cum[2] != 3 {
		t.Fatalf("after both: count %d, sum %v, buckets %v; want 4, 15.5, [1 2 3] (10 above every bound)", n, sum, cum)
	}
}
