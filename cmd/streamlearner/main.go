// Command streamlearner does online binary classification with budget
// kernel perceptrons: on a Kafka stream (run, replay, tail) and on files
// (eval, gen). This file only parses flags and wires packages together.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kong"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

type cli struct {
	Config configFlag `placeholder:"FILE" help:"Read flag values from a JSON file ({\"brokers\": [\"kafka:9092\"], \"checkpoint-topic\": \"models\"}); the command line and STREAMLEARNER_* variables take precedence."`

	Bench      benchCmd      `cmd:"" help:"Measure the service end to end on the embedded broker: records/s, CPU per record and memory, learning beside pass-through."`
	Demo       demoCmd       `cmd:"" help:"A one-command demo: embedded broker, a stream, the service with checkpoints, live progress; leaves nothing running."`
	Run        runCmd        `cmd:"" help:"Serve as a consumer-group member: predict, then learn, each record of the input topic; emit predictions."`
	Broker     brokerCmd     `cmd:"" help:"Run a development Kafka broker (embedded, 127.0.0.1 only)."`
	Produce    produceCmd    `cmd:"" help:"Load a LIBSVM or JSON file into a topic as JSON records."`
	Tail       tailCmd       `cmd:"" help:"Follow a prediction topic with running and windowed accuracy."`
	Replay     replayCmd     `cmd:"" help:"Replay a topic through several learners side by side: mistake rates per segment between shifts, recovery, drift detectors, a plot."`
	Checkpoint checkpointCmd `cmd:"" help:"Look at stored partition models."`
	Eval       evalCmd       `cmd:"" help:"Run learners over a data file, predict-then-learn, and report mistake rate, support size, test accuracy and speed."`
	Gen        genCmd        `cmd:"" help:"Generate the papers' synthetic data sets as LIBSVM files."`
	Learners   learnersCmd   `cmd:"" help:"List the learners, their parameters and their papers."`
	Features   featuresCmd   `cmd:"" help:"Show how named-field events map to hashed features (field, value, index) and count collisions."`
	Version    versionCmd    `cmd:"" help:"Print the version."`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var c cli
	k := kong.Parse(&c, options(ctx, os.Stdout)...)
	if err := k.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "streamlearner:", err)
		if ctx.Err() != nil {
			os.Exit(130)
		}
		os.Exit(1)
	}
}

// options configures the parser; commands receive ctx (cancelled on SIGINT
// or SIGTERM) and out (where results go) as Run arguments.
func options(ctx context.Context, out io.Writer) []kong.Option {
	return []kong.Option{
		kong.Name("streamlearner"),
		kong.Description("Online binary classification with budget kernel perceptrons."),
		kong.UsageOnError(),
		kong.DefaultEnvars("STREAMLEARNER"),
		kong.Configuration(loadConfigFile),
		kong.BindTo(ctx, (*context.Context)(nil)),
		kong.BindTo(out, (*io.Writer)(nil)),
	}
}

type versionCmd struct{}

func (versionCmd) Run(out io.Writer) error {
	_, err := fmt.Fprintln(out, "streamlearner", version)
	return err
}
