// Package benchrun measures the service end to end: it loads records into
// a topic of a broker (the embedded one, in process, unless an address is
// given), runs one consumer-group member over them with pipeline.Run, and
// reports records/s from the member's assignment to the last acknowledged
// prediction, with the CPU time and resident memory of this process over
// that window. It is shared by the end-to-end Go benchmark and by
// `streamlearner bench`, so both measure the same thing. Run does it all in
// one process; Load and Serve split it, so that the member can be a
// process of its own (as `streamlearner bench` runs it). Rebalance measures
// latencies and outages while a member joins and one leaves.
package benchrun

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"
	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/internal/offline"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/pipeline"
)

// Config says what to run.
type Config struct {
	// Broker is the address of a running broker; empty starts an embedded
	// one in this process for the run (its work then counts in CPU and RSS).
	Broker string
	// Topic names the input topic (output Topic+".out"); it must be new on
	// the broker. Default "bench".
	Topic      string
	Partitions int // of the input topic; default 4
	// Records is how many records to load: Input over and over. Default
	// len(Input).
	Records int
	Input   []kafka.Message `json:"-"`
	// Learner, Kernel and Seed configure the member; PassThrough runs the
	// same consume/decode/produce path without learning.
	Learner     string
	Kernel      learners.Kernel
	PassThrough bool
	// CheckpointEvery > 0 saves a snapshot to CheckpointDir and commits
	// every that many records of each partition; without a directory it
	// only sets the commit cadence.
	CheckpointEvery int
	CheckpointDir   string
	// ProcessingGuarantee is the member's (pipeline.Config); exactly-once
	// needs CheckpointDir. Default at-least-once.
	ProcessingGuarantee string
	// Progress, if set, is called about once a second while loading
	// (serving false) and serving, with the records done and the total.
	Progress func(serving bool, done, total int64) `json:"-"`
	// SampleRSS reads VmRSS every second while serving.
	SampleRSS bool
	// FetchMaxBytes, FetchPartitionMaxBytes and FlushMaxBytes are the
	// member's budgets (pipeline.Config); 0 takes the pipeline's defaults.
	FetchMaxBytes, FetchPartitionMaxBytes, FlushMaxBytes int
	// Compression and DisableIdempotence are the member's
	// (pipeline.Config); "" takes the pipeline's default codec.
	Compression        string
	DisableIdempotence bool
	// SnapshotEveryCommit, SnapshotMaxRate and SnapshotInterval are the
	// member's (pipeline.Config): which exactly-once commits carry a
	// snapshot. 0 takes the pipeline's defaults (256 KiB/s, 30 s).
	SnapshotEveryCommit bool
	SnapshotMaxRate     int
	SnapshotInterval    time.Duration
	// DelayedLabels, PendingMaxRecords and PendingMaxBytes are the
	// member's (pipeline.Config): keyed records without a label wait in
	// the partition's pending store for theirs (Input from
	// LoadDelayed). 0 takes the pipeline's bounds (100,000 records,
	// 64 MiB).
	DelayedLabels     bool
	PendingMaxRecords int
	PendingMaxBytes   int64
	// Predictions is how many predictions make the run: default Records.
	// Label messages (delayed labels) are not predicted.
	Predictions int
	// Measured, if set, is called with the result once the run is
	// measured, while the member still serves: a bench-serve process
	// that is to crash prints it there and waits for its kill, so that
	// the member is not stopped gracefully (which would save a last
	// snapshot and leave a restore nothing to replay).
	Measured func(Result) `json:"-"`
	// Measuring, if set, is called when the measured part of the run
	// starts (the member's first assignment), so that a profile covers
	// the service's work and not the loading of the records before it.
	Measuring func() `json:"-"`
}

