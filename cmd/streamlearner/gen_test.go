package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/dev/synth"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkatest"
	"github.com/streamlearner/streamlearner/internal/replay"
)

func readSidecar(t *testing.T, path string) synth.ShiftsFile {
	t.Helper()
	b, err := os.ReadFile(path + ".shifts.json")
	if err != nil {
		t.Fatal(err)
	}
	var sc synth.ShiftsFile
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return sc
}

// segmentOf is the segment position i belongs to according to a sidecar.
func segmentOf(sc synth.ShiftsFile, i int) int {
	k := 0
	for _, s := range sc.Shifts {
		if int64(i) >= s {
			k++
		}
	}
	return k
}

func TestGenSEAFileAndSidecar(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sea")
	if _, err := execute(t, "gen", "sea", "--n", "400", "--noise", "0", "--thresholds", "8,9", "-o", path); err != nil {
		t.Fatal(err)
	}
	sc := readSidecar(t, path)
	if sc.Generator != "sea" || sc.N != 400 || !slices.Equal(sc.Shifts, []int64{100, 200, 300}) || len(sc.Segments) != 4 {
		t.Fatalf("sidecar %+v", sc)
	}
	set, err := dataset.Load(context.Background(), path, dataset.Options{})
	if err != nil || set.Len() != 400 || set.Dim != 3 {
		t.Fatalf("%v %+v", err, set)
	}
	thetas := []float64{8, 9, 8, 9}
	for k, seg := range sc.Segments {
		if want := fmt.Sprintf("theta=%g", thetas[k]); seg.Concept != want || (k > 0 && seg.Start != sc.Shifts[k-1]) {
			t.Fatalf("segment %d = %+v, want concept %s", k, seg, want)
		}
	}
	for i := range set.Len() {
		x := set.X[i].Dense(3)
		want := -1
		if x[0]+x[1] <= thetas[segmentOf(sc, i)] {
			want = 1
		}
		if set.Y[i] != want {
			t.Fatalf("record %d %v: label %d, segment %d's theta says %d", i, x, set.Y[i], segmentOf(sc, i), want)
		}
	}
}

