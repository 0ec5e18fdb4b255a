package pipeline_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/dataset"
	"github.com/streamlearner/streamlearner/embedded"
	"github.com/streamlearner/streamlearner/kafkaconn"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/pipeline"
)

// BenchmarkEndToEnd measures records/s through the embedded broker: a9a
// (32,561 records) in a 4-partition topic, one member, from assignment to
// the last prediction acknowledged. "learn" runs rbp with B=100 and
// rbf γ=0.01 (commits every 10,000 records, no snapshots); "passthrough"
// the same consume/decode/produce path without a learner, so the cost of
// learning is the difference; "checkpoint1000" learns and saves a snapshot
// to a directory and commits every 1,000 records of each partition.
func BenchmarkEndToEnd(b *testing.B) {
	set, err := dataset.Load(context.Background(), "../testdata/a9a.gz", dataset.Options{})
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]kafka.Message, set.Len())
	for i := range msgs {
		msgs[i] = kafka.Message{Value: codec.AppendJSON(nil, codec.Example{X: set.X[i], Label: strconv.Itoa(set.Y[i])})}
	}
	k, _ := learners.ParseKernel("rbf:gamma=0.01")
	for _, mode := range []string{"learn", "passthrough", "checkpoint1000"} {
		b.Run(mode, func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				br, err := embedded.Start(embedded.Config{Partitions: 4, Topics: []string{"in", "out", "in.dlq"}})
				if err != nil {
					b.Fatal(err)
				}
				w := &kafka.Writer{Addr: kafka.TCP(br.Addr()), Topic: "in", Balancer: &kafka.RoundRobin{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: 1000}
				for i := 0; i < len(msgs); i += 1000 {
					if err := w.WriteMessages(context.Background(), msgs[i:min(i+1000, len(msgs))]...); err != nil {
						b.Fatal(err)
					}
				}
				w.Close()
				metrics := pipeline.NewMetrics(nil)
				started := make(chan time.Time, 4)
				cfg := pipeline.Config{
					Conn: kafkaconn.Config{Brokers: []string{br.Addr()}}, Topic: "in", Group: "bench", OutputTopic: "out",
					Learner: "rbp:budget=100", Kernel: k, PassThrough: mode == "passthrough", Metrics: metrics,
					HeartbeatInterval: 500 * time.Millisecond, Log: zerolog.Nop(),
					OnAssign: func(int32, []int) { started <- time.Now() },
				}
				if mode == "checkpoint1000" {
					dir, _ := os.MkdirTemp("", "ckpt")
					defer os.RemoveAll(dir)
					cfg.CheckpointEvery = 1000
					cfg.Checkpoints = &checkpoint.Protocol{Store: checkpoint.DirStore{Dir: dir}, Learner: cfg.Learner, Kernel: k, Seed: 1, Log: zerolog.Nop()}
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { pipeline.Run(ctx, cfg); close(done) }()
				t0 := <-started
				for testutil.ToFloat64(metrics.Produced) < float64(len(msgs)) {
					time.Sleep(2 * time.Millisecond)
				}
				total += time.Since(t0)
				cancel()
				<-done
				br.Close()
			}
			b.ReportMetric(float64(b.N*len(msgs))/total.Seconds(), "records/s")
		})
	}
}
