package checkpoint

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/dataset"
	"github.com/streamlearner/streamlearner/embedded"
	"github.com/streamlearner/streamlearner/kafkaconn"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/pipeline"
)

// BenchmarkSnapshot reports the size of a full-budget model's snapshot
// and the time to save it to a directory store (encode, write, fsync,
// rename) and to load it back (read, verify, decode the learner), for
// B = 100 and 1000 on a9a (sparse, 123 features) and MNIST (dense, 784
// features; read from ../shared/datasets when present).
func BenchmarkSnapshot(b *testing.B) {
	sets := map[string]string{"a9a": "../testdata/a9a.gz", "mnist": "../../shared/datasets/mnist/mnist.t.libsvm.gz"}
	for _, name := range []string{"a9a", "mnist"} {
		opts := dataset.Options{}
		if name == "mnist" {
			pos, _ := codec.ParseLabelList("0,1,2,3,4")
			opts.Labels = codec.LabelMap{Positive: pos}
		}
		set, err := dataset.Load(context.Background(), sets[name], opts)
		if err != nil {
			b.Logf("%s: %v (skipped)", name, err)
			continue
		}
		k, _ := learners.ParseKernel("rbf:gamma=0.01")
		if name == "mnist" {
			k, _ = learners.ParseKernel("rbf:gamma=1e-7")
		}
		for _, budget := range []int{100, 1000} {
			l, _ := learners.New(fmt.Sprintf("rbp:budget=%d", budget), k, 1)
			for i := range set.Len() {
				l.Round(set.X[i], set.Y[i])
			}
			model, _ := l.MarshalBinary()
			snap := &Snapshot{Topic: "in", Partition: 0, Generation: 1, Learner: l.Spec(), Kernel: k.String(), Model: model, Created: time.Now()}
			st := DirStore{Dir: b.TempDir()}
			ctx := context.Background()
			b.Run(fmt.Sprintf("%s/B=%d/save", name, budget), func(b *testing.B) {
				for b.Loop() {
					snap.Seq++
					if err := st.Save(ctx, snap.Name(), snap.Encode()); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(snap.Encode())), "bytes")
				b.ReportMetric(float64(l.Size()), "support")
			})
			b.Run(fmt.Sprintf("%s/B=%d/load", name, budget), func(b *testing.B) {
				for b.Loop() {
					raw, err := st.Load(ctx, snap.Name())
					if err != nil {
						b.Fatal(err)
					}
					s, err := Decode(raw)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := learners.Unmarshal(s.Model); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkCheckpointCost runs the service end to end (a9a in 4
// partitions, one member, rbp:budget=100) without checkpoints and with a
// snapshot and commit every 1,000 records of each partition, and reports
// records/s of each.
func BenchmarkCheckpointCost(b *testing.B) {
	set, err := dataset.Load(context.Background(), "../testdata/a9a.gz", dataset.Options{})
	if err != nil {
		b.Fatal(err)
	}
	msgs := make([]kafka.Message, set.Len())
	for i := range msgs {
		msgs[i] = kafka.Message{Value: codec.AppendJSON(nil, codec.Example{X: set.X[i], Label: strconv.Itoa(set.Y[i])})}
	}
	k, _ := learners.ParseKernel("rbf:gamma=0.01")
	for _, every := range []int{0, 1000} {
		b.Run(fmt.Sprintf("every=%d", every), func(b *testing.B) {
			var total time.Duration
			for b.Loop() {
				br, err := embedded.Start(embedded.Config{Partitions: 4, Topics: []string{"in", "out", "in.dlq"}})
				if err != nil {
					b.Fatal(err)
				}
				w := &kafka.Writer{Addr: kafka.TCP(br.Addr()), Topic: "in", Balancer: &kafka.RoundRobin{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: 1000}
				for i := 0; i < len(msgs); i += 1000 {
					w.WriteMessages(context.Background(), msgs[i:min(i+1000, len(msgs))]...)
				}
				w.Close()
				metrics := pipeline.NewMetrics(nil)
				started := make(chan time.Time, 4)
				cfg := pipeline.Config{
					Conn: kafkaconn.Config{Brokers: []string{br.Addr()}}, Topic: "in", Group: "bench", OutputTopic: "out",
					Learner: "rbp:budget=100", Kernel: k, Metrics: metrics, HeartbeatInterval: 500 * time.Millisecond, Log: zerolog.Nop(),
					OnAssign: func(int32, []int) { started <- time.Now() },
				}
				if every > 0 {
					dir, _ := os.MkdirTemp("", "ckpt")
					defer os.RemoveAll(dir)
					cfg.CheckpointEvery = every
					cfg.Checkpoints = &Protocol{Store: DirStore{Dir: dir}, Learner: cfg.Learner, Kernel: k, Seed: 1, Log: zerolog.Nop()}
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
