package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/schemareg"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/feed"
	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/internal/progress"
	"github.com/streamlearner/streamlearner/internal/replay"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/pipeline"
)

// connFlags are the connection options every Kafka-facing command shares.
type connFlags struct {
	Brokers  []string `required:"" short:"b" placeholder:"HOST:PORT" help:"Bootstrap brokers."`
	connOpts `embed:""`
}

// connOpts are the connection options besides the brokers, apart so that
// gen, whose brokers are optional (a file is the other output), can share
// them.
type connOpts struct {
	ClientID      string `default:"streamlearner" help:"Client id sent to the brokers."`
	TLS           bool   `name:"tls" help:"Connect with TLS."`
	TLSCA         string `name:"tls-ca" type:"existingfile" placeholder:"FILE" help:"CA bundle (PEM) to trust instead of the system's."`
	TLSCert       string `name:"tls-cert" type:"existingfile" placeholder:"FILE" help:"Client certificate (PEM), with --tls-key."`
	TLSKey        string `name:"tls-key" type:"existingfile" placeholder:"FILE" help:"Client key (PEM), with --tls-cert."`
	TLSInsecure   bool   `name:"tls-insecure" help:"Accept any server certificate (testing only)."`
	SASLMechanism string `name:"sasl-mechanism" enum:",plain,scram-sha-256,scram-sha-512" default:"" help:"SASL mechanism: plain, scram-sha-256 or scram-sha-512 (empty: none)."`
	SASLUsername  string `name:"sasl-username" help:"SASL user."`
	SASLPassword  string `name:"sasl-password" help:"SASL password (prefer the environment variable)."`
}

func (c *connFlags) config() kafkaconn.Config { return c.withBrokers(c.Brokers) }

func (o *connOpts) withBrokers(brokers []string) kafkaconn.Config {
	return kafkaconn.Config{
		Brokers: brokers, ClientID: o.ClientID, TLS: o.TLS, CAFile: o.TLSCA, CertFile: o.TLSCert, KeyFile: o.TLSKey,
		InsecureSkipVerify: o.TLSInsecure, Mechanism: o.SASLMechanism, Username: o.SASLUsername, Password: o.SASLPassword,
	}
}

func (c *connFlags) Validate() error {
	cfg := c.config()
	return cfg.Validate()
}

type logFlags struct {
	LogFormat string `default:"auto" enum:"auto,json,console" help:"Log format: json, console, or auto (console on a terminal)."`
	LogLevel  string `default:"info" enum:"debug,info,warn,error" help:"Log level."`
}

func (l *logFlags) logger() zerolog.Logger { return l.loggerTo(os.Stderr) }

// loggerTo logs to f. The console format colours its output only on a
// terminal: escape codes in a file or a pipe are noise for whoever reads
// or greps it.
func (l *logFlags) loggerTo(f *os.File) zerolog.Logger {
	level, _ := zerolog.ParseLevel(l.LogLevel)
	var w io.Writer = f
	if tty := isTerminal(f); l.LogFormat == "console" || (l.LogFormat == "auto" && tty) {
		w = zerolog.ConsoleWriter{Out: f, TimeFormat: time.TimeOnly, NoColor: !tty}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger()
}

type brokerCmd struct {
	Port       int    `default:"9092" help:"Port on 127.0.0.1 (0: any free port)."`
	DataDir    string `placeholder:"DIR" help:"Persist topics and group offsets here (default: in memory)."`
	Partitions int    `default:"4" help:"Partitions of auto-created topics."`
	// A port, not a flag that enables one: the Confluent default 8081 is
	// often taken on a developer machine.
	SchemaRegistryPort int `placeholder:"PORT" help:"Also serve a development Schema Registry on 127.0.0.1:PORT (register, get by id, subject versions; kept in --data-dir/registry when given). 0 or unset: none; -1: any free port."`
}

func (c *brokerCmd) Run(ctx context.Context, out io.Writer) error {
	// The registry first: a script that waits for the broker's port and
	// then produces in a wire format must find the registry up too.
	if c.SchemaRegistryPort != 0 {
		rc := embedded.RegistryConfig{Port: max(c.SchemaRegistryPort, 0)}
		if c.DataDir != "" {
			rc.DataDir = filepath.Join(c.DataDir, "registry")
		}
		reg, err := embedded.StartRegistry(rc)
		if err != nil {
			return err
		}
		defer reg.Close()
		fmt.Fprintf(out, "schema registry listening on %s\n", reg.URL())
	}
	b, err := embedded.Start(embedded.Config{Port: c.Port, DataDir: c.DataDir, Partitions: c.Partitions})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "broker listening on %s (Ctrl-C to stop)\n", b.Addr())
	<-ctx.Done()
	b.Close()
	fmt.Fprintln(out, "broker stopped")
	return nil
}

