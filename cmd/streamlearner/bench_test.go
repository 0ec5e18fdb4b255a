package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
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
	// One partition's peak is steady in a fresh process (within 3 MB here);
	// in one process it rose with every run: 60, 67, 68, 69, 73 MB.
	if p := peaks[1]; slices.Max(p)-slices.Min(p) > 5 {
		t.Errorf("1 partition: peak RSS %v MB over five runs, 256-partition runs between them", p)
	}
	if !strings.Contains(text, "CPU per record, 256 partitions / 1:") || !strings.Contains(text, "peak RSS, 256 partitions − 1:") {
		t.Errorf("no verdict lines:\n%s", text)
	}
	t.Logf("peak RSS, MB: %v", peaks)
}