// Result is what one run measured.
type Result struct {
	Records int
	Elapsed time.Duration // assignment to the last acknowledged prediction
	CPU     time.Duration // user+system time of this process over Elapsed
	// RSS holds one VmRSS sample (bytes) a second while serving, when
	// sampled; PeakRSS is VmHWM at the end: the process's high-water mark
	// since the member was assigned its partitions (where Linux lets it be
	// reset; else since the process started).
	RSS     []RSSSample
	PeakRSS int64
	// OutputBytes is what the brokers store of the output topic after
	// the run (0 where not measured).
	OutputBytes int64
	// CheckpointWritten is the snapshot bytes the member saved over the
	// run, all partitions (pipeline.Metrics.CheckpointWritten), and
	// Snapshots how many saves succeeded; SnapshotBytes is the largest
	// partition's last snapshot at the end. Support is the smallest
	// support set of the partitions at the end, Pending the most records
	// a partition's pending store held then (delayed labels): a run
	// meant to fill a budget or a store shows here whether it did.
	CheckpointWritten int64
	Snapshots         int
	SnapshotBytes     int64
	Support           int
	Pending           int
	// Transactions is how many transactions the member ended (committed
	// or aborted) over the run, under exactly-once.
	Transactions int
}

// RSSSample is the resident memory at a moment of the run.
type RSSSample struct {
	At   time.Duration // since assignment
	Done int64         // predictions acknowledged by then
	RSS  int64         // bytes
}

// SnapshotRate is the snapshot bytes written per second of the run.
func (r Result) SnapshotRate() float64 { return float64(r.CheckpointWritten) / r.Elapsed.Seconds() }

// RecordsPerSecond is the throughput.
func (r Result) RecordsPerSecond() float64 { return float64(r.Records) / r.Elapsed.Seconds() }

// CPUPerRecord is this process's CPU time per record.
func (r Result) CPUPerRecord() time.Duration { return r.CPU / time.Duration(max(r.Records, 1)) }

// LoadA9A reads a LIBSVM or JSON data file into messages, one JSON record
// each, as `streamlearner produce` writes them.
func LoadA9A(ctx context.Context, path string) ([]kafka.Message, error) {
	set, err := dataset.Load(ctx, path, dataset.Options{})
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	msgs := make([]kafka.Message, set.Len())
	for i := range msgs {
		msgs[i] = kafka.Message{Value: codec.AppendJSON(nil, codec.Example{X: set.X[i], Label: strconv.Itoa(set.Y[i])})}
	}
	return msgs, nil
}

// LoadDelayed makes records messages of the data file at path for a
// member with delayed labels: each record keyed (r0, r1, ...) and without
// its label, so that it is predicted and waits in the pending store; the
// label of every labelEvery-th record follows lag records later, keyed
// as its record (`{"label":1}`), so that the model still learns. The
// rest never get theirs: the store fills up to its bounds. The data is
// used over and over, each record under a key of its own. Predictions
// are len(msgs) minus the labels: records.
func LoadDelayed(ctx context.Context, path string, records, labelEvery, lag int) ([]kafka.Message, error) {
	set, err := dataset.Load(ctx, path, dataset.Options{})
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	if set.Len() == 0 {
		return nil, fmt.Errorf("load %s: no records", path)
	}
	msgs := make([]kafka.Message, 0, records+records/max(labelEvery, 1))
	label := func(n int) {
		if labelEvery > 0 && n >= 0 && n%labelEvery == 0 {
			msgs = append(msgs, kafka.Message{Key: []byte("r" + strconv.Itoa(n)),
				Value: codec.AppendJSON(nil, codec.Example{Label: strconv.Itoa(set.Y[n%set.Len()])})})
		}
	}
	for n := range records {
		msgs = append(msgs, kafka.Message{Key: []byte("r" + strconv.Itoa(n)), Value: codec.AppendJSON(nil, codec.Example{X: set.X[n%set.Len()]})})
		label(n - lag)
	}
	for n := max(records-lag, 0); n < records; n++ {
		label(n)
	}
	return msgs, nil
}

// Run loads the records and serves them once.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Topic == "" {
		cfg.Topic = "bench"
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 4
	}
	if cfg.Records <= 0 {
		cfg.Records = len(cfg.Input)
	}
	if len(cfg.Input) == 0 {
		return Result{}, errors.New("bench: no input records")
	}
	out := cfg.Topic + ".out"
	addr := cfg.Broker
	if addr == "" {
		br, err := embedded.Start(embedded.Config{Partitions: cfg.Partitions, Topics: []string{cfg.Topic, out, cfg.Topic + ".dlq"}})
		if err != nil {
			return Result{}, fmt.Errorf("bench: %w", err)
		}
		defer br.Close()
		addr = br.Addr()
	} else if err := createTopics(ctx, addr, cfg.Partitions, cfg.Topic, out, cfg.Topic+".dlq"); err != nil {
		return Result{}, err
	}
	if err := load(ctx, addr, cfg); err != nil {
		return Result{}, err
	}
	// The writer's batches (one set a partition: tens of megabytes at
	// hundreds of partitions) are garbage now, but their pages stay in
	// the process until the scavenger returns them, and the member's peak
	// would start from them.
	debug.FreeOSMemory()
	return serve(ctx, addr, out, cfg)
}

