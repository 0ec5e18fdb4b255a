package pipeline

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go/compress"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/schemareg"
	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/internal/pending"
	"github.com/streamlearner/streamlearner/learners"
)

// Config configures one group member. Fields document their defaults;
// Validate fills them in and rejects invalid combinations.
type Config struct {
	Conn kafkaconn.Config // brokers, client id, TLS, SASL

	Topic       string // input topic; required
	Group       string // consumer group id; required
	OutputTopic string // predictions; required
	// DLQTopic receives records that cannot be decoded or learned from,
	// with headers naming the error; default Topic + ".dlq". Nothing is
	// ever dropped silently, so there is always a dead-letter topic.
	DLQTopic string

	// Model is what each partition's model is: learner and kernel
	// (required), seed, labels, record limits, events and their format,
	// classes, challengers. Partition p's learners are seeded with
	// Model.Seed + p (Seed default 1), so partitions draw independent
	// streams and a replay of partition p can seed its learners the same
	// way. Model.Schemas and Model.Delayed are the member's to fill, from
	// Registry and the Pending fields below; Model.LabelRequired does not
	// apply with delayed labels. The fields' defaults are model.Config's.
	Model model.Config
	// Registry fetches the schemas of a framed Model.Format (Avro,
	// Protobuf, JSON Schema). A registry that cannot answer stalls the
	// partition (retried with backoff, counted in
	// streamlearner_schema_registry_errors_total, and stuck past
	// StuckAfter) rather than dead-lettering anything; a schema id it
	// does not have is a dead letter (unknown_schema).
	Registry *schemareg.Client

	// DelayedLabels lets a label come after its record (model.Config
	// Delayed): a record with a key and no label is predicted at once (its
	// prediction emitted) and waits in the partition's pending store; a
	// label message — the record's key and a label, no feature — makes
	// the model learn it and score the emitted prediction; it emits no
	// prediction itself. The key is the event's key field (Event.KeyField),
	// else the message key; records and their labels must carry the same
	// message key so that they share a partition. A label for no waiting
	// record is a dead letter (label_unknown, label_expired,
	// label_evicted, label_without_key). The store is in the partition's
	// checkpoint, so recovery stays exact. Default false.
	DelayedLabels bool
	// LabelTopic, if set, is a topic of label messages beside Topic,
	// co-partitioned with it: as many partitions (checked at start), and
	// each label sent with its record's message key, so that partition p
	// of LabelTopic holds the labels of partition p's records. Implies
	// DelayedLabels. The member subscribes to both topics and the worker
	// of partition p reads both partitions p, merged: before each record it
	// learns the labels stamped earlier than the record (time, then Topic
	// before LabelTopic, then offset — replay's order); when it has read
	// all of Topic there is, it learns the labels that are left. Both
	// positions are in the checkpoint and committed together, so every
	// label is learned exactly once and none is lost; the merge of records
	// and labels arriving live depends on when they arrive, so predictions
	// repeated after a crash may differ from the first ones (same-topic
	// labels keep them identical). Default "": labels come in Topic.
	LabelTopic string
	// PendingMaxRecords bounds the records awaiting a label, per
	// partition: past it the oldest is evicted (counted). Default 100,000
	// (a few hundred bytes each for records of tens of features).
	PendingMaxRecords int
	// PendingMaxAge is how long a record waits for its label, by record
	// timestamps (the label message's time against the record's), not by
	// the clock, so that a replay expires what the service expired.
	// Default 0: until evicted.
	PendingMaxAge time.Duration
	// ResetOffsets, if set, moves each partition of the group, once, to
	// earliest, latest, an offset, -N or an RFC 3339 time, with a new
	// model, as kafka-consumer-groups --reset-offsets moves a group: the
	// value applied is kept in the commits' metadata, so a member
	// restarted with the same value goes on from its checkpoints instead
	// of rewinding again (another value rewinds again). Default "": none.
	ResetOffsets string
	// PendingMaxBytes bounds what the records awaiting a label cost, per
	// partition (features, keys, bookkeeping): past it the oldest are
	// evicted (counted). Default 64 MiB: a count alone does not bound
	// memory when records are large.
	PendingMaxBytes int64
	// PendingMaxKeyBytes is the longest key a record awaiting its label
	// may have; a longer one is a dead letter (key_too_large). Default
	// 1024.
	PendingMaxKeyBytes int

	// StartOffset is where a partition with no committed offset starts:
	// "earliest" (default) or "latest".
	StartOffset string
	// AutoCreateTopics creates the output and dead-letter topics at start
	// when missing, with as many partitions as the input topic (default
	// false: a missing topic fails the start, naming it, because a typo
	// should fail, not create). The input topic is never created: the
	// member waits for it, not ready (Metrics.Waiting says why).
	AutoCreateTopics bool
	// ReadUncommitted reads records of open and aborted transactions too.
	// Default false: read committed — the records of aborted transactions
	// are neither predicted nor learned, and a partition waits at an open
	// transaction until it ends. Transaction markers never reach the
	// decoder either way.
	ReadUncommitted bool

	// MaxMessageBytes is the largest record the output and dead-letter
	// topics take, used only when the brokers will not say: at start the
	// service reads each topic's max.message.bytes (or the broker's
	// message.max.bytes). Default 1 MiB (1048576), Kafka's default. Every
	// record the service writes fits: batches are split, a dead letter
	// that would not fit is cut (see the truncation headers), a
	// prediction's input key is bounded by MaxKeyBytes.
	MaxMessageBytes int
	// MaxKeyBytes bounds the input key a prediction carries; a longer key
	// is cut to this many bytes with its size and SHA-256 beside it.
	// Default 1024 (a key may cost 6 bytes a byte once JSON-escaped).
	MaxKeyBytes int
	// ConnectTimeout bounds the start: reaching the brokers and checking
	// the topics. Past it Run fails with the last error. Default 30 s.
	ConnectTimeout time.Duration
	// MaxModelBytes refuses, at start, a learner whose model would need
	// more memory per partition than this, as learners.EstimateMemory
	// estimates it (the O(B²) learners — cks, projectron, the SOP family,
	// tighter, tightest — grow fast with the budget), with Checkpoints
	// what a save holds beside it: the snapshot and the copy decoded to
	// check it. Default 1 GiB; a member holds one model per assigned
	// partition, and Go may hold up to twice the live heap between
	// collections.
	MaxModelBytes int64
	// ExpectedNonZeros is the average number of non-zero features per
	// record that the memory estimate assumes; default 100.
	ExpectedNonZeros int
	// LagInterval is how often the member reads its partitions' ends for
	// the lag gauge, besides what each fetch reports; default 5 s.
	LagInterval time.Duration
	// StuckAfter is how long a partition may make no progress before
	// /readyz says 503, naming it and why: unable to flush its output or
	// commit its offset, waiting for the schema registry, held inside one
	// record or one snapshot save, or with no snapshot saved (commits
	// without one going through); default 1 min.
	StuckAfter time.Duration

	// FetchMaxBytes bounds the input bytes the member holds for all its
	// partitions together: asked for in fetches in flight, fetched ahead
	// and being worked on. Default 16 MiB. The member sends one fetch per
	// broker for every partition that broker leads, giving each a share of
	// what is left (at most FetchPartitionMaxBytes, at least 16 KiB; the
	// partitions beyond wait their turn), so memory does not grow with the
	// partitions assigned. Too small for the partitions serving at once and
	// records come a few at a time; a batch larger than a share is still
	// read whole, once it comes first in a fetch.
	FetchMaxBytes int
	// FetchPartitionMaxBytes bounds one partition's share of a fetch.
	// Default max(2 MiB, twice the largest record Limits admits): a
	// partition decodes one batch while the next is fetched, and larger
	// batches cost more CPU a record (decoded out of cache) and memory.
	FetchPartitionMaxBytes int
	// FetchMaxWait is how long a broker may hold a fetch that finds no
	// records. Default 500 ms. A partition whose worker was busy when the
	// fetch left may wait this long for records that arrive meanwhile.
	FetchMaxWait time.Duration

	// FlushRecords and FlushInterval bound how many predictions a worker
	// buffers and for how long before it writes them (synchronously, with
	// acknowledgement from all in-sync replicas) and commits; defaults 1000
	// and 200 ms.
	FlushRecords  int
	FlushInterval time.Duration
	// FlushMaxBytes bounds the predictions the member buffers for all its
	// partitions together: a partition flushes too when its buffered
	// predictions reach FlushMaxBytes divided by the partitions assigned
	// (at least 1 KiB, so past 8,192 partitions at the default the member
	// buffers more: raise it there). Default 8 MiB. With a few partitions
	// FlushRecords binds first; with hundreds this does, so that output
	// buffers do not grow with the partitions.
	FlushMaxBytes int
	// CheckpointEvery and CheckpointInterval say how often a worker saves
	// its partition's state and commits its offset (whichever comes
	// first, at a flush); defaults 10,000 records and 10 s. Between
	// commits predictions still flow; after a crash the records since the
	// last commit are predicted again, identically. A partition's first
	// checkpoint after its assignment comes at its own point of the
	// interval, so that a member's partitions, assigned together, do not
	// all checkpoint at once after it.
	CheckpointEvery    int
	CheckpointInterval time.Duration

	// Group timing. After members crash, every partition is served again
	// within about SessionTimeout + RebalanceTimeout.
	//
	// HeartbeatInterval (default 1 s) bounds how soon a member notices a
	// rebalance; keep it a third of SessionTimeout or less, so that one
	// late heartbeat does not cost the member its partitions.
	//
	// SessionTimeout (default 10 s) is how long the coordinator keeps a
	// silent member: a crashed member's partitions are unserved for that
	// long. Brokers bound it (Kafka's group.min.session.timeout.ms is 6 s,
	// the embedded broker's 1 s); outside the bounds joining fails.
	//
	// RebalanceTimeout (default 10 s) is how long the coordinator waits
	// for members to rejoin once a rebalance starts, so how long a member
	// has to stop its workers (a last flush and commit each); a slower
	// member drops out of the generation and costs another rebalance.
	//
	// The trap: the coordinator legitimately holds a JoinGroup until the
	// rebalance ends (up to RebalanceTimeout on Kafka; on the embedded
	// broker each member change restarts that wait), so a client that
	// gives up sooner abandons a join the coordinator still counts, joins
	// again as a new member it then waits for as well, and a rebalance
	// after a crash storm drags on for several times the bound above.
	// kafka-go's ConsumerGroupConfig.Timeout (default 5 s) bounds every
	// coordinator request, plus RebalanceTimeout for JoinGroup and plus
	// SessionTimeout for SyncGroup; Run sets it to max(SessionTimeout,
	// RebalanceTimeout) + 5 s, so a join outlives any wait the
	// coordinator may impose. The price: a coordinator that hangs
	// without closing the connection is noticed only after that long.
	HeartbeatInterval time.Duration
	SessionTimeout    time.Duration
	RebalanceTimeout  time.Duration
	// ShutdownTimeout bounds the final flush and commit on stop; default 10 s.
	ShutdownTimeout time.Duration

	// Checkpoints is where partition models come from on assignment and
	// go to at each commit. Default: none, every assignment starts a new
	// model at the committed offset.
	Checkpoints Checkpointer

	// ProcessingGuarantee is "at-least-once" (default: after a crash the
	// records since the last commit are predicted again, byte for byte)
	// or "exactly-once": each partition's predictions, dead letters and
	// consumed offsets between two commits are one Kafka transaction, so a
	// read_committed consumer sees every output once (docs/architecture.md
	// §7). Exactly-once needs Checkpoints, commits at every flush (so
	// FlushInterval bounds how long a prediction stays invisible).
	ProcessingGuarantee string
	// CommitInterval is how often, under exactly-once, the member's
	// transaction commits, with the offsets of every partition it serves
	// (or sooner, when a partition reaches CheckpointEvery records): its
	// predictions are written as they are flushed but become visible to
	// read_committed consumers only then, so it bounds how long a
	// prediction stays invisible beyond its processing. Which commits save
	// a snapshot: SnapshotMaxRate. Default 500 ms (Kafka Streams commits every 100 ms under
	// exactly-once); CheckpointInterval is then not used.
	CommitInterval time.Duration
	// SnapshotMaxRate and SnapshotInterval decide which commits carry a
	// snapshot; the others commit the offset with the metadata naming the
	// partition's last snapshot, and a restore replays the records from
	// that snapshot's offset to the committed one learn-only (no output),
	// which determinism makes exact (docs/architecture.md §3). A snapshot
	// of S bytes is written at most every S/SnapshotMaxRate — so a model
	// of 14 kB snapshots with every commit, one of 60 MB once per
	// SnapshotInterval — and at least every SnapshotInterval while the
	// partition learns, which bounds a restore's replay to about that
	// long of records. The first commit after a replay, and the last one
	// before a partition is handed over, carry a snapshot, so replays do
	// not add up across owners. A new model's first snapshot is paced as
	// one of the configured learner's estimated full size would be (its
	// commits until then name the model it began as,
	// checkpoint.NewModelAt), not taken with its first commit: a member
	// given 1,024 new partitions would save 1,024 at once.
	//
	// SnapshotMaxRate: bytes a second a partition, default 32 KiB (a
	// snapshot of 14 kB — B = 100 on a9a — every 0.44 s, of 0.55 MB —
	// B = 4,000 — every 17 s).
	// SnapshotMemberMaxRate: bytes a second all the member's partitions
	// together, default 8 × SnapshotMaxRate (256 KiB): a member serving P
	// partitions gives each SnapshotMemberMaxRate/P when that is less, so
	// that snapshot writes do not grow with partitions (256 partitions of
	// 14 kB models saved 1,978 snapshots in 9 exactly-once rounds at
	// 32 KiB/s each).
	// SnapshotInterval still bounds the replay.
	// SnapshotInterval: default 30 s. SnapshotEveryCommit writes one with
	// every commit (no replay on restore; the cost grows with the model,
	// not with what changed). With LabelTopic every commit carries one:
	// the order in which a label topic's labels meet their records
	// depends on fetch timing, so a replay could not be exact.
	//
	// The trap: the records between a snapshot and the committed offset
	// must still be in the input topic when a restore needs them; a
	// retention shorter than SnapshotInterval loses them (the partition
	// then goes on from the log's start, loudly, as on any offset out of
	// range).
	SnapshotMaxRate       int
	SnapshotMemberMaxRate int
	SnapshotInterval      time.Duration
	SnapshotEveryCommit   bool
	// TransactionalIDPrefix names the member's transactional producer
	// under exactly-once: PREFIX.RANDOM, unique to the member instance
	// (KIP-447: a zombie is fenced by the group generation its offsets
	// carry, not by the id). Default: the group id; ACLs on transactional
	// ids match it as a prefix.
	TransactionalIDPrefix string
	// TransactionTimeout is how long the coordinator lets a transaction
	// stay open before it aborts it: it bounds how long a member that died
	// mid-transaction holds back read_committed consumers of the output
	// (its id is its own: no new owner aborts it; a new owner's restore
	// waits for it to end). Default 10 s, as Kafka Streams sets it; the brokers'
	// transaction.max.timeout.ms must allow it.
	TransactionTimeout time.Duration
	// DisableIdempotence writes at-least-once outputs without a producer
	// id. By default (false) each partition's worker writes as an
	// idempotent producer (a producer id and a sequence number per output
	// partition, as Kafka's producers do by default since 3.0), so that a
	// batch sent again after a timeout — which Kafka may answer after it
	// appended the batch — is kept once: duplicates then come only from a
	// member that stopped before its commit. Brokers before 0.11, or ACLs
	// that refuse IDEMPOTENT_WRITE, need it set.
	DisableIdempotence bool
	// Compression compresses the batches of predictions and dead letters:
	// "none", "gzip", "snappy", "lz4" or "zstd". Default lz4, which costs
	// little CPU and takes JSON predictions to a fraction of their size;
	// readers decompress whatever a batch says it holds. A batch under
	// 512 bytes, or that would not shrink, goes uncompressed.
	Compression string

	// PassThrough skips the learner (margin 0, no learning): the same
	// consume, decode and produce path, for measuring what learning costs.
	PassThrough bool

	Log     zerolog.Logger
	Metrics *Metrics // default: metrics registered nowhere

	// OnAssign, if set, is called with each generation's partitions of
	// Topic once their workers have started.
	OnAssign func(generation int32, partitions []int)
}

