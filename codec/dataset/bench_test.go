package dataset

import (
	"context"
	"testing"
)

// BenchmarkLoadA9A reads testdata/a9a.gz (gunzip, split lines, parse
// LIBSVM, map labels): the parsing part of a one-pass eval over a9a. It
// reports the time per load and records/s.
func BenchmarkLoadA9A(b *testing.B) {
	n := 0
	for b.Loop() {
		s, err := Load(context.Background(), "../../testdata/a9a.gz", Options{})
		if err != nil {
			b.Fatal(err)
		}
		n += s.Len()
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
}
