package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// runCLI runs args as the binary would and returns the exit code, standard
// output and standard error.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runMain(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func cliModel(t *testing.T) *kong.Kong {
	t.Helper()
	var c cli
	k, err := kong.New(&c, options(context.Background(), &bytes.Buffer{})...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// commands lists every runnable command's path, e.g. ["checkpoint", "list"].
func commands(k *kong.Kong) [][]string {
	var out [][]string
	var walk func(*kong.Node)
	walk = func(n *kong.Node) {
		if n.Type == kong.CommandNode && len(n.Children) == 0 {
			out = append(out, commandPath(n))
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(k.Model.Node)
	return out
}

func TestUsageErrorIsShortAndExitsTwo(t *testing.T) {
	for _, c := range []struct {
		args []string
		hint string
	}{
		{[]string{"run", "--topic"}, "see 'streamlearner run --help'"},
		{[]string{"tail", "--brokers", "127.0.0.1:1", "--nosuch"}, "see 'streamlearner tail --help'"},
		{[]string{"checkpoint", "list"}, "see 'streamlearner checkpoint list --help'"},
		{[]string{"nosuch"}, "see 'streamlearner --help'"},
	} {
		code, out, errOut := runCLI(t, c.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 2 || out != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], "streamlearner: ") || lines[1] != c.hint {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, the error and %q", c.args, code, out, errOut, c.hint)
		}
	}
}

// TestEnvironmentVariablesDoNotCollide: every flag has its own variable
// except the shared connection and log flags, which mean the same in every
// command; run's input topic and tail's prediction topic no longer share
// STREAMLEARNER_TOPIC.
func TestEnvironmentVariablesDoNotCollide(t *testing.T) {
	k := cliModel(t)
	byVar := map[string]map[string]bool{} // variable -> flag names
	for f, n := range flagOwners(k.Model.Node) {
		if f.Name == "help" || f.Name == "version" {
			continue
		}
		if len(f.Envs) != 1 {
			t.Errorf("%v --%s: variables %v, want one", commandPath(n), f.Name, f.Envs)
			continue
		}
		if byVar[f.Envs[0]] == nil {
			byVar[f.Envs[0]] = map[string]bool{}
		}
		byVar[f.Envs[0]][f.Name] = true
		if !isShared(f.Name) && f.Envs[0] != envName(append(append([]string{envPrefix}, commandPath(n)...), f.Name)...) {
			t.Errorf("%v --%s reads %s", commandPath(n), f.Name, f.Envs[0])
		}
	}
	for v, flags := range byVar {
		if len(flags) != 1 {
			t.Errorf("%s is read by several flags: %v", v, flags)
		}
	}
	for _, shared := range []string{"STREAMLEARNER_BROKERS", "STREAMLEARNER_SASL_PASSWORD", "STREAMLEARNER_CONFIG"} {
		if byVar[shared] == nil {
			t.Errorf("no flag reads %s", shared)
		}
	}

	t.Setenv("STREAMLEARNER_BROKERS", "127.0.0.1:9092")
	t.Setenv("STREAMLEARNER_TOPIC", "stale")
	t.Setenv("STREAMLEARNER_RUN_TOPIC", "input")
	t.Setenv("STREAMLEARNER_TAIL_TOPIC", "predictions")
	t.Setenv("STREAMLEARNER_GEN_SEA_SHIFTS", "3")
	t.Setenv("STREAMLEARNER_REPLAY_SHIFTS", "100,200")
	c, err := parse(t, "tail")
	if err != nil || c.Tail.Topic != "predictions" || c.Tail.Brokers[0] != "127.0.0.1:9092" {
		t.Fatalf("tail: %v, topic %q", err, c.Tail.Topic)
	}
	c, err = parse(t, "run", "--group", "g", "--output-topic", "o", "--learner", "perceptron", "--kernel", "linear")
	if err != nil || c.Run.Topic != "input" {
		t.Fatalf("run: %v, topic %q", err, c.Run.Topic)
	}
	c, err = parse(t, "replay", "--topic", "input", "--learner", "perceptron", "--kernel", "linear")
	if err != nil || c.Replay.Shifts != "100,200" {
		t.Fatalf("replay: %v, shifts %q, topic %q", err, c.Replay.Shifts, c.Replay.Topic)
	}
	c, err = parse(t, "gen", "sea")
	if err != nil || c.Gen.Sea.Shifts != 3 {
		t.Fatalf("gen sea: %v, shifts %d", err, c.Gen.Sea.Shifts)
	}

	// The old spelling is not read, and saying so beats a silent default.
	var kc cli
	p, _ := kong.New(&kc, options(context.Background(), &bytes.Buffer{})...)
	kctx, err := p.Parse([]string{"tail"})
	if err != nil {
		t.Fatal(err)
	}
	w := staleEnvWarnings(kctx, []string{"STREAMLEARNER_TOPIC=stale", "STREAMLEARNER_BROKERS=x"})
	if len(w) != 1 || !strings.Contains(w[0], "STREAMLEARNER_TOPIC is not read") || !strings.Contains(w[0], "STREAMLEARNER_TAIL_TOPIC") {
		t.Errorf("warnings %q", w)
	}
}

// TestStaleVariableNamedWhenParsingFails: a required flag set only under
// the unprefixed variable fails to parse, and the error says which
// variable the command reads instead of leaving "missing flags" alone.
func TestStaleVariableNamedWhenParsingFails(t *testing.T) {
	t.Setenv("STREAMLEARNER_TOPIC", "in")
	code, _, errOut := runCLI(t, "run", "--brokers", "127.0.0.1:1", "--group", "g", "--output-topic", "o", "--learner", "perceptron")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	want := []string{
		"streamlearner: missing flags: --topic=STRING",
		"streamlearner: warning: STREAMLEARNER_TOPIC is not read; for --topic this command reads STREAMLEARNER_RUN_TOPIC",
		"see 'streamlearner run --help'",
	}
	if code != 2 || !slices.Equal(lines, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and:\n%s", code, errOut, strings.Join(want, "\n"))
	}
}

// TestHelpShowsEveryDefault walks every command's flags: a flag with a
// default shows it in --help, as --flag=DEFAULT or "default: DEFAULT".
func TestHelpShowsEveryDefault(t *testing.T) {
	k := cliModel(t)
	space := regexp.MustCompile(`\s+`)
	for _, path := range commands(k) {
		code, out, errOut := runCLI(t, append(path, "--help")...)
		if code != 0 {
			t.Fatalf("%v --help: exit %d: %s", path, code, errOut)
		}
		help := space.ReplaceAllString(out, " ")
		var c cli
		kc, _ := kong.New(&c, options(context.Background(), &bytes.Buffer{})...)
		tr, err := kong.Trace(kc, path)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range tr.Flags() {
			if !f.HasDefault || f.Default == "" || (f.IsBool() && f.Default == "false") {
				continue
			}
			shown := false
			for _, s := range []string{"--" + f.Name + "=" + f.Default + " ", "--" + f.Name + "=" + f.Default + ",... ",
				"--" + f.Name + `="` + f.Default + `"`, "default: " + f.Default} {
				shown = shown || strings.Contains(help, s)
			}
			if !shown {
				t.Errorf("%v --help does not show --%s's default %q", path, f.Name, f.Default)
			}
		}
	}
}

func TestHelpCommandAndVersion(t *testing.T) {
	_, want, _ := runCLI(t, "checkpoint", "list", "--help")
	code, got, errOut := runCLI(t, "help", "checkpoint", "list")
	if code != 0 || got != want || !strings.Contains(got, "Usage: streamlearner checkpoint list") {
		t.Errorf("help checkpoint list: exit %d %s\n%s\nwant\n%s", code, errOut, got, want)
	}
	if code, _, errOut := runCLI(t, "help", "nosuch"); code != 1 || !strings.Contains(errOut, "nosuch") {
		t.Errorf("help nosuch: exit %d %q", code, errOut)
	}

	defer func(v, r string) { version, revision = v, r }(version, revision)
	version, revision = "v1.2.3-4-gabcdef", "abcdef0123"
	code, out, _ := runCLI(t, "--version")
	if code != 0 || out != "streamlearner v1.2.3-4-gabcdef\n" {
		t.Errorf("--version: exit %d %q", code, out)
	}
	code, out, _ = runCLI(t, "version")
	if code != 0 || !strings.Contains(out, "revision abcdef0123\ngo1.") {
		t.Errorf("version: exit %d %q", code, out)
	}
	// Without ldflags the version comes from the build info: "dev" for a
	// build in a checkout, whose main module has no version.
	version, revision = "dev", ""
	if b := currentBuild(); b.Version != "dev" || b.Revision == "" || !strings.HasPrefix(b.GoVersion, "go") {
		t.Errorf("build info %+v", b)
	}
}

// TestCompletion asks the binary for completions the way the shell
// scripts do, with COMP_LINE set.
func TestCompletion(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"streamlearner ta", "tail"},
		{"streamlearner checkpoint ", "inspect"},
		{"streamlearner tail --fr", "--from"},
	} {
		t.Setenv("COMP_LINE", c.line)
		code, out, errOut := runCLI(t)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("COMP_LINE=%q: exit %d, %q %q; want %q", c.line, code, out, errOut, c.want)
		}
	}
	t.Setenv("COMP_LINE", "")
	code, out, _ := runCLI(t, "completion", "bash")
	if code != 0 || !strings.HasPrefix(out, "complete -o default -C '") || !strings.HasSuffix(out, "' streamlearner\n") {
		t.Errorf("completion bash: %d %q", code, out)
	}
}