type runCmd struct {
	connFlags              `embed:""`
	logFlags               `embed:""`
	registryFlags          `embed:""`
	Topic                  string `required:"" short:"t" help:"Input topic of labeled (or unlabeled) records."`
	Group                  string `required:"" help:"Consumer group id; members of one group share the partitions."`
	OutputTopic            string `required:"" help:"Topic for predictions (keyed topic/partition/offset)."`
	DLQTopic               string `name:"dlq-topic" help:"Dead-letter topic for bad records (default: <topic>.dlq)."`
	Learner                string `required:"" placeholder:"SPEC" help:"Learner spec, e.g. rbp:budget=100 (see 'streamlearner learners')."`
	fieldFlags             `embed:""`
	modelFlags             `embed:""`
	selectFlags            `embed:""`
	Kernel                 string        `default:"${default_kernel}" placeholder:"SPEC" help:"${kernel_help}"`
	Seed                   uint64        `default:"1" help:"Seed of randomized learners (partition p uses seed+p)."`
	Start                  string        `default:"earliest" enum:"earliest,latest" help:"Where a partition with no committed offset starts."`
	Positive               string        `placeholder:"LABELS" help:"Labels mapped to +1 (default: binary labels)."`
	Negative               string        `placeholder:"LABELS" help:"With --positive: labels mapped to -1; records with other labels are dead-lettered (bad_label), not predicted or learned."`
	MaxRecordBytes         int           `default:"1048576" help:"Largest record accepted; larger ones are dead-lettered."`
	MaxFeatureIndex        uint32        `default:"16777216" help:"Largest feature index accepted."`
	MaxNonZeros            int           `default:"65536" help:"Most features in one record."`
	MaxAbsValue            float64       `default:"1e15" help:"Largest feature magnitude accepted; larger values (which overflow kernels) are dead-lettered as value_too_large."`
	ReadUncommitted        bool          `help:"Also read records of open and aborted transactions (default: read committed; transaction markers are never decoded)."`
	ConnectTimeout         time.Duration `default:"30s" help:"How long to try reaching the brokers and checking the topics at start before giving up."`
	MaxMessageBytes        int           `default:"1048576" help:"Largest record the output and dead-letter topics take, when the brokers do not say (their max.message.bytes is read at start)."`
	MaxKeyBytes            int           `default:"1024" help:"Longest input key a prediction carries; longer keys are cut, with their size and SHA-256."`
	StuckAfter             time.Duration `default:"1m" help:"A partition making no progress for this long (unable to flush or commit, waiting for the registry, held inside a record or a snapshot save, no snapshot saved) makes /readyz answer 503, naming it and why."`
	MaxModelBytes          int64         `default:"1073741824" help:"Refuse a learner whose model would need more memory than this per partition, as estimated at start (and logged): its learners, challengers and classes, the delayed-label store at its limit, and with checkpoints what a save holds beside them (the encoded snapshot and the copy decoded to check it)."`
	ExpectedNonZeros       int           `default:"100" help:"Average non-zero features per record, for the model memory estimate."`
	FetchMaxBytes          int           `default:"16777216" help:"Input bytes the member holds for all its partitions together (fetched, fetched ahead, being worked on): one fetch per broker gives each partition a share of it, so memory does not grow with the partitions."`
	FetchPartitionMaxBytes int           `help:"Largest share of a fetch for one partition. Default: 2 MiB, or twice --max-record-bytes if larger."`
	FetchMaxWait           time.Duration `default:"500ms" help:"How long a broker may hold a fetch that finds no records; records that reach a partition whose worker was busy when the fetch left may wait this long."`
	FlushRecords           int           `default:"1000" help:"Predictions buffered per partition before a flush and commit."`
	FlushInterval          time.Duration `default:"200ms" help:"Longest time a prediction waits before a flush and commit."`
	FlushMaxBytes          int           `default:"8388608" help:"Predictions buffered by all partitions together: a partition flushes too when its share (this divided by the partitions assigned, at least 1 KiB) fills."`
	AutoCreate             bool          `help:"Create missing output and dead-letter topics (never the input topic: a member waits for it, not ready)."`

	CheckpointDir         string        `placeholder:"DIR" help:"Save partition models here, so a partition's next owner continues the same model (one node, or a shared disk)."`
	CheckpointTopic       string        `placeholder:"TOPIC" help:"Save partition models in this compacted topic (created if missing), for members on several machines."`
	CheckpointEvery       int           `default:"10000" help:"Records between checkpoints (and offset commits)."`
	CheckpointInterval    time.Duration `default:"10s" help:"Longest time between checkpoints (and offset commits)."`
	SnapshotMaxRate       int           `default:"32768" placeholder:"BYTES" help:"Snapshot bytes a second a partition may write: a model of S bytes is snapshotted at most every S/this (one of 14 kB every 0.44 s, one of 0.55 MB every 17 s, a bigger one once per --snapshot-interval); the commits in between name the last snapshot (before a new model's first, the model as it began, its first snapshot paced on the learner's estimated size), and a restore replays the records after it learn-only, which rebuilds the same model. 0: a snapshot with every commit. With --label-topic every commit carries one."`
	SnapshotInterval      time.Duration `default:"30s" help:"Longest time between two snapshots of a learning partition: bounds what a restore replays (about this long of records). The input topic's retention must keep at least this long."`
	HeartbeatInterval     time.Duration `default:"1s" help:"Group heartbeat: how soon a member notices a rebalance."`
	SessionTimeout        time.Duration `default:"10s" help:"How long a silent member keeps its partitions."`
	RebalanceTimeout      time.Duration `default:"10s" help:"How long members get to stop their workers in a rebalance."`
	MetricsAddr           string        `default:"127.0.0.1:9464" help:"Serve /metrics, /healthz and /readyz here (empty: off)."`
	LogEvery              time.Duration `default:"30s" help:"Log a progress line this often: records/s, and per partition records, windowed mistake rate and support (0: none). A summary is logged when the member stops."`
	ResetModel            bool          `help:"Discard a stored model made with another learner or kernel (or an unreadable one) and start a new model at the committed offset."`
	ProcessingGuarantee   string        `default:"at-least-once" enum:"at-least-once,exactly-once" help:"at-least-once: after a crash the records since the last commit are predicted again (byte-identical duplicates). exactly-once: each partition's predictions, dead letters and offsets between two commits are one Kafka transaction, so consumers reading with isolation.level=read_committed see each exactly once; needs --checkpoint-dir or --checkpoint-topic, commits every --commit-interval (with a snapshot as --snapshot-max-rate says)."`
	CommitInterval        time.Duration `default:"500ms" help:"With exactly-once: how often the member's transaction commits, with every partition it serves (or sooner, when a partition reaches --checkpoint-every records), with a snapshot as --snapshot-max-rate says; a prediction is visible to read_committed consumers once its transaction commits, so about this long after its record. --checkpoint-interval is not used."`
	TransactionalIDPrefix string        `placeholder:"PREFIX" help:"With exactly-once: the member's transactional id is PREFIX.RANDOM, one per member instance; a zombie is fenced by its group generation (default: the group id)."`
	TransactionTimeout    time.Duration `default:"10s" help:"With exactly-once: how long the brokers let a transaction stay open before aborting it (a crashed member's open transaction holds back read_committed consumers this long unless another member takes its partitions over, which aborts it at once)."`
	Idempotence           bool          `default:"true" negatable:"" help:"With at-least-once: write as an idempotent producer (a producer id and sequence numbers), so that a batch retried after a broker timeout is kept once; duplicates then come only from a member that stopped before committing. --no-idempotence for brokers before 0.11 or without IDEMPOTENT_WRITE."`
	Compression           string        `default:"lz4" enum:"none,gzip,snappy,lz4,zstd" help:"Compression of the batches of predictions and dead letters: none, gzip, snappy, lz4 or zstd."`
	ResetOffsets          string        `placeholder:"WHERE" help:"Move every partition of the group, once, to earliest, latest, an offset, -N (N before the end) or an RFC 3339 time, with a new model (as kafka-consumer-groups --reset-offsets): the records from there are predicted and learned again. Applied once per value: a restart with the same value goes on from its checkpoints."`

	DelayedLabels      bool          `help:"Labels may come after their records: a keyed record without a label is predicted and waits for a label message (its key and label, no feature) in the same topic and partition; see docs/delayed.md."`
	LabelTopic         string        `placeholder:"TOPIC" help:"Read label messages from this topic too, co-partitioned with --topic (as many partitions, each label keyed as its record; checked at start). Implies --delayed-labels. Each label is learned exactly once; see docs/delayed.md."`
	PendingMaxRecords  int           `default:"100000" help:"With --delayed-labels: records awaiting a label per partition; past it the oldest is evicted."`
	PendingMaxBytes    int64         `default:"67108864" placeholder:"BYTES" help:"With --delayed-labels: what the records awaiting a label may cost per partition (features, keys, bookkeeping; default 64 MiB); past it the oldest are evicted."`
	PendingMaxKeyBytes int           `default:"1024" placeholder:"BYTES" help:"With --delayed-labels: the longest key of a record awaiting its label; a longer one is dead-lettered (key_too_large)."`
	PendingMaxAge      time.Duration `default:"0s" help:"With --delayed-labels: how long a record waits for its label, by record timestamps (0: until evicted)."`
}

