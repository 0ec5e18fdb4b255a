package pipeline_test

import (
	"context"
	"os"
	"testing"

	"github.com/streamlearner/streamlearner/internal/dev/benchrun"
	"github.com/streamlearner/streamlearner/learners"
)

// BenchmarkEndToEnd measures records/s through the embedded broker: a9a
// (32,561 records) in a 4-partition topic, one member, from assignment to
// the last prediction acknowledged. "learn" runs rbp with B=100 and
// rbf γ=0.01 (commits every 10,000 records, no snapshots); "passthrough"
// the same consume/decode/produce path without a learner, so the cost of
// learning is the difference; "checkpoint1000" learns and saves a snapshot
// to a directory and commits every 1,000 records of each partition.
// `streamlearner bench` runs the same harness at a million records.
func BenchmarkEndToEnd(b *testing.B) {
	msgs, err := benchrun.LoadA9A(context.Background(), "../testdata/a9a.gz")
	if err != nil {
		b.Fatal(err)
	}
	k, _ := learners.ParseKernel("rbf:gamma=0.01")
	for _, mode := range []string{"learn", "passthrough", "checkpoint1000"} {
		b.Run(mode, func(b *testing.B) {
			var recs, secs, cpu float64
			for b.Loop() {
				cfg := benchrun.Config{Input: msgs, Learner: "rbp:budget=100", Kernel: k, PassThrough: mode == "passthrough", CheckpointEvery: 10000}
				if mode == "checkpoint1000" {
					dir, _ := os.MkdirTemp("", "ckpt")
					defer os.RemoveAll(dir)
					cfg.CheckpointEvery, cfg.CheckpointDir = 1000, dir
				}
				res, err := benchrun.Run(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				recs, secs, cpu = recs+float64(res.Records), secs+res.Elapsed.Seconds(), cpu+res.CPU.Seconds()
			}
			b.ReportMetric(recs/secs, "records/s")
			b.ReportMetric(cpu/recs*1e6, "cpu-µs/record")
		})
	}
}
