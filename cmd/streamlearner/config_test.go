package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
)

// parse parses args as main would, without running the command.
func parse(t *testing.T, args ...string) (*cli, error) {
	t.Helper()
	var c cli
	p, err := kong.New(&c, append(options(context.Background(), io.Discard), kong.Exit(func(int) { t.Fatalf("exit while parsing %v", args) }))...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Parse(args)
	return &c, err
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "streamlearner.json")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigFilePrecedence: the command line beats the environment, which
// beats the file, which beats the defaults.
func TestConfigFilePrecedence(t *testing.T) {
	path := writeConfig(t, `{
		"brokers": ["k1:9092", "k2:9092"],
		"run": {"topic": "in", "group": "file-group", "output-topic": "out",
			"learner": "file-learner", "kernel": "rbf:gamma=0.01", "flush_records": 250, "flush-interval": "75ms",
			"auto-create": true, "seed": 18446744073709551615, "checkpoint-topic": "models"}
	}`)
	t.Setenv("STREAMLEARNER_RUN_GROUP", "env-group")
	t.Setenv("STREAMLEARNER_RUN_LEARNER", "env-learner")
	c, err := parse(t, "run", "--config", path, "--learner", "rbp:budget=10")
	if err != nil {
		t.Fatal(err)
	}
	r := c.Run
	if strings.Join(r.Brokers, ",") != "k1:9092,k2:9092" || r.Topic != "in" || r.OutputTopic != "out" || r.CheckpointTopic != "models" {
		t.Errorf("values from the file: %+v", r)
	}
	if r.FlushRecords != 250 || r.FlushInterval != 75*time.Millisecond || !r.AutoCreate || r.Seed != 1<<64-1 {
		t.Errorf("typed values from the file: flush %d %v, auto-create %v, seed %d", r.FlushRecords, r.FlushInterval, r.AutoCreate, r.Seed)
	}
	if r.Group != "env-group" {
		t.Errorf("group %q: the environment should beat the file", r.Group)
	}
	if r.Learner != "rbp:budget=10" {
		t.Errorf("learner %q: the command line should beat the environment and the file", r.Learner)
	}
	if r.CheckpointEvery != 10000 || r.MetricsAddr != "127.0.0.1:9464" {
		t.Errorf("defaults: checkpoint-every %d, metrics-addr %q", r.CheckpointEvery, r.MetricsAddr)
	}

	// The file can be named by the environment too.
	t.Setenv("STREAMLEARNER_CONFIG", path)
	if c, err = parse(t, "run"); err != nil || c.Run.Topic != "in" || c.Run.Group != "env-group" {
		t.Fatalf("--config from the environment: %v %+v", err, c.Run)
	}
}

func TestConfigFileErrorsAreClear(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{`{"brokers": ["k:1"], "run": {"topik": "in", "chekpoint_dir": "/x"}}`, "streamlearner.json: run.chekpoint_dir: no such flag of run; run.topik: no such flag of run"},
		{`{"brokers": ["k:1"], "topik": "in"}`, "topik: no such flag"},
		{`{"brokers": ["k:1"], "topic": "in"}`, `topic: a flag of checkpoint list, gen checkerboard`},
		{`{"rnu": {"topic": "in"}}`, "rnu: no such command"},
		{`{"eval": {"brokers": ["k:1"]}}`, "eval.brokers: no such flag of eval"},
		{`{"brokers": ["k:1"],`, "streamlearner.json: want one JSON object"},
		{`{"run": {"flush-records": "many"}}`, "--flush-records"},
	} {
		path := writeConfig(t, c.text)
		_, err := parse(t, "run", "--config", path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error mentioning %q", c.text, err, c.want)
		}
	}
	if _, err := parse(t, "run", "--config", "/nonexistent/sl.json"); err == nil || !strings.Contains(err.Error(), "--config /nonexistent/sl.json") {
		t.Errorf("missing file: %v", err)
	}
}

// TestConfigKeysMeanOneThing: "topic" in run's section is run's input
// topic and does not reach tail, whose topic comes from its own section;
// shared settings at the top reach both; a section's shared setting
// applies to its command alone.
func TestConfigKeysMeanOneThing(t *testing.T) {
	path := writeConfig(t, `{
		"brokers": ["k1:9092"], "client-id": "shared",
		"run": {"topic": "input", "group": "g", "output-topic": "predictions", "learner": "perceptron", "kernel": "linear"},
		"tail": {"topic": "predictions", "brokers": ["k2:9092"]},
		"checkpoint": {"list": {"topic": "input"}}
	}`)
	c, err := parse(t, "run", "--config", path)
	if err != nil || c.Run.Topic != "input" || c.Run.ClientID != "shared" || c.Run.Brokers[0] != "k1:9092" {
		t.Fatalf("run: %v %+v", err, c.Run)
	}
	c, err = parse(t, "tail", "--config", path)
	if err != nil || c.Tail.Topic != "predictions" || c.Tail.ClientID != "shared" || c.Tail.Brokers[0] != "k2:9092" {
		t.Fatalf("tail: %v %+v", err, c.Tail)
	}
	dir := t.TempDir()
	c, err = parse(t, "checkpoint", "list", "--config", path, "--dir", dir)
	if err != nil || c.Checkpoint.List.Topic != "input" {
		t.Fatalf("checkpoint list: %v %+v", err, c.Checkpoint.List)
	}
}
