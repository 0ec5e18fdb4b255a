package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/internal/dev/benchrun"
)

// TestBenchMeasuresEachRunInAProcessOfItsOwn runs bench as users do. Each
// run's member is a bench-serve process of its own, so that a run's peak
// memory is not what an earlier run left in the process: the same
// configuration measures the same peak, run after run, whatever ran in
// between (at 300,000 records, in one process, a 256-partition run left
// the next 4-partition peak 7–16 MB higher).
func TestBenchMeasuresEachRunInAProcessOfItsOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("brokers and members as processes; seconds")
	}
	bin := testBinary(t)
	cmd := exec.Command(bin, "bench", "--data", "../../testdata/a9a.gz", "--records", "20000", "--runs", "5", "--partitions", "1,256", "--learn-only")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench: %v\n%s\n%s", err, out.String(), stderr.String())
	}
	text := out.String()
	peaks := map[int][]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 6 || f[0] != "learn" {
			continue
		}
		parts, err1 := strconv.Atoi(f[1])
		rate, err2 := strconv.ParseFloat(f[2], 64)
		cpu, err3 := strconv.ParseFloat(f[3], 64)
		peak, err4 := strconv.ParseFloat(f[4], 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || rate <= 0 || cpu <= 0 || peak <= 0 {
			t.Fatalf("row %q", sc.Text())
		}
		peaks[parts] = append(peaks[parts], peak)
	}
	if len(peaks[1]) != 5 || len(peaks[256]) != 5 {
		t.Fatalf("rows for 1 and 256 partitions: %v\n%s", peaks, text)
	}
	// One partition's peak is steady in a fresh process; in one process
	// it rose with every run: 60, 67, 68, 69, 73 MB. What is judged is
	// that rise, the last run against the first: a fresh process's peak
	// wanders by up to 6 MB from run to run on a loaded machine (51, 46,
	// 52, 46, 47 in one CI run), which a bound on the spread took for it.
	if p := peaks[1]; p[len(p)-1]-p[0] > 8 {
		t.Errorf("1 partition: peak RSS %v MB over five runs, 256-partition runs between them: it grows", p)
	}
	if !strings.Contains(text, "CPU per record, 256 partitions / 1:") || !strings.Contains(text, "peak RSS, 256 partitions − 1:") {
		t.Errorf("no verdict lines:\n%s", text)
	}
	t.Logf("peak RSS, MB: %v", peaks)
}

// TestBenchSnapshots runs `bench --snapshots every-commit,deferred` as
// users do: a commit every 500 records of a partition, so that
// every-commit saves a snapshot many times a run, and a max rate of
// 1,000 bytes a second, so that deferred saves one of ~10 kB (B = 100)
// once a partition in a run of under a second. The deferred member is
// killed at its end: its successor replays what came after its snapshot.
func TestBenchSnapshots(t *testing.T) {
	if testing.Short() {
		t.Skip("brokers and members as processes; a restore waits for the killed member's session (10 s)")
	}
	bin := testBinary(t)
	cmd := exec.Command(bin, "bench", "--data", "../../testdata/a9a.gz", "--records", "20000", "--partitions", "2",
		"--checkpoint-every", "500", "--snapshot-max-rate", "1000", "--snapshots", "every-commit,deferred")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench: %v\n%s\n%s", err, out.String(), stderr.String())
	}
	text := out.String()
	type row struct {
		perRecord float64 // snapshot bytes written a record: MB/s over records/s
		snapshots int
	}
	rows := map[string]row{}
	var replayed int
	var replaySecs, served float64
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if _, err := fmt.Sscanf(line, "restore: %d records replayed in %g s; served again %g s after start", &replayed, &replaySecs, &served); err == nil {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 11 || (f[0] != "every-commit" && f[0] != "deferred") {
			continue
		}
		perSec, err0 := strconv.ParseFloat(f[2], 64)
		rate, err1 := strconv.ParseFloat(f[6], 64)
		n, err2 := strconv.Atoi(f[7])
		if err0 != nil || err1 != nil || err2 != nil || perSec <= 0 {
			t.Fatalf("row %q", line)
		}
		rows[f[0]] = row{rate * 1e6 / perSec, n}
	}
	every, ok1 := rows["every-commit"]
	deferred, ok2 := rows["deferred"]
	if !ok1 || !ok2 || every.snapshots == 0 {
		t.Fatalf("no rows of both modes, or every-commit without snapshots:\n%s", text)
	}
	// Every commit (20 a partition) against none: at 1,000 B/s no
	// snapshot is due within the run, and commits name the new models'
	// bases (docs/architecture.md §3).
	// Compared by the record, not the second: on a loaded machine one
	// run can take ten times the other's time, and a rate a second then
	// says how fast the run went, not what it wrote.
	if deferred.snapshots >= every.snapshots || deferred.perRecord >= every.perRecord {
		t.Errorf("deferred wrote %d snapshots, %.1f B a record; every-commit %d, %.1f B a record:\n%s", deferred.snapshots, deferred.perRecord, every.snapshots, every.perRecord, text)
	}
	// The records from the new models' bases up to the last commit were
	// replayed: most of the 20,000.
	if replayed <= 0 || replaySecs <= 0 || served <= 0 {
		t.Errorf("restore: %d records replayed in %g s, served after %g s:\n%s", replayed, replaySecs, served, text)
	}
	if !strings.Contains(text, "snapshots, deferred/every-commit: ") {
		t.Errorf("no ratio line:\n%s", text)
	}
	t.Logf("\n%s", text)
}