// Load creates the run's topics on cfg.Broker and loads the records, for
// a member that Serve runs in another process.
func Load(ctx context.Context, cfg Config) error {
	if cfg.Broker == "" {
		return errors.New("bench: Load needs a broker's address")
	}
	if err := createTopics(ctx, cfg.Broker, cfg.Partitions, cfg.Topic, cfg.Topic+".out", cfg.Topic+".dlq"); err != nil {
		return err
	}
	return load(ctx, cfg.Broker, cfg)
}

// Serve runs one member over the records Load loaded into cfg.Broker and
// measures it. Run in a process of its own, its memory and CPU are the
// member's alone: a process that served before keeps some of what that
// run touched (a 256-partition run left the next 4-partition peak 7–16
// MB higher).
func Serve(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Broker == "" {
		return Result{}, errors.New("bench: Serve needs a broker's address")
	}
	return serve(ctx, cfg.Broker, cfg.Topic+".out", cfg)
}

// createTopics makes the run's topics on an external broker.
func createTopics(ctx context.Context, addr string, partitions int, names ...string) error {
	// A transport of the run's own, closed with it: the default one
	// keeps its connections to a broker that is gone.
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(addr), Transport: tr}
	req := &kafka.CreateTopicsRequest{}
	for _, n := range names {
		req.Topics = append(req.Topics, kafka.TopicConfig{Topic: n, NumPartitions: partitions, ReplicationFactor: 1})
	}
	resp, err := c.CreateTopics(ctx, req)
	if err != nil {
		return fmt.Errorf("bench: create topics: %w", err)
	}
	for n, err := range resp.Errors {
		if err != nil {
			return fmt.Errorf("bench: create topic %s: %w", n, err)
		}
	}
	return nil
}

// load writes Records messages, Input over and over, round-robin over the
// partitions (keyed messages by their key's hash, so that a label meets
// its record), in batches of 1,000.
func load(ctx context.Context, addr string, cfg Config) error {
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	var bal kafka.Balancer = &kafka.RoundRobin{}
	if cfg.Input[0].Key != nil {
		bal = &kafka.Hash{}
	}
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: cfg.Topic, Balancer: bal, RequiredAcks: kafka.RequireAll, Transport: tr,
		BatchTimeout: time.Millisecond, BatchSize: 1000, BatchBytes: 4 << 20}
	defer w.Close()
	// A call's messages spread over the partitions, and the writer sends
	// each partition's share as a request of its own: 1,000 a call over
	// 1,024 partitions made requests of one message (7,000 records/s).
	batch := make([]kafka.Message, 0, max(1000, 64*cfg.Partitions))
	last := time.Now()
	for done := 0; done < cfg.Records; {
		batch = batch[:0]
		for len(batch) < cap(batch) && done+len(batch) < cfg.Records {
			m := cfg.Input[(done+len(batch))%len(cfg.Input)]
			batch = append(batch, kafka.Message{Value: m.Value, Key: m.Key})
		}
		if err := w.WriteMessages(ctx, batch...); err != nil {
			return fmt.Errorf("bench: load: %w", err)
		}
		done += len(batch)
		if cfg.Progress != nil && (time.Since(last) > time.Second || done == cfg.Records) {
			cfg.Progress(false, int64(done), int64(cfg.Records))
			last = time.Now()
		}
	}
	return nil
}

