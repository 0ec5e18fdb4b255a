package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metrics are the service's Prometheus series. Partition labels are the
// input partition number.
type Metrics struct {
	Consumed      *prometheus.CounterVec // streamlearner_records_consumed_total{partition}
	Predicted     *prometheus.CounterVec // streamlearner_records_predicted_total{partition}
	Learned       *prometheus.CounterVec // streamlearner_records_learned_total{partition}
	Mistakes      *prometheus.CounterVec // streamlearner_mistakes_total{partition}
	DeadLetters   *prometheus.CounterVec // streamlearner_dead_letters_total{partition,reason}
	Support       *prometheus.GaugeVec   // streamlearner_support_vectors{partition}
	WindowRate    *prometheus.GaugeVec   // streamlearner_windowed_mistake_rate{partition}
	Produced      prometheus.Counter     // streamlearner_predictions_produced_total
	ProduceErrors prometheus.Counter     // streamlearner_produce_errors_total
	Commits       *prometheus.CounterVec // streamlearner_offset_commits_total{result}
	Rebalances    prometheus.Counter     // streamlearner_rebalances_total
	AssignedGauge prometheus.Gauge       // streamlearner_assigned_partitions
	ReadyGauge    prometheus.Gauge       // streamlearner_ready_partitions
}

// NewMetrics creates the series and registers them with reg (nil: not
// registered, for tests and tools).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	part := []string{"partition"}
	m := &Metrics{
		Consumed:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "streamlearner_records_consumed_total", Help: "Input records read, good or bad."}, part),
		Predicted:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "streamlearner_records_predicted_total", Help: "Input records predicted."}, part),
		Learned:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "streamlearner_records_learned_total", Help: "Labeled records the learner learned from (predict-then-learn rounds)."}, part),
		Mistakes:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "streamlearner_mistakes_total", Help: "Labeled records predicted wrong (y·f(x) ≤ 0)."}, part),
		DeadLetters:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "streamlearner_dead_letters_total", Help: "Records sent to the dead-letter topic, by reason."}, []string{"partition", "reason"}),
		Support:       prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "streamlearner_support_vectors", Help: "Active-set size of the partition's model."}, part),
		WindowRate:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "streamlearner_windowed_mistake_rate", Help: "Mistake rate over the last labeled records (window of 1000)."}, part),
		Produced:      prometheus.NewCounter(prometheus.CounterOpts{Name: "streamlearner_predictions_produced_total", Help: "Prediction records acknowledged by the brokers."}),
		ProduceErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "streamlearner_produce_errors_total", Help: "Failed attempts to write predictions or dead letters (retried)."}),
		Commits:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "streamlearner_offset_commits_total", Help: "Offset commits by result (ok, fenced, error)."}, []string{"result"}),
		Rebalances:    prometheus.NewCounter(prometheus.CounterOpts{Name: "streamlearner_rebalances_total", Help: "Group generations this member joined."}),
		AssignedGauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "streamlearner_assigned_partitions", Help: "Input partitions assigned to this member."}),
		ReadyGauge:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "streamlearner_ready_partitions", Help: "Assigned partitions whose model is restored and being served."}),
	}
	if reg != nil {
		reg.MustRegister(m.Consumed, m.Predicted, m.Learned, m.Mistakes, m.DeadLetters, m.Support, m.WindowRate,
			m.Produced, m.ProduceErrors, m.Commits, m.Rebalances, m.AssignedGauge, m.ReadyGauge)
	}
	// Series that should read 0 rather than be absent before the first event.
	for _, r := range []string{"ok", "fenced", "error"} {
		m.Commits.WithLabelValues(r)
	}
	return m
}

// Ready reports whether the member serves every partition it is assigned:
// at least one is assigned and each has restored its model. It is what
// /readyz answers.
func (m *Metrics) Ready() bool {
	a := gaugeValue(m.AssignedGauge)
	return a > 0 && gaugeValue(m.ReadyGauge) == a
}

func gaugeValue(g prometheus.Gauge) float64 {
	var d dto.Metric
	if err := g.Write(&d); err != nil {
		return 0
	}
	return d.GetGauge().GetValue()
}
