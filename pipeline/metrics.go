package pipeline

import (
	"github.com/streamlearner/streamlearner/codec"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metrics are the service's Prometheus series. Partition labels are the
// input partition number.
//
// When a rebalance takes a partition from a worker, the partition's gauges
// are deleted — support size, windowed mistake rate, lag and the
// checkpoint gauges describe a model this member no longer holds, and a
// stale copy would be double-counted beside the new owner's or, for the
// checkpoint timestamp, look like a checkpoint that stopped. At shutdown
// they keep their last values, for callers that read them after Run
// returns. The per-partition counters always stay: they count what this
// member did, which remains true, and deleting them would reset them at
// every (eager) rebalance.
type Metrics struct {
	Consumed      *SeriesVec             // streamlearner_records_consumed_total{partition}
	Predicted     *SeriesVec             // streamlearner_records_predicted_total{partition}
	Learned       *SeriesVec             // streamlearner_records_learned_total{partition}
	Mistakes      *SeriesVec             // streamlearner_mistakes_total{partition}
	DeadLetters   *SeriesVec             // streamlearner_dead_letters_total{partition,reason}
	Support       *SeriesVec             // streamlearner_support_vectors{partition}
	WindowRate    *SeriesVec             // streamlearner_windowed_mistake_ratio{partition}
	Produced      prometheus.Counter     // streamlearner_predictions_produced_total
	ProduceErrors prometheus.Counter     // streamlearner_produce_errors_total
	FetchErrors   prometheus.Counter     // streamlearner_fetch_errors_total
	Commits       *prometheus.CounterVec // streamlearner_offset_commits_total{result}
	Rebalances    prometheus.Counter     // streamlearner_rebalances_total
	AssignedGauge prometheus.Gauge       // streamlearner_assigned_partitions
	ReadyGauge    prometheus.Gauge       // streamlearner_ready_partitions

	// Round times predict-then-learn on labeled records (one learner
	// Round call); its count equals the learned records.
	Round *RoundHistogram // streamlearner_round_duration_seconds
	// Lag is the partition's high-water mark minus the next offset to
	// read, as of the last fetched record.
	Lag *SeriesVec // streamlearner_consumer_lag_records{partition}

	CheckpointSaves    *prometheus.CounterVec // streamlearner_checkpoint_saves_total{result}
	CheckpointDuration prometheus.Histogram   // streamlearner_checkpoint_duration_seconds
	CheckpointBytes    *SeriesVec             // streamlearner_checkpoint_bytes{partition}
	// CheckpointWritten counts the snapshot bytes saved; with commits
	// that name an earlier snapshot it grows with the snapshots taken,
	// not with the commits.
	CheckpointWritten prometheus.Counter // streamlearner_checkpoint_written_bytes_total
	// RestoreReplayed and RestoreReplay: records a restore played
	// learn-only from its snapshot to the committed offset, and how long
	// each replay took.
	RestoreReplayed prometheus.Counter   // streamlearner_restore_replayed_records_total
	RestoreReplay   prometheus.Histogram // streamlearner_restore_replay_seconds
	// CheckpointTime is when the partition's model was last wholly in a
	// committed checkpoint: at restore, at each committed snapshot, and at
	// each checkpoint tick with nothing new to save. time() minus it is
	// how long learned progress has gone without a durable copy, so an
	// idle partition does not look like a failing one.
	CheckpointTime *SeriesVec // streamlearner_checkpoint_last_success_timestamp_seconds{partition}

	// Transactions counts exactly-once transactions by result (committed,
	// aborted) and, for aborts, reason (error: a write or commit failed,
	// the partition rewound; fenced: another member owns the partition).
	Transactions *prometheus.CounterVec // streamlearner_transactions_total{result,reason}
	// TransactionDuration times a transaction from its first write to its
	// commit.
	TransactionDuration prometheus.Histogram // streamlearner_transaction_duration_seconds
	// VisibleLatency is, per committed transaction, the time from its
	// oldest record's timestamp to the commit that made its prediction
	// visible to read_committed consumers (the worst of the transaction).
	VisibleLatency prometheus.Histogram // streamlearner_prediction_visible_latency_seconds

	// RegistryErrors counts requests to the schema registry that got no
	// answer (unreachable, 5xx): the partition waits meanwhile.
	RegistryErrors *SeriesVec // streamlearner_schema_registry_errors_total{partition}
	// Skipped counts records read but never handed to the decoder:
	// transaction markers and, reading committed, aborted records.
	Skipped *SeriesVec // streamlearner_records_skipped_total{partition}
	// OffsetResets counts Offset Out Of Range answers: the partition's log
	// no longer holds the next offset (retention, or a recreated topic),
	// and the worker moved to its start or end as Config.StartOffset says.
	OffsetResets *SeriesVec // streamlearner_offset_resets_total{partition}
	// ModelResets counts new models started in place of a stored one
	// (--reset-model), by reason (mismatch, unreadable).
	ModelResets *prometheus.CounterVec // streamlearner_model_resets_total{reason}
	// Per learner of a partition's model (the learner alone without
	// challengers; "spec kernel=K" names it): the records it got wrong
	// on its own predictions, its windowed mistake ratio and support.
	LearnerMistakes   *SeriesVec // streamlearner_learner_mistakes_total{partition,learner}
	LearnerWindowRate *SeriesVec // streamlearner_learner_windowed_mistake_ratio{partition,learner}
	LearnerSupport    *SeriesVec // streamlearner_learner_support_vectors{partition,learner}
	// Champion is 1 for the learner whose predictions a partition emits;
	// ChampionSwitches counts the changes.
	Champion         *SeriesVec // streamlearner_champion{partition,learner}
	ChampionSwitches *SeriesVec // streamlearner_champion_switches_total{partition}
	// SearchReopens counts an auto learner's reopenings of its search at
	// a rise of its mistake rate (docs/auto.md).
	SearchReopens *SeriesVec // streamlearner_search_reopens_total{partition}
	// Stuck is the number of assigned partitions unable to flush or commit
	// for longer than Config.StuckAfter (what makes /readyz 503).
	Stuck prometheus.Gauge // streamlearner_stuck_partitions
	// Degraded is the number of assigned partitions whose last
	// DegradedAfter records all came to nothing: every one dead-lettered,
	// or its prediction refused by the brokers (also makes /readyz 503).
	Degraded prometheus.Gauge // streamlearner_degraded_partitions
	// Unserved is the number of assigned partitions not served now: a
	// producer id that cannot be initialised, a model that cannot be
	// restored, a commit fenced while the member's generation lives on, transactions aborted again and again
	// (also makes /readyz 503, at once, naming each and why).
	Unserved prometheus.Gauge // streamlearner_unserved_partitions
	// Delayed labels: records awaiting their label, how long labels took
	// (label time − record time, by record timestamps), records that
	// left the pending store unlabeled (expired, evicted), and labels
	// that found no record, by reason (also dead letters).
	PendingRecords *SeriesVec           // streamlearner_pending_records{partition}
	LabelDelay     prometheus.Histogram // streamlearner_label_delay_seconds
	PendingExpired *SeriesVec           // streamlearner_pending_expired_total{partition}
	PendingEvicted *SeriesVec           // streamlearner_pending_evicted_total{partition}
	OrphanLabels   *SeriesVec           // streamlearner_orphan_labels_total{partition,reason}

	health health
	// reasons, as label values in reasonLabels, are the dead-letter
	// reasons last shown at 0 (assigned).
	reasonsMu    sync.Mutex
	reasons      []codec.Reason
	reasonLabels []string
	// waiting is why the member has not joined its group (its input topic
	// does not exist), for /readyz; nil once it joins.
	waiting atomic.Pointer[string]
}

// NewMetrics creates the series and registers them with reg (nil: not
// registered, for tests and tools).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{}
	groups := [][]prometheus.Collector{m.recordMetrics(), m.kafkaMetrics(), m.checkpointMetrics(),
		m.learnerMetrics(), m.healthMetrics(), m.delayedMetrics(), m.transactionMetrics()}
	m.health.gauge, m.health.after, m.health.degraded.gauge, m.health.halted.gauge = m.Stuck, time.Minute, m.Degraded, m.Unserved
	if reg != nil {
		for _, g := range groups {
			reg.MustRegister(g...)
		}
	}
	// Series that should read 0 rather than be absent before the first event.
	for _, r := range []string{"ok", "fenced", "error"} {
		m.Commits.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "error"} {
		m.CheckpointSaves.WithLabelValues(r)
	}
	for _, r := range []string{"mismatch", "unreadable", "reset_offsets"} {
		m.ModelResets.WithLabelValues(r)
	}
	return m
}

