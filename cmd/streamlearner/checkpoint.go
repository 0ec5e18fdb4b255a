package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/learners"
)

type checkpointCmd struct {
	List    checkpointListCmd    `cmd:"" help:"List stored snapshots: partition, offset, learner, support size, bytes, time."`
	Inspect checkpointInspectCmd `cmd:"" help:"Show one snapshot and verify it decodes."`
}

type checkpointListCmd struct {
	Dir   string `required:"" type:"existingdir" placeholder:"DIR" help:"Checkpoint directory (as given to run --checkpoint-dir)."`
	Topic string `help:"Only this input topic."`
}

func (c *checkpointListCmd) Run(ctx context.Context, out io.Writer) error {
	st := checkpoint.DirStore{Dir: c.Dir}
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
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%d\t%s\n", n, s.Partition, s.NextOffset, s.Learner, l.Size(), len(b), s.Created.Format(time.RFC3339))
	}
	return tw.Flush()
}

type checkpointInspectCmd struct {
	Dir  string `required:"" type:"existingdir" placeholder:"DIR" help:"Checkpoint directory."`
	Name string `arg:"" help:"Snapshot name topic/partition/generation/seq (see list)."`
}

func (c *checkpointInspectCmd) Run(ctx context.Context, out io.Writer) error {
	b, err := checkpoint.DirStore{Dir: c.Dir}.Load(ctx, c.Name)
	if err != nil {
		return err
	}
	s, l, err := decodeSnapshot(b)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	fmt.Fprintf(out, "snapshot     %s\ntopic        %s\npartition    %d\ngeneration   %d\nsequence     %d\nnext offset  %d\nlearner      %s\nkernel       %s\nsupport      %d\nbytes        %d (model %d)\nsaved        %s\n",
		c.Name, s.Topic, s.Partition, s.Generation, s.Seq, s.NextOffset, s.Learner, s.Kernel, l.Size(), len(b), len(s.Model), s.Created.Format(time.RFC3339Nano))
	return nil
}

func decodeSnapshot(b []byte) (*checkpoint.Snapshot, learners.Learner, error) {
	s, err := checkpoint.Decode(b)
	if err != nil {
		return nil, nil, err
	}
	l, err := learners.Unmarshal(s.Model)
	if err != nil {
		return nil, nil, err
	}
	return s, l, nil
}
