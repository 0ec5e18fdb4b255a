// Package pipeline owns Kafka: group membership, one worker per assigned
// partition, producing predictions and dead letters, and the commit
// protocol of docs/architecture.md §3 (the checkpoints themselves plug in through
// Checkpointer).
//
// Rules:
//   - One model per input partition, owned by that partition's worker; a
//     partition's records are predicted, then learned, in offset order.
//   - Group membership uses kafka-go's ConsumerGroup/Generation: every
//     membership change ends the generation, and every worker stops (after
//     a last flush and commit) before the member rejoins.
//   - An offset is committed only after every prediction and dead letter
//     before it has been acknowledged by all in-sync replicas, with the
//     generation, so a member that lost the partition cannot commit.
//   - Nothing is dropped: a record that cannot be used goes to the
//     dead-letter topic with its reason; a failed write is retried.
//   - Delayed labels (Config.DelayedLabels): the records awaiting their
//     labels are part of the partition's model and checkpoint. With a
//     label topic (Config.LabelTopic) the worker of partition p also reads
//     the label topic's partition p, merges it before each record by
//     timestamp, and commits both positions in one request.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"

	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
)

type member struct {
	ctx       context.Context // Run's: done once the member is leaving for good
	cfg       *Config
	dialer    *kafka.Dialer
	transport *kafka.Transport
	client    *kafka.Client
	// fetcher reads the input partitions, one fetch per broker for all
	// of them.
	fetcher *fetch.Fetcher
	out     *producer
	dlq     *producer
	// outLimit and dlqLimit are the largest record each topic takes.
	outLimit, dlqLimit int

	// kept holds, without a checkpoint store, the models of partitions
	// this member served in the last generation, with their committed
	// offsets, so that a partition it keeps through a rebalance keeps its
	// model; a partition that moved on meanwhile starts anew.
	mu   sync.Mutex
	kept map[Partition]*State
	// positions are the assigned partitions' next offsets, for pollLag.
	positions map[int]*atomic.Int64
	// flushBytes is a partition's part of Config.FlushMaxBytes in the
	// current generation.
	flushBytes atomic.Int64
	// parts is how many input partitions the member serves in the
	// current generation (the snapshot budget's share, snapshotDue).
	parts atomic.Int64
	// newSnapshot is what a new model's first snapshot is paced on (the
	// configured learner's full-budget estimate, learners.Memory's
	// Snapshot): its size is not known before it is encoded. 0: unknown,
	// paced on SnapshotInterval alone.
	newSnapshot int
	// spare keeps the prediction arenas no partition is filling.
	spare spareArenas
	// writes bounds the workers' flushes under way (see worker.flush).
	writes chan struct{}
	// txn is the member's transactional producer (exactly-once only).
	txn *memberTxn
	// offsets fetches the partitions' committed offsets, many at once.
	offsets committedOffsets
	// drained counts the workers that have not yet made their last
	// commit; Run waits for it before it leaves the group.
	drained sync.WaitGroup
}

// retain keeps st, whose offset is committed, for p's next assignment.
func (m *member) retain(p Partition, st *State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.kept == nil {
		m.kept = map[Partition]*State{}
	}
	m.kept[p] = st
}

// retained hands over (once) the model retain kept for p, or nil.
func (m *member) retained(p Partition) *State {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.kept[p]
	delete(m.kept, p)
	return st
}