// recordMetrics creates the series of each partition's records (read,
// predicted, learned, dead-lettered) and its model's mistakes and size.
func (m *Metrics) recordMetrics() []prometheus.Collector {
	m.Consumed = newPartitionCounters("streamlearner_records_consumed_total", "Input records read, good or bad.", "partition")
	m.Predicted = newPartitionCounters("streamlearner_records_predicted_total", "Input records predicted.", "partition")
	m.Learned = newPartitionCounters("streamlearner_records_learned_total", "Labeled records the learner learned from (predict-then-learn rounds).", "partition")
	m.Mistakes = newPartitionCounters("streamlearner_mistakes_total", "Labeled records predicted wrong: prediction sign(f), with sign(0) = -1, unlike the label.", "partition")
	m.DeadLetters = newPartitionCounters("streamlearner_dead_letters_total", "Records sent to the dead-letter topic, by reason.", "partition", "reason")
	m.Support = newPartitionGauges("streamlearner_support_vectors", "Active-set size of the partition's model.", "partition")
	m.WindowRate = newPartitionGauges("streamlearner_windowed_mistake_ratio", "Fraction of the last labeled records (window of 1000) predicted wrong: prediction sign(f), with sign(0) = -1, unlike the label.", "partition")
	m.Skipped = newPartitionCounters("streamlearner_records_skipped_total", "Records read but not used: transaction markers and records of aborted transactions.", "partition")
	// 1 µs to 131 ms by factors of 2: a budget round takes microseconds,
	// the second-order and Tightest learners' large budgets milliseconds.
	m.Round = newRoundHistogram(prometheus.NewDesc("streamlearner_round_duration_seconds", "Time of one predict-then-learn round on a labeled record (as of each partition's last flush).", nil, nil),
		prometheus.ExponentialBuckets(1e-6, 2, 18))
	return []prometheus.Collector{m.Consumed, m.Predicted, m.Learned, m.Mistakes, m.DeadLetters, m.Support, m.WindowRate, m.Skipped, m.Round}
}