func TestBuildInfoMetric(t *testing.T) {
	mfs, err := newRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	b := currentBuild()
	for _, mf := range mfs {
		if mf.GetName() != "streamlearner_build_info" {
			continue
		}
		labels := map[string]string{}
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["version"] != b.Version || labels["revision"] != b.Revision || labels["goversion"] != b.GoVersion || mf.GetMetric()[0].GetGauge().GetValue() != 1 {
			t.Errorf("build info %v, want %+v", labels, b)
		}
		return
	}
	t.Error("no streamlearner_build_info")
}

// TestConsoleLogsToAFileHaveNoColours: --log-format console on a file (a
// redirect, a pipe) writes plain text; colours are for terminals.
func TestConsoleLogsToAFileHaveNoColours(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log := (&logFlags{LogFormat: "console", LogLevel: "info"}).loggerTo(f)
	log.Warn().Int("partition", 3).Msg("lag is growing")
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, "\x1b[") || !strings.Contains(s, "WRN lag is growing") || !strings.Contains(s, "partition=3") {
		t.Fatalf("console log in a file: %q", s)
	}
}

// TestNegativeValues: values that start with '-' (a position from the
// end, a label) are taken with or without '=', as users write them; the
// parser read "-2" as a short flag.
func TestNegativeValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		get  func(*cli) string
		want string
	}{
		{[]string{"tail", "-b", "h:1", "-t", "out", "--from", "-2"}, func(c *cli) string { return c.Tail.From }, "-2"},
		{[]string{"replay", "--brokers", "h:1", "--topic", "t", "--learner", "perceptron", "--from", "-100", "--to", "-1"}, func(c *cli) string { return c.Replay.From + " " + c.Replay.To }, "-100 -1"},
		{[]string{"eval", "--data", "cli_test.go", "--learner", "perceptron", "--positive", "1", "--negative", "-1"}, func(c *cli) string { return c.Eval.Negative }, "-1"},
		{[]string{"eval", "--data", "cli_test.go", "--learner", "perceptron", "--positive=-1"}, func(c *cli) string { return c.Eval.Positive }, "-1"},
		{[]string{"run", "--brokers", "h:1", "--topic", "t", "--group", "g", "--output-topic", "o", "--learner", "perceptron", "--reset-offsets", "-500"}, func(c *cli) string { return c.Run.ResetOffsets }, "-500"},
	} {
		var parsed cli
		k, err := kong.New(&parsed, options(context.Background(), &bytes.Buffer{})...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.Parse(signedValues(k, c.args)); err != nil || c.get(&parsed) != c.want {
			t.Errorf("%q: %v, %q; want %q", c.args, err, c.get(&parsed), c.want)
		}
	}
}

