package replay

import (
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
	// From and To bound the replay: "earliest", "latest", an offset, or an
	// RFC 3339 time (the first record at or after it). From is inclusive,
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
		first, last, _, err := list(ctx, client, src.Topic, p, kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
		if err != nil {
			return nil, err
		}
		bound := func(spec string, dflt int64) (int64, error) {
			switch spec {
			case "":
				return dflt, nil
			case "earliest":
				return first, nil
			case "latest":
				return last, nil
			}
			if off, err := strconv.ParseInt(spec, 10, 64); err == nil && off >= 0 {
				return min(max(off, first), last), nil
			}
			at, err := time.Parse(time.RFC3339, spec)
			if err != nil {
				return 0, fmt.Errorf("replay: bound %q: want earliest, latest, an offset or an RFC 3339 time", spec)
			}
			_, _, off, err := list(ctx, client, src.Topic, p, kafka.TimeOffsetOf(p, at))
			if err != nil {
				return 0, err
			}
			if off < 0 { // no record at or after the time
				return last, nil
			}
			return off, nil
		}
		start, err := bound(src.From, first)
		if err != nil {
			return nil, err
		}
		end, err := bound(src.To, last)
		if err != nil {
			return nil, err
		}
		spans[i] = span{partition: p, start: start, end: max(end, start)}
	}
	return spans, nil
}

// list asks for a partition's offsets: first and last when requested, and
// off, the offset a time request found (−1 if none).
func list(ctx context.Context, c *kafka.Client, topic string, p int, reqs ...kafka.OffsetRequest) (first, last, off int64, err error) {
	resp, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("replay: offsets of %s/%d: %w", topic, p, err)
	}
	off = -1
	for _, po := range resp.Topics[topic] {
		if po.Partition != p {
			continue
		}
		if po.Error != nil {
			return 0, 0, 0, fmt.Errorf("replay: offsets of %s/%d: %w", topic, p, po.Error)
		}
		for o := range po.Offsets {
			off = o
		}
		return po.FirstOffset, po.LastOffset, off, nil
	}
	return 0, 0, 0, fmt.Errorf("replay: no offsets for %s/%d in the broker's answer", topic, p)
}

// readSpan reads [sp.start, sp.end) of one partition into st, decoding in
// this goroutine while the learners play the previous batch.
func readSpan(ctx context.Context, src Source, sp span, st *Stream, dec *decoder, progress func(int64)) error {
	if sp.end <= sp.start {
		return nil
	}
	dialer, err := src.Conn.Dialer()
	if err != nil {
		return err
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: src.Conn.Brokers, Topic: src.Topic, Partition: sp.partition,
		Dialer: dialer, MaxWait: 500 * time.Millisecond, MaxBytes: 16 << 20})
	defer r.Close()
	if err := r.SetOffset(sp.start); err != nil {
		return fmt.Errorf("replay: %s/%d: seek to %d: %w", src.Topic, sp.partition, sp.start, err)
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
	next := sp.start
	for next < sp.end {
		fctx, cancel := context.WithTimeout(ctx, src.IdleTimeout)
		m, err := r.FetchMessage(fctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("replay: %s/%d: nothing at offsets %d..%d for %v (compacted or truncated?)",
					src.Topic, sp.partition, next, sp.end-1, src.IdleTimeout)
			}
			return fmt.Errorf("replay: %s/%d: read at offset %d: %w", src.Topic, sp.partition, next, err)
		}
		if m.Offset >= sp.end {
			break
		}
		next = m.Offset + 1
		batch = append(batch, dec.decode(m))
		if len(batch) == cap(batch) {
			if err := send(); err != nil {
				return err
			}
		}
		if (next-sp.start)%1024 == 0 {
			progress(next - sp.start)
		}
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
		label, rec.Value = string(d.ev.Label()), m.Value
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