// kafkaMetrics creates the series of the member's traffic with the brokers
// (fetches, writes, commits, assignments) and the schema registry.
func (m *Metrics) kafkaMetrics() []prometheus.Collector {
	m.Produced = prometheus.NewCounter(prometheus.CounterOpts{Name: "streamlearner_predictions_produced_total", Help: "Prediction records acknowledged by the brokers."})
	m.ProduceErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "streamlearner_produce_errors_total", Help: "Failed attempts to write predictions or dead letters (retried)."})
	m.FetchErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "streamlearner_fetch_errors_total", Help: "Failed fetches of input or label records: broker errors, corrupt record batches (retried)."})
	m.Commits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "streamlearner_offset_commits_total", Help: "Offset commits by result (ok, fenced, error)."}, []string{"result"})
	m.Rebalances = prometheus.NewCounter(prometheus.CounterOpts{Name: "streamlearner_rebalances_total", Help: "Group generations this member joined."})
	m.AssignedGauge = prometheus.NewGauge(prometheus.GaugeOpts{Name: "streamlearner_assigned_partitions", Help: "Input partitions assigned to this member."})
	m.ReadyGauge = prometheus.NewGauge(prometheus.GaugeOpts{Name: "streamlearner_ready_partitions", Help: "Assigned partitions whose model is restored and being served."})
	m.Lag = newPartitionGauges("streamlearner_consumer_lag_records", "Records in the partition not yet read: high-water mark minus next offset, as of the last fetch.", "partition")
	m.OffsetResets = newPartitionCounters("streamlearner_offset_resets_total", "Times the partition's next offset was no longer in its log (Offset Out Of Range) and reading moved to its start or end.", "partition")
	m.RegistryErrors = newPartitionCounters("streamlearner_schema_registry_errors_total", "Schema registry requests that got no answer (unreachable, 5xx); the partition waits and retries meanwhile, dead-lettering nothing.", "partition")
	return []prometheus.Collector{m.Produced, m.ProduceErrors, m.FetchErrors, m.Commits, m.Rebalances, m.AssignedGauge, m.ReadyGauge, m.Lag, m.OffsetResets, m.RegistryErrors}
}