// The processing guarantees (Config.ProcessingGuarantee).
const (
	AtLeastOnce = "at-least-once"
	ExactlyOnce = "exactly-once"
)

// codec is the compression codec of Compression (nil for none).
func (c *Config) codec() (compress.Codec, error) {
	var z compress.Compression
	if err := z.UnmarshalText([]byte(c.Compression)); err != nil || c.Compression != "none" && z == compress.None {
		return nil, fmt.Errorf("compression %q: want none, gzip, snappy, lz4 or zstd", c.Compression)
	}
	if z == compress.Lz4 {
		return lz4Codec{}, nil
	}
	return z.Codec(), nil
}

// ModelConfig is partition p's model: Model, its learners seeded with
// Model.Seed + p, with the member's schema source and pending store.
func (c *Config) ModelConfig(p int) model.Config {
	m := c.Model
	m.Seed += uint64(p)
	m.Schemas = c.schemas()
	m.Delayed = c.pending()
	m.LabelRequired = m.LabelRequired && m.Delayed == nil
	return m
}

// schemas is the registry as the model's schema source (nil without one:
// an interface holding a nil client would not be nil).
func (c *Config) schemas() codec.SchemaSource {
	if c.Registry == nil {
		return nil
	}
	return c.Registry
}

// pending is the pending store of delayed labels, nil without them.
func (c *Config) pending() *pending.Config {
	if !c.DelayedLabels && c.LabelTopic == "" {
		return nil
	}
	return &pending.Config{MaxRecords: c.PendingMaxRecords, MaxAge: c.PendingMaxAge.Milliseconds(),
		MaxBytes: c.PendingMaxBytes, MaxKeyBytes: c.PendingMaxKeyBytes}
}

