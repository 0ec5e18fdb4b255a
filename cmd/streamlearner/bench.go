package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/internal/dev/benchrun"
	"github.com/streamlearner/streamlearner/internal/progress"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/pipeline"
)

type benchCmd struct {
	Data                   string `default:"testdata/a9a.gz" type:"existingfile" help:"Records to replicate (LIBSVM or JSON lines)."`
	Records                int    `default:"1000000" help:"Records per run: the data over and over. From 10,000,000 on, resident memory is sampled and judged."`
	Partitions             []int  `default:"4" sep:"," help:"Partitions of the input topic; several (4,64,256) run each and judge how CPU and memory scale with them."`
	Learner                string `default:"rbp:budget=100" placeholder:"SPEC" help:"Learner spec."`
	Kernel                 string `default:"rbf:gamma=0.01" placeholder:"SPEC" help:"Kernel spec."`
	CheckpointEvery        int    `default:"10000" help:"Snapshot and commit every this many records of a partition."`
	Runs                   int    `default:"1" help:"Runs of each mode; the report gives medians."`
	InProcess              bool   `help:"Run the broker in this process (its CPU and memory then count as the service's)."`
	LearnOnly              bool   `help:"Skip the pass-through runs (for a memory run, which needs no ratio)."`
	FetchMaxBytes          int    `help:"The member's --fetch-max-bytes (default: run's)."`
	FetchPartitionMaxBytes int    `help:"The member's --fetch-partition-max-bytes (default: run's)."`
	FlushMaxBytes          int    `help:"The member's --flush-max-bytes (default: run's)."`
	// ProcessingGuarantee exactly-once alternates learning runs of both
	// guarantees and reports the ratio against benchrun's target.
	ProcessingGuarantee string `default:"at-least-once" enum:"at-least-once,exactly-once" help:"exactly-once: alternate learning runs at-least-once and exactly-once (transactions every 500 ms) and report their ratio of records/s, instead of pass-through beside learning."`
	// Compression with several codecs alternates learning runs, one a
	// codec, and judges the second's CPU against the first's.
	Compression []string `default:"lz4" sep:"," enum:"none,gzip,snappy,lz4,zstd" help:"The member's --compression; several (none,lz4,zstd) alternate learning runs, one a codec, instead of pass-through beside learning, and report each one's CPU and output bytes per record (stored by the broker) against the first's."`
	// Idempotence is the member's --idempotence.
	Idempotence bool `default:"true" negatable:"" help:"The member's --idempotence (at-least-once)."`
	// Snapshots alternates exactly-once learning runs that snapshot with
	// every commit and as --snapshot-max-rate allows, and judges the
	// snapshot bytes a second of the second against the first's.
	Snapshots        []string      `sep:"," placeholder:"every-commit,deferred" help:"Alternate exactly-once learning runs, one a snapshot policy: every-commit (a snapshot with each commit) and deferred (as --snapshot-max-rate and --snapshot-interval allow); report each one's snapshot bytes a second and, after each deferred run, the restore of a member killed at its end."`
	SnapshotMaxRate  int           `default:"32768" placeholder:"BYTES" help:"The deferred runs' --snapshot-max-rate, bytes a second a partition (as run's: 0 is a snapshot with every commit)."`
	SnapshotInterval time.Duration `default:"30s" help:"The deferred runs' --snapshot-interval."`
	// DelayedLabels makes the records keyed and unlabeled: each waits in
	// the pending store, and only every 4th gets its label
	// (1,000 records later, benchrun's constants), so the store fills to its bounds.
	DelayedLabels     bool  `help:"Records keyed and without their label: the member runs with --delayed-labels, every 4th record's label comes 1,000 records later, the others' never, so each partition's pending store fills to its bounds. --records counts the records; their labels are extra messages. Learning runs only."`
	PendingMaxRecords int   `help:"The member's --pending-max-records (default: run's, 100,000)."`
	PendingMaxBytes   int64 `help:"The member's --pending-max-bytes (default: run's, 64 MiB)."`
	// Rebalance measures a member joining and one leaving instead of
	// throughput (benchrun.Rebalance, started from bench_rebalance.go).
	Rebalance     bool          `help:"Measure rebalances instead: records at --rate a second over the most --partitions, one member alone for --phase, a second joining for --phase then leaving (SIGTERM), the first alone again; report the p99 record → prediction latency in steady state and around each, and how long until every partition is served again. Each member is run in a process of its own."`
	Rate          int           `default:"10000" help:"With --rebalance: records a second sent."`
	Phase         time.Duration `default:"30s" help:"With --rebalance: how long each phase lasts."`
	FlushInterval time.Duration `default:"5ms" help:"With --rebalance: the members' --flush-interval."`
	// CheckpointStore is where the rebalance members keep their
	// snapshots: a restore's cost depends on it.
	CheckpointStore string `default:"dir" enum:"dir,topic" help:"With --rebalance: where the members keep their snapshots, a directory (run's --checkpoint-dir) or a checkpoint topic (--checkpoint-topic, as members on several machines do)."`
}