// member is the configuration of the run's member: a restore's member
// (Restore) is the same, so that it takes the first one's checkpoints over.
func member(addr, out string, cfg Config, metrics *pipeline.Metrics, started chan<- time.Time) pipeline.Config {
	pc := pipeline.Config{Model: model.Config{Learner: cfg.Learner, Kernel: cfg.Kernel},
		Conn: kafkaconn.Config{Brokers: []string{addr}}, Topic: cfg.Topic, Group: cfg.Topic + "-bench", OutputTopic: out,
		PassThrough: cfg.PassThrough, Metrics: metrics,
		HeartbeatInterval: 500 * time.Millisecond, Log: zerolog.Nop(), CheckpointEvery: cfg.CheckpointEvery,
		ProcessingGuarantee: cfg.ProcessingGuarantee, FetchMaxBytes: cfg.FetchMaxBytes, FetchPartitionMaxBytes: cfg.FetchPartitionMaxBytes, FlushMaxBytes: cfg.FlushMaxBytes,
		Compression: cfg.Compression, DisableIdempotence: cfg.DisableIdempotence,
		SnapshotEveryCommit: cfg.SnapshotEveryCommit, SnapshotMaxRate: cfg.SnapshotMaxRate, SnapshotInterval: cfg.SnapshotInterval,
		DelayedLabels: cfg.DelayedLabels, PendingMaxRecords: cfg.PendingMaxRecords, PendingMaxBytes: cfg.PendingMaxBytes,
		// Non-blocking: a rebalance assigns again.
		OnAssign: func(int32, []int) {
			select {
			case started <- time.Now():
			default:
			}
		},
	}
	if cfg.CheckpointDir != "" {
		pc.Model.Seed = 1
		pc.Checkpoints = &checkpoint.Protocol{Store: checkpoint.DirStore{Dir: cfg.CheckpointDir}, Model: pc.ModelConfig, Log: zerolog.Nop()}
	}
	return pc
}

// serve runs one member until every record's prediction is acknowledged.
func serve(ctx context.Context, addr, out string, cfg Config) (Result, error) {
	metrics := pipeline.NewMetrics(nil)
	started := make(chan time.Time, 1)
	pc := member(addr, out, cfg, metrics, started)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- pipeline.Run(ctx, pc) }()
	var t0 time.Time
	select {
	case t0 = <-started:
	case err := <-served:
		return Result{}, fmt.Errorf("bench: service stopped before its assignment: %w", err)
	case <-ctx.Done():
		<-served
		return Result{}, ctx.Err()
	}
	cpu0 := cpuTime()
	if cfg.Measuring != nil {
		cfg.Measuring()
	}
	// The peak is the member's: loading the records (a writer's batches
	// for every partition) came before and is not the service's work.
	resetPeakRSS()
	var res Result
	var done int64
	total := int64(cfg.Records)
	if cfg.Predictions > 0 {
		total = int64(cfg.Predictions)
	}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	lastSample := t0
	for done < total {
		select {
		case <-ctx.Done():
			<-served
			return res, ctx.Err()
		case err := <-served:
			return res, fmt.Errorf("bench: service stopped: %w", err)
		case now := <-tick.C:
			done = int64(testutil.ToFloat64(metrics.Produced))
			if now.Sub(lastSample) >= time.Second {
				lastSample = now
				if cfg.SampleRSS {
					res.RSS = append(res.RSS, RSSSample{At: now.Sub(t0), Done: done, RSS: procStatus("VmRSS:")})
				}
				if cfg.Progress != nil {
					cfg.Progress(true, done, total)
				}
			}
		}
	}
	res.Elapsed = time.Since(t0)
	res.CPU = cpuTime() - cpu0
	res.Records = int(total)
	res.PeakRSS = procStatus("VmHWM:")
	res.CheckpointWritten = int64(testutil.ToFloat64(metrics.CheckpointWritten))
	res.Snapshots = int(testutil.ToFloat64(metrics.CheckpointSaves.WithLabelValues("ok")))
	res.SnapshotBytes = int64(slices.Max(append(values(metrics.CheckpointBytes), 0)))
	if s := values(metrics.Support); len(s) > 0 {
		res.Support = int(slices.Min(s))
	}
	res.Pending = int(slices.Max(append(values(metrics.PendingRecords), 0)))
	res.Transactions = int(testutil.ToFloat64(metrics.Transactions.WithLabelValues("committed", "")) +
		testutil.ToFloat64(metrics.Transactions.WithLabelValues("aborted", "error")) + testutil.ToFloat64(metrics.Transactions.WithLabelValues("aborted", "fenced")))
	if cfg.Progress != nil {
		cfg.Progress(true, total, total)
	}
	if cfg.Measured != nil {
		cfg.Measured(res)
	}
	cancel()
	if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
		return res, fmt.Errorf("bench: service: %w", err)
	}
	return res, nil
}

