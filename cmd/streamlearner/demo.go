package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/embedded"
	"github.com/streamlearner/streamlearner/feed"
	"github.com/streamlearner/streamlearner/kafkaconn"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/pipeline"
)

type demoCmd struct {
	Data    string  `default:"testdata/a9a.gz" type:"existingfile" help:"Records to stream (LIBSVM or JSON lines)."`
	Learner string  `default:"rbp:budget=200" placeholder:"SPEC" help:"Learner spec."`
	Kernel  string  `default:"rbf:sigma2=25" placeholder:"SPEC" help:"Kernel spec."`
	Rate    float64 `default:"5000" help:"Records per second fed to the stream (0: as fast as possible)."`
}

// Run starts the embedded broker, feeds it a stream, serves it as a group
// member with checkpoints, shows live progress, and cleans everything up.
func (c *demoCmd) Run(ctx context.Context, out io.Writer) error {
	kern, err := learners.ParseKernel(c.Kernel)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "streamlearner-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b, err := embedded.Start(embedded.Config{Partitions: 4, Topics: []string{"demo-in", "demo-out", "demo-in.dlq"}})
	if err != nil {
		return err
	}
	defer b.Close()
	fmt.Fprintf(out, "embedded broker on %s; topic demo-in (4 partitions) → demo-out; checkpoints in %s\n", b.Addr(), dir)

	conn := kafkaconn.Config{Brokers: []string{b.Addr()}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	produced := make(chan error, 1)
	var total int64
	go func() {
		n, err := feed.Produce(ctx, feed.ProduceConfig{Conn: conn, Topic: "demo-in", Data: c.Data, Rate: c.Rate})
		total = n
		produced <- err
	}()
	metrics := pipeline.NewMetrics(nil)
	served := make(chan error, 1)
	go func() {
		served <- pipeline.Run(ctx, pipeline.Config{
			Conn: conn, Topic: "demo-in", Group: "demo", OutputTopic: "demo-out", Learner: c.Learner, Kernel: kern,
			Checkpoints:     &checkpoint.Protocol{Store: checkpoint.DirStore{Dir: dir}, Learner: c.Learner, Kernel: kern, Seed: 1, Log: zerolog.Nop()},
			CheckpointEvery: 5000, HeartbeatInterval: 300 * time.Millisecond, Metrics: metrics, Log: zerolog.Nop(),
		})
	}()

	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	producing := true
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-produced:
			if err != nil {
				return err
			}
			producing = false
		case err := <-served:
			return fmt.Errorf("service stopped: %w", err)
		case <-tick.C:
		}
		done := testutil.ToFloat64(metrics.Produced)
		fmt.Fprintf(out, "%5.1fs  %7.0f predictions  %6.0f records/s  %s\n", time.Since(start).Seconds(), done,
			done/time.Since(start).Seconds(), partitionLine(metrics))
		if !producing && done >= float64(total) {
			break
		}
	}
	cancel()
	<-served
	fmt.Fprintf(out, "\n%d records predicted then learned in %.1fs, %s\n", total, time.Since(start).Seconds(), c.Learner)
	fmt.Fprintf(out, "final: %s\nbroker stopped, nothing left running.\n", partitionLine(metrics))
	return nil
}

// partitionLine shows each partition's windowed mistake rate and support.
func partitionLine(m *pipeline.Metrics) string {
	var parts []string
	for p := range 4 {
		l := strconv.Itoa(p)
		if testutil.ToFloat64(m.Predicted.WithLabelValues(l)) == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("p%d: window %.1f%% mistakes, %d SVs", p,
			100*testutil.ToFloat64(m.WindowRate.WithLabelValues(l)), int(testutil.ToFloat64(m.Support.WithLabelValues(l)))))
	}
	sort.Strings(parts)
	return strings.Join(parts, " | ")
}