// restoreRecords are appended to each partition after a deferred run's
// member is killed; the restore is served once each partition's first is
// predicted.
const restoreRecords = 10

// Run measures the service end to end: the embedded broker (a child
// process, so that CPU and memory figures are the service's own), the data
// replicated to --records records, then one member over them without
// learning (pass-through) and one learning with checkpoints to a
// temporary directory; it prints records/s, CPU per record and memory,
// and the ratio against the target.
func (c *benchCmd) Run(ctx context.Context, out io.Writer) error {
	kern, err := learners.ParseKernel(c.Kernel)
	if err != nil {
		return err
	}
	if c.Rebalance {
		return c.rebalance(ctx, out)
	}
	b := benchrun.Bench{
		Data: c.Data, Records: c.Records, Partitions: c.Partitions, Learner: c.Learner, Kernel: kern,
		CheckpointEvery: c.CheckpointEvery, Runs: c.Runs, InProcess: c.InProcess, LearnOnly: c.LearnOnly,
		FetchMaxBytes: c.FetchMaxBytes, FetchPartitionMaxBytes: c.FetchPartitionMaxBytes,
		ProcessingGuarantee: c.ProcessingGuarantee, Compression: c.Compression, Snapshots: c.Snapshots, DelayedLabels: c.DelayedLabels,
		Once: func(ctx context.Context, mode string, run, partitions int, msgs []kafka.Message, sampleRSS bool) (benchrun.Result, *benchrun.RestoreResult, error) {
			return c.runOnce(ctx, mode, run, partitions, msgs, kern, sampleRSS)
		},
	}
	return b.Measure(ctx, out)
}

// runOnce serves the records once in one mode, on a broker of its own (a
// fresh child process unless --in-process), with progress on a terminal.
// After a deferred run (not in process) the member is killed and a new
// one restores its partitions: the restore is measured too.
func (c *benchCmd) runOnce(ctx context.Context, mode string, run, partitions int, msgs []kafka.Message, kern learners.Kernel, sampleRSS bool) (benchrun.Result, *benchrun.RestoreResult, error) {
	addr := ""
	if !c.InProcess {
		stop, a, err := childBroker(ctx, partitions)
		if err != nil {
			return benchrun.Result{}, nil, err
		}
		defer stop()
		addr = a
	}
	dir, err := os.MkdirTemp("", "streamlearner-bench-")
	if err != nil {
		return benchrun.Result{}, nil, err
	}
	defer os.RemoveAll(dir)
	bar := progress.New(os.Stderr, mode)
	defer bar.Done()
	compression := c.Compression[0]
	if z, ok := strings.CutPrefix(mode, "learn/"); ok {
		compression = z
	}
	exactlyOnce := mode == "exactly-once" || mode == "every-commit" || mode == "deferred"
	cfg := benchrun.Config{
		Broker: addr, Topic: fmt.Sprintf("bench-%s-%d-%d", strings.ReplaceAll(mode, "/", "-"), partitions, run), Partitions: partitions, Records: c.Records, Input: msgs,
		Learner: c.Learner, Kernel: kern, PassThrough: mode == "passthrough",
		ProcessingGuarantee: map[bool]string{true: pipeline.ExactlyOnce, false: pipeline.AtLeastOnce}[exactlyOnce],
		CheckpointEvery:     c.CheckpointEvery, CheckpointDir: dir, SampleRSS: sampleRSS,
		Compression: compression, DisableIdempotence: !c.Idempotence,
		FetchMaxBytes: c.FetchMaxBytes, FetchPartitionMaxBytes: c.FetchPartitionMaxBytes, FlushMaxBytes: c.FlushMaxBytes,
		SnapshotEveryCommit: mode == "every-commit",
		DelayedLabels:       c.DelayedLabels, PendingMaxRecords: c.PendingMaxRecords, PendingMaxBytes: c.PendingMaxBytes,
		Progress: func(serving bool, done, total int64) {
			if serving { // loading is the first half of the bar
				done += total
			}
			bar.Update(done, 2*total)
		},
	}
	if mode == "deferred" {
		// As run reads its flags.
		cfg.SnapshotMaxRate, cfg.SnapshotEveryCommit, cfg.SnapshotInterval = c.SnapshotMaxRate, c.SnapshotMaxRate == 0, c.SnapshotInterval
	}
	if c.DelayedLabels {
		// Every message once (each record has a key of its own); the
		// labels are not predicted.
		cfg.Records, cfg.Predictions = len(msgs), c.Records
	}
	if c.InProcess {
		res, err := benchrun.Run(ctx, cfg)
		return res, nil, err
	}
	if err := benchrun.Load(ctx, cfg); err != nil {
		return benchrun.Result{}, nil, err
	}
	crash := mode == "deferred"
	res, err := serveChild(ctx, cfg, crash)
	if err != nil {
		return res, nil, err
	}
	if res.OutputBytes, err = benchrun.OutputBytes(ctx, addr, cfg.Topic+".out"); err != nil || !crash {
		return res, nil, err
	}
	// New records for every partition, as the data's first ones (under
	// keys of their own with delayed labels: they are predicted and wait).
	var more []kafka.Message
	for i, m := range msgs[:min(restoreRecords, len(msgs))] {
		if m.Key != nil {
			m.Key = []byte("restore-" + strconv.Itoa(i))
		}
		more = append(more, kafka.Message{Key: m.Key, Value: m.Value})
	}
	first, err := benchrun.Append(ctx, addr, cfg.Topic, partitions, more)
	if err != nil {
		return res, nil, err
	}
	restore, err := restoreChild(ctx, cfg, first)
	return res, &restore, err
}

