package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	kafka "github.com/segmentio/kafka-go"

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
// at-least-once's records/s (B = 100). exactlyOnceCPUTarget: its CPU a
// record at most this times at-least-once's, at every partition count
// (issue 45).
const (
	exactlyOnceTarget    = 0.80
	exactlyOnceCPUTarget = 1.25
)

// partitionRSSGrowth: peak RSS at the most partitions at most this much
// above that at the fewest, models included (issue 45's target for 1,024
// partitions against 4).
const partitionRSSGrowth = 100 << 20

// commitInterval is the member's (pipeline.Config.CommitInterval's
// default): one transaction a member each, whatever the partitions, or
// sooner when a partition reaches --checkpoint-every records.
const commitInterval = 500 * time.Millisecond

// Bench is what `streamlearner bench` measures: the data replicated to
// Records records, served in each of its modes (pass-through and learning
// by default) Runs times over each partition count, then judged against
// the service's targets. Its fields are bench's flags.
type Bench struct {
	Data            string
	Records         int
	Partitions      []int
	Learner         string
	Kernel          learners.Kernel
	CheckpointEvery int
	Runs            int
	InProcess       bool
	LearnOnly       bool
	// FetchMaxBytes and FetchPartitionMaxBytes are the member's (0: its
	// defaults), for the memory a few partitions leave unfilled.
	FetchMaxBytes, FetchPartitionMaxBytes int
	ProcessingGuarantee                   string
	Compression                           []string
	Snapshots                             []string
	DelayedLabels                         bool
	// Once serves msgs once in mode over partitions partitions (run is
	// the run's number, for a topic of its own) and returns what it
	// measured, with the restore after a deferred run when measured.
	Once func(ctx context.Context, mode string, run, partitions int, msgs []kafka.Message, sampleRSS bool) (Result, *RestoreResult, error)
	// EvalCPU is eval's CPU per round, measured beside each pair of
	// pass-through and learning runs; nil: EvalCPU over Data, 3 runs.
	EvalCPU func(ctx context.Context) (time.Duration, error)
}

// figures are what the runs measured, by mode, for the verdicts.
type figures struct {
	rates, cpus, outBytes map[string][]float64
	evals                 []float64 // eval's CPU per round, beside each learning run
	// Snapshot bytes a second, per mode; each deferred run's restore.
	snapRates                         map[string][]float64
	replayed, replaySecs, servedAfter []float64
	lastLearn                         Result
	// scale holds, per partition count, the learning runs' CPU per record
	// and peak RSS.
	scale map[int]*scaleRow
	// counts holds each mode's runs by partition count, for the
	// verdicts judged at every count.
	counts map[int]map[string]*countRuns
}

type scaleRow struct{ cpu, rss []float64 }

// countRuns are a mode's runs at one partition count: records/s, CPU a
// record and transactions a second, one each a run.
type countRuns struct{ rates, cpus, txns []float64 }

// keep notes a run's figures under its partition count.
func (f *figures) keep(parts int, mode string, res Result) {
	if f.counts[parts] == nil {
		f.counts[parts] = map[string]*countRuns{}
	}
	c := f.counts[parts][mode]
	if c == nil {
		c = &countRuns{}
		f.counts[parts][mode] = c
	}
	c.rates = append(c.rates, res.RecordsPerSecond())
	c.cpus = append(c.cpus, float64(res.CPUPerRecord()))
	c.txns = append(c.txns, float64(res.Transactions)/res.Elapsed.Seconds())
}

// Measure runs every mode Runs times over each partition count, printing
// a row a run, then the verdicts.
func (b *Bench) Measure(ctx context.Context, out io.Writer) error {
	if err := b.check(); err != nil {
		return err
	}
	msgs, err := b.messages(ctx)
	if err != nil {
		return err
	}
	for _, n := range b.Partitions {
		if n <= 0 {
			return fmt.Errorf("--partitions %d: want a positive count", n)
		}
	}
	b.header(out, msgs)
	fig := &figures{rates: map[string][]float64{}, cpus: map[string][]float64{}, outBytes: map[string][]float64{},
		snapRates: map[string][]float64{}, scale: map[int]*scaleRow{}, counts: map[int]map[string]*countRuns{}}
	for run := range b.Runs {
		for _, parts := range b.Partitions {
			for _, mode := range b.modes() {
				if err := b.measureOnce(ctx, out, fig, mode, run, parts, msgs); err != nil {
					return err
				}
			}
		}
	}
	return b.judge(out, fig)
}