// TestEveryFlagTakesANegativeValue: every flag that takes a value takes
// a negative one without '=', by its long or its short name, as
// --from -2 does (broker --schema-registry-port -1 was read as a short
// flag "-1").
func TestEveryFlagTakesANegativeValue(t *testing.T) {
	k := cliModel(t)
	// One parser for all: Parse resets every value to its default first
	// (one parser a flag took 37 s under the race detector).
	var parsed cli
	p, err := kong.New(&parsed, options(context.Background(), &bytes.Buffer{})...)
	if err != nil {
		t.Fatal(err)
	}
	for f, n := range flagOwners(k.Model.Node) {
		if f.Name == "help" || f.Name == "version" || f.IsBool() || f.IsCounter() {
			continue
		}
		path := commandPath(n)
		names := []string{"--" + f.Name}
		if f.Short != 0 {
			names = append(names, "-"+string(f.Short))
		}
		for _, name := range names {
			args := append(slices.Clone(path), name, "-7")
			if _, err := p.Parse(signedValues(p, args)); err != nil && strings.Contains(err.Error(), "short flag") {
				t.Errorf("%q: %v", args, err)
			}
		}
	}
	// After --, and after a switch, "-7" is left to the parser.
	for _, args := range [][]string{{"tail", "-e", "-7"}, {"tail", "--", "--limit", "-7"}} {
		if got := signedValues(p, args); !slices.Equal(got, args) {
			t.Errorf("%q rewritten as %q", args, got)
		}
	}
}

// TestExactlyOnceNeedsAStore: exactly-once without a checkpoint store is
// refused at start, saying what to add.
func TestExactlyOnceNeedsAStore(t *testing.T) {
	code, _, stderr := runCLI(t, "run", "--brokers", "127.0.0.1:1", "--topic", "t", "--group", "g", "--output-topic", "o",
		"--learner", "perceptron", "--processing-guarantee", "exactly-once")
	if code == 0 || !strings.Contains(stderr, "needs --checkpoint-dir or --checkpoint-topic") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// TestNegativeSnapshotRateIsRefused: --snapshot-max-rate takes 0 (a
// snapshot with every commit) or a rate; a negative one is refused at
// start, naming the flag.
func TestNegativeSnapshotRateIsRefused(t *testing.T) {
	code, _, stderr := runCLI(t, "run", "--brokers", "127.0.0.1:1", "--topic", "t", "--group", "g", "--output-topic", "o",
		"--learner", "perceptron", "--snapshot-max-rate", "-1")
	if code == 0 || !strings.Contains(stderr, "--snapshot-max-rate -1") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}