// serveJob is what bench hands a bench-serve process: the run's
// configuration, its kernel as a spec; Crash keeps the member serving
// once it reported, for its kill (a crash: no last snapshot); Restore,
// if set, runs a restore instead (benchrun.Restore from these offsets).
type serveJob struct {
	Config  benchrun.Config
	Kernel  string
	Crash   bool
	Restore []int64
}

// serveChild runs the member of one bench run in a bench-serve process of
// its own, so that its CPU and peak memory are that run's alone; the
// child reports progress and then its result on stdout. With crash, the
// child is killed (SIGKILL) once it reported.
func serveChild(ctx context.Context, cfg benchrun.Config, crash bool) (benchrun.Result, error) {
	var res benchrun.Result
	err := runChild(ctx, serveJob{Config: cfg, Kernel: cfg.Kernel.String(), Crash: crash}, func(kind, rest string) (bool, error) {
		switch kind {
		case "progress":
			var done, total int64
			if _, err := fmt.Sscan(rest, &done, &total); err == nil && cfg.Progress != nil {
				cfg.Progress(true, done, total)
			}
		case "result":
			if err := json.Unmarshal([]byte(rest), &res); err != nil {
				return false, fmt.Errorf("bench: serve's result: %w", err)
			}
			return true, nil
		}
		return false, nil
	})
	return res, err
}

// restoreChild runs benchrun.Restore in a bench-serve process: the
// member after the killed one, over its checkpoints.
func restoreChild(ctx context.Context, cfg benchrun.Config, first []int64) (benchrun.RestoreResult, error) {
	var res benchrun.RestoreResult
	err := runChild(ctx, serveJob{Config: cfg, Kernel: cfg.Kernel.String(), Restore: first}, func(kind, rest string) (bool, error) {
		if kind != "restore" {
			return false, nil
		}
		if err := json.Unmarshal([]byte(rest), &res); err != nil {
			return false, fmt.Errorf("bench: restore's result: %w", err)
		}
		return true, nil
	})
	return res, err
}

// runChild runs job in a bench-serve process and hands each line it
// prints to line (its first word, the rest) until line says it had the
// result; a Crash job is then killed, any other waited for.
func runChild(ctx context.Context, job serveJob, line func(kind, rest string) (bool, error)) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench: find this executable: %w", err)
	}
	b, err := json.Marshal(job)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe, "bench-serve")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Stdin = bytes.NewReader(b)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("bench: serve: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("bench: start serve: %w", err)
	}
	got, killed := false, false
	var lineErr error
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 64<<20) // the result's RSS samples
	for sc.Scan() {
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		done, err := line(kind, rest)
		if err != nil && lineErr == nil {
			lineErr = err
		}
		if done {
			got = true
			if job.Crash && !killed {
				cmd.Process.Kill()
				killed = true
			}
		}
	}
	err = cmd.Wait()
	switch {
	case lineErr != nil:
		return lineErr
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil && !killed:
		return fmt.Errorf("bench: serve: %w", err)
	case !got:
		return errors.New("bench: serve ended without a result")
	}
	return nil
}

// benchServeCmd is the member of one bench run, in a process of its own
// (see serveChild); not for users.
type benchServeCmd struct{}