// values are the current values of a per-partition series.
func values(c prometheus.Collector) []float64 {
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	var vs []float64
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) != nil {
			continue
		}
		switch {
		case d.Gauge != nil:
			vs = append(vs, d.Gauge.GetValue())
		case d.Counter != nil:
			vs = append(vs, d.Counter.GetValue())
		}
	}
	return vs
}

// OutputBytes is what the brokers at addr store of topic: the size of its
// partitions' logs (DescribeLogDirs), batch headers and compression
// included, as a disk or a consumer's network sees it.
func OutputBytes(ctx context.Context, addr, topic string) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// Every topic's dirs (a nil list), the topic's picked out below.
	req := kmsg.NewPtrDescribeLogDirsRequest()
	var total int64
	for _, shard := range cl.RequestSharded(ctx, req) {
		if shard.Err != nil {
			return 0, fmt.Errorf("describe log dirs of %s: %w", topic, shard.Err)
		}
		for _, d := range shard.Resp.(*kmsg.DescribeLogDirsResponse).Dirs {
			for _, t := range d.Topics {
				if t.Topic != topic {
					continue
				}
				for _, p := range t.Partitions {
					total += p.Size
				}
			}
		}
	}
	return total, nil
}

// EvalCPU is the learner's own cost in eval, as the service's learning
// overhead is judged against it: the CPU time per round of one pass over
// the records of path, loaded first (parsing is not counted), in file
// order, the median of runs passes.
func EvalCPU(ctx context.Context, path, learner string, kern learners.Kernel, runs int) (time.Duration, error) {
	set, err := dataset.Load(ctx, path, dataset.Options{})
	if err != nil {
		return 0, fmt.Errorf("load %s: %w", path, err)
	}
	var per []time.Duration
	for range max(runs, 1) {
		t0 := cpuTime()
		if _, err := offline.Run(ctx, set, nil, offline.Config{Learners: []string{learner}, Kernel: kern, KeepOrder: true, Seed: 1}); err != nil {
			return 0, err
		}
		per = append(per, (cpuTime()-t0)/time.Duration(max(set.Len(), 1)))
	}
	slices.Sort(per)
	return per[len(per)/2], nil
}

