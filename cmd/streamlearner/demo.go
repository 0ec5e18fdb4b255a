package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/dev/synth"
	"github.com/streamlearner/streamlearner/internal/feed"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/internal/replay"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/prequential"
	"github.com/streamlearner/streamlearner/pipeline"
)

type demoCmd struct {
	N       int     `default:"40000" help:"Records in the drifting stream: a noisy 4×4 checkerboard that turns by 30° three times."`
	Learner string  `default:"projectron++:budget=200" placeholder:"SPEC" help:"Learner the service runs."`
	Compare string  `default:"perceptron,rbp:budget=200" placeholder:"SPECS" help:"Learners the closing drift report runs beside it (comma-separated; empty: none)."`
	Kernel  string  `default:"rbf:sigma2=0.1" placeholder:"SPEC" help:"Kernel spec."`
	Rate    float64 `default:"5000" help:"Records per second fed to the stream (0: as fast as possible)."`
	OutDir  string  `default:"out/demo" placeholder:"DIR" help:"Where the drift report (report.json) and plot (drift.png) go."`
}

// demoPartitions is the input topic's partition count: enough to show the
// group spreading work, few enough to read the progress line.
const demoPartitions = 4

// Run starts the embedded broker, feeds it a drifting stream, serves it as
// a group member with checkpoints while showing live progress, replays the
// topic for a drift report and a plot, and cleans everything up.
func (c *demoCmd) Run(ctx context.Context, out io.Writer) error {
	kern, rcfg, stream, err := c.prepare()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.OutDir, 0o755); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	dir, err := os.MkdirTemp("", "streamlearner-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b, err := embedded.Start(embedded.Config{Partitions: demoPartitions, Topics: []string{"demo-in", "demo-out", "demo-in.dlq"}})
	if err != nil {
		return err
	}
	defer b.Close()
	fmt.Fprintf(out, "embedded broker on %s; topic demo-in (%d partitions) → demo-out\ncheckpoints in %s\n", b.Addr(), demoPartitions, dir)
	fmt.Fprintf(out, "stream: %d records of a rotating checkerboard, shifts at %v\n(spread over the partitions)\n", c.N, stream.Shifts)

	conn := kafkaconn.Config{Brokers: []string{b.Addr()}}
	if err := c.serve(ctx, out, conn, kern, dir, stream); err != nil {
		return err
	}
	// The drift report replays the input topic: the service's learner
	// again (seeded as the service seeds each partition, so it must find
	// the service's mistakes exactly) beside the others.
	fmt.Fprintf(out, "\ndrift report: replaying demo-in with %s\n", strings.Join(rcfg.Learners, ", "))
	rep, err := replay.Run(ctx, replay.Source{Conn: conn, Topic: "demo-in"}, rcfg)
	if err != nil {
		return fmt.Errorf("demo: replay: %w", err)
	}
	if err := rep.WriteTable(out); err != nil {
		return err
	}
	fmt.Fprint(out, driftLegend)
	if err := c.checkService(ctx, out, conn, rep); err != nil {
		return err
	}
	return c.writeReport(out, rep)
}

// prepare reads the flags: the kernel, the drift report's configuration
// (the service's learner first, then the others), and the stream.
func (c *demoCmd) prepare() (learners.Kernel, replay.Config, synth.Stream, error) {
	kern, err := learners.ParseKernel(c.Kernel)
	if err != nil {
		return kern, replay.Config{}, synth.Stream{}, err
	}
	compare := []string{c.Learner}
	for _, s := range strings.Split(c.Compare, ",") {
		if s = strings.TrimSpace(s); s != "" {
			compare = append(compare, s)
		}
	}
	rcfg := replay.Config{Learners: compare, Kernel: kern, Seed: 1, Window: 500, ShiftsFromSegments: true}
	if err := rcfg.Validate(); err != nil {
		return kern, rcfg, synth.Stream{}, err
	}
	stream, err := synth.RotatingCheckerboard(synth.RotatingCheckerboardConfig{
		N: c.N, Cells: 4, CellSize: 1, Noise: 0.05, Seed: 1, Rotation: 90, Shifts: 3})
	return kern, rcfg, stream, err
}

// serve feeds the stream to the broker and runs the service on it, with
// checkpoints in dir, until it has written a prediction for every record.
func (c *demoCmd) serve(ctx context.Context, out io.Writer, conn kafkaconn.Config, kern learners.Kernel, dir string, stream synth.Stream) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	produced := make(chan error, 1)
	go func() {
		g := pointsStream("checkerboard", stream)
		_, err := feed.ProduceExamples(sctx, feed.WriterConfig{Conn: conn, Topic: "demo-in", Rate: c.Rate, Balancer: &kafka.RoundRobin{}}, g.messages())
		produced <- err
	}()
	metrics := pipeline.NewMetrics(nil)
	served := make(chan error, 1)
	go func() {
		cfg := pipeline.Config{Model: model.Config{Learner: c.Learner, Kernel: kern, Seed: 1},
			Conn: conn, Topic: "demo-in", Group: "demo", OutputTopic: "demo-out",
			CheckpointEvery: 5000, HeartbeatInterval: 300 * time.Millisecond, Metrics: metrics, Log: zerolog.Nop(),
		}
		cfg.Checkpoints = &checkpoint.Protocol{Store: checkpoint.DirStore{Dir: dir}, Model: cfg.ModelConfig, Log: zerolog.Nop()}
		served <- pipeline.Run(sctx, cfg)
	}()

	fmt.Fprintln(out, progressHeader)
	start := time.Now()
	if err := c.watch(ctx, out, metrics, start, produced, served); err != nil {
		return err
	}
	cancel()
	if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("service stopped: %w", err)
	}
	fmt.Fprintln(out, progressLine(time.Since(start), metrics))
	fmt.Fprintf(out, "\n%d records predicted then learned in %.1fs by %s\n", c.N, time.Since(start).Seconds(), c.Learner)
	return nil
}

