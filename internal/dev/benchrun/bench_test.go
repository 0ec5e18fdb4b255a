package benchrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/internal/golden"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/pipeline"
)

// fakeOnce measures nothing: its figures follow from the run, so that
// the rows, the medians and the verdicts are the same at every run of
// the test. It logs each call to calls.
func fakeOnce(b *Bench, calls *bytes.Buffer) func(context.Context, string, int, int, []kafka.Message, bool) (Result, *RestoreResult, error) {
	return func(_ context.Context, mode string, run, parts int, msgs []kafka.Message, sampleRSS bool) (Result, *RestoreResult, error) {
		fmt.Fprintf(calls, "once %s run %d partitions %d messages %d sample %v\n", mode, run, parts, len(msgs), sampleRSS)
		if mode == "fail" {
			return Result{}, nil, errors.New("the run failed")
		}
		k := time.Duration(1 + run + 2*parts + len(mode))
		res := Result{Records: 20000, Elapsed: k * 97 * time.Millisecond, CPU: k * 41 * time.Millisecond,
			PeakRSS: int64(40+3*parts+run+len(mode)) << 20, OutputBytes: int64(17+len(mode)) * 20011,
			CheckpointWritten: int64(len(mode)) * 1_000_003 * int64(1+run), Snapshots: 3*len(mode) + run, SnapshotBytes: 12_345 * int64(parts),
			Support: 100 - parts, Pending: parts * run}
		if mode == "exactly-once" {
			res.Transactions = parts * (run + 1)
		}
		if sampleRSS {
			for i := range int64(10) {
				res.RSS = append(res.RSS, RSSSample{At: time.Duration(i) * time.Second, Done: i * int64(b.Records) / 10, RSS: (50 << 20) + i*i*(3<<20)})
			}
		}
		var restore *RestoreResult
		if mode == "deferred" && !b.InProcess {
			restore = &RestoreResult{Replayed: int64(1000 * (parts + run)), ReplaySeconds: 0.25 * float64(1+run), Served: time.Duration(10+run) * time.Second,
				Assigned: 9 * time.Second, Replays: parts}
		}
		return res, restore, nil
	}
}

// TestMeasurePinned pins what bench prints in every mode, the verdicts
// met and not, and its refusals, over measurements made up by fakeOnce.
func TestMeasurePinned(t *testing.T) {
	k, err := learners.ParseKernel("rbf:gamma=0.01")
	if err != nil {
		t.Fatal(err)
	}
	base := Bench{Data: "../../../testdata/a9a.gz", Records: 20000, Partitions: []int{4}, Learner: "rbp:budget=100", Kernel: k,
		CheckpointEvery: 10000, Runs: 1, ProcessingGuarantee: pipeline.AtLeastOnce, Compression: []string{"lz4"}}
	cases := []struct {
		name string
		edit func(*Bench)
	}{
		{"default", func(b *Bench) { b.Partitions, b.Runs = []int{1, 2, 3}, 2 }},
		{"scale-two", func(b *Bench) {
			b.Partitions, b.LearnOnly, b.FetchMaxBytes, b.FetchPartitionMaxBytes = []int{64, 4}, true, 1<<20, 1<<18
		}},
		{"rss", func(b *Bench) { b.Records, b.InProcess = 10_000_000, true }},
		{"compression", func(b *Bench) { b.Compression, b.Runs = []string{"none", "lz4", "zstd"}, 3 }},
		{"exactly-once", func(b *Bench) { b.ProcessingGuarantee, b.Runs, b.Partitions = pipeline.ExactlyOnce, 2, []int{4, 64, 4} }},
		{"snapshots", func(b *Bench) { b.Snapshots, b.Runs = []string{"every-commit", "deferred"}, 2 }},
		{"snapshots-in-process", func(b *Bench) { b.Snapshots, b.InProcess, b.Partitions = []string{"deferred"}, true, []int{2, 1} }},
		{"delayed", func(b *Bench) { b.DelayedLabels, b.LearnOnly, b.Records = true, true, 2000 }},
		{"bad-snapshots", func(b *Bench) { b.Snapshots = []string{"every-commit", "sometimes"} }},
		{"delayed-pass-through", func(b *Bench) { b.DelayedLabels = true }},
		{"no-partitions", func(b *Bench) { b.Partitions = []int{2, 0} }},
		{"no-data", func(b *Bench) { b.Data = "testdata/nosuch.gz" }},
		{"failed-run", func(b *Bench) { b.Compression = []string{"lz4", "fail"} }},
		{"failed-eval", func(b *Bench) {
			b.EvalCPU = func(context.Context) (time.Duration, error) { return 0, errors.New("eval failed") }
		}},
	}
	var out bytes.Buffer
	for _, c := range cases {
		b := base
		b.EvalCPU = func(context.Context) (time.Duration, error) { return 1570 * time.Nanosecond, nil }
		c.edit(&b)
		var calls, printed bytes.Buffer
		b.Once = fakeOnce(&b, &calls)
		if c.name == "failed-run" { // the second mode's run fails
			b.Once = func(ctx context.Context, mode string, run, parts int, msgs []kafka.Message, sample bool) (Result, *RestoreResult, error) {
				if mode == "learn/fail" {
					mode = "fail"
				}
				return fakeOnce(&b, &calls)(ctx, mode, run, parts, msgs, sample)
			}
		}
		err := b.Measure(context.Background(), &printed)
		fmt.Fprintf(&out, "== %s\n%s%serr: %v\n", c.name, calls.String(), printed.String(), err)
	}
	golden.Check(t, "measure.golden", out.Bytes())
}