// resetPeakRSS starts VmHWM again from the current RSS (Linux: writing 5
// to clear_refs); where it cannot, the peak covers the whole process.
func resetPeakRSS() {
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// cpuTime is this process's user plus system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procStatus reads a "kB" line of /proc/self/status (VmRSS:, VmHWM:) in
// bytes, or 0 where there is no /proc.
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte(field)); ok {
			kb, _ := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// Slope fits RSS = a + b·Done by least squares over the samples whose
// Done is at least from, and returns b in bytes per record (0 with fewer
// than three samples): memory that grows with the stream shows here.
func Slope(samples []RSSSample, from int64) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, s := range samples {
		if s.Done < from {
			continue
		}
		x, y := float64(s.Done), float64(s.RSS)
		n, sx, sy, sxx, sxy = n+1, sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	if n < 3 || n*sxx-sx*sx == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

// Append writes msgs to each partition of topic (every partition gets
// them all, in order) and returns, per partition, the offset of the first:
// the records a restored member is to predict.
func Append(ctx context.Context, addr, topic string, partitions int, msgs []kafka.Message) ([]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return nil, fmt.Errorf("bench: append: %w", err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for p := range partitions {
		for _, m := range msgs {
			recs = append(recs, &kgo.Record{Partition: int32(p), Key: m.Key, Value: m.Value})
		}
	}
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		return nil, fmt.Errorf("bench: append to %s: %w", topic, err)
	}
	first := make([]int64, partitions)
	for i := range first {
		first[i] = -1
	}
	for _, r := range res {
		if o := first[r.Record.Partition]; o < 0 || r.Record.Offset < o {
			first[r.Record.Partition] = r.Record.Offset
		}
	}
	return first, nil
}

// RestoreResult is what a restore measured: a member started over the
// checkpoints of one that was killed, after records were appended to
// every partition (Append).
type RestoreResult struct {
	// Assigned and Served are from the member's start to its assignment
	// (the group waits for the killed member's session to expire) and to
	// the first prediction of the appended records of every partition.
	Assigned, Served time.Duration
	// Replayed is the records the restore played learn-only from the
	// snapshots to the committed offsets, ReplaySeconds the time those
	// replays took (summed over partitions) and Replays their count.
	Replayed      int64
	ReplaySeconds float64
	Replays       int
}

// Restore starts a member as cfg's (same group, checkpoints and topics),
// which takes over the checkpoints and commits the run left, and measures
// how long it takes to predict the records from first (per partition,
// Append's) on: the output topic is read from its end as of the start,
// read_uncommitted, so a prediction counts when it is written, not when
// its transaction commits.
func Restore(ctx context.Context, cfg Config, first []int64) (RestoreResult, error) {
	if cfg.Broker == "" {
		return RestoreResult{}, errors.New("bench: Restore needs a broker's address")
	}
	out := cfg.Topic + ".out"
	ends, err := endOffsets(ctx, cfg.Broker, out, len(first))
	if err != nil {
		return RestoreResult{}, err
	}
	at := map[int32]kgo.Offset{}
	for p, o := range ends {
		at[int32(p)] = kgo.NewOffset().At(o)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Broker), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{out: at}))
	if err != nil {
		return RestoreResult{}, fmt.Errorf("bench: restore: %w", err)
	}
	defer cl.Close()
	metrics := pipeline.NewMetrics(nil)
	started := make(chan time.Time, 1)
	pc := member(cfg.Broker, out, cfg, metrics, started)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t0 := time.Now()
	served := make(chan error, 1)
	go func() { served <- pipeline.Run(ctx, pc) }()
	var res RestoreResult
	seen := make([]bool, len(first))
	left := len(first)
	for left > 0 {
		// A second at most, so that a member that stopped is noticed.
		poll, stop := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(poll)
		stop()
		select {
		case err := <-served:
			return res, fmt.Errorf("bench: restored service stopped: %w", err)
		default:
		}
		if ctx.Err() != nil {
			<-served
			return res, ctx.Err()
		}
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.DeadlineExceeded) {
				return res, fmt.Errorf("bench: read %s: %w", out, e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			pred, err := codec.DecodePrediction(r.Value)
			if err != nil || int(pred.Partition) >= len(first) || seen[pred.Partition] || pred.Offset < first[pred.Partition] {
				return
			}
			seen[pred.Partition] = true
			left--
		})
	}
	res.Served = time.Since(t0)
	select {
	case t := <-started:
		res.Assigned = t.Sub(t0)
	default:
	}
	res.Replayed = int64(testutil.ToFloat64(metrics.RestoreReplayed))
	var d dto.Metric
	if err := metrics.RestoreReplay.Write(&d); err == nil {
		res.ReplaySeconds, res.Replays = d.GetHistogram().GetSampleSum(), int(d.GetHistogram().GetSampleCount())
	}
	cancel()
	if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
		return res, fmt.Errorf("bench: restored service: %w", err)
	}
	return res, nil
}

// endOffsets lists the end offsets of the partitions of topic at addr.
func endOffsets(ctx context.Context, addr, topic string, partitions int) ([]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	for p := range partitions {
		pr := kmsg.NewListOffsetsRequestTopicPartition()
		pr.Partition, pr.Timestamp = int32(p), -1 // the end
		t.Partitions = append(t.Partitions, pr)
	}
	req.Topics = append(req.Topics, t)
	ends := make([]int64, partitions)
	got := 0
	for _, shard := range cl.RequestSharded(ctx, req) {
		if shard.Err != nil {
			return nil, fmt.Errorf("list offsets of %s: %w", topic, shard.Err)
		}
		for _, rt := range shard.Resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return nil, fmt.Errorf("list offsets of %s/%d: %w", topic, rp.Partition, err)
				}
				if int(rp.Partition) < partitions {
					ends[rp.Partition] = rp.Offset
					got++
				}
			}
		}
	}
	if got != partitions {
		return nil, fmt.Errorf("list offsets of %s: %d partitions of %d answered", topic, got, partitions)
	}
	return ends, nil
}
