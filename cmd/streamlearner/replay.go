package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/streamlearner/streamlearner/internal/pending"
	"github.com/streamlearner/streamlearner/internal/progress"
	"github.com/streamlearner/streamlearner/internal/replay"
)

type replayCmd struct {
	connFlags         `embed:""`
	registryFlags     `embed:""`
	fieldFlags        `embed:""`
	modelFlags        `embed:""`
	selectFlags       `embed:""`
	Topic             string        `required:"" short:"t" help:"Topic to replay (records as run reads them)."`
	Partition         []int         `placeholder:"N" help:"Partitions to replay, repeatable (default: all, each its own stream)."`
	From              string        `default:"earliest" placeholder:"BOUND" help:"First record: earliest, latest, an offset or an RFC 3339 time."`
	To                string        `default:"latest" placeholder:"BOUND" help:"End, exclusive: latest (the end when the replay starts), an offset or an RFC 3339 time."`
	Learner           []string      `default:"auto" sep:"none" placeholder:"SPEC" help:"Learner spec, repeatable: the learners run side by side (see 'streamlearner learners'). Default auto, as eval's: the learner, kernel, γ, budget and scaling searched online (docs/auto.md)."`
	Kernel            string        `default:"${default_kernel}" placeholder:"SPEC" help:"${kernel_help}"`
	Seed              uint64        `default:"1" help:"Seed of randomized learners (partition p uses seed+p, as run does)."`
	Positive          string        `placeholder:"LABELS" help:"Labels mapped to +1 (default: binary labels)."`
	Negative          string        `placeholder:"LABELS" help:"With --positive: labels mapped to -1; records with other labels are bad records (bad_label), not played."`
	Window            int           `default:"1000" help:"Labeled records in the windowed mistake rate."`
	Shifts            string        `placeholder:"OFFSETS|from-headers" help:"Known shifts: comma-separated offsets, or from-headers (a change of the streamlearner.segment header)."`
	RecoveryWindow    int           `default:"200" help:"Labeled post-shift records whose mistake rate decides recovery."`
	Tolerance         float64       `default:"0.05" help:"Recovered when the post-shift rate is at most the pre-shift rate plus this."`
	Detector          []string      `sep:"none" placeholder:"SPEC" help:"Drift detectors on each learner's mistakes, repeatable: adwin[:delta=D], ddm, page-hinkley[:lambda=L,delta=D]; 'none' for none (default: all three with default settings)."`
	Report            string        `placeholder:"FILE.json" help:"Write the full report (segments, recovery, detections, trace) as JSON."`
	Plot              string        `placeholder:"FILE.svg|.png" help:"Plot windowed mistake rate and support size over the stream, shifts and detector alarms marked: one image per partition with records, FILE for the first, FILE-pN beside it for partition N. Each learner keeps its colour across plots."`
	PlotLogSupport    bool          `help:"Draw the plot's support panel on a log scale (it is by itself when the learners' sizes differ more than tenfold)."`
	ReadUncommitted   bool          `help:"Also replay records of open and aborted transactions (default: read committed, as run reads)."`
	Delay             int           `default:"0" placeholder:"N" help:"Reveal each record's label N records after it (delayed progressive validation, as eval --delay --keep-order): a record is predicted when it comes, learned and scored when its label is revealed; the labels still held back are revealed at each partition's end. 0: at once."`
	DelayedLabels     bool          `help:"The topic holds records and, later, their labels as label messages (a key and a label, no feature), as run reads them with delayed labels: each message plays with its Kafka key (or the event's key field), timestamp and offset; refused labels (label_unknown, label_expired, label_evicted, label_without_key) are counted by reason."`
	PendingMaxRecords int           `default:"100000" placeholder:"N" help:"With delayed labels: most records awaiting their label per partition; the oldest is evicted beyond."`
	PendingMaxAge     time.Duration `default:"0" placeholder:"DURATION" help:"With delayed labels: how long a record waits for its label, by record timestamp, e.g. 72h (0: until evicted)."`
	LabelTopic        string        `placeholder:"TOPIC" help:"Labels in this topic, co-partitioned with --topic (as many partitions, each label keyed as its record; checked at start). Implies --delayed-labels. Per partition both topics are read to their end at start and merged: by record timestamp, then --topic before the label topic, then offset; each topic keeps its order. --from/--to must then be earliest, latest or a time."`
}

func (c *replayCmd) Validate() error {
	if c.Plot != "" {
		if _, err := replay.PlotFormat(c.Plot); err != nil {
			return err
		}
	}
	if c.Window < 1 || c.RecoveryWindow < 1 || c.Tolerance < 0 {
		return errors.New("--window and --recovery-window must be ≥ 1, --tolerance ≥ 0")
	}
	if _, _, err := c.selection(); err != nil {
		return err
	}
	switch {
	case c.Delay < 0:
		return fmt.Errorf("--delay %d: want 0 or more records", c.Delay)
	case c.Delay > 0 && c.delayedLabels():
		return errors.New("--delay holds back the labels records carry; --delayed-labels and --label-topic read labels sent on their own: one or the other")
	case c.PendingMaxRecords < 1:
		return fmt.Errorf("--pending-max-records %d: want at least 1", c.PendingMaxRecords)
	case c.PendingMaxAge < 0 || c.PendingMaxAge > 0 && c.PendingMaxAge < time.Millisecond:
		return fmt.Errorf("--pending-max-age %v: want 0 (none) or at least 1ms (record timestamps are in ms)", c.PendingMaxAge)
	}
	_, _, err := c.shifts()
	return err
}

// delayedLabels is whether labels come in their own messages.
func (c *replayCmd) delayedLabels() bool { return c.DelayedLabels || c.LabelTopic != "" }