func TestGenStationaryFileHasEmptyShifts(t *testing.T) {
	for _, args := range [][]string{
		{"gen", "checkerboard", "--n", "50"},
		{"gen", "gauss", "--n", "50"},
		{"gen", "hyperplane", "--n", "50"},
		{"gen", "checkerboard", "--n", "50", "--drift", "gradual"},
	} {
		path := filepath.Join(t.TempDir(), "s")
		if _, err := execute(t, append(args, "-o", path)...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		b, _ := os.ReadFile(path + ".shifts.json")
		if !strings.Contains(string(b), `"shifts":[]`) || !strings.Contains(string(b), `"generator":"`+args[1]+`"`) {
			t.Errorf("%v: sidecar %s", args, b)
		}
	}
}

// multiClass is a small multi-class fixture: 12 records, classes 1 (×5), 2
// (×4), 3 (×3), with sparse features that must be passed through.
const multiClass = `1 1:0.5 7:2
2 3:1
1 2:-1
3 1:4 5:5
2 7:0.25
1 1:1
3 2:2
2 4:4
1 6:6
1 3:3
2 1:1
3 5:1
`

func TestGenChunks(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "multi.libsvm")
	if err := os.WriteFile(data, []byte(multiClass), 0o600); err != nil {
		t.Fatal(err)
	}
	in := strings.Split(strings.TrimSpace(multiClass), "\n")
	run := func(args ...string) ([]string, synth.ShiftsFile) {
		t.Helper()
		out := filepath.Join(dir, "chunks")
		if _, err := execute(t, append([]string{"gen", "chunks", "--data", data, "-o", out}, args...)...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n"), readSidecar(t, out)
	}
	check := func(lines []string, sc synth.ShiftsFile, targets [][]string) {
		t.Helper()
		for i, line := range lines {
			class, feats, _ := strings.Cut(in[i], " ")
			label, gotFeats, _ := strings.Cut(line, " ")
			want := "-1"
			if slices.Contains(targets[segmentOf(sc, i)], class) {
				want = "+1"
			}
			if label != want || gotFeats != feats {
				t.Fatalf("record %d (%s): %q, want label %s and features %q", i, in[i], line, want, feats)
			}
		}
	}

	// Default targets: the most frequent classes, each alone.
	lines, sc := run("--chunks", "3")
	if len(lines) != 12 || sc.Generator != "chunks" || sc.N != 12 || !slices.Equal(sc.Shifts, []int64{4, 8}) {
		t.Fatalf("%d lines, sidecar %+v", len(lines), sc)
	}
	if sc.Segments[0].Concept != "target=1" || sc.Segments[1].Concept != "target=2" || sc.Segments[2].Concept != "target=3" {
		t.Fatalf("segments %+v", sc.Segments)
	}
	check(lines, sc, [][]string{{"1"}, {"2"}, {"3"}})

	// Groups, cycled over four chunks, on the first 8 records.
	lines, sc = run("--chunks", "4", "--targets", "1+3,2", "--limit", "8")
	if len(lines) != 8 || !slices.Equal(sc.Shifts, []int64{2, 4, 6}) || sc.Segments[2].Concept != "target=1+3" {
		t.Fatalf("%d lines, sidecar %+v", len(lines), sc)
	}
	check(lines, sc, [][]string{{"1", "3"}, {"2"}, {"1", "3"}, {"2"}})

	for _, bad := range [][]string{{"--targets", "1,,2"}, {"--targets", "1+"}, {"--targets", "9"}, {"--chunks", "13"}, {"--chunks", "0"}} {
		if _, err := execute(t, append([]string{"gen", "chunks", "--data", data}, bad...)...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestGenToTopic(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 3, Topics: []string{"drift"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	args := []string{"gen", "gauss", "--n", "1200", "--shifts", "3", "--drift", "gradual", "--width", "100", "--seed", "5"}
	var genErr error
	// --no-spread: one ordered stream in partition 0.
	summary := captureStderr(t, func() {
		_, genErr = execute(t, append(args, "--brokers", b.Addr(), "--topic", "drift", "--no-spread")...)
	})
	if genErr != nil {
		t.Fatal(genErr)
	}
	if !strings.Contains(summary, "1200 records to topic drift partition 0 of 3, the others untouched") {
		t.Errorf("summary %q does not say which partition", summary)
	}
	path := filepath.Join(t.TempDir(), "g")
	if _, err := execute(t, append(args, "-o", path)...); err != nil {
		t.Fatal(err)
	}
	sc := readSidecar(t, path)
	set, err := dataset.Load(context.Background(), path, dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sc.Shifts, []int64{300, 600, 900}) {
		t.Fatalf("sidecar %+v", sc)
	}

	// Everything is on partition 0, in order, the same records as the file.
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b.Addr()}, Topic: "drift", Partition: 0, MaxWait: 500 * time.Millisecond})
	defer kafkatest.CloseReader(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var segs []int
	for i := range 1200 {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		ex, err := codec.DecodeJSON(m.Value, codec.Limits{})
		if err != nil {
			t.Fatalf("record %d %s: %v", i, m.Value, err)
		}
		y, _, err := codec.LabelMap{}.Map(ex.Label)
		if err != nil || y != set.Y[i] || !slices.Equal(ex.X.Dense(2), set.X[i].Dense(2)) {
			t.Fatalf("record %d = %s, file has %d %v", i, m.Value, set.Y[i], set.X[i])
		}
		var seg []string
		for _, h := range m.Headers {
			if h.Key == replay.SegmentHeader {
				seg = append(seg, string(h.Value))
			}
		}
		if len(seg) != 1 {
			t.Fatalf("record %d headers %v", i, m.Headers)
		}
		k, err := strconv.Atoi(seg[0])
		if err != nil || k < 0 || k > 3 {
			t.Fatalf("record %d segment header %q", i, seg[0])
		}
		segs = append(segs, k)
	}
	// Gradual: the segment header is the concept drawn from, old before each
	// window (centre ± 50), new after it, one of the two inside.
	for i, k := range segs {
		want := []int{segmentOf(sc, i)}
		for j, c := range sc.Shifts {
			if int64(i) >= c-50 && int64(i) < c+50 {
				want = []int{j, j + 1}
			}
		}
		if !slices.Contains(want, k) {
			t.Fatalf("record %d has segment %d, want one of %v", i, k, want)
		}
	}
	// Nothing more on partition 0, nothing on the others.
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	if m, err := r.ReadMessage(short); err == nil {
		t.Fatalf("extra record %s", m.Value)
	}
	for p := 1; p < 3; p++ {
		conn, err := kafka.DialLeader(ctx, "tcp", b.Addr(), "drift", p)
		if err != nil {
			t.Fatal(err)
		}
		last, err := conn.ReadLastOffset()
		conn.Close()
		if err != nil || last != 0 {
			t.Fatalf("partition %d holds %d records (%v)", p, last, err)
		}
	}

	// By default, as a producer would, and with --spread, every partition
	// gets records, and the summary says so.
	for i, spread := range [][]string{nil, {"--spread"}} {
		topic := fmt.Sprintf("spread%d", i)
		summary = captureStderr(t, func() {
			_, genErr = execute(t, append([]string{"gen", "sea", "--n", "30", "--brokers", b.Addr(), "--topic", topic, "--auto-create"}, spread...)...)
		})
		if genErr != nil || !strings.Contains(summary, "30 records to topic "+topic+" partitions 0, 1, 2 of 3 (round-robin)") {
			t.Errorf("%v: %v, summary %q", spread, genErr, summary)
		}
	}

	// A cancelled context stops production with an error.
	cctx, stop := context.WithCancel(context.Background())
	stop()
	if _, err := executeCtx(t, cctx, "gen", "sea", "--n", "10", "--brokers", b.Addr(), "--topic", "drift"); err == nil {
		t.Fatal("cancelled gen succeeded")
	}
}

func TestGenRejectsBadInvocations(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"gen", "sea", "-o", "x", "--topic", "t", "--brokers", "127.0.0.1:1"}, "not both"},
		{[]string{"gen", "sea", "--topic", "t"}, "--brokers"},
		{[]string{"gen", "checkerboard", "--drift", "abrupt", "--shifts", "0"}, "--shifts"},
		{[]string{"gen", "gauss", "--shifts", "3", "--drift", "gradual", "--width", "5000"}, "window"},
		{[]string{"gen", "sea", "--n", "3", "--shifts", "3"}, "shifts"},
		{[]string{"gen", "hyperplane", "--drift-features", "11"}, "DriftFeatures"},
	} {
		_, err := execute(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one mentioning %q", c.args, err, c.want)
		}
	}
}

