// Command streamlearner does online binary classification with budget
// kernel perceptrons: on a Kafka stream (run, replay, tail) and on files
// (eval, gen). This file only parses flags and wires packages together.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"
	"github.com/willabides/kongplete"
)

type cli struct {
	Config  configFlag       `placeholder:"FILE" help:"Read flag values from a JSON file: connection and log settings at the top, each command's own flags in a section named after it ({\"brokers\": [\"kafka:9092\"], \"run\": {\"topic\": \"input\"}}); the command line and STREAMLEARNER_* variables take precedence."`
	Version kong.VersionFlag `help:"Print the version and exit."`

	Bench      benchCmd      `cmd:"" help:"Measure the service end to end on the embedded broker: records/s, CPU per record and memory, learning beside pass-through."`
	BenchServe benchServeCmd `cmd:"" name:"bench-serve" hidden:"" help:"The member of one bench run, in a process of its own (bench runs it)."`
	Demo       demoCmd       `cmd:"" help:"A one-command demo: embedded broker, a stream, the service with checkpoints, live progress; leaves nothing running."`
	Run        runCmd        `cmd:"" help:"Serve as a consumer-group member: predict, then learn, each record of the input topic; emit predictions."`
	Broker     brokerCmd     `cmd:"" help:"Run a development Kafka broker (embedded, 127.0.0.1 only)."`
	Produce    produceCmd    `cmd:"" help:"Load a LIBSVM, JSON lines or CSV file (header row) into a topic as JSON records."`
	Tail       tailCmd       `cmd:"" help:"Follow a prediction topic with running and windowed accuracy."`
	Replay     replayCmd     `cmd:"" help:"Replay a topic through several learners side by side: mistake rates per segment between shifts, recovery, drift detectors, a plot."`
	Checkpoint checkpointCmd `cmd:"" help:"Look at stored partition models."`
	Eval       evalCmd       `cmd:"" help:"Run learners over a data file, predict-then-learn, and report mistake rate, support size, test accuracy and speed."`
	Gen        genCmd        `cmd:"" help:"Generate the papers' synthetic data sets as LIBSVM files."`
	Learners   learnersCmd   `cmd:"" help:"List the learners, their parameters and their papers."`
	Features   featuresCmd   `cmd:"" help:"Show how named-field events map to hashed features (field, value, index) and count collisions."`
	VersionCmd versionCmd    `cmd:"" name:"version" help:"Print the version, revision and Go version."`
	Help       helpCmd       `cmd:"" help:"Show the help of a command: 'streamlearner help run'."`
	Completion completionCmd `cmd:"" help:"Print a shell completion script: eval \"$(streamlearner completion bash)\"."`
}

