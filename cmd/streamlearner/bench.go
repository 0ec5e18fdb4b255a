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
	"slices"
	"strconv"
	"strings"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/internal/dev/benchrun"
	"github.com/streamlearner/streamlearner/internal/progress"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/pipeline"
)

// The service's targets (issue 17): learning keeps at least
// endToEndTarget of the pass-through throughput, and pass-through costs at
// most passCPUTarget of CPU per record in the service process.
const (
	endToEndTarget = 0.90
	passCPUTarget  = 3 * time.Microsecond
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
	// guarantees and reports the ratio against exactlyOnceTarget.
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
	// the pending store, and only every delayedLabelEvery-th gets its label
	// (delayedLabelLag records later), so the store fills to its bounds.
	DelayedLabels     bool  `help:"Records keyed and without their label: the member runs with --delayed-labels, every 4th record's label comes 1,000 records later, the others' never, so each partition's pending store fills to its bounds. --records counts the records; their labels are extra messages. Learning runs only."`
	PendingMaxRecords int   `help:"The member's --pending-max-records (default: run's, 100,000)."`
	PendingMaxBytes   int64 `help:"The member's --pending-max-bytes (default: run's, 64 MiB)."`
}

// snapshotRateTarget: snapshots as --snapshot-max-rate allows write at
// most this share of the bytes a second that a snapshot with every
// commit writes, for a big model (B = 4,000 on a9a, or a full pending
// store).
const snapshotRateTarget = 0.10

// The labels of --delayed-labels: every delayedLabelEvery-th record's,
// delayedLabelLag records after it.
const (
	delayedLabelEvery = 4
	delayedLabelLag   = 1000
)

// restoreRecords are appended to each partition after a deferred run's
// member is killed; the restore is served once each partition's first is
// predicted.
const restoreRecords = 10

// compressionCPUTarget: a codec costs at most this much CPU per record
// more than writing outputs uncompressed (lz4, issue 35).
const compressionCPUTarget = 200 * time.Nanosecond

// The targets of a member with many partitions (issue 25): CPU per record
// at the most partitions within partitionCPUTarget times that at the
// fewest, and peak RSS growing by no more than the models and
// partitionRSSTarget bytes a partition.
const (
	partitionCPUTarget = 1.3
	partitionRSSTarget = 100_000
)

// serviceLearnTarget: CPU per record learning minus CPU per record
// passing through, in the service process, within this times eval's CPU
// per round for the same learner, kernel and data (issue 25).
const serviceLearnTarget = 1.10