// check refuses what bench cannot measure.
func (b *Bench) check() error {
	for _, m := range b.Snapshots {
		if m != "every-commit" && m != "deferred" {
			return fmt.Errorf("--snapshots %q: want every-commit or deferred", m)
		}
	}
	if b.DelayedLabels && len(b.Snapshots) == 0 && len(b.Compression) < 2 && b.ProcessingGuarantee != pipeline.ExactlyOnce && !b.LearnOnly {
		// Pass-through would dead-letter the labels and wait for their
		// predictions.
		return errors.New("--delayed-labels: learning runs only (--snapshots, --compression with several codecs, --processing-guarantee exactly-once or --learn-only)")
	}
	return nil
}

// messages are the records of Data, keyed and with their labels apart
// with DelayedLabels.
func (b *Bench) messages(ctx context.Context) ([]kafka.Message, error) {
	if b.DelayedLabels {
		return LoadDelayed(ctx, b.Data, b.Records, delayedLabelEvery, delayedLabelLag)
	}
	return LoadA9A(ctx, b.Data)
}

// sampleRSS says whether resident memory is sampled and judged.
func (b *Bench) sampleRSS() bool { return b.Records >= 10_000_000 }

// header prints what is measured and the head of the table.
func (b *Bench) header(out io.Writer, msgs []kafka.Message) {
	if b.DelayedLabels {
		fmt.Fprintf(out, "end to end: %s, %d records keyed and unlabeled, every %dth one's label %d records later (%d messages), delayed labels, over %v partitions, %s %s, checkpoint every %d; broker %s\n",
			b.Data, b.Records, delayedLabelEvery, delayedLabelLag, len(msgs), b.Partitions, b.Learner, b.Kernel, b.CheckpointEvery, brokerWhere(b.InProcess))
	} else {
		fmt.Fprintf(out, "end to end: %s ×%.1f = %d records over %v partitions, %s %s, checkpoint every %d; broker %s\n",
			b.Data, float64(b.Records)/float64(len(msgs)), b.Records, b.Partitions, b.Learner, b.Kernel, b.CheckpointEvery, brokerWhere(b.InProcess))
	}
	if len(b.Snapshots) > 0 {
		fmt.Fprintf(out, "%-12s %10s %12s %14s %12s %14s %12s %10s %10s %8s %8s\n", "mode", "partitions", "records/s", "cpu µs/record", "peak RSS MB", "output B/record",
			"snap MB/s", "snapshots", "last MB", "support", "pending")
	} else {
		fmt.Fprintf(out, "%-12s %10s %12s %14s %12s %14s\n", "mode", "partitions", "records/s", "cpu µs/record", "peak RSS MB", "output B/record")
	}
}

func brokerWhere(inProcess bool) string {
	if inProcess {
		return "in process (its work counts as the service's)"
	}
	return "in a child process per run, the member in another"
}

// modes are the modes of each run, in order.
func (b *Bench) modes() []string {
	modes := []string{"passthrough", "learn"}
	switch {
	case len(b.Snapshots) > 0:
		modes = b.Snapshots
	case len(b.Compression) > 1:
		modes = modes[:0]
		for _, z := range b.Compression {
			modes = append(modes, "learn/"+z)
		}
	case b.ProcessingGuarantee == pipeline.ExactlyOnce:
		modes = []string{"learn", "exactly-once"}
	case b.LearnOnly:
		modes = modes[1:]
	}
	return modes
}

