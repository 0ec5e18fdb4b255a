package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/dev/synth"
	"github.com/streamlearner/streamlearner/internal/feed"
	"github.com/streamlearner/streamlearner/internal/progress"
	"github.com/streamlearner/streamlearner/internal/replay"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

type genCmd struct {
	Gauss        genGaussCmd        `cmd:"" help:"Two 2-D Gaussians with label noise (Projectron paper, Table 3); with --shifts, their means rotate."`
	Checkerboard genCheckerboardCmd `cmd:"" help:"Uniform checkerboard with label noise (Tightest paper, NCheckerboard); with --drift, rotating (Elwell and Polikar)."`
	Sea          genSEACmd          `cmd:"" help:"SEA concepts (Street and Kim, KDD 2001): +1 iff x1+x2 <= theta, theta changing abruptly."`
	Hyperplane   genHyperplaneCmd   `cmd:"" help:"Rotating hyperplane (Hulten, Spencer and Domingos, KDD 2001): gradual drift, optional abrupt redraws."`
	Chunks       genChunksCmd       `cmd:"" help:"A multi-class file cut into equal chunks, each binarized against its own target (RBP paper, shifting targets)."`
}

// genSink is where a generated stream goes: standard output, a LIBSVM file
// with its shifts sidecar, or a topic.
type genSink struct {
	Out        string   `short:"o" placeholder:"FILE" help:"Output LIBSVM file, with the shift positions in FILE.shifts.json (default: standard output, no sidecar)."`
	Brokers    []string `short:"b" placeholder:"HOST:PORT" help:"Bootstrap brokers, for --topic."`
	Topic      string   `short:"t" help:"Produce to this topic instead of writing LIBSVM: JSON records, labels 1/-1, each with header streamlearner.segment = its segment number."`
	connOpts   `embed:""`
	AutoCreate bool    `help:"Create the topic if missing (with --topic)."`
	Rate       float64 `help:"Records per second into the topic (0: as fast as possible)."`
	Spread     bool    `default:"true" negatable:"" help:"Spread records round-robin over the topic's partitions, as a producer would; --no-spread writes them all to partition 0, one ordered stream."`
}

// Validate decides the output by --topic alone, so that brokers set in
// the environment for other commands do not turn file output into an error.
func (s *genSink) Validate() error {
	switch {
	case s.Topic == "":
		return nil
	case s.Out != "":
		return errors.New("give either --out or --topic, not both")
	case len(s.Brokers) == 0:
		return errors.New("--topic needs --brokers")
	}
	cfg := s.withBrokers(s.Brokers)
	return cfg.Validate()
}

// genStream is a generated stream ready for output: dense synthetic points
// or, for chunks, the sparse records of a file with new labels.
type genStream struct {
	generator string
	points    []synth.Point   // synthetic generators
	xs        []sparse.Vector // chunks: features, with ys and segs
	ys, segs  []int
	shifts    []int64
	segments  []synth.SegmentInfo
}

func pointsStream(generator string, s synth.Stream) genStream {
	return genStream{generator: generator, points: s.Points, shifts: s.Shifts, segments: s.Segments}
}

func (g *genStream) len() int {
	if g.points != nil {
		return len(g.points)
	}
	return len(g.xs)
}

// record returns record i with its canonical label, "1" or "-1", and its
// segment.
func (g *genStream) record(i int) (codec.Example, int) {
	if g.points != nil {
		p := g.points[i]
		return codec.Example{Label: strconv.Itoa(p.Y), X: sparse.FromDense(p.X)}, p.Segment
	}
	return codec.Example{Label: strconv.Itoa(g.ys[i]), X: g.xs[i]}, g.segs[i]
}

// writeLIBSVM writes the records with labels "+1" and "-1", synthetic
// points dense as synth.WriteLIBSVM writes them, chunks sparse as read.
func (g *genStream) writeLIBSVM(w io.Writer) error {
	if g.points != nil {
		return synth.WriteLIBSVM(w, g.points)
	}
	bw := bufio.NewWriter(w)
	var line []byte
	for i := range g.xs {
		line = append(line[:0], "-1"...)
		if g.ys[i] == 1 {
			line = append(line[:0], "+1"...)
		}
		if len(g.xs[i].Idx) > 0 {
			line = codec.AppendLIBSVM(append(line, ' '), codec.Example{X: g.xs[i]})
		}
		if _, err := bw.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("write LIBSVM: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write LIBSVM: %w", err)
	}
	return nil
}