func (c *runCmd) Validate() error {
	if c.CheckpointDir != "" && c.CheckpointTopic != "" {
		return fmt.Errorf("give --checkpoint-dir or --checkpoint-topic, not both")
	}
	if c.ProcessingGuarantee == pipeline.ExactlyOnce && c.CheckpointDir == "" && c.CheckpointTopic == "" {
		return fmt.Errorf("--processing-guarantee exactly-once needs --checkpoint-dir or --checkpoint-topic: an aborted transaction is undone by restoring the partition's last committed snapshot")
	}
	if c.ProcessingGuarantee == pipeline.ExactlyOnce && c.ReadUncommitted {
		return fmt.Errorf("--processing-guarantee exactly-once reads committed input only: drop --read-uncommitted")
	}
	if c.ResetModel && c.CheckpointDir == "" && c.CheckpointTopic == "" {
		return fmt.Errorf("--reset-model needs --checkpoint-dir or --checkpoint-topic: without checkpoints there is no stored model to reset")
	}
	if t := c.CheckpointTopic; t != "" && (t == c.Topic || t == c.OutputTopic || t == c.DLQTopic || t == c.Topic+".dlq" && c.DLQTopic == "") {
		return fmt.Errorf("--checkpoint-topic %q is also the input, output or dead-letter topic: snapshots need a compacted topic of their own", t)
	}
	if c.SnapshotMaxRate < 0 {
		return fmt.Errorf("--snapshot-max-rate %d: want 0 (a snapshot with every commit) or bytes a second", c.SnapshotMaxRate)
	}
	// The pipeline would read 0 as "default"; from the command line it is
	// more likely a mistake.
	for _, n := range []struct {
		flag string
		v    int64
	}{
		{"--flush-records", int64(c.FlushRecords)}, {"--flush-interval", int64(c.FlushInterval)},
		{"--fetch-max-bytes", int64(c.FetchMaxBytes)}, {"--fetch-max-wait", int64(c.FetchMaxWait)}, {"--flush-max-bytes", int64(c.FlushMaxBytes)},
		{"--checkpoint-every", int64(c.CheckpointEvery)}, {"--checkpoint-interval", int64(c.CheckpointInterval)}, {"--snapshot-interval", int64(c.SnapshotInterval)},
		{"--heartbeat-interval", int64(c.HeartbeatInterval)}, {"--session-timeout", int64(c.SessionTimeout)},
		{"--rebalance-timeout", int64(c.RebalanceTimeout)}, {"--max-record-bytes", int64(c.MaxRecordBytes)},
		{"--max-non-zeros", int64(c.MaxNonZeros)}, {"--connect-timeout", int64(c.ConnectTimeout)},
		{"--max-message-bytes", int64(c.MaxMessageBytes)}, {"--max-key-bytes", int64(c.MaxKeyBytes)},
		{"--stuck-after", int64(c.StuckAfter)}, {"--max-model-bytes", c.MaxModelBytes}, {"--expected-non-zeros", int64(c.ExpectedNonZeros)},
	} {
		if n.v <= 0 {
			return fmt.Errorf("%s must be positive", n.flag)
		}
	}
	if !(c.MaxAbsValue > 0) {
		return fmt.Errorf("--max-abs-value must be positive")
	}
	return nil
}