// shifts parses --shifts.
func (c *replayCmd) shifts() (offsets []int64, fromHeaders bool, err error) {
	switch c.Shifts {
	case "":
		return nil, false, nil
	case "from-headers":
		return nil, true, nil
	}
	for _, f := range strings.Split(c.Shifts, ",") {
		off, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || off < 0 {
			return nil, false, fmt.Errorf("--shifts: %q is not an offset (want offsets like 1000,2000 or from-headers)", f)
		}
		if n := len(offsets); n > 0 && off <= offsets[n-1] {
			return nil, false, fmt.Errorf("--shifts: offsets must increase (%d after %d)", off, offsets[n-1])
		}
		offsets = append(offsets, off)
	}
	return offsets, false, nil
}

func (c *replayCmd) Run(ctx context.Context, out io.Writer) error {
	kern, labels, err := kernelAndLabels(c.Kernel, c.Positive, c.Negative)
	if err != nil {
		return err
	}
	offsets, fromHeaders, err := c.shifts()
	if err != nil {
		return err
	}
	detectors := c.Detector
	if len(detectors) == 1 && detectors[0] == "none" {
		detectors = []string{}
	}
	mc, err := c.modelConfig(c.fieldFlags, labels)
	if err != nil {
		return err
	}
	if c.delayedLabels() {
		mc.Delayed = &pending.Config{MaxRecords: c.PendingMaxRecords, MaxAge: c.PendingMaxAge.Milliseconds()}
	}
	reg, err := c.registryFlags.client(c.config())
	if err != nil {
		return err
	}
	if err := applyFormat(&mc, c.Input, reg); err != nil {
		return err
	}
	cfg := replay.Config{Learners: c.Learner, Kernel: kern, Seed: c.Seed, Window: c.Window,
		RecoveryWindow: c.RecoveryWindow, Tolerance: c.Tolerance, Detectors: detectors,
		ShiftOffsets: offsets, ShiftsFromSegments: fromHeaders, Model: mc, Delay: c.Delay}
	if cfg.Select, cfg.Challengers, err = c.selection(); err != nil {
		return err
	}
	bar := progress.New(os.Stderr, "replay")
	src := replay.Source{Conn: c.config(), Topic: c.Topic, Partitions: c.Partition, From: c.From, To: c.To,
		Labels: labels, Progress: bar.Update, DetectInput: c.Input == "auto", ReadUncommitted: c.ReadUncommitted,
		LabelTopic: c.LabelTopic, Registry: reg}
	if err := c.refuseEventOnly(ctx, src); err != nil {
		return err
	}
	rep, err := replay.Run(ctx, src, cfg)
	bar.Done()
	if err != nil && len(rep.Partitions) == 0 {
		return err
	}
	// What was replayed before an interruption is still reported.
	if werr := writeReplay(out, rep, c.Report, c.Plot, replay.PlotOptions{LogSupport: c.PlotLogSupport}); werr != nil {
		return errors.Join(err, werr)
	}
	if err == nil {
		err = c.nothingLearned(rep)
	}
	return err
}

// nothingLearned is the error of a replay in which no record carried a
// label: every row says "no labels", and the exit status says so too.
func (c *replayCmd) nothingLearned(rep replay.Report) error {
	var rounds int64
	for _, p := range rep.Partitions {
		rounds += p.Rounds
	}
	for _, l := range rep.Learners {
		if l.Labeled > 0 {
			return nil
		}
	}
	if rounds == 0 || c.delayedLabels() {
		return nil
	}
	return fmt.Errorf("no record of topic %s has a label (events: the label field %q): nothing was learned or scored; set --label-field to the field that holds the label", c.Topic, c.LabelField)
}

// refuseEventOnly refuses the flags only named-field events use when the
// topic holds indexed records (--input records, or auto deciding so), as
// run does: they would change nothing, and the replay would not match the
// run a user had in mind.
func (c *replayCmd) refuseEventOnly(ctx context.Context, src replay.Source) error {
	only := c.eventOnly(c.Scale)
	if len(only) == 0 || c.Input != "auto" && c.Input != "records" {
		return nil
	}
	if c.Input == "auto" {
		events, decided, err := replay.DetectEvents(ctx, src, c.delayedLabels())
		if err != nil || events || !decided {
			return err
		}
	}
	return fmt.Errorf("%s: only named-field events use them, and topic %s holds indexed records (LIBSVM or {\"label\",\"features\"}); remove them", strings.Join(only, ", "), c.Topic)
}

// writeReplay prints the summary table and writes the report and plot
// files when asked for: a plot of each partition that held records, the
// first at plotPath and the others beside it (drift.png, drift-p1.png,
// …), each named on out.
func writeReplay(out io.Writer, rep replay.Report, reportPath, plotPath string, opt replay.PlotOptions) error {
	if err := rep.WriteTable(out); err != nil {
		return err
	}
	if reportPath != "" {
		if err := writeFile(reportPath, rep.WriteJSON); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	if plotPath == "" {
		return nil
	}
	format, err := replay.PlotFormat(plotPath)
	if err != nil {
		return err
	}
	first := true
	for _, p := range rep.Partitions {
		if p.Rounds == 0 {
			continue
		}
		path := plotPath
		if !first {
			ext := filepath.Ext(plotPath)
			path = fmt.Sprintf("%s-p%d%s", strings.TrimSuffix(plotPath, ext), p.Partition, ext)
		}
		first = false
		if err := writeFile(path, func(w io.Writer) error { return rep.WritePlotWith(w, p.Partition, format, opt) }); err != nil {
			return err
		}
		fmt.Fprintf(out, "plot (partition %d): %s\n", p.Partition, path)
	}
	return nil
}