func (g *genStream) sidecar() synth.ShiftsFile {
	shifts := g.shifts
	if shifts == nil {
		shifts = []int64{}
	}
	return synth.ShiftsFile{Generator: g.generator, N: int64(g.len()), Shifts: shifts, Segments: g.segments}
}

// summary is the one line gen prints on standard error.
func (g *genStream) summary(dest string) string {
	pos := make([]string, len(g.shifts))
	for i, s := range g.shifts {
		pos[i] = strconv.FormatInt(s, 10)
	}
	at := ""
	if len(pos) > 0 {
		at = " at " + strings.Join(pos, ", ")
	}
	plural := "s"
	if len(pos) == 1 {
		plural = ""
	}
	return fmt.Sprintf("gen %s: %d records to %s, %d shift%s%s", g.generator, g.len(), dest, len(pos), plural, at)
}

// emit sends g where the flags say.
func (s *genSink) emit(ctx context.Context, out io.Writer, g genStream) error {
	switch {
	case s.Topic != "":
		used, err := s.produce(ctx, g)
		if err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, g.summary("topic "+s.Topic+" "+used.String()))
		return nil
	case s.Out != "":
		if err := writeFile(s.Out, g.writeLIBSVM); err != nil {
			return fmt.Errorf("gen: %w", err)
		}
		side, err := json.Marshal(g.sidecar())
		if err != nil {
			return fmt.Errorf("gen: shifts sidecar: %w", err)
		}
		if err := writeFile(s.Out+synth.ShiftsSuffix, func(w io.Writer) error {
			_, err := w.Write(append(side, '\n'))
			return err
		}); err != nil {
			return fmt.Errorf("gen: %w", err)
		}
		fmt.Fprintln(os.Stderr, g.summary(s.Out))
		return nil
	}
	if err := g.writeLIBSVM(out); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	fmt.Fprintln(os.Stderr, g.summary("standard output"))
	return nil
}

// messages are the stream's records as JSON examples, each with its
// segment header.
func (g *genStream) messages() iter.Seq2[feed.Message, error] {
	return func(yield func(feed.Message, error) bool) {
		for i := range g.len() {
			ex, seg := g.record(i)
			h := []kafka.Header{{Key: replay.SegmentHeader, Value: strconv.AppendInt(nil, int64(seg), 10)}}
			if !yield(feed.Message{Example: ex, Headers: h}, nil) {
				return
			}
		}
	}
}

func (s *genSink) produce(ctx context.Context, g genStream) (*partitionCount, error) {
	var balancer kafka.Balancer = feed.OnePartition
	if s.Spread {
		balancer = &kafka.RoundRobin{}
	}
	used := &partitionCount{inner: balancer, records: map[int]int64{}}
	n := g.len()
	bar := progress.New(os.Stderr, "gen "+g.generator)
	defer bar.Done()
	sent, err := feed.ProduceExamples(ctx, feed.WriterConfig{
		Conn: s.withBrokers(s.Brokers), Topic: s.Topic, Rate: s.Rate, Balancer: used, AutoCreateTopic: s.AutoCreate,
		Progress: func(sent int64) { bar.Update(sent, int64(n)) },
	}, g.messages())
	if err != nil {
		return nil, fmt.Errorf("gen: %d of %d records sent: %w", sent, n, err)
	}
	return used, nil
}

// partitionCount is a balancer that counts where another one sends
// records, so gen can say which partitions of a multi-partition topic it
// wrote (one ordered stream in partition 0 with --no-spread).
type partitionCount struct {
	inner   kafka.Balancer
	mu      sync.Mutex
	records map[int]int64
	of      int // partitions of the topic
}

