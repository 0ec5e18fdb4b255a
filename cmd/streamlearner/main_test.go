package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/internal/offline"
	"github.com/streamlearner/streamlearner/learners"
)

// execute runs the command line as main would and returns what it printed.
func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return executeCtx(t, context.Background(), args...)
}

func executeCtx(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	var c cli
	p, err := kong.New(&c, append(options(ctx, &out), kong.Exit(func(int) { t.Fatalf("exit while parsing %v", args) }))...)
	if err != nil {
		t.Fatal(err)
	}
	kctx, err := p.Parse(args)
	if err != nil {
		return "", err
	}
	err = kctx.Run()
	return out.String(), err
}

// evalJSON runs an eval with --format json and returns its results.
func evalJSON(t *testing.T, args ...string) []offline.Result {
	t.Helper()
	out, err := execute(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Learners []offline.Result `json:"learners"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	return got.Learners
}

func TestEvalJSONOnA9A(t *testing.T) {
	got := evalJSON(t, "eval", "--data", "../../testdata/a9a.gz", "--test", "../../testdata/a9a.t.gz", "--limit", "3000",
		"--learner", "perceptron", "--learner", "rbp:budget=50", "--kernel", "rbf:sigma2=25", "--orders", "3", "--format", "json")
	if len(got) != 2 {
		t.Fatalf("%d results", len(got))
	}
	p, r := got[0], got[1]
	if p.Spec != "perceptron:max=0" || r.Spec != "rbp:budget=50" || p.Kernel != "rbf:gamma=0.02" || p.Orders != 3 || p.Examples != 3000 {
		t.Fatalf("header fields %+v", p)
	}
	// The Perceptron's support set is its updates; a9a's mistake rate is
	// about 20 %, far from 0 and below the majority baseline (about 24 %).
	if p.Support != p.Updates || p.MistakeRate < 0.15 || p.MistakeRate > 0.3 || p.BaselineRate < 0.2 || p.BaselineRate > 0.3 || p.Kappa <= 0 {
		t.Fatalf("perceptron: %+v", p)
	}
	if r.Support != 50 || r.SupportMax != 50 || r.MistakeRateStd <= 0 {
		t.Fatalf("rbp: %+v", r)
	}
	if p.TestAccuracy == nil || *p.TestAccuracy < 0.7 || *p.TestAccuracy > 0.9 {
		t.Fatalf("test accuracy %v", p.TestAccuracy)
	}
}

// TestKernelHasADefault: without --kernel, eval learns with the default
// RBF kernel (the flag was required), and learns well on a9a.
func TestKernelHasADefault(t *testing.T) {
	got := evalJSON(t, "eval", "--data", "../../testdata/a9a.gz", "--limit", "3000", "--learner", "projectron++:budget=100", "--keep-order", "--format", "json")
	if len(got) != 1 || got[0].Kernel != defaultKernel || got[0].MistakeRate <= 0 || got[0].MistakeRate >= got[0].BaselineRate {
		t.Fatalf("eval without --kernel: %+v", got)
	}
}

func TestEvalTraceMatchesTheLearner(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace")
	out, err := execute(t, "eval", "--data", "../../testdata/a9a.gz", "--limit", "500", "--keep-order",
		"--learner", "forgetron:budget=30", "--learner", "spa:lambda=0.3", "--kernel", "poly:degree=2", "--trace", trace)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "forgetron:budget=30") || !strings.Contains(out, "mistakes %") {
		t.Fatalf("table:\n%s", out)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 500 {
		t.Fatalf("%d trace lines", len(lines))
	}
	set, err := dataset.Load(context.Background(), "../../testdata/a9a.gz", dataset.Options{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	k, _ := learners.ParseKernel("poly:degree=2")
	f, _ := learners.New("forgetron:budget=30", k, 0)
	s, _ := learners.New("spa:lambda=0.3", k, 0)
	for i, line := range lines {
		cols := strings.Split(line, "\t")
		for j, l := range []learners.Learner{f, s} {
			want := l.Round(set.X[i], set.Y[i]).Margin
			got, err := strconv.ParseFloat(cols[j], 64)
			if err != nil || got != want {
				t.Fatalf("line %d column %d: %q, want %v", i+1, j, cols[j], want)
			}
		}
	}
}

// eval --delay N reveals each label N records late: the results say so,
// and --delay 0 is eval as it was.
func TestEvalDelay(t *testing.T) {
	args := []string{"eval", "--data", "../../testdata/elec2.3000.jsonl.gz", "--label-field", "class", "--key-field", "id", "--positive", "UP",
		"--keep-order", "--learner", "perceptron", "--kernel", "rbf:gamma=1"}
	plain := evalJSON(t, append(args, "--format", "json")...)[0]
	zero := evalJSON(t, append(args, "--format", "json", "--delay", "0")...)[0]
	late := evalJSON(t, append(args, "--format", "json", "--delay", "100")...)[0]
	if zero.Delay != 0 || zero.MistakeRate != plain.MistakeRate || late.Delay != 100 || late.Examples != 3000 || late.MistakeRate == plain.MistakeRate {
		t.Fatalf("no flag %+v\n--delay 0 %+v\n--delay 100 %+v", plain, zero, late)
	}
	out, err := execute(t, append(args, "--delay", "100")...)
	if err != nil || !strings.Contains(out, "each label revealed 100 records after its record") {
		t.Fatalf("table (%v):\n%s", err, out)
	}
	out, err = execute(t, append(args, "--delay", "0", "--format", "json")...)
	if err != nil || strings.Contains(out, "delay") {
		t.Fatalf("--delay 0 (%v):\n%s", err, out)
	}
}

func TestEvalRejectsBadInvocations(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--data", "../../testdata/a9a.gz", "--learner", "perceptron", "--kernel", "rbf", "--trace", "x"}, "--keep-order"},
		{[]string{"eval", "--data", "../../testdata/a9a.gz", "--learner", "nosuch", "--kernel", "rbf"}, "unknown"},
		{[]string{"eval", "--data", "../../testdata/a9a.gz", "--learner", "rbp:budget=10", "--kernel", "rbf:gamma=-1"}, "out of range"},
		{[]string{"eval", "--data", "../../testdata/a9a.gz", "--learner", "perceptron", "--kernel", "rbf", "--negative", "1"}, "--negative needs --positive"},
		{[]string{"eval", "--data", "missing.txt", "--learner", "perceptron", "--kernel", "rbf"}, "missing.txt"},
		{[]string{"eval", "--data", "../../testdata/a9a.gz", "--learner", "perceptron", "--kernel", "rbf", "--delay=-1"}, "--delay -1"},
	} {
		_, err := execute(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one mentioning %q", c.args, err, c.want)
		}
	}
}

// A malformed line fails eval with the file and line named and no table,
// whether the pass learns while the file loads (--keep-order) or after.
func TestEvalNamesTheMalformedLine(t *testing.T) {
	var b strings.Builder
	for i := range 3000 {
		if i == 2600 {
			b.WriteString("+1 3:1 nonsense\n")
			continue
		}
		fmt.Fprintf(&b, "%+d %d:1 %d:0.5\n", 1-2*(i%2), 1+i%7, 8+i%5)
	}
	path := filepath.Join(t.TempDir(), "bad.svm")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, order := range []string{"--keep-order", "--orders=2"} {
		out, err := execute(t, "eval", "--data", path, order, "--learner", "rbp:budget=20", "--kernel", "linear")
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 2601") || out != "" {
			t.Errorf("%s: error %v, output %q", order, err, out)
		}
	}
}

func TestGenWritesReadableData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cb")
	if _, err := execute(t, "gen", "checkerboard", "--n", "500", "--noise", "0", "-o", path); err != nil {
		t.Fatal(err)
	}
	set, err := dataset.Load(context.Background(), path, dataset.Options{})
	if err != nil || set.Len() != 500 || set.Dim != 2 {
		t.Fatalf("%v %+v", err, set)
	}
	out, err := execute(t, "gen", "gauss", "--n", "3")
	if err != nil || len(strings.Split(strings.TrimSpace(out), "\n")) != 3 {
		t.Fatalf("%v %q", err, out)
	}
}

func TestLearnersListsEveryLearner(t *testing.T) {
	out, err := execute(t, "learners")
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range learners.Available() {
		if !strings.Contains(out, info.Name) {
			t.Errorf("%s missing from:\n%s", info.Name, out)
		}
	}
}

func TestEvalRunningMetricsAndCurve(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"curve.csv", "curve.jsonl"} {
		curve := filepath.Join(dir, name)
		out, err := execute(t, "eval", "--data", "../../testdata/a9a.gz", "--limit", "2500", "--keep-order",
			"--learner", "perceptron", "--learner", "rbp:budget=20", "--kernel", "linear", "--print-every", "1000", "--curve", curve)
		if err != nil {
			t.Fatal(err)
		}
		// Three running lines per learner (1000, 2000 and the end at 2500),
		// then the table with the baseline and kappa.
		if n := strings.Count(out, " seen  mistakes "); n != 6 || !strings.Contains(out, "baseline %") || !strings.Contains(out, "kappa") {
			t.Fatalf("output:\n%s", out)
		}
		b, err := os.ReadFile(curve)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if name == "curve.csv" {
			if len(lines) != 7 || lines[0] != offline.CurveHeader || !strings.HasPrefix(lines[3], `"perceptron:max=0",0,2500,`) {
				t.Fatalf("csv curve:\n%s", b)
			}
			continue
		}
		var p offline.Point
		if len(lines) != 6 || json.Unmarshal([]byte(lines[5]), &p) != nil || p.Seen != 2500 || p.Support != 20 || p.Spec != "rbp:budget=20" {
			t.Fatalf("json curve:\n%s", b)
		}
	}
}

func TestEvalInterruptedPrintsResultsSoFar(t *testing.T) {
	// Ctrl-C cancels the command's context: the table still comes, marked.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var c cli
	var out lockedBuffer
	p, err := kong.New(&c, options(ctx, &out)...)
	if err != nil {
		t.Fatal(err)
	}
	kctx, err := p.Parse([]string{"eval", "--data", "../../testdata/a9a.gz", "--keep-order", "--learner", "perceptron", "--kernel", "rbf:gamma=0.05", "--print-every", "2000"})
	if err != nil {
		t.Fatal(err)
	}
	// The first running line is the cue to interrupt.
	go func() {
		for !strings.Contains(out.String(), " seen ") {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	err = kctx.Run()
	if !errors.Is(err, context.Canceled) || !strings.Contains(out.String(), "interrupted") || !strings.Contains(out.String(), "perceptron") {
		t.Fatalf("err %v, output:\n%s", err, out.String())
	}
}

// lockedBuffer is a bytes.Buffer safe to read while a command writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestFeaturesShowsIndicesAndCollisions(t *testing.T) {
	out, err := execute(t, "features", "--data", "../../testdata/adult.train.3000.jsonl.gz", "--label-field", "income", "--key-field", "id", "--show", "1")
	if err != nil {
		t.Fatal(err)
	}
	// The first Adult record, its golden indices (features/features_test.go).
	for _, want := range []string{"record key adult-train-000001, label <=50K", "age             numeric      39             218836",
		"workclass       categorical  State-gov      179989", "3000 records", "102 distinct features", "collisions: 0 features"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// In 2^4 indices the 102 features must collide.
	out, err = execute(t, "features", "--data", "../../testdata/adult.train.3000.jsonl.gz", "--label-field", "income", "--key-field", "id", "--show", "0", "--hash-bits", "4")
	var shared, sharedIdx int
	if _, serr := fmt.Sscanf(out[strings.Index(out, "collisions:"):], "collisions: %d features share %d indices", &shared, &sharedIdx); err != nil || serr != nil ||
		!strings.Contains(out, "102 distinct features (field or field=value, text tokens not counted) on 16 of 2^4 indices") {
		t.Fatalf("%v %v\n%s", err, serr, out)
	}
	// 102 features on 16 indices: those alone on an index (16 − sharedIdx)
	// and those sharing one add up to 102.
	if shared+(16-sharedIdx) != 102 {
		t.Fatalf("%d features share %d indices: does not add up to 102 on 16", shared, sharedIdx)
	}
}

func TestEvalOnEvents(t *testing.T) {
	// Adult as it is (named fields, auto-detected), train → test, binary.
	r := evalJSON(t, "eval", "--data", "../../testdata/adult.train.3000.jsonl.gz", "--test", "../../testdata/adult.test.1000.jsonl.gz",
		"--label-field", "income", "--key-field", "id", "--positive", ">50K", "--keep-order", "--scale", "online",
		"--learner", "rbp:budget=50", "--kernel", "rbf:gamma=0.1", "--format", "json")[0]
	// The same through the model by hand.
	k, _ := learners.ParseKernel("rbf:gamma=0.1")
	m, err := model.New(model.Config{Learner: "rbp:budget=50", Kernel: k, Seed: 1, Events: true,
		Event:  codec.EventConfig{LabelField: "income", KeyField: "id"},
		Labels: codec.LabelMap{Positive: []string{">50K"}}, Features: features.Config{Scale: features.ScaleOnline}})
	if err != nil {
		t.Fatal(err)
	}
	err = dataset.LinesOf(context.Background(), "../../testdata/adult.train.3000.jsonl.gz", func(_ int, b []byte) (bool, error) {
		_, err := m.Step(b)
		return true, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Examples != 3000 || r.MistakeRate != m.Eval().MistakeRate() || r.BaselineRate != m.Eval().BaselineRate() || r.TestAccuracy == nil {
		t.Fatalf("eval %+v, model by hand: %v", r, m.Eval().MistakeRate())
	}
	// 50 support vectors on 3000 records do not beat always answering
	// "<=50K" (24.5 %), but agree beyond chance.
	if r.Kappa <= 0.2 || *r.TestAccuracy < 0.7 {
		t.Fatalf("rbp on Adult: %+v", r)
	}

	// Covertype, many classes discovered online: the table shows the
	// classes' confusion matrix and recall.
	out, err := execute(t, "eval", "--data", "../../testdata/covtype.2000.jsonl.gz", "--label-field", "Cover_Type", "--key-field", "id",
		"--classes", "auto", "--keep-order", "--scale", "online", "--learner", "rbp:budget=30", "--kernel", "rbf:gamma=0.5")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "7 classes, prequential accuracy") || !strings.Contains(out, "recall %") {
		t.Fatalf("output:\n%s", out)
	}
	// With room for three classes, the fourth one met is refused.
	_, err = execute(t, "eval", "--data", "../../testdata/covtype.2000.jsonl.gz", "--label-field", "Cover_Type", "--classes", "auto",
		"--max-classes", "3", "--keep-order", "--learner", "perceptron", "--kernel", "linear")
	if err == nil || !strings.Contains(err.Error(), "too_many_classes") {
		t.Fatalf("max classes: %v", err)
	}
}

// A command parses the same with the parser built for it alone as with
// the whole command tree: same values, same refusals, same help.
func TestOneCommandGrammarParsesAsTheWhole(t *testing.T) {
	for _, args := range [][]string{
		{"eval", "--data", "x", "--learner", "rbp:budget=5", "--kernel", "linear", "--delay", "3", "--window", "7"},
		{"eval", "--data", "x", "--learner", "rbp", "--kernel", "linear", "--no-such-flag"},
		{"eval", "--help"},
		{"run", "--topic", "t", "--group", "g", "--output-topic", "o", "--learner", "rbp", "--kernel", "linear", "--label-topic", "l"},
		{"tail", "--topic", "x", "--from", "-5"},
		{"version"},
	} {
		one, whole := grammar(args), &cli{}
		if _, ok := one.(*cli); ok {
			t.Fatalf("%v: the whole tree, want one command's", args)
		}
		var outs [2]string
		for i, g := range []any{one, whole} {
			var buf bytes.Buffer
			k, err := kong.New(g, kong.Name("streamlearner"), kong.Writers(&buf, &buf), kong.Exit(func(int) {}), commandEnvars(envPrefix), kong.ValueFormatter(helpValue), helpVars)
			if err != nil {
				t.Fatal(err)
			}
			kctx, err := k.Parse(args)
			cmd := ""
			if kctx != nil {
				cmd = kctx.Command()
				for _, f := range kctx.Flags() {
					cmd += fmt.Sprintf(" %s=%v%v", f.Name, kctx.FlagValue(f), f.Envs)
				}
			}
			outs[i] = fmt.Sprintf("%s | %v | %s", cmd, err, buf.String())
		}
		if outs[0] != outs[1] {
			t.Errorf("%v:\none command: %s\nwhole tree:  %s", args, outs[0], outs[1])
		}
	}
	for _, args := range [][]string{nil, {"help", "eval"}, {"completion", "bash"}, {"evl"}, {"eval", "--config", "c.json"}, {"eval", "--config=c.json"}} {
		if _, ok := grammar(args).(*cli); !ok {
			t.Errorf("%v: one command's grammar, want the whole tree", args)
		}
	}
}

// eval loads a small file with the collector relaxed and puts the setting
// back; a large file, or a GOGC the user set, leaves it alone.
func TestRelaxGCWhileLoading(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set")
	}
	small := filepath.Join(t.TempDir(), "small")
	os.WriteFile(small, []byte("+1 1:1\n"), 0o600)
	big := filepath.Join(t.TempDir(), "big")
	f, _ := os.Create(big)
	f.Truncate(relaxedLoadBytes + 1)
	f.Close()
	percent := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	before := percent()
	restore := relaxGC(small)
	if p := percent(); p != 400 {
		t.Errorf("loading a small file: GOGC %d, want 400", p)
	}
	restore()
	if p := percent(); p != before {
		t.Errorf("after the load: GOGC %d, want %d back", p, before)
	}
	restore = relaxGC(big)
	if p := percent(); p != before {
		t.Errorf("loading a large file: GOGC %d, want %d", p, before)
	}
	restore()
	t.Setenv("GOGC", "50")
	restore = relaxGC(small)
	if p := percent(); p != before {
		t.Errorf("with GOGC set: GOGC %d, want %d", p, before)
	}
	restore()
}

// TestEvalSkipsBadRecordsByLine: one bad record no longer ends a run on
// real data: --max-bad skips up to N (malformed events, values over the
// limit, labels outside the map), the others are learned as if the bad
// ones were not there, errors name the file line also with random orders,
// and --predictions writes one line per record of the first run.
func TestEvalSkipsBadRecordsByLine(t *testing.T) {
	dir := t.TempDir()
	var good, all strings.Builder
	line := 0
	bad := map[int]bool{}
	for i := range 200 {
		rec := fmt.Sprintf(`{"id":"r%d","amount":%d,"shop":"s%d","label":"%s"}`, i, 10+i%17, i%5, []string{"fraud", "ok", "ok"}[i%3])
		good.WriteString(rec + "\n")
		if i%50 == 7 {
			all.WriteString(`{"id":"x","amount":1e300,"label":"ok"}` + "\n")
			line++
			bad[line] = true
		}
		if i == 100 {
			all.WriteString("{not json\n\n")
			line += 2
			bad[line-1] = true
		}
		all.WriteString(rec + "\n")
		line++
	}
	goodFile, allFile := filepath.Join(dir, "good.jsonl"), filepath.Join(dir, "all.jsonl")
	os.WriteFile(goodFile, []byte(good.String()), 0o644)
	os.WriteFile(allFile, []byte(all.String()), 0o644)
	args := func(file string, extra ...string) []string {
		return append([]string{"eval", "--data", file, "--label-field", "label", "--key-field", "id", "--positive", "fraud",
			"--learner", "rbp:budget=20", "--kernel", "rbf:gamma=0.1", "--scale", "online", "--format", "json"}, extra...)
	}
	// Without --max-bad the first bad record fails the run, by its line,
	// with random orders too.
	for _, order := range [][]string{{"--keep-order"}, {"--orders", "3"}} {
		_, err := execute(t, args(allFile, order...)...)
		m := regexp.MustCompile(`line (\d+): codec: (value_too_large|invalid_json)`).FindStringSubmatch(fmt.Sprint(err))
		if m == nil {
			t.Fatalf("%v, no --max-bad: %v", order, err)
		}
		if n, _ := strconv.Atoi(m[1]); !bad[n] || order[0] == "--keep-order" && n != 8 {
			t.Fatalf("%v: line %d is not the bad one: %v", order, n, err)
		}
	}
	want := evalJSON(t, args(goodFile, "--keep-order")...)
	preds := filepath.Join(dir, "p.csv")
	got := evalJSON(t, args(allFile, "--keep-order", "--max-bad", "5", "--predictions", preds)...)
	if got[0].Examples != 200 || got[0].Skipped != 5 || got[0].MistakeRate != want[0].MistakeRate || got[0].Support != want[0].Support {
		t.Fatalf("with bad records skipped %+v, without them %+v", got[0], want[0])
	}
	if _, err := execute(t, args(allFile, "--keep-order", "--max-bad", "4")...); err == nil || !strings.Contains(err.Error(), "one more than --max-bad 4") {
		t.Fatalf("--max-bad 4: %v", err)
	}
	b, _ := os.ReadFile(preds)
	rows := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(rows) != 201 || rows[0] != "line,key,prediction,margin,label" || !strings.HasPrefix(rows[1], "1,r0,") || !strings.HasSuffix(rows[1], ",+1") {
		t.Fatalf("predictions: %d rows, %q %q", len(rows), rows[0], rows[1])
	}
	for _, r := range rows[1:] {
		n, _ := strconv.Atoi(strings.SplitN(r, ",", 2)[0])
		if bad[n] || n == 0 {
			t.Fatalf("a prediction for line %d: %q", n, r)
		}
	}
}

// TestFreeTextIsNamed: a field whose values are sentences is read as a
// category; features and eval say so, and how to read it as text.
func TestFreeTextIsNamed(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, `{"note":"customer %d called about the late parcel","amount":%d,"label":%d}`+"\n", i, i, 2*(i%2)-1)
	}
	file := filepath.Join(dir, "notes.jsonl")
	os.WriteFile(file, []byte(b.String()), 0o644)
	out, err := execute(t, "features", "--data", file)
	if err != nil || !strings.Contains(out, "look like free text") || !strings.Contains(out, "--features note:text") {
		t.Fatalf("features: %v\n%s", err, out)
	}
}

// TestEvalReadsCSV: a CSV file with a header row is events (the header
// was read as a record and its first cell as a label): the same values as
// JSON events give the same results.
func TestEvalReadsCSV(t *testing.T) {
	dir := t.TempDir()
	var js, csvb strings.Builder
	csvb.WriteString("id,amount,shop,online,label\n")
	for i := range 300 {
		online := []string{"True", "false"}[i%2]
		fmt.Fprintf(&js, `{"id":"r%d","amount":%d,"shop":"s%d","online":%s,"label":"%s"}`+"\n", i, 10+i%17, i%5, strings.ToLower(online), []string{"fraud", "ok", "ok"}[i%3])
		fmt.Fprintf(&csvb, "r%d,%d,s%d,%s,%s\n", i, 10+i%17, i%5, online, []string{"fraud", "ok", "ok"}[i%3])
	}
	jf, cf := filepath.Join(dir, "d.jsonl"), filepath.Join(dir, "d.csv")
	os.WriteFile(jf, []byte(js.String()), 0o644)
	os.WriteFile(cf, []byte(csvb.String()), 0o644)
	args := []string{"--key-field", "id", "--positive", "fraud", "--learner", "rbp:budget=30", "--scale", "online", "--keep-order", "--format", "json"}
	want := evalJSON(t, append([]string{"eval", "--data", jf}, args...)...)
	got := evalJSON(t, append([]string{"eval", "--data", cf}, args...)...)
	if got[0].Examples != 300 || got[0].MistakeRate != want[0].MistakeRate || got[0].Support != want[0].Support || got[0].MistakeRate == 0 {
		t.Fatalf("CSV %+v, JSON %+v", got[0], want[0])
	}
}

// TestOutputFilesMakeTheirDirectory: the examples write under out/, which
// a fresh clone does not have; a file's directory is made, not an error.
func TestOutputFilesMakeTheirDirectory(t *testing.T) {
	dir := t.TempDir()
	curve, preds := filepath.Join(dir, "out", "c", "curve.csv"), filepath.Join(dir, "out", "p", "predictions.csv")
	code, _, stderr := runCLI(t, "eval", "--data", "../../testdata/a9a.gz", "--limit", "500", "--learner", "perceptron", "--keep-order",
		"--curve", curve, "--predictions", preds)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, f := range []string{curve, preds} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestEvalPredictionsReadAsTheServices: eval --predictions' JSON lines
// have the fields and types of the service's prediction records: the
// prediction a number (±1, or the class's index beside its name), and the
// label a number or, with many classes, a label_class.
func TestEvalPredictionsReadAsTheServices(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
	}{
		{"binary", []string{"--data", "../../testdata/a9a.gz"}},
		{"classes", []string{"--data", "../../testdata/covtype.2000.jsonl.gz", "--label-field", "Cover_Type", "--key-field", "id", "--classes", "auto"}},
	} {
		preds := filepath.Join(dir, c.name+".jsonl")
		if _, err := execute(t, append([]string{"eval", "--keep-order", "--limit", "60", "--learner", "rbp:budget=20", "--predictions", preds}, c.args...)...); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(preds)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		classOf := map[int]string{}
		for _, l := range lines {
			var p codec.Prediction
			if err := json.Unmarshal([]byte(l), &p); err != nil {
				t.Fatalf("%s: %q does not read as the service's prediction: %v", c.name, l, err)
			}
			if c.name == "binary" {
				if (p.Predicted != 1 && p.Predicted != -1) || (p.Label != 1 && p.Label != -1) || p.Class != "" || p.LabelClass != "" {
					t.Fatalf("binary: %q", l)
				}
				continue
			}
			if p.LabelClass == "" || p.Label != 0 || (p.Predicted < 0) != (p.Class == "") {
				t.Fatalf("classes: %q", l)
			}
			if name, ok := classOf[p.Predicted]; p.Predicted >= 0 && ok && name != p.Class {
				t.Fatalf("classes: prediction %d is %s and %s", p.Predicted, name, p.Class)
			}
			classOf[p.Predicted] = p.Class
		}
		if len(lines) != 60 {
			t.Fatalf("%s: %d predictions of 60 records", c.name, len(lines))
		}
	}
}
