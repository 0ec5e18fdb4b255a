package feed

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/prequential"
)

// TailConfig says which prediction topic to follow.
type TailConfig struct {
	Conn  kafkaconn.Config
	Topic string // prediction topic; required, and it must exist
	// From is where each partition starts (ResolveBound): "earliest"
	// (default), "latest" (only new predictions), an offset, -N (the last
	// N records) or an RFC 3339 time.
	From string
	// ExitAtEnd stops at the end each partition had when the tail
	// started, instead of following it.
	ExitAtEnd bool
	// Window is the number of labeled predictions in the windowed
	// accuracy; default 1000.
	Window int
	// Limit stops after this many distinct predictions; 0 follows until
	// ctx ends (or the end, with ExitAtEnd).
	Limit int
	// ReadUncommitted reads what a read_uncommitted consumer sees: the
	// predictions of open and aborted transactions too (exactly-once
	// output). Default false: read committed, as a downstream consumer of
	// exactly-once output must; transaction markers are never shown.
	ReadUncommitted bool
	// Skipped, if set, is called for each record that is not a
	// prediction (an input record, say, when the topic is the wrong one),
	// with the count so far and why it was skipped.
	Skipped func(n uint64, partition int, offset int64, err error)
}

// TailStats are the running figures after a prediction. An accuracy over
// no labeled prediction has no value: it is NaN until one comes (a service
// with --delayed-labels writes its predictions before their labels).
type TailStats struct {
	Predictions uint64  // distinct predictions seen
	Labeled     uint64  // of which labeled
	Accuracy    float64 // over all labeled predictions seen
	Window      float64 // over the last Window labeled predictions
	Duplicates  uint64  // re-emitted predictions skipped
	Skipped     uint64  // records that are not predictions
	// SourceLabeled, SourceAccuracy and SourceWindow are Labeled,
	// Accuracy and Window over the predictions of the last one's input
	// partition alone: each input partition has its own model, so mixing
	// them hides a bad one.
	SourceLabeled                uint64
	SourceAccuracy, SourceWindow float64
	// Sources is every input partition seen, "topic/partition", with its
	// predictions and accuracy, by topic and then partition number.
	Sources []SourceStats
	// Held is what each partition of the topic held when the tail
	// started, so that a tail that shows nothing can say why (a --from
	// past the end, an empty topic).
	Held []Held
}

// Held is the offsets a partition held when a tail started: First is its
// first record's, End the next one's (End − First records).
type Held struct {
	Partition  int
	First, End int64
}

// SourceStats is the accuracy of one input partition's predictions.
type SourceStats struct {
	Source      string  // topic/partition of the input
	Predictions uint64  // distinct predictions
	Labeled     uint64  // of which labeled
	Accuracy    float64 // over the labeled ones; NaN without any

	topic     string // the order of Sources
	partition int32
}

// accuracies are an evaluator's running and windowed accuracy, NaN before
// its first labeled round (its rates are 0 then, which would read 100 %).
func accuracies(ev *prequential.Evaluator) (running, window float64) {
	if ev.Labeled == 0 {
		return math.NaN(), math.NaN()
	}
	return 1 - ev.MistakeRate(), 1 - ev.WindowRate()
}

// Right reports whether a labeled prediction was right, by the rule every
// report follows: the prediction is sign(f) with sign(0) = −1, and it is
// a mistake when it differs from the label. (The learners' update
// condition y·f ≤ 0 is theirs; at f = 0 with label −1 the prediction −1
// is right although the learner updates.) ok is false for an unlabeled
// prediction. With many classes, right is the predicted class being the
// true class.
func Right(p codec.Prediction) (right, ok bool) {
	if p.LabelClass != "" {
		return p.Class == p.LabelClass, true
	}
	if p.Label == 0 {
		return false, false
	}
	return p.Predicted == p.Label, true
}

