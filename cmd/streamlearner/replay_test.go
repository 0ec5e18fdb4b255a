package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/embedded"
	"github.com/streamlearner/streamlearner/replay"
)

func TestGenThenReplayFromHeaders(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := execute(t, "gen", "sea", "--n", "4000", "--shifts", "3", "--brokers", b.Addr(), "--topic", "sea", "--auto-create"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	report, plot := filepath.Join(dir, "r.json"), filepath.Join(dir, "p.svg")
	out, err := execute(t, "replay", "--brokers", b.Addr(), "--topic", "sea", "--kernel", "rbf:gamma=0.1",
		"--learner", "perceptron", "--learner", "lbp:budget=50", "--shifts", "from-headers", "--window", "200",
		"--detector", "page-hinkley", "--report", report, "--plot", plot)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"perceptron", "lbp:budget=50", "page-hinkley"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	var rep replay.Report
	b2, err := os.ReadFile(report)
	if err != nil || json.Unmarshal(b2, &rep) != nil {
		t.Fatalf("report: %v", err)
	}
	// gen sea cuts 4000 records into four equal segments.
	p := rep.Partitions[0]
	if p.Rounds != 4000 || len(p.Shifts) != 3 || p.Shifts[0].Round != 1000 || p.Shifts[2].Round != 3000 {
		t.Fatalf("rounds %d shifts %+v", p.Rounds, p.Shifts)
	}
	l := p.Learners[1]
	if len(l.Segments) != 4 || len(l.Recovery) != 3 || len(l.Detectors) != 1 || l.Detectors[0].Name != "page-hinkley" || l.SupportMax != 50 {
		t.Fatalf("lbp report: %d segments, %d recoveries, detectors %+v, support max %d", len(l.Segments), len(l.Recovery), l.Detectors, l.SupportMax)
	}
	if svg, err := os.ReadFile(plot); err != nil || !strings.Contains(string(svg), "<svg") {
		t.Fatalf("plot: %v", err)
	}

	// Bad flags fail before any reading.
	for _, args := range [][]string{
		{"--shifts", "10,5"}, {"--shifts", "x"}, {"--plot", "p.gif"}, {"--detector", "cusum"},
	} {
		base := []string{"replay", "--brokers", b.Addr(), "--topic", "sea", "--kernel", "linear", "--learner", "perceptron"}
		if _, err := execute(t, append(base, args...)...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