// watch shows the service's progress every second until the stream is
// fed and a prediction is written for every record.
func (c *demoCmd) watch(ctx context.Context, out io.Writer, metrics *pipeline.Metrics, start time.Time, produced, served <-chan error) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	producing := true
	for producing || testutil.ToFloat64(metrics.Produced) < float64(c.N) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-produced:
			if err != nil {
				return fmt.Errorf("demo: feeding the stream: %w", err)
			}
			producing = false
			continue
		case err := <-served:
			return fmt.Errorf("service stopped: %w", err)
		case <-tick.C:
		}
		fmt.Fprintln(out, progressLine(time.Since(start), metrics))
	}
	return nil
}

// checkService counts the service's mistakes from the predictions it
// wrote, by the reporting rule (predicted ≠ label) as the replay counts
// its own, and says whether the replay of its learner made the same.
func (c *demoCmd) checkService(ctx context.Context, out io.Writer, conn kafkaconn.Config, rep replay.Report) error {
	service := map[int]uint64{}
	tctx, tcancel := context.WithTimeout(ctx, time.Minute)
	_, err := feed.Tail(tctx, feed.TailConfig{Conn: conn, Topic: "demo-out", Limit: c.N}, func(p codec.Prediction, _ feed.TailStats) error {
		if prequential.IsMistake(p.Margin, p.Label) {
			service[int(p.Partition)]++
		}
		return nil
	})
	tcancel()
	if err != nil {
		return fmt.Errorf("demo: reading the predictions back: %w", err)
	}
	agree := true
	for _, p := range rep.Partitions {
		if p.Learners[0].Mistakes != service[p.Partition] {
			agree = false
			fmt.Fprintf(out, "partition %d: the replay of %s made %d mistakes, the service's predictions %d\n", p.Partition, c.Learner, p.Learners[0].Mistakes, service[p.Partition])
		}
	}
	if agree {
		fmt.Fprintf(out, "the replay of %s made exactly the service's mistakes on every partition\n", c.Learner)
	}
	return nil
}

// writeReport writes the drift report and its plots in OutDir, and says
// where.
func (c *demoCmd) writeReport(out io.Writer, rep replay.Report) error {
	reportPath, plotPath := filepath.Join(c.OutDir, "report.json"), filepath.Join(c.OutDir, "drift.png")
	var plots strings.Builder
	if err := writeReplay(&plots, rep, reportPath, plotPath, replay.PlotOptions{}); err != nil {
		return err
	}
	// The table is printed above; keep the plots' lines.
	var lines []string
	for _, l := range strings.Split(plots.String(), "\n") {
		if strings.HasPrefix(l, "plot (partition ") {
			lines = append(lines, l)
		}
	}
	fmt.Fprintf(out, "report: %s\n%s\nbroker stopped, nothing left running.\n", reportPath, strings.Join(lines, "\n"))
	return nil
}

// progressHeader and progressLine show the service's progress in 80
// columns: each partition's windowed mistake rate and support size, in
// partition order.
var progressHeader = fmt.Sprintf("%7s %9s %9s  %-*s %s", "time", "predicted", "records/s", 6*demoPartitions, "window mistakes %", " support vectors")

func progressLine(elapsed time.Duration, m *pipeline.Metrics) string {
	done := testutil.ToFloat64(m.Produced)
	var rates, sizes strings.Builder
	for p := range demoPartitions {
		l := strconv.Itoa(p)
		if testutil.ToFloat64(m.Predicted.WithLabelValues(l)) == 0 {
			rates.WriteString("     -")
			sizes.WriteString("     -")
			continue
		}
		fmt.Fprintf(&rates, " %5.1f", 100*testutil.ToFloat64(m.WindowRate.WithLabelValues(l)))
		fmt.Fprintf(&sizes, " %5d", int(testutil.ToFloat64(m.Support.WithLabelValues(l))))
	}
	return fmt.Sprintf("%6.1fs %9.0f %9.0f %s %s", elapsed.Seconds(), done, done/elapsed.Seconds(), rates.String(), sizes.String())
}

// driftLegend reads the drift table's compact columns.
const driftLegend = `
segments: mistakes % between the known shifts. recovery: records after each
shift until the windowed rate is back within 5 points of the rate before it.
detections: per detector, shifts found of those known, then false alarms
("adwin 2/3,1": 2 of the 3 shifts found, 1 alarm where there was no shift).
`