// Run joins the group and serves its assigned partitions until ctx is
// cancelled; then it stops every worker (each makes a last flush and
// commit), leaves the group and returns, within about
// cfg.ShutdownTimeout.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("pipeline config: %w", err)
	}
	m, err := newMember(ctx, &cfg)
	if err != nil {
		return err
	}
	// Closed last: its idle connections (a goroutine and buffers each)
	// would outlive Run until their idle timeout, and a process running
	// members one after another (bench, tests) held hundreds.
	defer m.transport.CloseIdleConnections()
	if err := m.prepare(ctx); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil // stopped while waiting for the input topic
	}
	if err := m.openInputAndOutputs(); err != nil {
		return err
	}
	// Closed after the workers' last commits (below), which may still
	// read.
	defer m.fetcher.Close()
	cg, err := m.joinGroup()
	if err != nil {
		return err
	}
	m.serveGenerations(ctx, cg)
	// The workers make their last flush and commit while the member is
	// still in the group (a commit after the session lapsed would be
	// fenced, and its predictions emitted again by the next owner); then
	// closing the group ends the generation and the member leaves. Bound
	// both: a dead broker can hold either.
	waitWithin(&m.drained, cfg.ShutdownTimeout+time.Second, cfg.Log)
	closeWithin(cg, 2*cfg.ShutdownTimeout, cfg.Log)
	cfg.Metrics.AssignedGauge.Set(0)
	cfg.Log.Info().Str("group", cfg.Group).Str("topic", cfg.Topic).Msg("left group")
	return nil
}

// newMember sets up the member's connections and, under exactly-once,
// its transactional producer.
func newMember(ctx context.Context, cfg *Config) (*member, error) {
	dialer, err := cfg.Conn.Dialer()
	if err != nil {
		return nil, err
	}
	transport, err := cfg.Conn.Transport()
	if err != nil {
		return nil, err
	}
	// The member's requests (produce, commit, offsets) share a few
	// connections; the fetcher's long polls do not wait behind them.
	limited := &limitedTransport{rt: transport, slots: make(chan struct{}, requestsInFlight)}
	m := &member{ctx: ctx, cfg: cfg, dialer: dialer, transport: transport, client: &kafka.Client{Addr: kafka.TCP(cfg.Conn.Brokers...), Transport: limited, Timeout: 10 * time.Second},
		writes: make(chan struct{}, requestsInFlight)}
	cfg.Metrics.health.after = cfg.StuckAfter
	if cfg.ProcessingGuarantee == ExactlyOnce {
		m.txn = newMemberTxn(m)
		cfg.Log.Info().Str("transactional_id", m.txn.t.id).Msg("exactly-once: one transaction per member and commit interval")
		// At 0 from the start, for the alert rules' rates.
		cfg.Metrics.Transactions.WithLabelValues("committed", "")
		cfg.Metrics.Transactions.WithLabelValues("aborted", "error")
		cfg.Metrics.Transactions.WithLabelValues("aborted", "fenced")
	}
	return m, nil
}

// openInputAndOutputs makes the fetcher of the input partitions and the
// producers of the output and dead-letter topics, all on the member's
// limited transport.
func (m *member) openInputAndOutputs() error {
	cfg := m.cfg
	var err error
	m.fetcher, err = fetch.NewFetcher(fetch.FetcherConfig{
		// Limited too: every partition asks for its log's bounds at once
		// when a member starts (256 partitions opened 256 connections).
		Addr: kafka.TCP(cfg.Conn.Brokers...), Transport: m.client.Transport, ReadUncommitted: cfg.ReadUncommitted,
		MaxBytes: cfg.FetchMaxBytes, PartitionMaxBytes: cfg.FetchPartitionMaxBytes, MaxWait: cfg.FetchMaxWait,
		ClientID: cfg.Conn.ClientID,
	})
	if err != nil {
		return err
	}
	codec, err := cfg.codec()
	if err != nil {
		m.fetcher.Close()
		return err
	}
	newProducer := func(topic string, limit int) *producer {
		return &producer{client: &kafka.Client{Addr: m.client.Addr, Transport: m.client.Transport}, topic: topic, limit: limit, autoCreate: cfg.AutoCreateTopics, codec: codec, q: newSendQueue()}
	}
	m.out, m.dlq = newProducer(cfg.OutputTopic, m.outLimit), newProducer(cfg.DLQTopic, m.dlqLimit)
	return nil
}