// measureOnce serves the records once in mode, prints its row (and its
// restore) and keeps its figures.
func (b *Bench) measureOnce(ctx context.Context, out io.Writer, fig *figures, mode string, run, parts int, msgs []kafka.Message) error {
	res, restore, err := b.Once(ctx, mode, run, parts, msgs, b.sampleRSS() && mode == "learn")
	if err != nil {
		return err
	}
	first := parts == b.Partitions[0]
	fig.keep(parts, mode, res)
	if first {
		fig.rates[mode] = append(fig.rates[mode], res.RecordsPerSecond())
		fig.cpus[mode] = append(fig.cpus[mode], float64(res.CPUPerRecord()))
		fig.outBytes[mode] = append(fig.outBytes[mode], float64(res.OutputBytes)/float64(res.Records))
		fig.snapRates[mode] = append(fig.snapRates[mode], res.SnapshotRate())
	}
	row := fmt.Sprintf("%-12s %10d %12.0f %14.2f %12.0f %14.1f", mode, parts, res.RecordsPerSecond(), float64(res.CPUPerRecord().Nanoseconds())/1e3, float64(res.PeakRSS)/(1<<20),
		float64(res.OutputBytes)/float64(res.Records))
	if len(b.Snapshots) > 0 {
		row += fmt.Sprintf(" %12.3f %10d %10.2f %8d %8d", res.SnapshotRate()/1e6, res.Snapshots, float64(res.SnapshotBytes)/1e6, res.Support, res.Pending)
	}
	if mode == "exactly-once" {
		// The member's transactions the brokers saw: one a commit
		// interval, whatever the partitions.
		row += fmt.Sprintf("  %d transactions, %.1f/s", res.Transactions, float64(res.Transactions)/res.Elapsed.Seconds())
	}
	fmt.Fprintln(out, row)
	switch {
	case restore != nil:
		fmt.Fprintf(out, "restore: %d records replayed in %.2f s; served again %.2f s after start (assigned after %.2f s; %d partitions replayed)\n",
			restore.Replayed, restore.ReplaySeconds, restore.Served.Seconds(), restore.Assigned.Seconds(), restore.Replays)
		fig.replayed = append(fig.replayed, float64(restore.Replayed))
		fig.replaySecs = append(fig.replaySecs, restore.ReplaySeconds)
		fig.servedAfter = append(fig.servedAfter, restore.Served.Seconds())
	case mode == "deferred" && b.InProcess && run == 0 && first:
		fmt.Fprintln(out, "restore: not measured with --in-process (a crash is a kill of the member's process, and this process holds the broker too)")
	}
	if mode == "learn" && first && !b.LearnOnly && b.ProcessingGuarantee != pipeline.ExactlyOnce {
		// Eval's round beside each pair of runs, not once at the
		// end: on a shared host the CPU a round costs drifts by
		// a quarter within minutes, and the target compares the
		// two.
		e, err := b.evalCPU(ctx)
		if err != nil {
			return err
		}
		fig.evals = append(fig.evals, float64(e))
	}
	if strings.HasPrefix(mode, "learn") {
		fig.lastLearn = res
		if fig.scale[parts] == nil {
			fig.scale[parts] = &scaleRow{}
		}
		fig.scale[parts].cpu = append(fig.scale[parts].cpu, float64(res.CPUPerRecord()))
		fig.scale[parts].rss = append(fig.scale[parts].rss, float64(res.PeakRSS))
	}
	return nil
}

func (b *Bench) evalCPU(ctx context.Context) (time.Duration, error) {
	if b.EvalCPU != nil {
		return b.EvalCPU(ctx)
	}
	return EvalCPU(ctx, b.Data, b.Learner, b.Kernel, 3)
}

// judge prints the verdicts of the modes measured.
func (b *Bench) judge(out io.Writer, fig *figures) error {
	if lo, hi := slices.Min(b.Partitions), slices.Max(b.Partitions); lo < hi && fig.scale[lo] != nil {
		if err := b.judgeScale(out, fig, lo, hi); err != nil {
			return err
		}
	}
	switch {
	case len(b.Compression) > 1:
		b.judgeCompression(out, fig)
		return nil
	case len(b.Snapshots) > 0:
		judgeSnapshots(out, fig)
		return nil
	case b.ProcessingGuarantee == pipeline.ExactlyOnce:
		for _, n := range counts(b.Partitions) {
			b.judgeExactlyOnce(out, n, fig.counts[n])
		}
		return nil
	}
	if !b.LearnOnly {
		judgeLearning(out, fig)
	}
	if b.sampleRSS() {
		half := int64(b.Records / 2)
		slope := Slope(fig.lastLearn.RSS, half)
		growth := slope * float64(b.Records-int(half))
		flat := "flat"
		if growth > 16<<20 {
			flat = "GROWING"
		}
		fmt.Fprintf(out, "resident memory, learning: peak %.0f MB; over the second half %+.1f MB (%.2f bytes/record): %s\n",
			float64(fig.lastLearn.PeakRSS)/(1<<20), growth/(1<<20), slope, flat)
	}
	return nil
}