func main() {
	os.Exit(runMain(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes: 2 for a command line the parser rejects (as getopt-style
// tools do), 1 for a command that fails, 130 after Ctrl-C.
const (
	exitFailure = 1
	exitUsage   = 2
	exitSignal  = 130
)

// exitRequest carries kong's exit (after --help, --version or a
// completion) out of the parser, so that runMain returns a code instead of
// ending the process under a test.
type exitRequest int

// signedValues rewrites "--from -2" as "--from=-2" for every flag of the
// parser's model that takes a value, by its long or short name, when the
// value is negative (a position counted from the end, a label, "any free
// port"), so users can write what kafka-consumer-groups and kcat accept:
// the parser reads a separate "-2" as a short flag. Other arguments, and
// everything after "--", pass unchanged.
func signedValues(p *kong.Kong, args []string) []string {
	valued := map[string]bool{}
	for f := range flagOwners(p.Model.Node) {
		if f.IsBool() || f.IsCounter() {
			continue
		}
		valued["--"+f.Name] = true
		for _, a := range f.Aliases {
			valued["--"+a] = true
		}
		if f.Short != 0 {
			valued["-"+string(f.Short)] = true
		}
	}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if valued[a] && i+1 < len(args) && isNegative(args[i+1]) {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

// isNegative reports whether s is '-' and then a digit: a negative
// number ("-2", "-1.5", "-1e3") or a list or spec that starts with one
// ("-1,1"). No flag's name starts with a digit, so s is a value.
func isNegative(s string) bool {
	return len(s) >= 2 && s[0] == '-' && s[1] >= '0' && s[1] <= '9'
}

// runMain is main without the process: it parses args, runs the command
// and returns the exit code.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(exitRequest)
			if !ok {
				panic(r)
			}
			code = int(e)
		}
	}()
	exit := func(c int) { panic(exitRequest(c)) }
	p, err := kong.New(grammar(args), append(options(ctx, stdout), kong.Writers(stdout, stderr), kong.Exit(exit))...)
	if err != nil {
		fmt.Fprintln(stderr, "streamlearner:", err)
		return exitFailure
	}
	kongplete.Complete(p, kongplete.WithExitFunc(exit))
	kctx, err := p.Parse(signedValues(p, args))
	warn := func(kctx *kong.Context) {
		for _, w := range staleEnvWarnings(kctx, os.Environ()) {
			fmt.Fprintln(stderr, "streamlearner: warning:", w)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "streamlearner: %v\n", err)
		// A variable of the old spelling is the likely cause of a
		// missing flag: said beside the error, not only after a parse
		// that succeeds.
		var perr *kong.ParseError
		if errors.As(err, &perr) && perr.Context != nil {
			warn(perr.Context)
		}
		fmt.Fprintln(stderr, usageHint(p, err))
		return exitUsage
	}
	warn(kctx)
	// The commands' context is cancelled on SIGINT or SIGTERM. Asking for
	// the signals starts a thread to receive them, 0.2 ms of start-up that
	// a command line ending in the parser (--version, --help, a usage
	// error) need not pay.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	kctx.BindTo(ctx, (*context.Context)(nil))
	if err := kctx.Run(); err != nil {
		fmt.Fprintln(stderr, "streamlearner:", err)
		if ctx.Err() != nil {
			return exitSignal
		}
		return exitFailure
	}
	return 0
}

// grammar is what the parser is built from: the whole command tree, or,
// when the first argument names a command, only that command and the
// flags every command has. Building the tree parses every command's
// flag tags (about 6 ms for all of them), most of a short command's
// start-up; a command parses the same either way. The whole tree is
// needed to list the commands (no command, --help, help, completion), to
// check a --config file's sections against every command, and to name a
// command the arguments misspell. --version alone needs no command.
func grammar(args []string) any {
	whole := &cli{}
	configured := os.Getenv(envName(envPrefix, "config")) != "" ||
		slices.ContainsFunc(args, func(a string) bool { return a == "--config" || strings.HasPrefix(a, "--config=") })
	if len(args) == 0 || configured {
		return whole
	}
	t := reflect.TypeOf(*whole)
	var fields []reflect.StructField
	found := false
	for i := range t.NumField() {
		f := t.Field(i)
		_, isCmd := f.Tag.Lookup("cmd")
		if !isCmd {
			fields = append(fields, f)
			continue
		}
		name := f.Tag.Get("name")
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if name == args[0] && name != "help" && name != "completion" {
			fields, found = append(fields, f), true
		}
	}
	if len(args) == 1 && args[0] == "--version" {
		found = true // the flags every command has: --version among them
	}
	if !found {
		return whole
	}
	return reflect.New(reflect.StructOf(fields)).Interface()
}

// usageHint names the help to read for a rejected command line: the
// command's own when the parser got as far as one.
func usageHint(p *kong.Kong, err error) string {
	path := p.Model.Name
	var perr *kong.ParseError
	if errors.As(err, &perr) && perr.Context != nil {
		if n := perr.Context.Selected(); n != nil {
			path = n.FullPath()
		}
	}
	return fmt.Sprintf("see '%s --help'", path)
}

// defaultKernel is --kernel's default for eval, replay and run. An RBF
// kernel is what a kernel perceptron is for, and γ = 0.1 suits features of
// about unit scale — one-hot categories, LIBSVM's scaled sets, events with
// --scale online — where measured: a9a, Adult and Elec2 events learn as
// well with it as with their tuned kernels. Raw values in the hundreds make
// every kernel value 0, so the help says to scale them. A bare "rbf" has
// the same γ (learners.DefaultGamma).
const defaultKernel = "rbf:gamma=0.1"

// helpVars are the variables the flags' tags use.
var helpVars = kong.Vars{"default_kernel": defaultKernel, "kernel_help": kernelHelp}

// kernelHelp is the --kernel help shared by the commands that take one.
const kernelHelp = "Kernel: linear or linear:bias=C (an intercept), poly:degree=D,coef0=C,scale=S, rbf:gamma=G or rbf:sigma2=S (gaussian = rbf); add normalize=true for k(x,x)=1. The default suits features of about unit scale (one-hot, scaled LIBSVM sets, --standardize, --scale online); raw values need scaling or a smaller gamma."

// options configures the parser; commands receive ctx and out (where
// results go) as Run arguments. runMain binds, in ctx's place, a context
// also cancelled on SIGINT or SIGTERM.
func options(ctx context.Context, out io.Writer) []kong.Option {
	v := currentBuild()
	return []kong.Option{
		kong.Name("streamlearner"),
		kong.Description("Online binary classification with budget kernel perceptrons."),
		kong.Vars{"version": "streamlearner " + v.Version}, helpVars,
		commandEnvars(envPrefix),
		kong.ValueFormatter(helpValue),
		kong.Configuration(loadConfigFile),
		kong.BindTo(ctx, (*context.Context)(nil)),
		kong.BindTo(out, (*io.Writer)(nil)),
	}
}

type versionCmd struct{}

func (versionCmd) Run(out io.Writer) error {
	v := currentBuild()
	_, err := fmt.Fprintf(out, "streamlearner %s\nrevision %s\n%s\n", v.Version, v.Revision, v.GoVersion)
	return err
}

type helpCmd struct {
	Command []string `arg:"" optional:"" help:"The command, e.g. run or checkpoint list (none: the overview)."`
}

func (c *helpCmd) Run(k *kong.Kong) error {
	t, err := kong.Trace(k, c.Command)
	if err != nil {
		return err
	}
	if t.Error != nil {
		return fmt.Errorf("help: %w", t.Error)
	}
	return t.PrintUsage(false)
}