// joinGroup makes the member's consumer group: the input topic, and the
// label topic with it.
func (m *member) joinGroup() (*kafka.ConsumerGroup, error) {
	cfg := m.cfg
	topics := []string{cfg.Topic}
	if cfg.LabelTopic != "" {
		// Both topics in one subscription: the range assignor gives a
		// member the same partitions of co-partitioned topics. The worker
		// of Topic's partition p reads LabelTopic's p too.
		topics = append(topics, cfg.LabelTopic)
	}
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:                     cfg.Group,
		Brokers:                cfg.Conn.Brokers,
		Dialer:                 m.dialer,
		Topics:                 topics,
		GroupBalancers:         []kafka.GroupBalancer{kafka.RangeGroupBalancer{}},
		HeartbeatInterval:      cfg.HeartbeatInterval,
		SessionTimeout:         cfg.SessionTimeout,
		RebalanceTimeout:       cfg.RebalanceTimeout,
		JoinGroupBackoff:       time.Second,
		Timeout:                cfg.coordinatorTimeout(),
		WatchPartitionChanges:  true,
		PartitionWatchInterval: 5 * time.Second,
		ErrorLogger:            kafka.LoggerFunc(func(f string, a ...any) { cfg.Log.Warn().Msgf(f, a...) }),
	})
	if err != nil {
		return nil, fmt.Errorf("join group %s: %w", cfg.Group, err)
	}
	mem, per, _ := cfg.ModelMemory()
	m.newSnapshot = int(mem.Snapshot)
	cfg.Log.Info().Str("group", cfg.Group).Str("topic", cfg.Topic).Str("learner", cfg.Model.Learner).
		Str("model_memory", mem.Describe(per)).Msg("joining group")
	return cg, nil
}