// counts are the partition counts measured, each once, in bench's order.
func counts(parts []int) []int {
	var out []int
	for _, n := range parts {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// judgeExactlyOnce judges exactly-once against at-least-once at one
// partition count: CPU a record and records/s, the median of each pair
// of alternated runs' ratio (so that a drifting host weighs on both
// alike), and the transactions the broker saw a second, which must not
// grow with the partitions.
func (b *Bench) judgeExactlyOnce(out io.Writer, n int, runs map[string]*countRuns) {
	eos, alo := runs["exactly-once"], runs["learn"]
	if eos == nil || alo == nil {
		return
	}
	var cpus, rates []float64
	for i := range min(len(eos.cpus), len(alo.cpus)) {
		cpus = append(cpus, eos.cpus[i]/alo.cpus[i])
		rates = append(rates, eos.rates[i]/alo.rates[i])
	}
	cpu, rate := median(cpus), median(rates)
	fmt.Fprintf(out, "exactly-once/at-least-once at %d partitions: CPU %.2f / %.2f µs a record = %.2f (target ≤ %.2f: %s); %.0f / %.0f records/s = %.2f (target ≥ %.2f: %s)\n",
		n, median(eos.cpus)/1e3, median(alo.cpus)/1e3, cpu, exactlyOnceCPUTarget, verdict(cpu <= exactlyOnceCPUTarget),
		median(eos.rates), median(alo.rates), rate, exactlyOnceTarget, verdict(rate >= exactlyOnceTarget))
	// A round opens a commit interval after the last, or sooner when a
	// partition reached --checkpoint-every records: at most one member
	// ÷ the interval plus records/s ÷ --checkpoint-every, neither of
	// which grows with the partitions.
	bound := 1/commitInterval.Seconds() + median(eos.rates)/float64(b.CheckpointEvery)
	txns := median(eos.txns)
	fmt.Fprintf(out, "transactions at %d partitions: %.1f/s (target ≤ 1 member ÷ %v + %.0f records/s ÷ --checkpoint-every %d = %.1f/s: %s)\n",
		n, txns, commitInterval, median(eos.rates), b.CheckpointEvery, bound, verdict(txns <= bound))
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "NOT met"
}

// judgeScale judges many partitions per member (issue 25): CPU per record
// within partitionCPUTarget of the fewest partitions', and memory within
// the models plus partitionRSSTarget a partition more, and within
// partitionRSSGrowth in all (issue 45), at every count against the
// fewest.
func (b *Bench) judgeScale(out io.Writer, fig *figures, lo, hi int) error {
	mem, err := learners.EstimateMemory(b.Learner, b.Kernel, learners.Data{NNZ: 14})
	if err != nil {
		return err
	}
	for _, n := range counts(b.Partitions) {
		if n > lo && fig.scale[n] != nil {
			b.judgeScaleAt(out, fig.scale[lo], fig.scale[n], mem, lo, n)
		}
	}
	// The member-wide budgets (--fetch-max-bytes, --flush-max-bytes)
	// are a fixed part of memory, but a few partitions do not fill
	// them: each fetches at most --fetch-partition-max-bytes and
	// flushes at --flush-records. From the next count on they are
	// full, and what grows is the partitions' own.
	scale := fig.scale
	if mid := slices.Max(slices.DeleteFunc(slices.Clone(b.Partitions), func(n int) bool { return n == hi })); mid > lo && scale[mid] != nil {
		rh, rm := median(scale[hi].rss), median(scale[mid].rss)
		allowed := float64(hi-mid) * float64(mem.Held+partitionRSSTarget)
		fmt.Fprintf(out, "peak RSS, %d partitions − %d (the member's budgets full at both): %.0f − %.0f MB = %+.1f MB, %.0f kB a partition (target ≤ model %.0f kB + %d kB: %s)\n",
			hi, mid, rh/(1<<20), rm/(1<<20), (rh-rm)/(1<<20), (rh-rm)/float64(hi-mid)/1e3, float64(mem.Held)/1e3, partitionRSSTarget/1000, verdict(rh-rm <= allowed))
	}
	return nil
}

// judgeScaleAt judges n partitions against the fewest, lo.
func (b *Bench) judgeScaleAt(out io.Writer, low, high *scaleRow, mem learners.Memory, lo, n int) {
	cl, ch := median(low.cpu), median(high.cpu)
	fmt.Fprintf(out, "CPU per record, %d partitions / %d: %.2f / %.2f µs = %.2f (target ≤ %.1f: %s)\n", n, lo, ch/1e3, cl/1e3, ch/cl, partitionCPUTarget, verdict(ch <= partitionCPUTarget*cl))
	rl, rh := median(low.rss), median(high.rss)
	// --fetch-max-bytes is part of the fixed base, but lo partitions
	// cannot fill it: each holds at most its partition share. What
	// they leave unfilled is allowed on top of the partitions' own.
	// (The flush budget, which lo partitions do not fill either, is
	// not: the target stays on the safe side.)
	fetchMax, fetchPart := (&pipeline.Config{FetchMaxBytes: b.FetchMaxBytes, FetchPartitionMaxBytes: b.FetchPartitionMaxBytes}).FetchBudgets()
	unfilled := max(fetchMax-lo*fetchPart, 0)
	allowed := float64(n-lo)*float64(mem.Held+partitionRSSTarget) + float64(unfilled)
	fmt.Fprintf(out, "peak RSS, %d partitions − %d: %.0f − %.0f MB = %+.1f MB (target ≤ %d × (model %.0f kB + %d kB) + the %.1f MB of --fetch-max-bytes %d partitions leave unfilled = %.1f MB: %s; target ≤ %+.0f MB in all: %s)\n",
		n, lo, rh/(1<<20), rl/(1<<20), (rh-rl)/(1<<20), n-lo, float64(mem.Held)/1e3, partitionRSSTarget/1000, float64(unfilled)/(1<<20), lo, allowed/(1<<20), verdict(rh-rl <= allowed),
		float64(partitionRSSGrowth)/(1<<20), verdict(rh-rl <= partitionRSSGrowth))
}

// judgeCompression judges each codec against the first, run by run
// (alternated, so a drifting host weighs on both alike).
func (b *Bench) judgeCompression(out io.Writer, fig *figures) {
	rates, cpus, outBytes := fig.rates, fig.cpus, fig.outBytes
	base := "learn/" + b.Compression[0]
	for _, z := range b.Compression[1:] {
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
			z, b.Compression[0], float64(cost.Nanoseconds())/1e3, compressionCPUTarget.Seconds()*1e6, verdict,
			median(outBytes[base]), median(outBytes[mode]), median(outBytes[mode])/median(outBytes[base]), median(rates[base]), median(rates[mode]))
	}
}

// judgeSnapshots judges the deferred snapshots' bytes a second against
// every commit's, and sums up the restores.
func judgeSnapshots(out io.Writer, fig *figures) {
	rates := fig.rates
	if every, deferred := fig.snapRates["every-commit"], fig.snapRates["deferred"]; len(every) > 0 && len(deferred) > 0 {
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
	if len(fig.replayed) > 1 {
		fmt.Fprintf(out, "restores (medians of %d): %.0f records replayed in %.2f s; served again %.2f s after start\n",
			len(fig.replayed), median(fig.replayed), median(fig.replaySecs), median(fig.servedAfter))
	}
}

// judgeLearning judges learning against pass-through: its records/s,
// its CPU against eval's, and pass-through's CPU.
func judgeLearning(out io.Writer, fig *figures) {
	rates, cpus, evals := fig.rates, fig.cpus, fig.evals
	learn, pass := median(rates["learn"]), median(rates["passthrough"])
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
