package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestEvalStreamsInFlatMemory: one pass in file order over a file four
// times as long takes the same memory. Each eval is a process of its own,
// its peak RSS the kernel's count; the records are a9a-like (14 binary
// features of 123, about 100 bytes a line), and a loaded pass held about
// 350 bytes a record (1.2 GB for 3.26 million a9a records).
func TestEvalStreamsInFlatMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 50 MB and runs eval twice")
	}
	bin := testBinary(t)
	dir := t.TempDir()
	write := func(n int) string {
		path := filepath.Join(dir, fmt.Sprintf("synth-%d.libsvm", n))
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		r := rand.New(rand.NewPCG(uint64(n), 7))
		for range n {
			fmt.Fprint(w, []string{"+1", "-1"}[r.IntN(2)])
			for k := range 14 {
				fmt.Fprintf(w, " %d:1", 1+k*8+r.IntN(8))
			}
			w.WriteByte('\n')
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return path
	}
	peak := func(path string) int64 {
		cmd := exec.Command(bin, "eval", "--data", path, "--keep-order", "--learner", "perceptron:max=1", "--kernel", "linear")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "perceptron") {
			t.Fatalf("eval: %v\n%s", err, out)
		}
		return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB
	}
	small, large := peak(write(125_000)), peak(write(500_000))
	t.Logf("peak RSS: %d KiB for 125,000 records, %d KiB for 500,000", small, large)
	// 375,000 more records held would be 125 MB more.
	if large > small+16<<10 || large > 100<<10 {
		t.Errorf("peak RSS grew from %d KiB to %d KiB with the file: the pass keeps the data", small, large)
	}
}