// TestBenchHeapProfile: with STREAMLEARNER_BENCH_HEAP_PROFILE set, each
// partition count's member writes a heap profile (a gzipped protocol
// buffer, as pprof reads), named after the count; unset, none.
func TestBenchHeapProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("brokers and members as processes; seconds")
	}
	bin := testBinary(t)
	dir := t.TempDir()
	for _, env := range []string{"", filepath.Join(dir, "heap")} {
		cmd := exec.Command(bin, "bench", "--data", "../../testdata/a9a.gz", "--records", "2000", "--partitions", "1,8", "--learn-only")
		cmd.Env = append(os.Environ(), heapProfileEnv+"="+env)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("bench: %v\n%s", err, out)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 2 {
		t.Fatalf("profiles %v, want heap.1 and heap.8", files)
	}
	for _, n := range []string{"1", "8"} {
		b, err := os.ReadFile(filepath.Join(dir, "heap."+n))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("heap.%s: %v", n, err)
		}
		pb, err := io.ReadAll(zr)
		if err != nil || !bytes.Contains(pb, []byte("inuse_space")) {
			t.Errorf("heap.%s: %v, %d bytes, no inuse_space", n, err, len(pb))
		}
	}
}

// TestBenchCPUProfileOfEachRun: with STREAMLEARNER_BENCH_CPU_PROFILE set,
// the pass-through run and the learning run of a partition count write
// profiles of their own (the learning run's overwrote the other's).
func TestBenchCPUProfileOfEachRun(t *testing.T) {
	if testing.Short() {
		t.Skip("brokers and members as processes; seconds")
	}
	bin := testBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "bench", "--data", "../../testdata/a9a.gz", "--records", "2000", "--partitions", "2")
	cmd.Env = append(os.Environ(), cpuProfileEnv+"="+filepath.Join(dir, "cpu"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	for _, n := range []string{"cpu.2", "cpu.2.pass"} {
		if fi, err := os.Stat(filepath.Join(dir, n)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", n, err)
		}
	}
}

// TestBenchRebalanceMembersUseTheStoreAsked: --checkpoint-store topic
// runs the rebalance members on a checkpoint topic, as members on several
// machines are, and the default on a directory.
func TestBenchRebalanceMembersUseTheStoreAsked(t *testing.T) {
	spec := benchrun.MemberSpec{Name: "a", Broker: "127.0.0.1:1", Topic: "in", OutputTopic: "out", Group: "g", Dir: "/d"}
	for store, want := range map[string]string{"dir": "--checkpoint-dir /d/checkpoints", "topic": "--checkpoint-topic in.checkpoints"} {
		c := &benchCmd{CheckpointStore: store}
		args := strings.Join(c.memberArgs(spec), " ")
		if !strings.HasSuffix(args, want) || strings.Count(args, "--checkpoint-") != 1 {
			t.Errorf("--checkpoint-store %s: %s", store, args)
		}
	}
}
