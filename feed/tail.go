package feed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/kafkaconn"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/prequential"
)

// TailConfig says which prediction topic to follow.
type TailConfig struct {
	Conn  kafkaconn.Config
	Topic string // prediction topic; required
	// From is "earliest" (default: the whole topic) or "latest" (only new
	// predictions).
	From string
	// Window is the number of labeled predictions in the windowed
	// accuracy; default 1000.
	Window int
	// Limit stops after this many distinct predictions; 0 follows until
	// ctx ends.
	Limit int
}

// TailStats are the running figures after a prediction.
type TailStats struct {
	Predictions uint64  // distinct predictions seen
	Labeled     uint64  // of which labeled
	Accuracy    float64 // over all labeled predictions seen
	Window      float64 // over the last Window labeled predictions
	Duplicates  uint64  // re-emitted predictions skipped
}

// Tail reads every partition of a prediction topic and calls emit for each
// distinct prediction with the running accuracy. Predictions re-emitted
// after a crash (same input offset) are skipped: a service's output
// partition holds one input partition's predictions in order, so anything
// at or below the highest offset seen for that input partition is a
// duplicate.
func Tail(ctx context.Context, cfg TailConfig, emit func(codec.Prediction, TailStats) error) error {
	if err := cfg.Conn.Validate(); err != nil {
		return err
	}
	if cfg.Topic == "" {
		return errors.New("tail needs a topic")
	}
	start := kafka.FirstOffset
	switch cfg.From {
	case "", "earliest":
	case "latest":
		start = kafka.LastOffset
	default:
		return fmt.Errorf("from %q: want earliest or latest", cfg.From)
	}
	dialer, err := cfg.Conn.Dialer()
	if err != nil {
		return err
	}
	parts, err := Partitions(ctx, dialer, cfg.Conn.Brokers, cfg.Topic)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type item struct {
		m   kafka.Message
		err error
	}
	ch := make(chan item, 1024)
	var wg sync.WaitGroup
	for _, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: cfg.Conn.Brokers, Topic: cfg.Topic, Partition: p, Dialer: dialer, MaxWait: time.Second, MaxBytes: 16 << 20})
			defer r.Close()
			if err := r.SetOffset(start); err != nil {
				ch <- item{err: err}
				return
			}
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					return
				}
				select {
				case ch <- item{m: m}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(ch) }()

	type source struct {
		topic     string
		partition int32
	}
	high := map[source]int64{}
	ev := prequential.Evaluator{Window: cfg.Window}
	var st TailStats
	for it := range ch {
		if it.err != nil {
			return fmt.Errorf("tail %s: %w", cfg.Topic, it.err)
		}
		p, err := codec.DecodePrediction(it.m.Value)
		if err != nil {
			continue // not ours; a tail shows what it can
		}
		src := source{p.Topic, p.Partition}
		if h, ok := high[src]; ok && p.Offset <= h {
			st.Duplicates++
			continue
		}
		high[src] = p.Offset
		ev.Observe(learners.Outcome{Mistake: p.Mistake != nil && *p.Mistake}, p.Mistake != nil, p.Support)
		st.Predictions, st.Labeled = ev.Rounds, ev.Labeled
		st.Accuracy, st.Window = 1-ev.MistakeRate(), 1-ev.WindowRate()
		if err := emit(p, st); err != nil {
			return err
		}
		if cfg.Limit > 0 && st.Predictions >= uint64(cfg.Limit) {
			return nil
		}
	}
	return ctx.Err()
}

// Partitions lists the partition numbers of topic, asking the brokers in
// turn until one answers.
func Partitions(ctx context.Context, d *kafka.Dialer, brokers []string, topic string) ([]int, error) {
	var lastErr error
	for _, b := range brokers {
		conn, err := d.DialContext(ctx, "tcp", b)
		if err != nil {
			lastErr = err
			continue
		}
		ps, err := conn.ReadPartitions(topic)
		conn.Close()
		if err != nil {
			return nil, fmt.Errorf("partitions of %s: %w", topic, err)
		}
		ids := make([]int, len(ps))
		for i, p := range ps {
			ids[i] = p.ID
		}
		return ids, nil
	}
	return nil, fmt.Errorf("connect to %v: %w", brokers, lastErr)
}
