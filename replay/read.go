package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/features"
	"github.com/streamlearner/streamlearner/feed"
	"github.com/streamlearner/streamlearner/fetch"
	"github.com/streamlearner/streamlearner/kafkaconn"
	"github.com/streamlearner/streamlearner/synth"
)

// Source says which records to replay.
type Source struct {
	Conn  kafkaconn.Config
	Topic string // required
	// Partitions to replay; nil means all of the topic's. Each is its own
	// stream, replayed one after the other.
	Partitions []int
	// From and To bound the replay (feed.ResolveBound): "earliest",
	// "latest", an offset, -N (the last N records) or an RFC 3339 time
	// (the first record at or after it). From is inclusive,
	// To exclusive. Defaults "earliest" and "latest" (the end of the
	// partition when the replay starts, so a replay of a live topic ends).
	From, To string
	// Limits bound one record (codec defaults for zero fields).
	Limits codec.Limits
	// Labels maps raw labels to ±1 (binary labels only by default).
	Labels codec.LabelMap
	// Batch is the number of records played at a time (the unit the
	// learners run in parallel over). Default 1000.
	Batch int
	// IdleTimeout ends a partition that delivers nothing for this long
	// although its end offset is not reached (a compacted or truncated
	// tail), with an error naming the offsets. Default 10s.
	IdleTimeout time.Duration
	// ReadUncommitted replays every record written, aborted transactions
	// included. Default false: read committed, as `run` reads, so a replay
	// sees the records the service learned from; "latest" is then the last
	// stable offset.
	ReadUncommitted bool
	// Progress, if set, is called now and then with the records read so
	// far and the total to read.
	Progress func(done, total int64)
	// DetectInput decides between records and events (Config.Model.Events)
	// by the first record replayed: events when it is a JSON object
	// without a "features" key.
	DetectInput bool
}

// span is one partition's offsets to replay: [start, end).
type span struct {
	partition  int
	start, end int64
}

// Run replays the source through the learners of cfg and returns the
// report. On cancellation it returns the report so far with ctx's error.
func Run(ctx context.Context, src Source, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	if err := src.Conn.Validate(); err != nil {
		return Report{}, err
	}
	if src.Topic == "" {
		return Report{}, errors.New("replay needs a topic")
	}
	if src.Batch <= 0 {
		src.Batch = 1000
	}
	if src.IdleTimeout <= 0 {
		src.IdleTimeout = 10 * time.Second
	}
	spans, err := resolve(ctx, src)
	if err != nil {
		return Report{}, err
	}
	var total, done int64
	for _, s := range spans {
		total += max(s.end-s.start, 0)
	}
	if src.DetectInput {
		if cfg.Model.Events, err = detect(ctx, src, spans); err != nil {
			return Report{}, err
		}
		if err := cfg.Validate(); err != nil {
			return Report{}, err
		}
	}
	dec, err := newDecoder(src, cfg)
	if err != nil {
		return Report{}, err
	}
	var parts []PartitionReport
	for _, sp := range spans {
		st, err := NewStream(cfg, sp.partition)
		if err != nil {
			return Report{}, err
		}
		err = readSpan(ctx, src, sp, st, dec, func(n int64) {
			if src.Progress != nil {
				src.Progress(done+n, total)
			}
		})
		done += max(sp.end-sp.start, 0)
		parts = append(parts, st.Report())
		if err != nil {
			return Assemble(src.Topic, cfg, parts), err
		}
	}
	return Assemble(src.Topic, cfg, parts), nil
}