// captureStderr returns what f writes to standard error.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	defer func() { os.Stderr = saved }()
	f()
	w.Close()
	os.Stderr = saved
	return <-done
}

// Each generator keeps its own defaults for the flags they share.
func TestGenDefaultsAreEachGenerators(t *testing.T) {
	for _, c := range []struct {
		name  string
		get   func(*cli) genPoints
		n     int
		noise float64
	}{
		{"gauss", func(c *cli) genPoints { return c.Gen.Gauss.genPoints }, 10000, 0.1},
		{"checkerboard", func(c *cli) genPoints { return c.Gen.Checkerboard.genPoints }, 10000, 0.15},
		{"sea", func(c *cli) genPoints { return c.Gen.Sea.genPoints }, 50000, 0.1},
		{"hyperplane", func(c *cli) genPoints { return c.Gen.Hyperplane.genPoints }, 10000, 0.05},
	} {
		parsed, err := parse(t, "gen", c.name)
		if err != nil {
			t.Fatalf("gen %s: %v", c.name, err)
		}
		if got := c.get(parsed); got != (genPoints{N: c.n, Noise: c.noise, Seed: 1}) {
			t.Errorf("gen %s: defaults %+v, want n %d, noise %v, seed 1", c.name, got, c.n, c.noise)
		}
	}
}