func (c *runCmd) Run(ctx context.Context) error {
	kern, labels, err := kernelAndLabels(c.Kernel, c.Positive, c.Negative)
	if err != nil {
		return err
	}
	log := c.logger()
	store, closeStore, err := c.checkpointStore(ctx, log)
	if err != nil {
		return err
	}
	defer closeStore()
	cfg, err := c.pipelineConfig(kern, labels, store, log)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx) // also stops the metrics server
	defer stop()
	if c.MetricsAddr != "" {
		reg := newRegistry()
		cfg.Metrics = pipeline.NewMetrics(reg)
		if err := serveOps(ctx, c.MetricsAddr, reg, cfg.Metrics, log); err != nil {
			return err
		}
	}
	if err := c.resolveInput(ctx, cfg, log); err != nil {
		return err
	}
	return c.runMember(ctx, cfg, log)
}

// checkpointStore opens the store --checkpoint-dir or --checkpoint-topic
// names (nil for neither) and returns what closes it.
func (c *runCmd) checkpointStore(ctx context.Context, log zerolog.Logger) (checkpoint.Store, func(), error) {
	switch {
	case c.CheckpointDir != "":
		ds := checkpoint.DirStore{Dir: c.CheckpointDir}
		removed, err := ds.Clean(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("checkpoint directory: %w", err)
		}
		if len(removed) > 0 {
			log.Warn().Strs("files", removed).Msg("removed temporary snapshot files left by saves killed midway")
		}
		return ds, func() {}, nil
	case c.CheckpointTopic != "":
		conn := c.config()
		transport, err := conn.Transport()
		if err != nil {
			return nil, nil, err
		}
		ts := &checkpoint.TopicStore{Brokers: conn.Brokers, Topic: c.CheckpointTopic, Transport: transport}
		if err := ts.Ensure(ctx, 1); err != nil {
			ts.Close()
			return nil, nil, err
		}
		return ts, func() { ts.Close() }, nil
	}
	return nil, func() {}, nil
}