// ModelMemory estimates the memory of one partition's model, and names
// what it serves for messages: one learner per class with many classes
// (as many as MaxClasses with auto discovery), each at its budget; with
// Checkpoints, what saving a snapshot holds beside it.
func (c *Config) ModelMemory() (mem learners.Memory, per string, err error) {
	mem, err = learners.EstimateMemory(c.Model.Learner, c.Model.Kernel, learners.Data{NNZ: c.ExpectedNonZeros})
	// snap is the encoded model's bytes, the sum of its learners'; a
	// composite that does not say what it encodes counts as what it holds.
	snapOf := func(m learners.Memory) int64 {
		if m.Snapshot > 0 {
			return m.Snapshot
		}
		return m.Held
	}
	snap := snapOf(mem)
	// group bounds what the classes hold together (auto's memory=,
	// divided among them), when not 0.
	group := mem.Group
	if len(c.Model.Challengers) > 0 {
		group = 0 // the challengers' learners are one a class
	}
	for _, ch := range c.Model.Challengers {
		if err != nil {
			break
		}
		k := ch.Kernel
		if k == (learners.Kernel{}) {
			k = c.Model.Kernel
		}
		var more learners.Memory
		if more, err = learners.EstimateMemory(ch.Learner, k, learners.Data{NNZ: c.ExpectedNonZeros}); err == nil {
			mem.Held += more.Held
			mem.Peak += more.Held
			snap += snapOf(more)
			mem.Quadratic = mem.Quadratic || more.Quadratic
			if more.Vectors == 0 {
				mem.Vectors = 0 // one unbounded learner makes the model unbounded
			}
		}
	}
	per = "partition"
	if len(c.Model.Challengers) > 0 {
		per = fmt.Sprintf("partition (%d learners)", 1+len(c.Model.Challengers))
	}
	if k := c.classBound(); k > 1 && err == nil {
		grown := int64(k) // the others are full; one grows
		if group > 0 {
			grown = min(grown, (group+mem.Held-1)/mem.Held)
		}
		mem.Peak += (grown - 1) * mem.Held
		mem.Held *= grown
		// A save encodes, and checks by decoding, every class: those
		// within the share at their full size, the others at least at
		// the size a class's state takes however little it holds.
		snap = grown*snap + (int64(k)-grown)*max(mem.SnapshotFloor, 0)
		per = fmt.Sprintf("partition (%d classes, a learner each)", k)
		if group > 0 {
			per = fmt.Sprintf("partition (%d classes, auto's memory= shared among them)", k)
		}
		if len(c.Model.Challengers) > 0 {
			per = fmt.Sprintf("partition (%d learners × %d classes)", 1+len(c.Model.Challengers), k)
		}
	}
	if pc := c.pending(); pc != nil && err == nil {
		// A waiting record holds its features (a uint32 index and a
		// float64 value each), its key and the store's bookkeeping: about
		// 400 bytes for 14 features and a 12-byte key in the store's
		// benchmark, of which ~230 are not the features.
		// The store holds at most its byte bound, and at most its count
		// of records as large as the limits let a record be.
		n := int64(max(pc.MaxRecords, 0))
		if n == 0 {
			n = pending.DefaultMaxRecords
		}
		bound := pc.MaxBytes
		if bound == 0 {
			bound = pending.DefaultMaxBytes
		}
		key := int64(pc.MaxKeyBytes)
		if key == 0 {
			key = pending.DefaultMaxKeyBytes
		}
		nnz := int64(c.Model.Limits.MaxNonZeros)
		if nnz <= 0 {
			nnz = int64(codec.Limits{}.WithDefaults().MaxNonZeros)
		}
		held := min(bound, n*(256+key+12*nnz))
		mem.Held += held
		mem.Peak += held
		snap += held // an entry encodes to less than the store counts it
		per += fmt.Sprintf(", with up to %d records awaiting labels in %d MB", n, (held+1<<20-1)>>20)
	}
	if c.Checkpoints != nil && err == nil && mem.Vectors > 0 {
		// A save encodes the whole model into one buffer, sized after the
		// last snapshot and an eighth, and decodes it to check that it
		// restores: the copy holds at most what the model does (a restore
		// sizes its arrays to fit). Both are live beside the model until
		// the save ends (checkpoint.Protocol.Save).
		save := snap + snap/8 + mem.Held
		mem.Peak += save
		per += fmt.Sprintf(", %s of it while a snapshot is saved", learners.FormatBytes(save))
	}
	return mem, per, err
}