// checkpointMetrics creates the series of snapshots: their saves, and the
// restores and resets that start a model.
func (m *Metrics) checkpointMetrics() []prometheus.Collector {
	m.CheckpointSaves = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "streamlearner_checkpoint_saves_total", Help: "Snapshot saves by result (ok, error)."}, []string{"result"})
	// 1 ms to 16 s: a file save with fsync takes milliseconds, a large
	// model written to a topic seconds.
	m.CheckpointDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "streamlearner_checkpoint_duration_seconds", Help: "Time to encode and store one snapshot.",
		Buckets: prometheus.ExponentialBuckets(1e-3, 2, 15)})
	m.CheckpointBytes = newPartitionGauges("streamlearner_checkpoint_bytes", "Size of the partition's last saved snapshot.", "partition")
	m.CheckpointWritten = prometheus.NewCounter(prometheus.CounterOpts{Name: "streamlearner_checkpoint_written_bytes_total",
		Help: "Snapshot bytes saved, all partitions: a commit that names an earlier snapshot writes none (--snapshot-max-rate)."})
	m.RestoreReplayed = prometheus.NewCounter(prometheus.CounterOpts{Name: "streamlearner_restore_replayed_records_total",
		Help: "Records a restore played again learn-only, from its snapshot's offset to the committed one."})
	// 1 ms to 16 s and beyond: a replay spans up to --snapshot-interval
	// of records.
	m.RestoreReplay = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "streamlearner_restore_replay_seconds",
		Help: "Time a restore took to replay the records after its snapshot up to the committed offset.", Buckets: prometheus.ExponentialBuckets(1e-3, 2, 16)})
	m.CheckpointTime = newPartitionGauges("streamlearner_checkpoint_last_success_timestamp_seconds", "Unix time when everything the partition's model learned was last in a committed checkpoint; time() minus it is the checkpoint age.", "partition")
	m.ModelResets = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "streamlearner_model_resets_total", Help: "New models started in place of a stored one (--reset-model), by reason."}, []string{"reason"})
	return []prometheus.Collector{m.CheckpointSaves, m.CheckpointDuration, m.CheckpointBytes, m.CheckpointWritten, m.RestoreReplayed, m.RestoreReplay, m.CheckpointTime, m.ModelResets}
}

// learnerMetrics creates the series of each learner of a partition's
// model: its challengers and an auto learner's search.
func (m *Metrics) learnerMetrics() []prometheus.Collector {
	m.LearnerMistakes = newPartitionCounters("streamlearner_learner_mistakes_total", "Labeled records each learner of the partition's model predicted wrong, on its own predictions (the champion's are the ones emitted).", "partition", "learner")
	m.LearnerWindowRate = newPartitionGauges("streamlearner_learner_windowed_mistake_ratio", "Each learner's mistake ratio over its last labeled records (the evaluator's window).", "partition", "learner")
	m.LearnerSupport = newPartitionGauges("streamlearner_learner_support_vectors", "Each learner's support-set size.", "partition", "learner")
	m.Champion = newPartitionGauges("streamlearner_champion", "1 for the learner whose predictions the partition emits (the champion among the learner and its challengers; with --learner auto, its champion configuration, which leads the vote it emits).", "partition", "learner")
	m.ChampionSwitches = newPartitionCounters("streamlearner_champion_switches_total", "Times the partition's champion changed.", "partition")
	m.SearchReopens = newPartitionCounters("streamlearner_search_reopens_total", "Times an auto learner's search reopened because its mistake rate rose (a drift).", "partition")
	return []prometheus.Collector{m.LearnerMistakes, m.LearnerWindowRate, m.LearnerSupport, m.Champion, m.ChampionSwitches, m.SearchReopens}
}