// Tail reads every partition of a prediction topic and calls emit for each
// distinct prediction with the running accuracy; it returns the final
// figures. Predictions re-emitted after a crash (same input offset) are
// skipped: a service's output partition holds one input partition's
// predictions in order, so anything at or below the highest offset seen
// for that input partition is a duplicate.
func Tail(ctx context.Context, cfg TailConfig, emit func(codec.Prediction, TailStats) error) (TailStats, error) {
	var st TailStats
	if err := cfg.Conn.Validate(); err != nil {
		return st, err
	}
	if cfg.Topic == "" {
		return st, errors.New("tail needs a topic")
	}
	dialer, err := cfg.Conn.Dialer()
	if err != nil {
		return st, err
	}
	transport, err := cfg.Conn.Transport()
	if err != nil {
		return st, err
	}
	// Idle connections would otherwise live on, each with a goroutine,
	// until their timeout; the readers have stopped by then (below).
	defer transport.CloseIdleConnections()
	parts, err := fetch.Partitions(ctx, dialer, cfg.Conn.Brokers, cfg.Topic)
	if err != nil {
		return st, fmt.Errorf("tail: %w", err)
	}
	client := &kafka.Client{Addr: kafka.TCP(cfg.Conn.Brokers...), Transport: transport}
	spans, err := tailSpans(ctx, cfg, client, parts, &st)
	if err != nil {
		return st, err
	}

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		// Whatever ends the tail, its readers stop before it returns:
		// none is left fetching on the closed transport.
		cancel()
		wg.Wait()
	}()
	ch := make(chan tailItem, 1024)
	for _, sp := range spans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tailPartition(ctx, cfg, client.Addr, transport, sp, ch)
		}()
	}
	go func() { wg.Wait(); close(ch) }()

	t := tally{cfg: cfg, st: &st, high: map[tailSource]int64{}, ev: prequential.Evaluator{Window: cfg.Window}, bySource: map[tailSource]*perSource{}}
	if err := t.follow(ch, emit); err != nil || cfg.Limit > 0 && st.Predictions >= uint64(cfg.Limit) {
		return st, err
	}
	if cfg.ExitAtEnd && ctx.Err() == nil {
		return st, nil
	}
	return st, ctx.Err()
}

// follow tallies the records from ch and emits each prediction, until ch
// closes, a reader fails, emit fails or the limit is reached.
func (t *tally) follow(ch <-chan tailItem, emit func(codec.Prediction, TailStats) error) error {
	for it := range ch {
		if it.err != nil {
			return fmt.Errorf("tail %s: %w", t.cfg.Topic, it.err)
		}
		p, ok := t.observe(it.m)
		if !ok {
			continue
		}
		if err := emit(p, *t.st); err != nil {
			return err
		}
		if t.cfg.Limit > 0 && t.st.Predictions >= uint64(t.cfg.Limit) {
			return nil
		}
	}
	return nil
}

// tailSpan is the offsets a tail reads of one partition.
type tailSpan struct {
	partition  int
	start, end int64 // end −1: follow
}