// exactlyOnceTarget: exactly-once keeps at least this share of
// at-least-once's records/s (B = 100).
const exactlyOnceTarget = 0.80

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
	for _, m := range c.Snapshots {
		if m != "every-commit" && m != "deferred" {
			return fmt.Errorf("--snapshots %q: want every-commit or deferred", m)
		}
	}
	if c.DelayedLabels && len(c.Snapshots) == 0 && len(c.Compression) < 2 && c.ProcessingGuarantee != pipeline.ExactlyOnce && !c.LearnOnly {
		// Pass-through would dead-letter the labels and wait for their
		// predictions.
		return errors.New("--delayed-labels: learning runs only (--snapshots, --compression with several codecs, --processing-guarantee exactly-once or --learn-only)")
	}
	var msgs []kafka.Message
	if c.DelayedLabels {
		msgs, err = benchrun.LoadDelayed(ctx, c.Data, c.Records, delayedLabelEvery, delayedLabelLag)
	} else {
		msgs, err = benchrun.LoadA9A(ctx, c.Data)
	}
	if err != nil {
		return err
	}
	sampleRSS := c.Records >= 10_000_000
	for _, n := range c.Partitions {
		if n <= 0 {
			return fmt.Errorf("--partitions %d: want a positive count", n)
		}
	}
	if c.DelayedLabels {
		fmt.Fprintf(out, "end to end: %s, %d records keyed and unlabeled, every %dth one's label %d records later (%d messages), delayed labels, over %v partitions, %s %s, checkpoint every %d; broker %s\n",
			c.Data, c.Records, delayedLabelEvery, delayedLabelLag, len(msgs), c.Partitions, c.Learner, kern, c.CheckpointEvery, brokerWhere(c.InProcess))
	} else {
		fmt.Fprintf(out, "end to end: %s ×%.1f = %d records over %v partitions, %s %s, checkpoint every %d; broker %s\n",
			c.Data, float64(c.Records)/float64(len(msgs)), c.Records, c.Partitions, c.Learner, kern, c.CheckpointEvery, brokerWhere(c.InProcess))
	}
	if len(c.Snapshots) > 0 {
		fmt.Fprintf(out, "%-12s %10s %12s %14s %12s %14s %12s %10s %10s %8s %8s\n", "mode", "partitions", "records/s", "cpu µs/record", "peak RSS MB", "output B/record",
			"snap MB/s", "snapshots", "last MB", "support", "pending")
	} else {
		fmt.Fprintf(out, "%-12s %10s %12s %14s %12s %14s\n", "mode", "partitions", "records/s", "cpu µs/record", "peak RSS MB", "output B/record")
	}
	rates, cpus, outBytes := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	var evals []float64 // eval's CPU per round, beside each learning run
	// Snapshot bytes a second, per mode; each deferred run's restore.
	snapRates := map[string][]float64{}
	var replayed, replaySecs, servedAfter []float64
	var lastLearn benchrun.Result
	// scale holds, per partition count, the learning runs' CPU per record
	// and peak RSS.
	type scaleRow struct{ cpu, rss []float64 }
	scale := map[int]*scaleRow{}
	for run := range c.Runs {
		for _, parts := range c.Partitions {
			modes := []string{"passthrough", "learn"}
			switch {
			case len(c.Snapshots) > 0:
				modes = c.Snapshots
			case len(c.Compression) > 1:
				modes = modes[:0]
				for _, z := range c.Compression {
					modes = append(modes, "learn/"+z)
				}
			case c.ProcessingGuarantee == pipeline.ExactlyOnce:
				modes = []string{"learn", "exactly-once"}
			case c.LearnOnly:
				modes = modes[1:]
			}
			for _, mode := range modes {
				res, restore, err := c.runOnce(ctx, mode, run, parts, msgs, kern, sampleRSS && mode == "learn")
				if err != nil {
					return err
				}
				if parts == c.Partitions[0] {
					rates[mode] = append(rates[mode], res.RecordsPerSecond())
					cpus[mode] = append(cpus[mode], float64(res.CPUPerRecord()))
					outBytes[mode] = append(outBytes[mode], float64(res.OutputBytes)/float64(res.Records))
					snapRates[mode] = append(snapRates[mode], res.SnapshotRate())
				}
				row := fmt.Sprintf("%-12s %10d %12.0f %14.2f %12.0f %14.1f", mode, parts, res.RecordsPerSecond(), float64(res.CPUPerRecord().Nanoseconds())/1e3, float64(res.PeakRSS)/(1<<20),
					float64(res.OutputBytes)/float64(res.Records))
				if len(c.Snapshots) > 0 {
					row += fmt.Sprintf(" %12.3f %10d %10.2f %8d %8d", res.SnapshotRate()/1e6, res.Snapshots, float64(res.SnapshotBytes)/1e6, res.Support, res.Pending)
				}
				if mode == "exactly-once" {
					// The member's transactions the brokers saw: one a
					// commit interval, whatever the partitions.
					row += fmt.Sprintf("  %d transactions, %.1f/s", res.Transactions, float64(res.Transactions)/res.Elapsed.Seconds())
				}
				fmt.Fprintln(out, row)
				switch {
				case restore != nil:
					fmt.Fprintf(out, "restore: %d records replayed in %.2f s; served again %.2f s after start (assigned after %.2f s; %d partitions replayed)\n",
						restore.Replayed, restore.ReplaySeconds, restore.Served.Seconds(), restore.Assigned.Seconds(), restore.Replays)
					replayed = append(replayed, float64(restore.Replayed))
					replaySecs = append(replaySecs, restore.ReplaySeconds)
					servedAfter = append(servedAfter, restore.Served.Seconds())
				case mode == "deferred" && c.InProcess && run == 0 && parts == c.Partitions[0]:
					fmt.Fprintln(out, "restore: not measured with --in-process (a crash is a kill of the member's process, and this process holds the broker too)")
				}
				if mode == "learn" && parts == c.Partitions[0] && !c.LearnOnly && c.ProcessingGuarantee != pipeline.ExactlyOnce {
					// Eval's round beside each pair of runs, not once at the
					// end: on a shared host the CPU a round costs drifts by
					// a quarter within minutes, and the target compares the
					// two.
					e, err := benchrun.EvalCPU(ctx, c.Data, c.Learner, kern, 3)
					if err != nil {
						return err
					}
					evals = append(evals, float64(e))
				}
				if strings.HasPrefix(mode, "learn") {
					lastLearn = res
					if scale[parts] == nil {
						scale[parts] = &scaleRow{}
					}
					scale[parts].cpu = append(scale[parts].cpu, float64(res.CPUPerRecord()))
					scale[parts].rss = append(scale[parts].rss, float64(res.PeakRSS))
				}
			}
		}
	}
	if lo, hi := slices.Min(c.Partitions), slices.Max(c.Partitions); lo < hi && scale[lo] != nil {
		// Many partitions per member (issue 25): CPU per record within
		// partitionCPUTarget of the fewest partitions', and memory within
		// the models plus partitionRSSTarget a partition more.
		mem, err := learners.EstimateMemory(c.Learner, kern, learners.Data{NNZ: 14})
		if err != nil {
			return err
		}
		cl, ch := median(scale[lo].cpu), median(scale[hi].cpu)
		verdict := "met"
		if ch > partitionCPUTarget*cl {
			verdict = "NOT met"
		}
		fmt.Fprintf(out, "CPU per record, %d partitions / %d: %.2f / %.2f µs = %.2f (target ≤ %.1f: %s)\n", hi, lo, ch/1e3, cl/1e3, ch/cl, partitionCPUTarget, verdict)
		rl, rh := median(scale[lo].rss), median(scale[hi].rss)
		// --fetch-max-bytes is part of the fixed base, but lo partitions
		// cannot fill it: each holds at most its partition share. What
		// they leave unfilled is allowed on top of the partitions' own.
		// (The flush budget, which lo partitions do not fill either, is
		// not: the target stays on the safe side.)
		fetchMax, fetchPart := (&pipeline.Config{FetchMaxBytes: c.FetchMaxBytes, FetchPartitionMaxBytes: c.FetchPartitionMaxBytes}).FetchBudgets()
		unfilled := max(fetchMax-lo*fetchPart, 0)
		allowed := float64(hi-lo)*float64(mem.Held+partitionRSSTarget) + float64(unfilled)
		verdict = "met"
		if rh-rl > allowed {
			verdict = "NOT met"
		}
		fmt.Fprintf(out, "peak RSS, %d partitions − %d: %.0f − %.0f MB = %+.1f MB (target ≤ %d × (model %.0f kB + %d kB) + the %.1f MB of --fetch-max-bytes %d partitions leave unfilled = %.1f MB: %s)\n",
			hi, lo, rh/(1<<20), rl/(1<<20), (rh-rl)/(1<<20), hi-lo, float64(mem.Held)/1e3, partitionRSSTarget/1000, float64(unfilled)/(1<<20), lo, allowed/(1<<20), verdict)
		// The member-wide budgets (--fetch-max-bytes, --flush-max-bytes)
		// are a fixed part of memory, but a few partitions do not fill
		// them: each fetches at most --fetch-partition-max-bytes and
		// flushes at --flush-records. From the next count on they are
		// full, and what grows is the partitions' own.
		if mid := slices.Max(slices.DeleteFunc(slices.Clone(c.Partitions), func(n int) bool { return n == hi })); mid > lo && scale[mid] != nil {
			rm := median(scale[mid].rss)
			allowed := float64(hi-mid) * float64(mem.Held+partitionRSSTarget)
			verdict := "met"
			if rh-rm > allowed {
				verdict = "NOT met"
			}
			fmt.Fprintf(out, "peak RSS, %d partitions − %d (the member's budgets full at both): %.0f − %.0f MB = %+.1f MB, %.0f kB a partition (target ≤ model %.0f kB + %d kB: %s)\n",
				hi, mid, rh/(1<<20), rm/(1<<20), (rh-rm)/(1<<20), (rh-rm)/float64(hi-mid)/1e3, float64(mem.Held)/1e3, partitionRSSTarget/1000, verdict)
		}
	}
	if len(c.Compression) > 1 {
		// Each codec against the first, run by run (alternated, so a
		// drifting host weighs on both alike).
		base := "learn/" + c.Compression[0]
		for _, z := range c.Compression[1:] {
			mode := "learn/" + z
			var extra []float64
			for i := range cpus[mode] {
				extra = append(extra, cpus[mode][i]-cpus[base][i])
			}
			cost := time.Duration(median(extra))
			verdict := "met"
			if cost > compressionCPUTarget {
				verdict = "NOT met"
			}
			fmt.Fprintf(out, "%s against %s: CPU %+.2f µs/record (target ≤ %.1f µs: %s); output %.1f → %.1f bytes/record (%.2f×); %.0f → %.0f records/s\n",
				z, c.Compression[0], float64(cost.Nanoseconds())/1e3, compressionCPUTarget.Seconds()*1e6, verdict,
				median(outBytes[base]), median(outBytes[mode]), median(outBytes[mode])/median(outBytes[base]), median(rates[base]), median(rates[mode]))
		}
		return nil
	}
	if len(c.Snapshots) > 0 {
		if every, deferred := snapRates["every-commit"], snapRates["deferred"]; len(every) > 0 && len(deferred) > 0 {
			// Run by run, alternated, so that a drifting host weighs on
			// both alike.
			var ratios []float64
			for i := range min(len(every), len(deferred)) {
				ratios = append(ratios, deferred[i]/every[i])
			}
			ratio := median(ratios)
			verdict := "met"
			if !(ratio <= snapshotRateTarget) {
				verdict = "NOT met"
			}
			fmt.Fprintf(out, "snapshots, deferred/every-commit: %.3f / %.3f MB/s = %.3f (target ≤ %.2f: %s); %.0f / %.0f records/s = %.2f\n",
				median(deferred)/1e6, median(every)/1e6, ratio, snapshotRateTarget, verdict,
				median(rates["deferred"]), median(rates["every-commit"]), median(rates["deferred"])/median(rates["every-commit"]))
		}
		if len(replayed) > 1 {
			fmt.Fprintf(out, "restores (medians of %d): %.0f records replayed in %.2f s; served again %.2f s after start\n",
				len(replayed), median(replayed), median(replaySecs), median(servedAfter))
		}
		return nil
	}
	if eos, learn := median(rates["exactly-once"]), median(rates["learn"]); c.ProcessingGuarantee == pipeline.ExactlyOnce {
		verdict := "met"
		if eos < exactlyOnceTarget*learn {
			verdict = "NOT met"
		}
		fmt.Fprintf(out, "exactly-once/at-least-once: %.0f / %.0f records/s = %.2f (target ≥ %.2f: %s)\n", eos, learn, eos/learn, exactlyOnceTarget, verdict)
		return nil
	}
	if learn, pass := median(rates["learn"]), median(rates["passthrough"]); !c.LearnOnly {
		verdict := "met"
		if learn < endToEndTarget*pass {
			verdict = "NOT met"
		}
		fmt.Fprintf(out, "learning/pass-through: %.0f / %.0f records/s = %.2f (issue 17's target ≥ %.2f: %s)\n", learn, pass, learn/pass, endToEndTarget, verdict)
		// What that target meant (issue 25): learning in the service costs
		// no more than serviceLearnTarget times the learner's own cost.
		// The median of each run's own ratio: learning, pass-through and
		// eval measured side by side.
		var ratios []float64
		for i := range evals {
			ratios = append(ratios, (cpus["learn"][i]-cpus["passthrough"][i])/evals[i])
		}
		ratio := median(ratios)
		verdict = "met"
		if ratio > serviceLearnTarget {
			verdict = "NOT met"
		}
		fmt.Fprintf(out, "learning in the service: %.2f − %.2f = %.2f µs/record; eval: %.2f µs/round, beside each run; %.2f× (target ≤ %.2f: %s)\n",
			median(cpus["learn"])/1e3, median(cpus["passthrough"])/1e3, (median(cpus["learn"])-median(cpus["passthrough"]))/1e3, median(evals)/1e3, ratio, serviceLearnTarget, verdict)
		cpu := time.Duration(median(cpus["passthrough"]))
		verdict = "met"
		if cpu > passCPUTarget {
			verdict = "NOT met"
		}
		fmt.Fprintf(out, "pass-through CPU: %.2f µs/record in the service process (target ≤ %.0f µs: %s)\n", float64(cpu.Nanoseconds())/1e3, passCPUTarget.Seconds()*1e6, verdict)
	}
	if sampleRSS {
		half := int64(c.Records / 2)
		slope := benchrun.Slope(lastLearn.RSS, half)
		growth := slope * float64(c.Records-int(half))
		flat := "flat"
		if growth > 16<<20 {
			flat = "GROWING"
		}
		fmt.Fprintf(out, "resident memory, learning: peak %.0f MB; over the second half %+.1f MB (%.2f bytes/record): %s\n",
			float64(lastLearn.PeakRSS)/(1<<20), growth/(1<<20), slope, flat)
	}
	return nil
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
	cfg.Measured = func(res benchrun.Result) {
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

// report prints a bench-serve result for bench: its kind, then JSON.
func report(out io.Writer, kind string, res any) error {
	b, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("bench-serve: %w", err)
	}
	_, err = fmt.Fprintf(out, "%s %s\n", kind, b)
	return err
}

func brokerWhere(inProcess bool) string {
	if inProcess {
		return "in process (its work counts as the service's)"
	}
	return "in a child process per run, the member in another"
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

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