func (c *benchServeCmd) Run(ctx context.Context, out io.Writer) error {
	var job serveJob
	if err := json.NewDecoder(os.Stdin).Decode(&job); err != nil {
		return fmt.Errorf("bench-serve: read the job: %w", err)
	}
	kern, err := learners.ParseKernel(job.Kernel)
	if err != nil {
		return fmt.Errorf("bench-serve: %w", err)
	}
	cfg := job.Config
	cfg.Kernel = kern
	if job.Restore != nil {
		res, err := benchrun.Restore(ctx, cfg, job.Restore)
		if err != nil {
			return err
		}
		return report(out, "restore", res)
	}
	cfg.Progress = func(_ bool, done, total int64) { fmt.Fprintf(out, "progress %d %d\n", done, total) }
	var reported error
	stopCPU := func() {}
	cfg.Measuring = func() {
		if stop, err := startCPUProfile(os.Getenv(cpuProfileEnv), profileName(cfg)); err != nil {
			reported = err
		} else {
			stopCPU = stop
		}
	}
	cfg.Measured = func(res benchrun.Result) {
		stopCPU()
		if err := writeHeapProfile(os.Getenv(heapProfileEnv), profileName(cfg)); err != nil {
			reported = err
			return
		}
		reported = report(out, "result", res)
		if job.Crash && reported == nil {
			// Serving on until bench kills this process.
			<-ctx.Done()
		}
	}
	if _, err := benchrun.Serve(ctx, cfg); err != nil {
		return err
	}
	return reported
}

// heapProfileEnv names a file for the member's heap profile (in use and
// allocated since start), written when its records are served, before
// it stops: what a partition holds is then still held. Each partition
// count writes its own, the name followed by "." and the count. Off when
// unset.
const heapProfileEnv = envPrefix + "_BENCH_HEAP_PROFILE"

// cpuProfileEnv names a file for the member's CPU profile over the
// measured part of a run (from its first assignment until its records
// are served: what CPU a record counts). Each partition count writes its
// own, the name followed by "." and the count, and ".pass" for a
// pass-through run (which the learning run after it overwrote). Off when
// unset.
const cpuProfileEnv = envPrefix + "_BENCH_CPU_PROFILE"

// profileName is what a run's profiles add to the names given: its
// partition count, and ".pass" for a pass-through run.
func profileName(cfg benchrun.Config) string {
	if cfg.PassThrough {
		return fmt.Sprintf("%d.pass", cfg.Partitions)
	}
	return strconv.Itoa(cfg.Partitions)
}

// startCPUProfile starts a CPU profile into path.run; an empty path
// profiles nothing. The returned stop ends it and closes the file.
func startCPUProfile(path, run string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path + "." + run)
	if err != nil {
		return nil, fmt.Errorf("bench-serve: CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench-serve: CPU profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// writeHeapProfile writes the heap profile to path.run after a
// collection, so that in-use counts only what is live; an empty path
// writes nothing.
func writeHeapProfile(path, run string) error {
	if path == "" {
		return nil
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(os.Stderr, "bench-serve: %s: heap in use %d, stacks %d, runtime's other %d, goroutines %d (bytes)\n",
		run, ms.HeapInuse, ms.StackInuse, ms.Sys-ms.HeapSys-ms.StackSys, runtime.NumGoroutine())
	f, err := os.Create(path + "." + run)
	if err != nil {
		return fmt.Errorf("bench-serve: heap profile: %w", err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("bench-serve: heap profile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench-serve: heap profile: %w", err)
	}
	return nil
}

// report prints a bench-serve result for bench: its kind, then JSON.
func report(out io.Writer, kind string, res any) error {
	b, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("bench-serve: %w", err)
	}
	_, err = fmt.Fprintf(out, "%s %s\n", kind, b)
	return err
}

// childBroker runs `streamlearner broker` from this executable on a free
// port and returns its address and a function that stops it.
func childBroker(ctx context.Context, partitions int) (stop func(), addr string, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("bench: find this executable: %w", err)
	}
	cmd := exec.Command(exe, "broker", "--port=0", fmt.Sprintf("--partitions=%d", partitions))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", fmt.Errorf("bench: broker: %w", err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("bench: start broker: %w", err)
	}
	stop = func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, stdout)
	}()
	select {
	case line, ok := <-lines:
		const prefix = "broker listening on "
		if a, found := strings.CutPrefix(line, prefix); ok && found {
			return stop, strings.Fields(a)[0], nil
		}
		stop()
		return nil, "", fmt.Errorf("bench: broker said %q", line)
	case <-ctx.Done():
		stop()
		return nil, "", ctx.Err()
	case <-time.After(30 * time.Second):
		stop()
		return nil, "", errors.New("bench: broker did not start within 30 s")
	}
}