// tailSpans resolves where the tail starts and ends in each partition,
// and records in st.Held what each held. With ExitAtEnd, a partition with
// nothing from the start to its end has no span.
func tailSpans(ctx context.Context, cfg TailConfig, client *kafka.Client, parts []int, st *TailStats) ([]tailSpan, error) {
	var spans []tailSpan
	for _, p := range parts {
		first, last, _, err := fetch.ListOffsets(ctx, client, cfg.Topic, p, kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
		if err != nil {
			return nil, fmt.Errorf("tail: %w", err)
		}
		st.Held = append(st.Held, Held{Partition: p, First: first, End: last})
		start, err := fetch.ResolveBound(ctx, client, cfg.Topic, p, cfg.From, first, first, last)
		if err != nil {
			return nil, fmt.Errorf("tail --from: %w", err)
		}
		end := int64(-1)
		if cfg.ExitAtEnd {
			if end = last; start >= end {
				continue
			}
		}
		spans = append(spans, tailSpan{p, start, end})
	}
	return spans, nil
}

// tailItem is a record of the topic, or the error that stopped a reader.
type tailItem struct {
	m   kafka.Message
	err error
}

// tailPartition sends the records of sp to ch until ctx ends or, with an
// end, the span is read.
func tailPartition(ctx context.Context, cfg TailConfig, addr net.Addr, transport *kafka.Transport, sp tailSpan, ch chan<- tailItem) {
	// Package fetch, not kafka-go's Reader: that one reads
	// uncommitted and hands transaction markers over as messages.
	r, err := fetch.NewReader(fetch.Config{Addr: addr, Transport: transport, Topic: cfg.Topic, Partition: sp.partition,
		ReadUncommitted: cfg.ReadUncommitted, MaxBytes: 4 << 20, ClientID: cfg.Conn.ClientID}, sp.start)
	if err != nil {
		select {
		case ch <- tailItem{err: err}:
		case <-ctx.Done():
		}
		return
	}
	for {
		b, err := r.Fetch(ctx, time.Second)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			select { // a broker that answers with errors is not hammered
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		for _, rec := range b.Records {
			// The record's bytes are the reader's until its next fetch.
			m := kafka.Message{Topic: cfg.Topic, Partition: sp.partition, Offset: rec.Offset, Time: rec.Time,
				Key: bytes.Clone(rec.Key), Value: bytes.Clone(rec.Value)}
			select {
			case ch <- tailItem{m: m}:
			case <-ctx.Done():
				return
			}
		}
		if sp.end >= 0 && b.Next >= sp.end {
			return
		}
	}
}

// tailSource is an input partition, whose predictions one model made.
type tailSource struct {
	topic     string
	partition int32
}

type perSource struct {
	ev prequential.Evaluator
	i  int // in st.Sources
}

// tally keeps a tail's figures in st as records come.
type tally struct {
	cfg      TailConfig
	st       *TailStats
	high     map[tailSource]int64 // highest input offset seen
	ev       prequential.Evaluator
	bySource map[tailSource]*perSource
}

// observe counts the record m in the figures and returns its prediction;
// ok is false for a record that is not a prediction or is a duplicate.
func (t *tally) observe(m kafka.Message) (p codec.Prediction, ok bool) {
	st := t.st
	p, err := codec.DecodePrediction(m.Value)
	if err != nil {
		st.Skipped++
		if t.cfg.Skipped != nil {
			t.cfg.Skipped(st.Skipped, m.Partition, m.Offset, err)
		}
		return p, false
	}
	src := tailSource{p.Topic, p.Partition}
	if h, ok := t.high[src]; ok && p.Offset <= h {
		st.Duplicates++
		return p, false
	}
	t.high[src] = p.Offset
	right, labeled := Right(p)
	t.ev.Observe(learners.Outcome{Mistake: labeled && !right}, labeled, p.Support)
	st.Predictions, st.Labeled = t.ev.Rounds, t.ev.Labeled
	st.Accuracy, st.Window = accuracies(&t.ev)
	ps := t.source(src)
	ps.ev.Observe(learners.Outcome{Mistake: labeled && !right}, labeled, p.Support)
	st.SourceLabeled = ps.ev.Labeled
	st.SourceAccuracy, st.SourceWindow = accuracies(&ps.ev)
	s := &st.Sources[ps.i]
	s.Predictions, s.Labeled, s.Accuracy = ps.ev.Rounds, ps.ev.Labeled, st.SourceAccuracy
	return p, true
}

// source is the figures of src, added to st.Sources at its first
// prediction.
func (t *tally) source(src tailSource) *perSource {
	if ps := t.bySource[src]; ps != nil {
		return ps
	}
	// Sources stay in order, however the partitions' predictions
	// interleave: the summary reads as a list, not as a race.
	st := t.st
	i, _ := slices.BinarySearchFunc(st.Sources, src, func(s SourceStats, src tailSource) int {
		return cmp.Or(cmp.Compare(s.topic, src.topic), cmp.Compare(s.partition, src.partition))
	})
	st.Sources = slices.Insert(st.Sources, i, SourceStats{Source: fmt.Sprintf("%s/%d", src.topic, src.partition), topic: src.topic, partition: src.partition})
	for _, o := range t.bySource {
		if o.i >= i {
			o.i++
		}
	}
	ps := &perSource{ev: prequential.Evaluator{Window: t.cfg.Window}, i: i}
	t.bySource[src] = ps
	return ps
}