func (b *partitionCount) Balance(m kafka.Message, partitions ...int) int {
	p := b.inner.Balance(m, partitions...)
	b.mu.Lock()
	b.records[p]++
	b.of = len(partitions)
	b.mu.Unlock()
	return p
}

// String is "partition 0 of 4, ..." or "partitions 0, 1, 2, 3 of 4
// (round-robin)".
func (b *partitionCount) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	ps := slices.Sorted(maps.Keys(b.records))
	switch len(ps) {
	case 0:
		return "(no records)"
	case 1:
		hint := ""
		if b.of > 1 {
			hint = ", the others untouched (--no-spread)"
		}
		return fmt.Sprintf("partition %d of %d%s", ps[0], b.of, hint)
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = strconv.Itoa(p)
	}
	return fmt.Sprintf("partitions %s of %d (round-robin)", strings.Join(names, ", "), b.of)
}

// writeFile creates path and fills it with write, reporting the first
// error of creating, writing or closing.
// createFile creates path, and its directory if missing: the examples
// write under out/, which a fresh clone does not have.
func createFile(path string) (*os.File, error) {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err // names the directory
		}
	}
	return os.Create(path)
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := createFile(path)
	if err != nil {
		return err // names the path
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// genPoints are the flags every synthetic generator has. Each generator
// gives its defaults by setting n and noise on its embedding field, and
// noise_help where its noise is not a probability.
type genPoints struct {
	N     int     `default:"${n}" help:"Number of points."`
	Noise float64 `default:"${noise}" help:"${noise_help=Probability of flipping each label.}"`
	Seed  uint64  `default:"1" help:"Random seed."`
}

type genGaussCmd struct {
	genPoints `embed:"" set:"n=10000" set:"noise=0.1"`
	Shifts    int     `default:"0" help:"Concept changes, evenly spaced; at each the class means rotate by --angle (0: the stationary set)."`
	Angle     float64 `default:"90" help:"Rotation of the class means at each shift, in degrees."`
	Drift     string  `default:"abrupt" enum:"abrupt,gradual" help:"abrupt, or gradual: around each shift the new concept's share rises linearly over --width points."`
	Width     int     `default:"1000" help:"Length of each gradual transition, centred on the shift (with --drift gradual)."`
	genSink
}

func (c *genGaussCmd) Run(ctx context.Context, out io.Writer) error {
	cfg := synth.GaussDriftConfig{N: c.N, Noise: c.Noise, Seed: c.Seed, Shifts: c.Shifts, Angle: c.Angle}
	if c.Drift == "gradual" {
		cfg.Width = c.Width
	}
	s, err := synth.GaussDrift(cfg)
	if err != nil {
		return err
	}
	return c.emit(ctx, out, pointsStream("gauss", s))
}

type genCheckerboardCmd struct {
	genPoints `embed:"" set:"n=10000" set:"noise=0.15" set:"noise_help=Fraction of labels switched (exactly round(noise·n) points); 0 for a noise-free test set."`
	Cells     int     `default:"4" help:"Cells per side."`
	CellSize  float64 `default:"1" help:"Side of a cell."`
	Drift     string  `default:"none" enum:"none,gradual,abrupt" help:"none (the stationary board), gradual (the pattern turns a little with every point) or abrupt (--shifts equal steps)."`
	Rotation  float64 `default:"90" help:"Total rotation of the pattern over the stream, in degrees (with --drift)."`
	Shifts    int     `default:"3" help:"Number of steps of an abrupt rotation (with --drift abrupt)."`
	genSink
}

func (c *genCheckerboardCmd) Run(ctx context.Context, out io.Writer) error {
	var s synth.Stream
	var err error
	switch c.Drift {
	case "none":
		s.Points, err = synth.Checkerboard(synth.CheckerboardConfig{N: c.N, Cells: c.Cells, CellSize: c.CellSize, Noise: c.Noise, Seed: c.Seed})
		s.Segments = []synth.SegmentInfo{{Concept: "angle=0"}}
	default:
		cfg := synth.RotatingCheckerboardConfig{N: c.N, Cells: c.Cells, CellSize: c.CellSize, Noise: c.Noise, Seed: c.Seed, Rotation: c.Rotation}
		if c.Drift == "abrupt" {
			if c.Shifts < 1 {
				return errors.New("gen checkerboard: --drift abrupt needs --shifts of at least 1")
			}
			cfg.Shifts = c.Shifts
		}
		s, err = synth.RotatingCheckerboard(cfg)
	}
	if err != nil {
		return err
	}
	return c.emit(ctx, out, pointsStream("checkerboard", s))
}

type genSEACmd struct {
	genPoints  `embed:"" set:"n=50000" set:"noise=0.1"`
	Shifts     int       `default:"3" help:"Concept changes: the stream is cut into shifts+1 equal segments."`
	Thresholds []float64 `default:"8,9,7,9.5" help:"Theta of each concept, cycled."`
	genSink
}

func (c *genSEACmd) Run(ctx context.Context, out io.Writer) error {
	s, err := synth.SEA(synth.SEAConfig{N: c.N, Shifts: c.Shifts, Thresholds: c.Thresholds, Noise: c.Noise, Seed: c.Seed})
	if err != nil {
		return err
	}
	return c.emit(ctx, out, pointsStream("sea", s))
}

type genHyperplaneCmd struct {
	genPoints     `embed:"" set:"n=10000" set:"noise=0.05"`
	Dim           int     `default:"10" help:"Number of features."`
	DriftFeatures int     `default:"2" help:"How many weights drift."`
	Mag           float64 `default:"0.001" help:"How far a drifting weight moves per point."`
	Reverse       float64 `default:"0.1" help:"Probability that a drifting weight's direction reverses after a point."`
	Shifts        int     `default:"0" help:"Evenly spaced positions at which all weights are redrawn (0: gradual drift only, no shift points)."`
	genSink
}

func (c *genHyperplaneCmd) Run(ctx context.Context, out io.Writer) error {
	s, err := synth.Hyperplane(synth.HyperplaneConfig{N: c.N, Dim: c.Dim, DriftFeatures: c.DriftFeatures, Mag: c.Mag,
		Reverse: c.Reverse, Shifts: c.Shifts, Noise: c.Noise, Seed: c.Seed})
	if err != nil {
		return err
	}
	return c.emit(ctx, out, pointsStream("hyperplane", s))
}

type genChunksCmd struct {
	Data    string `required:"" type:"existingfile" placeholder:"FILE" help:"Multi-class LIBSVM or JSON lines file (gzip allowed), read in its order; a JSON label may list several classes, comma-separated (multi-label: positive if any is the target)."`
	Chunks  int    `default:"4" help:"Number of equal consecutive chunks (1, 2, 4, 8 give 0, 1, 3, 7 shifts)."`
	Targets string `placeholder:"T1,T2,..." help:"Target of each chunk, cycled: a class or '+'-joined classes, e.g. 1+2+4+5+7,3+6+8+9+0 (default: the most frequent classes, each alone)."`
	Limit   int    `help:"Use only the first N records (0: all)."`
	genSink
}

func (c *genChunksCmd) Run(ctx context.Context, out io.Writer) error {
	targets, err := parseTargets(c.Targets)
	if err != nil {
		return err
	}
	set, err := dataset.LoadRaw(ctx, c.Data, dataset.Options{Limit: c.Limit})
	if err != nil {
		return err
	}
	ch, err := synth.Chunks(set.Labels, synth.ChunksConfig{Chunks: c.Chunks, Targets: targets})
	if err != nil {
		return fmt.Errorf("%s: %w", c.Data, err)
	}
	return c.emit(ctx, out, genStream{generator: "chunks", xs: set.X, ys: ch.Y, segs: ch.Segment, shifts: ch.Shifts, segments: ch.Segments})
}

// parseTargets reads "1+2,3" into canonical class groups; "" is none.
func parseTargets(s string) ([][]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out [][]string
	for _, g := range strings.Split(s, ",") {
		classes, err := codec.ParseLabelList(strings.ReplaceAll(g, "+", ","))
		if err != nil || len(classes) == 0 {
			return nil, fmt.Errorf("--targets: group %q: want classes joined by '+'", g)
		}
		out = append(out, classes)
	}
	return out, nil
}