// pipelineConfig is the member's configuration from the flags, checked.
// It is a pointer because the checkpoint protocol reads the metrics and
// the partition models from it as the rest of Run completes it.
func (c *runCmd) pipelineConfig(kern learners.Kernel, labels codec.LabelMap, store checkpoint.Store, log zerolog.Logger) (*pipeline.Config, error) {
	cfg := &pipeline.Config{
		Conn: c.config(), Topic: c.Topic, Group: c.Group, OutputTopic: c.OutputTopic, DLQTopic: c.DLQTopic,
		StartOffset:     c.Start,
		ReadUncommitted: c.ReadUncommitted, ConnectTimeout: c.ConnectTimeout, MaxMessageBytes: c.MaxMessageBytes,
		MaxKeyBytes: c.MaxKeyBytes, StuckAfter: c.StuckAfter, MaxModelBytes: c.MaxModelBytes, ExpectedNonZeros: c.ExpectedNonZeros,
		FlushRecords: c.FlushRecords, FlushInterval: c.FlushInterval, AutoCreateTopics: c.AutoCreate,
		FlushMaxBytes: c.FlushMaxBytes, FetchMaxBytes: c.FetchMaxBytes, FetchPartitionMaxBytes: c.FetchPartitionMaxBytes, FetchMaxWait: c.FetchMaxWait,
		CheckpointEvery: c.CheckpointEvery, CheckpointInterval: c.CheckpointInterval,
		HeartbeatInterval: c.HeartbeatInterval, SessionTimeout: c.SessionTimeout, RebalanceTimeout: c.RebalanceTimeout,
		DelayedLabels: c.DelayedLabels, LabelTopic: c.LabelTopic, PendingMaxRecords: c.PendingMaxRecords, PendingMaxAge: c.PendingMaxAge,
		PendingMaxBytes: c.PendingMaxBytes, PendingMaxKeyBytes: c.PendingMaxKeyBytes,
		ResetOffsets: c.ResetOffsets, ProcessingGuarantee: c.ProcessingGuarantee, TransactionalIDPrefix: c.TransactionalIDPrefix, CommitInterval: c.CommitInterval,
		SnapshotMaxRate: c.SnapshotMaxRate, SnapshotEveryCommit: c.SnapshotMaxRate == 0, SnapshotInterval: c.SnapshotInterval,
		TransactionTimeout: c.TransactionTimeout,
		DisableIdempotence: !c.Idempotence, Compression: c.Compression,
		Log: log,
	}
	cfg.Checkpoints = c.checkpoints(store, cfg, log)
	var err error
	if cfg.Registry, err = c.registryFlags.client(c.config()); err != nil {
		return nil, err
	}
	if cfg.Model, err = c.partitionModel(kern, labels, cfg.Registry); err != nil {
		return nil, err
	}
	// Invalid combinations fail here, before anything is started.
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// partitionModel is what each partition's model is, from the flags.
func (c *runCmd) partitionModel(kern learners.Kernel, labels codec.LabelMap, reg *schemareg.Client) (model.Config, error) {
	mc, err := c.modelConfig(c.fieldFlags, labels)
	if err != nil {
		return model.Config{}, err
	}
	if err := applyFormat(&mc, c.Input, reg); err != nil {
		return model.Config{}, err
	}
	mc.Learner, mc.Kernel, mc.Seed = c.Learner, kern, c.Seed
	mc.Limits = codec.Limits{MaxBytes: c.MaxRecordBytes, MaxIndex: c.MaxFeatureIndex, MaxNonZeros: c.MaxNonZeros, MaxAbsValue: c.MaxAbsValue}
	mc.LabelRequired = true // a stream without labels says so at once (dead letters, log) instead of predicting from an empty model
	sel, challengers, err := c.selection()
	if err != nil {
		return model.Config{}, err
	}
	if sel != nil {
		mc.Select, mc.Challengers = *sel, challengers
	}
	return mc, nil
}

// resolveInput settles whether the input topic holds events, and checks
// cfg again with that.
func (c *runCmd) resolveInput(ctx context.Context, cfg *pipeline.Config, log zerolog.Logger) error {
	// Last, as it reads the topic: what is wrong with the flags is said
	// first, without waiting for the brokers.
	kind, err := c.inputKind(ctx, log, cfg.Registry)
	if err != nil {
		return err
	}
	cfg.Model.Events = kind != replay.KindRecords
	if kind == replay.KindFramed && !cfg.Model.Format.Framed() {
		cfg.Model.Format = codec.FormatRegistry
	}
	return cfg.Validate()
}

// runMember runs the member until ctx ends, with progress lines and a
// summary.
func (c *runCmd) runMember(ctx context.Context, cfg *pipeline.Config, log zerolog.Logger) error {
	if cfg.Metrics == nil {
		cfg.Metrics = pipeline.NewMetrics(nil) // for the progress lines and the summary
	}
	start := time.Now()
	if c.LogEvery > 0 {
		go logProgress(ctx, log, cfg.Metrics, c.LogEvery)
	}
	err := pipeline.Run(ctx, *cfg)
	logSummary(log, cfg.Metrics, time.Since(start))
	return err
}

// logProgress logs, every interval until ctx ends, the records/s since the
// last line and each served partition's records, windowed mistake rate
// and support: what an operator tailing the log wants to see move.
func logProgress(ctx context.Context, log zerolog.Logger, m *pipeline.Metrics, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	last, at := 0.0, time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			total := 0.0
			parts := zerolog.Dict()
			for _, p := range m.Partitions() {
				total += p.Consumed
				if p.Served {
					parts.Dict(strconv.Itoa(p.Partition), zerolog.Dict().Float64("records", p.Consumed).
						Float64("window_mistakes_pct", round2(100*p.WindowRate)).Float64("support", p.Support))
				}
			}
			log.Info().Float64("records_per_s", round2((total-last)/now.Sub(at).Seconds())).Float64("records", total).
				Dict("partitions", parts).Msg("progress")
			last, at = total, now
		}
	}
}