// resolve turns the bounds into offsets, per partition.
func resolve(ctx context.Context, src Source) ([]span, error) {
	dialer, err := src.Conn.Dialer()
	if err != nil {
		return nil, err
	}
	all, err := feed.Partitions(ctx, dialer, src.Conn.Brokers, src.Topic)
	if err != nil {
		return nil, err
	}
	parts := src.Partitions
	if parts == nil {
		parts = slices.Sorted(slices.Values(all))
	}
	for _, p := range parts {
		if !slices.Contains(all, p) {
			return nil, fmt.Errorf("replay: topic %s has no partition %d (it has %d)", src.Topic, p, len(all))
		}
	}
	transport, err := src.Conn.Transport()
	if err != nil {
		return nil, err
	}
	client := &kafka.Client{Addr: kafka.TCP(src.Conn.Brokers...), Transport: transport}
	spans := make([]span, len(parts))
	for i, p := range parts {
		first, last, _, err := feed.ListOffsetsAt(ctx, client, src.isolation(), src.Topic, p, kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		start, err := feed.ResolveBound(ctx, client, src.Topic, p, src.From, first, first, last)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		end, err := feed.ResolveBound(ctx, client, src.Topic, p, src.To, last, first, last)
		if err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		spans[i] = span{partition: p, start: start, end: max(end, start)}
	}
	return spans, nil
}

// isolation is how the replay reads: "latest" is the last stable offset
// when it reads committed.
func (src *Source) isolation() kafka.IsolationLevel {
	if src.ReadUncommitted {
		return kafka.ReadUncommitted
	}
	return kafka.ReadCommitted
}

// readSpan reads [sp.start, sp.end) of one partition into st, decoding in
// this goroutine while the learners play the previous batch.
func readSpan(ctx context.Context, src Source, sp span, st *Stream, dec *decoder, progress func(int64)) error {
	if sp.end <= sp.start {
		return nil
	}
	transport, err := src.Conn.Transport()
	if err != nil {
		return err
	}
	r, err := fetch.NewReader(fetch.Config{Addr: kafka.TCP(src.Conn.Brokers...), Transport: transport, Topic: src.Topic,
		Partition: sp.partition, ReadUncommitted: src.ReadUncommitted}, sp.start)
	if err != nil {
		return err
	}

	batches := make(chan []Record, 2)
	played := make(chan struct{})
	go func() {
		defer close(played)
		for b := range batches {
			st.Play(b)
		}
	}()
	defer func() { close(batches); <-played }()

	batch := make([]Record, 0, src.Batch)
	send := func() error {
		if len(batch) == 0 {
			return nil
		}
		select {
		case batches <- batch:
		case <-ctx.Done():
			return ctx.Err()
		}
		batch = make([]Record, 0, src.Batch)
		return nil
	}
	idleSince := time.Now()
	for r.Offset() < sp.end {
		fb, err := r.Fetch(ctx, 500*time.Millisecond)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("replay: %s/%d: read at offset %d: %w", src.Topic, sp.partition, r.Offset(), err)
		}
		if len(fb.Records) == 0 && fb.Skipped == 0 {
			if time.Since(idleSince) > src.IdleTimeout {
				return fmt.Errorf("replay: %s/%d: nothing at offsets %d..%d for %v (compacted or truncated?)",
					src.Topic, sp.partition, r.Offset(), sp.end-1, src.IdleTimeout)
			}
			continue
		}
		idleSince = time.Now()
		for _, m := range fb.Records {
			if m.Offset >= sp.end {
				break
			}
			// decode copies what it keeps: the record's bytes are the
			// reader's until the next fetch.
			batch = append(batch, dec.decode(kafka.Message{Topic: src.Topic, Partition: sp.partition, Offset: m.Offset, Key: m.Key, Value: m.Value, Headers: m.Headers, Time: m.Time}))
			if len(batch) == cap(batch) {
				if err := send(); err != nil {
					return err
				}
			}
		}
		progress(min(r.Offset(), sp.end) - sp.start)
	}
	if err := send(); err != nil {
		return err
	}
	progress(sp.end - sp.start)
	return nil
}

// decoder turns messages into records as the models will read them.
type decoder struct {
	src    Source
	events *codec.EventDecoder  // event models
	ev     codec.Event          // reused by each decode
	feat   *features.Featurizer // unscaled events: refuses empty ones up front
	multi  bool
}

func newDecoder(src Source, cfg Config) (*decoder, error) {
	d := &decoder{src: src, multi: len(cfg.Model.Classes) > 0}
	if !cfg.Model.Events {
		return d, nil
	}
	var err error
	if d.events, err = codec.NewEventDecoder(cfg.Model.Event); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if cfg.Model.Features.Scale == features.ScaleNone {
		if d.feat, err = features.New(cfg.Model.Features); err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
	}
	return d, nil
}

// decode turns a message into a record, or into a bad one naming why it
// cannot be played. Everything that does not depend on a model's state is
// checked here, once for all learners.
func (d *decoder) decode(m kafka.Message) Record {
	rec := Record{Offset: m.Offset, Segment: -1}
	var err error
	var label string
	if d.events != nil {
		if err = d.events.Decode(m.Value, &d.ev); err == nil && d.feat != nil {
			_, err = d.feat.Vector(&d.ev)
		}
		// The message's bytes are the reader's until its next fetch, and
		// the record is played later.
		label, rec.Value = string(d.ev.Label()), bytes.Clone(m.Value)
	} else {
		var ex codec.Example
		ex, err = codec.Decode(m.Value, d.src.Limits)
		label, rec.X = ex.Label, ex.X
	}
	if err == nil {
		if d.multi {
			rec.Label = label
		} else {
			var keep bool
			rec.Y, keep, err = d.src.Labels.Map(label)
			if !keep {
				rec.Y = 0
			}
		}
	}
	if err != nil {
		bad := Record{Offset: m.Offset, Bad: "internal"}
		var ce *codec.Error
		if errors.As(err, &ce) {
			bad.Bad = string(ce.Reason)
		}
		return bad
	}
	for _, h := range m.Headers {
		if h.Key == synth.SegmentHeader {
			if s, err := strconv.Atoi(string(h.Value)); err == nil && s >= 0 {
				rec.Segment = s
			}
		}
	}
	return rec
}

// detect reads the first record to replay and says whether it is an event.
func detect(ctx context.Context, src Source, spans []span) (bool, error) {
	for _, sp := range spans {
		if sp.end <= sp.start {
			continue
		}
		dialer, err := src.Conn.Dialer()
		if err != nil {
			return false, err
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: src.Conn.Brokers, Topic: src.Topic, Partition: sp.partition,
			Dialer: dialer, MaxWait: 500 * time.Millisecond})
		defer r.Close()
		if err := r.SetOffset(sp.start); err != nil {
			return false, fmt.Errorf("replay: %s/%d: seek to %d: %w", src.Topic, sp.partition, sp.start, err)
		}
		fctx, cancel := context.WithTimeout(ctx, src.IdleTimeout)
		m, err := r.FetchMessage(fctx)
		cancel()
		if err != nil {
			return false, fmt.Errorf("replay: %s/%d: reading the first record: %w", src.Topic, sp.partition, err)
		}
		_, err = codec.Decode(m.Value, src.Limits)
		var ce *codec.Error
		return errors.As(err, &ce) && ce.Reason == codec.ReasonMissingFeatures, nil
	}
	return false, nil
}
