package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/internal/offline"
	"github.com/streamlearner/streamlearner/learners"
)

type checkpointCmd struct {
	List    checkpointListCmd    `cmd:"" help:"List stored snapshots: partition, offset, learner, support size, bytes, time."`
	Inspect checkpointInspectCmd `cmd:"" help:"Show one snapshot and verify it decodes."`
}

// storeFlags name the store a run saved to: the directory of
// --checkpoint-dir or the compacted topic of --checkpoint-topic (with the
// brokers and connection settings to reach it).
type storeFlags struct {
	CheckpointDir   string   `aliases:"dir" type:"existingdir" placeholder:"DIR" help:"Checkpoint directory, as given to run --checkpoint-dir."`
	CheckpointTopic string   `placeholder:"TOPIC" help:"Checkpoint topic, as given to run --checkpoint-topic (with --brokers)."`
	Brokers         []string `short:"b" placeholder:"HOST:PORT" help:"Bootstrap brokers, for --checkpoint-topic."`
	connOpts        `embed:""`
}

func (f *storeFlags) Validate() error {
	switch {
	case (f.CheckpointDir == "") == (f.CheckpointTopic == ""):
		return errors.New("give --checkpoint-dir or --checkpoint-topic (one of them)")
	case f.CheckpointTopic != "" && len(f.Brokers) == 0:
		return errors.New("--checkpoint-topic needs --brokers")
	case f.CheckpointTopic != "":
		cfg := f.withBrokers(f.Brokers)
		return cfg.Validate()
	}
	return nil
}

// open returns the store and a function that releases it. A checkpoint
// topic must exist: looking at one that does not would, on a broker that
// creates topics on demand, create it.
func (f *storeFlags) open(ctx context.Context) (checkpoint.Store, func(), error) {
	if f.CheckpointDir != "" {
		return checkpoint.DirStore{Dir: f.CheckpointDir}, func() {}, nil
	}
	conn := f.withBrokers(f.Brokers)
	dialer, err := conn.Dialer()
	if err != nil {
		return nil, nil, err
	}
	transport, err := conn.Transport()
	if err != nil {
		return nil, nil, err
	}
	if _, err := fetch.Partitions(ctx, dialer, conn.Brokers, f.CheckpointTopic); err != nil {
		return nil, nil, fmt.Errorf("checkpoint topic: %w", err)
	}
	ts := &checkpoint.TopicStore{Brokers: conn.Brokers, Topic: f.CheckpointTopic, Transport: transport}
	return ts, func() { ts.Close() }, nil
}

type checkpointListCmd struct {
	storeFlags `embed:""`
	Topic      string `help:"Only this input topic."`
}

func (c *checkpointListCmd) Run(ctx context.Context, out io.Writer) error {
	st, release, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer release()
	prefix := ""
	if c.Topic != "" {
		prefix = c.Topic + "/"
	}
	names, err := st.List(ctx, prefix)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "snapshot\tpartition\tnext offset\tlearner\tsupport\tbytes\tsaved")
	for _, n := range names {
		b, err := st.Load(ctx, n)
		if err != nil {
			return err
		}
		s, l, err := decodeSnapshot(b)
		if err != nil {
			fmt.Fprintf(tw, "%s\t-\t-\tUNREADABLE: %v\t-\t%d\t-\n", n, err, len(b))
			continue
		}
		learner := s.Learner
		if searchesKernels(l) {
			learner = strings.Replace(learner, " kernel="+s.Kernel, " kernel=searched", 1)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%s\n", n, s.Partition, s.NextOffset, learner, l.Size(), len(b), s.Created.Format(time.RFC3339))
	}
	return tw.Flush()
}

type checkpointInspectCmd struct {
	storeFlags `embed:""`
	Name       string `arg:"" help:"Snapshot name topic/partition/generation/seq (see list)."`
}

func (c *checkpointInspectCmd) Run(ctx context.Context, out io.Writer) error {
	st, release, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer release()
	b, err := st.Load(ctx, c.Name)
	if err != nil {
		return err
	}
	s, l, err := decodeSnapshot(b)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	kernel := s.Kernel
	if searchesKernels(l) {
		kernel = "searched (given " + s.Kernel + ", unused); champion " + l.(supportOf).m.SearchChampion()
	}
	fmt.Fprintf(out, "snapshot     %s\ntopic        %s\npartition    %d\ngeneration   %d\nsequence     %d\nnext offset  %d\nlearner      %s\nkernel       %s\nform         %s\nsupport      %d\nbytes        %d (model %d)\nsaved        %s\n",
		c.Name, s.Topic, s.Partition, s.Generation, s.Seq, s.NextOffset, s.Learner, kernel, formOf(l), l.Size(), len(b), len(s.Model), s.Created.Format(time.RFC3339Nano))
	if m, ok := l.(supportOf); ok {
		for i := range m.m.Candidates() {
			if a := offline.AutoOf(m.m, i); a != nil {
				fmt.Fprintf(out, "\nsearch (%s): %d changes of champion\n", m.m.CandidateName(i), a.Switches)
				offline.WriteAuto(out, a)
			}
		}
	}
	return nil
}

// decodeSnapshot decodes a snapshot and the model in it (format 1 held a
// lone learner), for its support size.
func decodeSnapshot(b []byte) (*checkpoint.Snapshot, interface{ Size() int }, error) {
	s, err := checkpoint.Decode(b)
	if err != nil {
		return nil, nil, err
	}
	if s.Version == 1 {
		l, err := learners.Unmarshal(s.Model)
		if err != nil {
			return nil, nil, err
		}
		return s, l, nil
	}
	m, err := model.Unmarshal(s.Model)
	if err != nil {
		return nil, nil, err
	}
	return s, supportOf{m}, nil
}

type supportOf struct{ m *model.Model }

// formOf says how a snapshot's model keeps its learners: "primal (weight
// vectors; support counts the vectors folded in)", "dual (support
// vectors)", or mixed.
func formOf(l interface{ Size() int }) string {
	f := learners.FormDual
	switch v := l.(type) {
	case supportOf:
		f = v.m.Form()
	case learners.Learner:
		f = learners.Form(v)
	}
	switch f {
	case learners.FormPrimal:
		return f + " (weight vectors; support counts the vectors folded in)"
	case learners.FormDual:
		return f + " (support vectors)"
	}
	return f + " (learners in primal and in dual form)"
}

// searchesKernels reports whether l, a decoded snapshot's model, emits an
// auto learner that searches kernels itself (not kernel=given): the
// kernel the snapshot was given is then not the one its champion uses.
func searchesKernels(l interface{ Size() int }) bool {
	m, ok := l.(supportOf)
	if !ok || m.m.SearchChampion() == "" {
		return false
	}
	spec, _ := m.m.CandidateSpec(m.m.Champion())
	sp, err := learners.ParseSpec(spec)
	return err == nil && sp.Params["kernel"] != "given"
}

func (s supportOf) Size() int { return s.m.Support() }