// logSummary logs what the member did before it stopped, per partition
// it served and in all.
func logSummary(log zerolog.Logger, m *pipeline.Metrics, elapsed time.Duration) {
	var consumed, learned, mistakes, dead float64
	parts := zerolog.Dict()
	for _, p := range m.Partitions() {
		consumed, learned, mistakes, dead = consumed+p.Consumed, learned+p.Learned, mistakes+p.Mistakes, dead+p.DeadLetters
		d := zerolog.Dict().Float64("records", p.Consumed).Float64("learned", p.Learned).Float64("dead_letters", p.DeadLetters)
		if p.Learned > 0 {
			d.Float64("mistakes_pct", round2(100*p.Mistakes/p.Learned))
		}
		parts.Dict(strconv.Itoa(p.Partition), d)
	}
	ev := log.Info().Dur("elapsed", elapsed.Round(time.Millisecond)).Float64("records", consumed).Float64("learned", learned).
		Float64("dead_letters", dead).Dict("partitions", parts)
	if learned > 0 {
		ev.Float64("mistakes_pct", round2(100*mistakes/learned))
	}
	ev.Msg("member stopped: summary")
}

func round2(x float64) float64 { return math.Round(100*x) / 100 }

// checkpoints is the checkpoint protocol over store (none without one).
// It reads the partition models and the metrics from cfg when it runs, so
// it sees cfg as the rest of Run completes it.
func (c *runCmd) checkpoints(store checkpoint.Store, cfg *pipeline.Config, log zerolog.Logger) pipeline.Checkpointer {
	if store == nil {
		log.Warn().Msg("no --checkpoint-dir or --checkpoint-topic: a partition that moves to another member, or a restart, starts a new model")
		return nil
	}
	return &checkpoint.Protocol{Store: store, ResetModel: c.ResetModel, Log: log, Model: cfg.ModelConfig,
		OnReset: func(_ checkpoint.Partition, reason string) {
			if cfg.Metrics != nil {
				cfg.Metrics.ModelResets.WithLabelValues(reason).Inc()
			}
		}}
}