// serveGenerations serves each generation the group hands the member
// until ctx ends or the group closes; a failed join is retried every
// second.
func (m *member) serveGenerations(ctx context.Context, cg *kafka.ConsumerGroup) {
	for {
		gen, err := cg.Next(ctx)
		switch {
		case err == nil:
			m.startGeneration(gen)
		case ctx.Err() != nil || errors.Is(err, kafka.ErrGroupClosed):
			return
		default:
			m.cfg.Log.Warn().Err(err).Msg("join group; retrying")
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// startGeneration starts a worker for each input partition of gen, and
// the lag poll while there is one.
func (m *member) startGeneration(gen *kafka.Generation) {
	cfg := m.cfg
	cfg.Metrics.Rebalances.Inc()
	var ids []int
	for _, a := range gen.Assignments[cfg.Topic] {
		ids = append(ids, a.ID)
	}
	cfg.Metrics.AssignedGauge.Set(float64(len(ids)))
	m.flushBytes.Store(flushShare(cfg.FlushMaxBytes, len(ids)))
	m.parts.Store(int64(len(ids)))
	cfg.Log.Info().Str("group", cfg.Group).Str("topic", cfg.Topic).Int32("generation", gen.ID).Ints("partitions", ids).Msg("joined")
	ends := generationContext(gen)
	for _, id := range ids {
		w := &worker{m: m, gen: gen, part: Partition{Topic: cfg.Topic, ID: id}}
		w.posName, w.negName, _ = cfg.Model.Labels.ClassNames()
		w.log = cfg.Log.With().Str("topic", cfg.Topic).Int("partition", id).Int32("generation", gen.ID).Logger()
		w.bad = w.log.Sample(&zerolog.BurstSampler{Burst: 5, Period: time.Second})
		m.drained.Add(1)
		gen.Start(func(ctx context.Context) { w.run(ctx, ends) })
	}
	if len(ids) > 0 {
		gen.Start(m.pollLag)
	}
	if cfg.OnAssign != nil {
		cfg.OnAssign(gen.ID, ids)
	}
}

// minFlushShare is the least a partition buffers before it flushes: a
// few predictions, so that a member with more partitions than
// FlushMaxBytes/minFlushShare (8,192 at the default) still writes batches
// of several records rather than one.
const minFlushShare = 1 << 10

// flushShare is a partition's part of maxBytes among parts partitions.
// The parts add up to maxBytes up to maxBytes/minFlushShare partitions;
// the earlier floor of 16 KiB doubled the member's bound at 1,024.
func flushShare(maxBytes, parts int) int64 {
	return int64(max(minFlushShare, maxBytes/max(parts, 1)))
}

// generationContext returns a context that ends with the generation, for
// the workers to derive theirs from. Derived from kafka-go's generation
// context, a kind the context package does not know, each would cost a
// goroutine watching it: 1,024 more at 1,024 partitions.
func generationContext(gen *kafka.Generation) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	gen.Start(func(g context.Context) {
		<-g.Done()
		cancel()
	})
	return ctx
}

// commit commits offset with metadata for p in gen, and with a label
// topic (labelTopic not "") labelOffset for its partition p in the same
// request. kafka-go reports per-partition failures inside a nil error, so
// they are checked here; the errors that mean another generation owns the
// partition become errFenced.
func (m *member) commit(ctx context.Context, gen *kafka.Generation, p Partition, offset int64, metadata, labelTopic string, labelOffset int64) error {
	topics := map[string][]kafka.OffsetCommit{p.Topic: {{Partition: p.ID, Offset: offset, Metadata: metadata}}}
	if labelTopic != "" && labelOffset >= 0 {
		topics[labelTopic] = []kafka.OffsetCommit{{Partition: p.ID, Offset: labelOffset}}
	}
	resp, err := m.client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{
		GroupID: m.cfg.Group, GenerationID: int(gen.ID), MemberID: gen.MemberID, Topics: topics,
	})
	if err == nil {
		for t := range topics {
			for _, pr := range resp.Topics[t] {
				if pr.Partition == p.ID && pr.Error != nil {
					err = pr.Error
				}
			}
		}
	}
	switch {
	case err == nil:
		m.cfg.Metrics.Commits.WithLabelValues("ok").Inc()
		return nil
	case errors.Is(err, kafka.IllegalGeneration), errors.Is(err, kafka.RebalanceInProgress),
		errors.Is(err, kafka.UnknownMemberId), errors.Is(err, kafka.FencedInstanceID):
		m.cfg.Metrics.Commits.WithLabelValues("fenced").Inc()
		return fmt.Errorf("%w: %v", errFenced, err)
	default:
		m.cfg.Metrics.Commits.WithLabelValues("error").Inc()
		return fmt.Errorf("commit offset %d: %w", offset, err)
	}
}

// requestsInFlight bounds the member's requests in flight other than
// fetches. kafka-go's Transport opens a connection (a goroutine and its
// buffers) for every request that finds none idle, and keeps it while it
// is reused: 256 workers flushing at once held 880 connections to one
// broker. Two cores gain nothing from more requests in flight than this.
const requestsInFlight = 32

// limitedTransport lets at most cap(slots) requests be in flight at once.
type limitedTransport struct {
	rt    kafka.RoundTripper
	slots chan struct{}
}

func (l *limitedTransport) RoundTrip(ctx context.Context, addr net.Addr, req kafka.Request) (kafka.Response, error) {
	if req.ApiKey() == protocol.Fetch {
		// One per broker at a time (fetch.Fetcher), held up to the
		// broker's wait: it must not take a slot from the workers. By
		// its key: package fetch sends a request type of its own.
		return l.rt.RoundTrip(ctx, addr, req)
	}
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-l.slots }()
	return l.rt.RoundTrip(ctx, addr, req)
}

// waitWithin waits for wg, giving up after d.
func waitWithin(wg *sync.WaitGroup, d time.Duration, log zerolog.Logger) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		log.Warn().Dur("after", d).Msg("workers did not finish their last commit; leaving anyway")
	}
}