// healthMetrics creates the series of the partitions that are stuck,
// degraded or not served.
func (m *Metrics) healthMetrics() []prometheus.Collector {
	m.Stuck = prometheus.NewGauge(prometheus.GaugeOpts{Name: "streamlearner_stuck_partitions", Help: "Assigned partitions stuck for longer than the stuck threshold: unable to flush or commit, waiting for the schema registry, held inside a record or a snapshot save, or no snapshot saved."})
	m.Degraded = prometheus.NewGauge(prometheus.GaugeOpts{Name: "streamlearner_degraded_partitions",
		Help: "Assigned partitions whose last 1000 records all came to nothing: every one dead-lettered, or its prediction refused by the brokers."})
	m.Unserved = prometheus.NewGauge(prometheus.GaugeOpts{Name: "streamlearner_unserved_partitions",
		Help: "Assigned partitions not served now: their producer cannot be initialised, their model cannot be restored, their commit was fenced while the generation lives on, or their transactions abort again and again."})
	return []prometheus.Collector{m.Stuck, m.Degraded, m.Unserved}
}

// delayedMetrics creates the series of records awaiting their label
// (delayed labels).
func (m *Metrics) delayedMetrics() []prometheus.Collector {
	m.PendingRecords = newPartitionGauges("streamlearner_pending_records", "Records predicted and awaiting their label (delayed labels).", "partition")
	// 10 ms to about 12 days by factors of 4: clicks come in minutes,
	// reviews in hours, chargebacks in days.
	m.LabelDelay = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "streamlearner_label_delay_seconds", Help: "Time from a record to its label (record timestamps), for labels learned.",
		Buckets: prometheus.ExponentialBuckets(0.01, 4, 15)})
	m.PendingExpired = newPartitionCounters("streamlearner_pending_expired_total", "Records whose label did not come within the pending store's maximum age.", "partition")
	m.PendingEvicted = newPartitionCounters("streamlearner_pending_evicted_total", "Records pushed out of the full pending store before their label came.", "partition")
	m.OrphanLabels = newPartitionCounters("streamlearner_orphan_labels_total", "Labels that found no record awaiting them, by reason (each is a dead letter).", "partition", "reason")
	return []prometheus.Collector{m.PendingRecords, m.LabelDelay, m.PendingExpired, m.PendingEvicted, m.OrphanLabels}
}

// transactionMetrics creates the series of exactly-once transactions.
func (m *Metrics) transactionMetrics() []prometheus.Collector {
	m.Transactions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "streamlearner_transactions_total",
		Help: "Exactly-once transactions by result (committed, aborted) and reason of an abort (error, fenced)."}, []string{"result", "reason"})
	// 1 ms to 16 s: a transaction spans a flush interval (200 ms by default).
	m.TransactionDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "streamlearner_transaction_duration_seconds",
		Help: "Time from a transaction's first write to its commit.", Buckets: prometheus.ExponentialBuckets(1e-3, 2, 15)})
	m.VisibleLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "streamlearner_prediction_visible_latency_seconds",
		Help:    "Per committed transaction: time from its oldest record's timestamp to the commit that made its predictions visible (read_committed).",
		Buckets: prometheus.ExponentialBuckets(1e-3, 2, 15)})
	return []prometheus.Collector{m.Transactions, m.TransactionDuration, m.VisibleLatency}
}

// assigned shows a newly assigned partition's dead-letter series at 0 for
// each reason its configuration can report (Config.Reasons), so that a
// dashboard or an alert on their rate reads 0 instead of "no data" until
// the first bad record, without a wall of series that can only be 0.
func (m *Metrics) assigned(partition string, reasons []codec.Reason) {
	m.DeadLetters.ShowZeros(partition, m.reasonNames(reasons))
}