// classBound is the most learners a partition's model holds.
func (c *Config) classBound() int {
	switch {
	case len(c.Model.Classes) == 0:
		return 1
	case len(c.Model.Classes) == 1 && c.Model.Classes[0] == model.Auto:
		if c.Model.MaxClasses > 0 {
			return c.Model.MaxClasses
		}
		return model.DefaultMaxClasses
	}
	return len(c.Model.Classes)
}

// coordinatorTimeout bounds each group-coordinator request: see
// RebalanceTimeout.
func (c *Config) coordinatorTimeout() time.Duration {
	return max(c.SessionTimeout, c.RebalanceTimeout) + 5*time.Second
}

// FetchBudgets are FetchMaxBytes and FetchPartitionMaxBytes with their
// defaults filled in.
func (c *Config) FetchBudgets() (member, partition int) {
	member, partition = c.FetchMaxBytes, c.FetchPartitionMaxBytes
	if member == 0 {
		member = 16 << 20
	}
	if partition == 0 {
		partition = max(2<<20, 2*c.Model.Limits.WithDefaults().MaxBytes)
	}
	return member, partition
}

// Validate fills in defaults and checks the configuration.
func (c *Config) Validate() error {
	if err := c.Conn.Validate(); err != nil {
		return err
	}
	for _, step := range []func() error{c.checkTopics, c.checkBounds, c.checkModel, c.setDefaults, c.checkDelivery, c.checkGuarantee} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// checkTopics requires the topics and keeps them apart; a label topic
// implies delayed labels.
func (c *Config) checkTopics() error {
	switch {
	case c.Topic == "":
		return errors.New("no input topic")
	case c.Group == "":
		return errors.New("no consumer group")
	case c.OutputTopic == "":
		return errors.New("no output topic")
	case c.Model.Learner == "":
		return errors.New("no learner")
	}
	if c.DLQTopic == "" {
		c.DLQTopic = c.Topic + ".dlq"
	}
	if c.OutputTopic == c.Topic || c.DLQTopic == c.Topic || c.DLQTopic == c.OutputTopic {
		return fmt.Errorf("input %q, output %q and dead-letter %q topics must differ", c.Topic, c.OutputTopic, c.DLQTopic)
	}
	if c.LabelTopic != "" {
		if c.LabelTopic == c.Topic || c.LabelTopic == c.OutputTopic || c.LabelTopic == c.DLQTopic {
			return fmt.Errorf("label topic %q is also the input, output or dead-letter topic", c.LabelTopic)
		}
		c.DelayedLabels = true
	}
	return nil
}

// checkBounds refuses negative bounds, which a zero (the default) would
// otherwise hide, and a reset position that cannot apply.
func (c *Config) checkBounds() error {
	if c.PendingMaxAge < 0 || c.PendingMaxRecords < 0 || c.PendingMaxBytes < 0 || c.PendingMaxKeyBytes < 0 {
		return fmt.Errorf("pending max records %d, max age %v, max bytes %d, max key bytes %d: want positive bounds",
			c.PendingMaxRecords, c.PendingMaxAge, c.PendingMaxBytes, c.PendingMaxKeyBytes)
	}
	if c.FetchMaxBytes < 0 || c.FetchPartitionMaxBytes < 0 {
		return fmt.Errorf("fetch max bytes %d, partition max bytes %d: negative", c.FetchMaxBytes, c.FetchPartitionMaxBytes)
	}
	if c.SnapshotMaxRate < 0 {
		return fmt.Errorf("snapshot max rate %d: negative", c.SnapshotMaxRate)
	}
	if c.ResetOffsets == "" {
		return nil
	}
	if _, err := fetch.ParseBound(c.ResetOffsets); err != nil {
		return fmt.Errorf("--reset-offsets: %w", err)
	}
	if _, err := strconv.ParseInt(c.ResetOffsets, 10, 64); err == nil && c.LabelTopic != "" {
		return fmt.Errorf("--reset-offsets %s: an offset or -N is a position in one topic; with a label topic, rewind both with earliest, latest or a time", c.ResetOffsets)
	}
	return nil
}

// checkModel builds partition 0's model once, so that a spec it refuses
// fails the start, and bounds what a partition's model may hold.
func (c *Config) checkModel() error {
	if _, err := learners.New(c.Model.Learner, c.Model.Kernel, 0); err != nil {
		return err
	}
	if c.Model.Format.Framed() && (!c.Model.Events || c.Registry == nil) {
		return fmt.Errorf("input format %s needs events and a schema registry", c.Model.Format)
	}
	if c.DelayedLabels && c.PendingMaxRecords == 0 {
		c.PendingMaxRecords = 100_000
	}
	if _, err := model.New(c.ModelConfig(0)); err != nil {
		return err
	}
	if c.MaxModelBytes <= 0 {
		c.MaxModelBytes = 1 << 30
	}
	if c.ExpectedNonZeros <= 0 {
		c.ExpectedNonZeros = 100
	}
	mem, per, err := c.ModelMemory()
	if err != nil {
		return err
	}
	if err := mem.Check(c.MaxModelBytes, "--max-model-bytes", per); err != nil {
		return err
	}
	if c.Model.Seed == 0 {
		c.Model.Seed = 1
	}
	return nil
}

// setDefaults fills in what is zero with the defaults the fields
// document.
func (c *Config) setDefaults() error {
	for _, d := range []struct {
		field *time.Duration
		def   time.Duration
	}{
		{&c.FlushInterval, 200 * time.Millisecond}, {&c.FetchMaxWait, 500 * time.Millisecond},
		{&c.CheckpointInterval, 10 * time.Second}, {&c.HeartbeatInterval, time.Second},
		{&c.SessionTimeout, 10 * time.Second}, {&c.RebalanceTimeout, 10 * time.Second},
		{&c.ShutdownTimeout, 10 * time.Second}, {&c.ConnectTimeout, 30 * time.Second},
		{&c.StuckAfter, time.Minute}, {&c.LagInterval, 5 * time.Second},
		{&c.CommitInterval, 500 * time.Millisecond}, {&c.SnapshotInterval, 30 * time.Second},
		{&c.TransactionTimeout, 10 * time.Second},
	} {
		if *d.field <= 0 {
			*d.field = d.def
		}
	}
	for _, d := range []struct {
		field *int
		def   int
	}{
		{&c.FlushRecords, 1000}, {&c.FlushMaxBytes, 8 << 20}, {&c.CheckpointEvery, 10000},
		{&c.MaxMessageBytes, 1 << 20}, {&c.MaxKeyBytes, 1024}, {&c.SnapshotMaxRate, 32 << 10},
	} {
		if *d.field <= 0 {
			*d.field = d.def
		}
	}
	if c.SnapshotMemberMaxRate <= 0 {
		c.SnapshotMemberMaxRate = 8 * c.SnapshotMaxRate
	}
	c.FetchMaxBytes, c.FetchPartitionMaxBytes = c.FetchBudgets()
	for _, d := range []struct {
		field *string
		def   string
	}{
		{&c.StartOffset, "earliest"}, {&c.ProcessingGuarantee, AtLeastOnce},
		{&c.TransactionalIDPrefix, c.Group}, {&c.Compression, "lz4"},
	} {
		if *d.field == "" {
			*d.field = d.def
		}
	}
	if c.Checkpoints == nil {
		c.Checkpoints = NoCheckpoints{}
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics(nil)
	}
	return nil
}

// checkDelivery checks how records are fetched, sized and compressed,
// and the group's timing.
func (c *Config) checkDelivery() error {
	if c.StartOffset != "earliest" && c.StartOffset != "latest" {
		return fmt.Errorf("start offset %q: want earliest or latest", c.StartOffset)
	}
	if c.MaxMessageBytes < 4096 {
		return fmt.Errorf("max message bytes %d: below 4096 not even a dead letter's headers fit", c.MaxMessageBytes)
	}
	if c.HeartbeatInterval >= c.SessionTimeout {
		return fmt.Errorf("heartbeat interval %v must be shorter than the session timeout %v", c.HeartbeatInterval, c.SessionTimeout)
	}
	_, err := c.codec()
	return err
}

// checkGuarantee checks what the processing guarantee needs.
func (c *Config) checkGuarantee() error {
	switch c.ProcessingGuarantee {
	case AtLeastOnce:
		return nil
	case ExactlyOnce:
	default:
		return fmt.Errorf("processing guarantee %q: want %s or %s", c.ProcessingGuarantee, AtLeastOnce, ExactlyOnce)
	}
	if _, none := c.Checkpoints.(NoCheckpoints); none {
		return fmt.Errorf("processing guarantee exactly-once needs a checkpoint store (--checkpoint-dir or --checkpoint-topic): an aborted transaction is undone by restoring the partition's last committed snapshot")
	}
	if c.ReadUncommitted {
		return fmt.Errorf("processing guarantee exactly-once reads committed input only (not --read-uncommitted): an aborted upstream record must not be learned")
	}
	if 2*c.CommitInterval > c.TransactionTimeout {
		// A transaction that outlives the timeout is aborted by the
		// coordinator and its producer fenced: the partition would stop.
		return fmt.Errorf("commit interval %v: want at most half the transaction timeout %v, so that a transaction commits before the brokers abort it", c.CommitInterval, c.TransactionTimeout)
	}
	return nil
}
