package progress

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

func TestLine(t *testing.T) {
	l := Line("eval", 500, 1000, 2*time.Second)
	for _, want := range []string{"eval [===============               ]", " 50.0%", "250/s", "eta 2s"} {
		if !strings.Contains(l, want) {
			t.Errorf("%q lacks %q", l, want)
		}
	}
	// A total not known yet (a file still being read): no percentage, no
	// estimate, the count and the rate.
	if l := Line("eval", 47103, 0, time.Second); strings.Contains(l, "%") || strings.Contains(l, "eta") || !strings.Contains(l, "eval 47.1k records 47.1k/s") {
		t.Errorf("unknown total: %q", l)
	}
}

// A nil bar (what New gives without a file) and the zero Bar are
// inactive: they write nothing, to the standard error either, and do not
// fail.
func TestInactiveBarIsSilent(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	defer func() { os.Stderr = saved }()
	if b := New(nil, "eval"); b != nil {
		t.Errorf("New(nil) = %v, want nil", b)
	}
	var none *Bar
	var zero Bar
	for _, b := range []*Bar{none, &zero} {
		b.Update(1, 2)
		b.Update(2, 2)
		b.Done()
	}
	os.Stderr = saved
	w.Close()
	if out, _ := io.ReadAll(r); len(out) != 0 {
		t.Errorf("an inactive bar wrote %q", out)
	}
}

// Off a terminal (a log, a pipe) a long command printed nothing until it
// was done; it writes a plain line every LogEvery, none before.
func TestBarOffATerminalWritesLogLines(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved := LogEvery
	defer func() { LogEvery = saved }()
	LogEvery = time.Hour
	b := New(f, "eval")
	b.Update(10, 1000) // before LogEvery: nothing
	LogEvery = 0
	b.Update(500, 1000)
	b.Update(2000, 0)
	b.Done()
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "streamlearner: eval: 500 of 1.0k records (50.0%), ") || !strings.Contains(lines[0], "/s, eta ") ||
		!strings.HasPrefix(lines[1], "streamlearner: eval: 2.0k records, ") || strings.ContainsAny(string(got), "\r\033") {
		t.Errorf("log lines:\n%q", got)
	}
}