// reasonNames is reasons as label values, the same slice for the same
// reasons (every partition of a member shows the same).
func (m *Metrics) reasonNames(reasons []codec.Reason) []string {
	m.reasonsMu.Lock()
	defer m.reasonsMu.Unlock()
	if !slices.Equal(m.reasons, reasons) {
		m.reasons = slices.Clone(reasons)
		m.reasonLabels = make([]string, len(reasons))
		for i, r := range reasons {
			m.reasonLabels[i] = string(r)
		}
	}
	return m.reasonLabels
}

// forget deletes the gauges of a partition a rebalance took away, and its
// degraded mark: the partition's new owner says how it fares.
func (m *Metrics) forget(partition string) {
	m.health.served(partition)
	m.health.resume(partition)
	m.health.forget(partition)
	for _, g := range []*SeriesVec{m.Support, m.WindowRate, m.Lag, m.CheckpointBytes, m.CheckpointTime, m.PendingRecords, m.LearnerWindowRate, m.LearnerSupport, m.Champion} {
		g.DeletePartition(partition)
	}
}

// Ready reports whether the member serves every partition it is assigned:
// at least one is assigned, each has restored its model, none has been
// unable to flush or commit for longer than the stuck threshold, and none
// is degraded (its recent records all dead-lettered or refused). It is
// what /readyz answers.
func (m *Metrics) Ready() bool {
	a := gaugeValue(m.AssignedGauge)
	return a > 0 && gaugeValue(m.ReadyGauge) == a && m.health.stuckNow() == 0 && len(m.health.why()) == 0
}

// Degradations says which partitions are degraded and why, for /readyz.
func (m *Metrics) Degradations() []string { return m.health.why() }

func gaugeValue(g prometheus.Gauge) float64 {
	var d dto.Metric
	if err := g.Write(&d); err != nil {
		return 0
	}
	return d.GetGauge().GetValue()
}

// RegisterBuildInfo registers streamlearner_build_info, a constant 1
// labeled with the binary's version, VCS revision and Go version, so a
// dashboard can tell which build each member runs and join it to other
// series.
func RegisterBuildInfo(reg prometheus.Registerer, version, revision, goVersion string) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "streamlearner_build_info", Help: "Build information; the value is 1.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion},
	}, func() float64 { return 1 }))
}

// RoundHistogram is streamlearner_round_duration_seconds. Each worker
// counts its rounds in roundCounts of its own and adds them at each
// flush: one histogram observed by every worker on every record cost 0.17
// µs a record, a tenth of a budget round.
type RoundHistogram struct {
	desc   *prometheus.Desc
	bounds []float64 // upper bounds; a last bucket is +Inf
	mu     sync.Mutex
	counts []uint64 // per bucket, not cumulative
	sum    float64
	n      uint64
}

func newRoundHistogram(desc *prometheus.Desc, bounds []float64) *RoundHistogram {
	return &RoundHistogram{desc: desc, bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

// Describe implements prometheus.Collector.
func (h *RoundHistogram) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

// Collect implements prometheus.Collector.
func (h *RoundHistogram) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	defer h.mu.Unlock()
	buckets := make(map[float64]uint64, len(h.bounds))
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i]
		buckets[b] = cum
	}
	ch <- prometheus.MustNewConstHistogram(h.desc, h.n, h.sum, buckets)
}

// add adds a worker's counts and empties them.
func (h *RoundHistogram) add(c *roundCounts) {
	if c.n == 0 {
		return
	}
	h.mu.Lock()
	for i, k := range c.counts {
		h.counts[i] += k
	}
	h.sum += c.sum
	h.n += c.n
	h.mu.Unlock()
	clear(c.counts)
	c.sum, c.n = 0, 0
}

// roundCounts are one worker's rounds not yet added to the histogram.
type roundCounts struct {
	counts []uint64
	sum    float64
	n      uint64
}

// observe counts a round of v seconds in h's buckets (v ≤ a bucket's
// upper bound, as Prometheus counts).
func (c *roundCounts) observe(h *RoundHistogram, v float64) {
	if c.counts == nil {
		c.counts = make([]uint64, len(h.bounds)+1)
	}
	i, _ := slices.BinarySearch(h.bounds, v)
	c.counts[i]++
	c.sum += v
	c.n++
}
