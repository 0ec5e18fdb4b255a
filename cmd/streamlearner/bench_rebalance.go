package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/streamlearner/streamlearner/internal/dev/benchrun"
)

// rebalance measures a member joining and a member leaving
// (benchrun.Rebalance), the broker and each member a process of its own
// run from this executable.
func (c *benchCmd) rebalance(ctx context.Context, out io.Writer) error {
	r := benchrun.Rebalance{
		Data: c.Data, Partitions: c.Partitions, Rate: c.Rate, Phase: c.Phase, FlushInterval: c.FlushInterval,
		Learner: c.Learner, ProcessingGuarantee: c.ProcessingGuarantee,
		Broker: childBroker, Member: c.member,
	}
	return r.Measure(ctx, out)
}

// memberArgs is the `run` command line of a rebalance member.
func (c *benchCmd) memberArgs(spec benchrun.MemberSpec) []string {
	args := []string{"run", "--brokers", spec.Broker, "--topic", spec.Topic, "--output-topic", spec.OutputTopic, "--group", spec.Group,
		"--learner", c.Learner, "--kernel", c.Kernel, "--flush-interval", c.FlushInterval.String(), "--auto-create",
		"--metrics-addr", "127.0.0.1:0", "--log-format", "json", "--processing-guarantee", c.ProcessingGuarantee}
	if c.CheckpointStore == "topic" {
		return append(args, "--checkpoint-topic", spec.Topic+".checkpoints")
	}
	return append(args, "--checkpoint-dir", spec.Dir+"/checkpoints")
}

// runningMember is a member process, done closed once it ended.
type runningMember struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// member starts `streamlearner run` from this executable, its log in
// spec.Dir, and returns how to stop it.
func (c *benchCmd) member(ctx context.Context, spec benchrun.MemberSpec) (stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench: find this executable: %w", err)
	}
	log, err := os.Create(spec.Dir + "/member-" + spec.Name + ".log")
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, c.memberArgs(spec)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("bench: start member %s: %w", spec.Name, err)
	}
	m := &runningMember{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); log.Close(); close(m.done) }()
	return m.stop, nil
}

// stop sends SIGTERM, as an orchestrator does, and waits for the member
// to leave (killed after 30 s).
func (m *runningMember) stop() {
	m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		m.cmd.Process.Kill()
		<-m.done
	}
}