// inputKind decides whether the input topic holds named-field events:
// --input says so, or (auto) the topic's first records do, as replay
// decides. A topic with nothing that decides yet is read as records,
// unless flags that only events use are given; either way the member says
// which it chose. Flags that only events use are refused with records.
func (c *runCmd) inputKind(ctx context.Context, log zerolog.Logger, reg *schemareg.Client) (replay.Kind, error) {
	only := c.eventOnly(c.Scale)
	switch c.Input {
	case "events", "avro", "protobuf", "json-schema":
		return replay.KindEvents, nil
	case "records":
		if len(only) > 0 {
			return replay.KindRecords, fmt.Errorf("%s: only named-field events use them, and --input records reads indexed records (LIBSVM or {\"label\",\"features\"}); remove them or set --input events", strings.Join(only, ", "))
		}
		return replay.KindRecords, nil
	}
	// Brokers still starting are waited for, as the member's own start-up
	// waits (--connect-timeout); a topic not created yet decides nothing.
	dctx, cancel := context.WithTimeout(ctx, c.ConnectTimeout)
	defer cancel()
	var kind replay.Kind
	var decided bool
	var err error
	for {
		kind, decided, err = replay.DetectKind(dctx, replay.Source{Conn: c.config(), Topic: c.Topic,
			Limits: codec.Limits{MaxBytes: c.MaxRecordBytes}, IdleTimeout: 5 * time.Second, Registry: reg}, c.DelayedLabels)
		if err == nil || errors.Is(err, fetch.ErrNoTopic) || dctx.Err() != nil {
			break
		}
		select {
		case <-dctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	if ue := (*fetch.UnreachableError)(nil); errors.As(err, &ue) {
		return replay.KindRecords, fmt.Errorf("cannot reach the brokers %s within --connect-timeout %v: %w; check --brokers, that they are up and listening there, and the --tls/--sasl settings",
			strings.Join(c.Brokers, ","), c.ConnectTimeout, ue.Err)
	}
	if err != nil && !errors.Is(err, fetch.ErrNoTopic) {
		return replay.KindRecords, fmt.Errorf("--input auto: looking at the first records of %s: %w (or set --input records or events)", c.Topic, err)
	}
	events := kind != replay.KindRecords
	if !decided {
		events = len(only) > 0
		what := "indexed records (LIBSVM, {\"label\",\"features\"})"
		if events {
			what = "named-field events, as " + strings.Join(only, ", ") + " say"
		}
		log.Warn().Str("topic", c.Topic).Msg("--input auto: the input topic holds no record yet to tell its kind; reading " + what + " (set --input records or events to say which)")
		if events {
			return replay.KindEvents, nil
		}
		return replay.KindRecords, nil
	}
	what := "indexed records"
	switch {
	case kind == replay.KindFramed:
		what = "named-field events in the wire format (schemas from the registry)"
	case events:
		what = "named-field events"
	case len(only) > 0:
		return replay.KindRecords, fmt.Errorf("--input auto: the first records of %s are indexed records, but %s only apply to named-field events; remove them, or set --input events if the topic is meant to hold events", c.Topic, strings.Join(only, ", "))
	}
	log.Info().Str("topic", c.Topic).Msg("--input auto: the topic's first records are " + what)
	return kind, nil
}

type produceCmd struct {
	connFlags     `embed:""`
	Topic         string  `required:"" short:"t" help:"Topic to write to."`
	Data          string  `required:"" type:"existingfile" placeholder:"FILE" help:"LIBSVM, JSON lines, or CSV with a header row (.csv: each row sent as a JSON event; true/false as booleans, empty cells missing); gzip allowed."`
	Rate          float64 `help:"Records per second (0: as fast as possible)."`
	Key           string  `default:"round-robin" placeholder:"FIELD|round-robin|line" help:"Record keys: round-robin (none), line (line number) or a JSON field."`
	Limit         int     `help:"Stop after N records (0: the whole file)."`
	AutoCreate    bool    `help:"Create the topic if missing."`
	registryFlags `embed:""`
	Format        string `default:"json" enum:"json,avro,protobuf,json-schema" help:"How events are written: json (as they are), or avro, protobuf, json-schema in the Confluent wire format with --schema, registered in --schema-registry (fields filled by name, '-' read as '_'; missing or null fields left null or unset)."`
	Schema        string `type:"existingfile" placeholder:"FILE" help:"The schema for --format: an Avro .avsc, a .proto (its first message) or a JSON Schema."`
	Subject       string `placeholder:"SUBJECT" help:"Registry subject the schema is registered under (default: TOPIC-value, the topic-name strategy)."`
}

func (c *produceCmd) Run(ctx context.Context, out io.Writer) error {
	bar := progress.New(os.Stderr, "produce")
	var total int64
	if c.Limit > 0 {
		total = int64(c.Limit)
	}
	encode, err := c.encoder(ctx)
	if err != nil {
		return err
	}
	n, err := feed.Produce(ctx, feed.ProduceConfig{
		Conn: c.config(), Topic: c.Topic, Data: c.Data, Rate: c.Rate, Key: c.Key, Limit: c.Limit, AutoCreateTopic: c.AutoCreate,
		Progress: func(sent int64) { bar.Update(sent, max(total, sent)) }, Encode: encode,
	})
	bar.Done()
	switch {
	case err == nil:
		fmt.Fprintf(out, "sent %d records to %s\n", n, c.Topic)
	case n > 0:
		// What is in the topic already, for a rerun with --limit or a cleanup.
		fmt.Fprintf(out, "sent %d records to %s before the error\n", n, c.Topic)
	}
	return err
}

// encoder registers --schema and returns the encoding of events into the
// wire format (nil for --format json).
func (c *produceCmd) encoder(ctx context.Context) (func([]byte) ([]byte, error), error) {
	if c.Format == "json" {
		if c.Schema != "" {
			return nil, errors.New("--schema needs --format avro, protobuf or json-schema")
		}
		return nil, nil
	}
	if c.Schema == "" || c.SchemaRegistry == "" {
		return nil, fmt.Errorf("--format %s needs --schema FILE and --schema-registry URL", c.Format)
	}
	text, err := os.ReadFile(c.Schema)
	if err != nil {
		return nil, err
	}
	typ := map[string]codec.SchemaType{"avro": codec.SchemaAvro, "protobuf": codec.SchemaProtobuf, "json-schema": codec.SchemaJSON}[c.Format]
	reg, err := c.registryFlags.client(c.config())
	if err != nil {
		return nil, err
	}
	subject := c.Subject
	if subject == "" {
		subject = c.Topic + "-value"
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := reg.Register(rctx, subject, typ, string(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Schema, err)
	}
	fmt.Fprintf(os.Stderr, "produce: %s registered under %s as schema id %d\n", c.Schema, subject, s.ID)
	return func(event []byte) ([]byte, error) {
		var obj map[string]any
		d := json.NewDecoder(bytes.NewReader(event))
		d.UseNumber()
		if err := d.Decode(&obj); err != nil {
			return nil, fmt.Errorf("not a JSON object: %w", err)
		}
		return s.AppendEncoded(nil, obj)
	}, nil
}

func isTerminal(f *os.File) bool { return progress.IsTerminal(f) }
