package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/codec/schemareg"
	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
	"github.com/streamlearner/streamlearner/internal/pending"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

// Source says which records to replay.
type Source struct {
	Conn  kafkaconn.Config
	Topic string // required
	// Partitions to replay; nil means all of the topic's. Each is its own
	// stream, replayed one after the other.
	Partitions []int
	// From and To bound the replay (fetch.ResolveBound): "earliest",
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
	// without a "features" key. With delayed labels, a message that could
	// be either (an object of a "label" alone) is passed over and the next
	// one decides.
	DetectInput bool
	// Registry fetches the schemas of records in the wire format
	// (Config.Model.Format Avro, Protobuf or JSON Schema; DetectInput
	// also recognises them when it is set). A registry that cannot answer
	// is waited for, record by record, as the service waits.
	Registry *schemareg.Client
	// LabelTopic, if set, is where the labels of Topic's records come
	// from, as label messages (a key and a label, no feature). It must be
	// co-partitioned with Topic: as many partitions, and each label keyed
	// as its record, so that partition p of LabelTopic holds the labels of
	// partition p's records; Run checks the partition counts before
	// reading. Per partition, both topics are read up to their end at the
	// start and played as one sequence, merged by record timestamp
	// (milliseconds), then Topic before LabelTopic, then offset; each
	// topic's records keep their order. It implies delayed labels
	// (Config.Model.Delayed; pending's defaults when nil). From and To
	// bound both topics, so they must be earliest, latest or a time.
	LabelTopic string

	// transport carries every request of one Run or DetectKind, which
	// closes its connections when it returns (connect).
	transport *kafka.Transport
}

// connect gives src the one transport its requests share, and returns
// the function that closes its connections: a transport per partition
// read held a connection pool each (hundreds for a topic of hundreds of
// partitions), open after the replay until their idle timeout.
func (src *Source) connect() (func(), error) {
	tr, err := src.Conn.Transport()
	if err != nil {
		return nil, err
	}
	src.transport = tr
	return tr.CloseIdleConnections, nil
}

// span is one partition's offsets to replay: [start, end) of the topic and
// [lstart, lend) of the label topic.
type span struct {
	partition    int
	start, end   int64
	lstart, lend int64
}

// size is the number of offsets the span covers, in both topics.
func (s span) size() int64 { return max(s.end-s.start, 0) + max(s.lend-s.lstart, 0) }

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
	if src.LabelTopic != "" {
		if src.LabelTopic == src.Topic {
			return Report{}, fmt.Errorf("replay: the label topic is the topic %s itself (labels in the same topic need no label topic)", src.Topic)
		}
		for _, b := range []string{src.From, src.To} {
			if _, err := strconv.ParseInt(b, 10, 64); err == nil {
				return Report{}, fmt.Errorf("replay: bound %q is a position in one topic; with a label topic, bound both with earliest, latest or a time", b)
			}
		}
		if cfg.Model.Delayed == nil {
			cfg.Model.Delayed = &pending.Config{}
		}
		if err := cfg.Validate(); err != nil {
			return Report{}, err
		}
	}
	if src.Batch <= 0 {
		src.Batch = 1000
	}
	if src.IdleTimeout <= 0 {
		src.IdleTimeout = 10 * time.Second
	}
	closeConns, err := src.connect()
	if err != nil {
		return Report{}, err
	}
	defer closeConns()
	spans, err := resolve(ctx, src)
	if err != nil {
		return Report{}, err
	}
	var total, done int64
	for _, s := range spans {
		total += s.size()
	}
	if src.DetectInput {
		k, _, err := detectKind(ctx, src, spans, cfg.Model.Delayed != nil)
		if err != nil {
			return Report{}, err
		}
		cfg.Model.Events = k != KindRecords
		if k == KindFramed {
			cfg.Model.Format, cfg.Model.Schemas = codec.FormatRegistry, src.Registry
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
		done += sp.size()
		if err == nil {
			st.Flush()
		}
		parts = append(parts, st.Report())
		if err != nil {
			return assemble(src, cfg, parts), err
		}
	}
	return assemble(src, cfg, parts), nil
}

func assemble(src Source, cfg Config, parts []PartitionReport) Report {
	rep := Assemble(src.Topic, cfg, parts)
	rep.LabelTopic = src.LabelTopic
	return rep
}

// resolve turns the bounds into offsets, per partition.
func resolve(ctx context.Context, src Source) ([]span, error) {
	dialer, err := src.Conn.Dialer()
	if err != nil {
		return nil, err
	}
	all, err := fetch.Partitions(ctx, dialer, src.Conn.Brokers, src.Topic)
	if err != nil {
		return nil, err
	}
	var labelParts []int
	if src.LabelTopic != "" {
		if labelParts, err = fetch.Partitions(ctx, dialer, src.Conn.Brokers, src.LabelTopic); err != nil {
			return nil, err
		}
		if len(labelParts) != len(all) {
			return nil, fmt.Errorf("replay: topic %s has %d partitions and label topic %s has %d: they must be co-partitioned (as many partitions, each label keyed as its record)",
				src.Topic, len(all), src.LabelTopic, len(labelParts))
		}
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
	client := &kafka.Client{Addr: kafka.TCP(src.Conn.Brokers...), Transport: src.transport}
	bounds := func(topic string, p int) (start, end int64, err error) {
		first, last, _, err := fetch.ListOffsetsAt(ctx, client, src.isolation(), topic, p, kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
		if err != nil {
			return 0, 0, fmt.Errorf("replay: %w", err)
		}
		if start, err = fetch.ResolveBound(ctx, client, topic, p, src.From, first, first, last); err != nil {
			return 0, 0, fmt.Errorf("replay: %w", err)
		}
		if end, err = fetch.ResolveBound(ctx, client, topic, p, src.To, last, first, last); err != nil {
			return 0, 0, fmt.Errorf("replay: %w", err)
		}
		return start, max(end, start), nil
	}
	spans := make([]span, len(parts))
	for i, p := range parts {
		spans[i].partition = p
		if spans[i].start, spans[i].end, err = bounds(src.Topic, p); err != nil {
			return nil, err
		}
		if src.LabelTopic != "" {
			if spans[i].lstart, spans[i].lend, err = bounds(src.LabelTopic, p); err != nil {
				return nil, err
			}
		}
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

// cursor reads [offset, end) of one topic partition in offset order.
type cursor struct {
	src        *Source
	topic      string
	partition  int
	start, end int64
	r          *fetch.Reader
	recs       []fetch.Record // the last fetch's, from next on
	next       int
	done       bool
}

func newCursor(src *Source, topic string, partition int, start, end int64) (*cursor, error) {
	c := &cursor{src: src, topic: topic, partition: partition, start: start, end: end, done: end <= start}
	if c.done {
		return c, nil
	}
	var err error
	c.r, err = fetch.NewReader(fetch.Config{Addr: kafka.TCP(src.Conn.Brokers...), Transport: src.transport, Topic: topic,
		Partition: partition, ReadUncommitted: src.ReadUncommitted, ClientID: src.Conn.ClientID}, start)
	return c, err
}

// peek returns the next record, fetching when the last fetch's are used
// up, or nil at the end. The record's bytes are the reader's until the
// cursor fetches again: take it before peeking again.
func (c *cursor) peek(ctx context.Context) (*fetch.Record, error) {
	idleSince := time.Now()
	for !c.done && c.next >= len(c.recs) {
		if c.r.Offset() >= c.end {
			c.done = true
			break
		}
		fb, err := c.r.Fetch(ctx, 500*time.Millisecond)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("replay: %s/%d: read at offset %d: %w", c.topic, c.partition, c.r.Offset(), err)
		}
		if len(fb.Records) == 0 && fb.Skipped == 0 {
			if time.Since(idleSince) > c.src.IdleTimeout {
				return nil, fmt.Errorf("replay: %s/%d: nothing at offsets %d..%d for %v (compacted or truncated?)",
					c.topic, c.partition, c.r.Offset(), c.end-1, c.src.IdleTimeout)
			}
			continue
		}
		idleSince = time.Now()
		c.recs, c.next = fb.Records, 0
	}
	if c.done {
		return nil, nil
	}
	if m := &c.recs[c.next]; m.Offset < c.end {
		return m, nil
	}
	c.done, c.recs = true, nil
	return nil, nil
}

func (c *cursor) take() { c.next++ }

// read is how many of the cursor's offsets have been fetched.
func (c *cursor) read() int64 {
	if c.r == nil {
		return 0
	}
	return min(c.r.Offset(), c.end) - c.start
}

// readSpan reads one partition into st, decoding in this goroutine while
// the learners play the previous batch: the topic's records, merged with
// the label topic's when there is one (see Source.LabelTopic).
func readSpan(ctx context.Context, src Source, sp span, st *Stream, dec *decoder, progress func(int64)) error {
	in, err := newCursor(&src, src.Topic, sp.partition, sp.start, sp.end)
	if err != nil {
		return err
	}
	labels := &cursor{done: true}
	if src.LabelTopic != "" {
		if labels, err = newCursor(&src, src.LabelTopic, sp.partition, sp.lstart, sp.lend); err != nil {
			return err
		}
	}
	if in.done && labels.done {
		return nil
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
		progress(in.read() + labels.read())
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
	for {
		a, err := in.peek(ctx)
		if err != nil {
			return err
		}
		b, err := labels.peek(ctx)
		if err != nil {
			return err
		}
		// The merge: by timestamp, the topic before the label topic when
		// the times tie, each topic in offset order.
		var rec Record
		switch {
		case a == nil && b == nil:
			return send()
		case b == nil || a != nil && a.Time.UnixMilli() <= b.Time.UnixMilli():
			if err := src.ensure(ctx, a.Value); err != nil {
				return err
			}
			// decode copies what it keeps: the record's bytes are the
			// reader's until the next fetch.
			rec = dec.decode(kafka.Message{Topic: src.Topic, Partition: sp.partition, Offset: a.Offset, Key: a.Key, Value: a.Value, Headers: a.Headers, Time: a.Time})
			in.take()
		default:
			if err := src.ensure(ctx, b.Value); err != nil {
				return err
			}
			rec = dec.decode(kafka.Message{Topic: src.LabelTopic, Partition: sp.partition, Offset: b.Offset, Key: b.Key, Value: b.Value, Headers: b.Headers, Time: b.Time})
			rec.FromLabels = true
			labels.take()
		}
		batch = append(batch, rec)
		if len(batch) == cap(batch) {
			if err := send(); err != nil {
				return err
			}
		}
	}
}

// decoder turns messages into records as the models will read them.
type decoder struct {
	src    Source
	lim    codec.Limits
	events interface { // event models: JSON or wire format
		Decode(b []byte, ev *codec.Event) error
	}
	ev      codec.Event          // reused by each decode
	feat    *features.Featurizer // unscaled events: refuses empty ones up front
	multi   bool
	delayed bool // delayed labels: label messages, and every record played by StepAt
}

func newDecoder(src Source, cfg Config) (*decoder, error) {
	d := &decoder{src: src, lim: src.Limits, multi: len(cfg.Model.Classes) > 0, delayed: cfg.Model.Delayed != nil}
	d.lim.LabelOnly = d.delayed
	if !cfg.Model.Events {
		return d, nil
	}
	var err error
	if cfg.Model.Format.Framed() {
		d.events, err = codec.NewFramedDecoder(cfg.Model.Event, cfg.Model.Format, cfg.Model.Schemas)
	} else {
		d.events, err = codec.NewEventDecoder(cfg.Model.Event)
	}
	if err != nil {
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
	labelOnly := false
	if d.events != nil {
		if err = d.events.Decode(m.Value, &d.ev); err == nil {
			// A label message (delayed labels) has no field to featurize.
			labelOnly = d.delayed && len(d.ev.Fields) == 0
			if d.feat != nil && !labelOnly {
				_, err = d.feat.Vector(&d.ev)
			}
		}
		// The message's bytes are the reader's until its next fetch, and
		// the record is played later.
		label, rec.Value = string(d.ev.Label()), bytes.Clone(m.Value)
	} else {
		var ex codec.Example
		ex, err = codec.Decode(m.Value, d.lim)
		label, rec.X, labelOnly = ex.Label, ex.X, ex.LabelOnly
		if d.delayed {
			// Each model reads the message itself (StepAt), as the
			// service's does: a label message is only a label to it.
			rec.X, rec.Value = sparse.Vector{}, bytes.Clone(m.Value)
		}
	}
	if err == nil && labelOnly && label == "" {
		err = &codec.Error{Reason: codec.ReasonBadLabel, Detail: "a message with neither features nor a label"}
	}
	if err == nil {
		if d.multi {
			rec.Label = label
		} else {
			var keep bool
			rec.Y, keep, err = d.src.Labels.Map(label)
			if err == nil && !keep {
				// In neither list: not played, as the model refuses it.
				err = d.src.Labels.Unlisted(label)
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
	if d.delayed {
		rec.Key, rec.Time = bytes.Clone(m.Key), m.Time.UnixMilli()
	}
	for _, h := range m.Headers {
		if h.Key == SegmentHeader {
			if s, err := strconv.Atoi(string(h.Value)); err == nil && s >= 0 {
				rec.Segment = s
			}
		}
	}
	return rec
}

// ensure fetches the schema of a record in the wire format, waiting for
// a registry that cannot answer (see schemareg.Client.Ensure).
func (src *Source) ensure(ctx context.Context, v []byte) error {
	if src.Registry == nil {
		return nil
	}
	return src.Registry.Ensure(ctx, v, func(err error, attempt int) {
		if attempt == 1 {
			fmt.Fprintf(os.Stderr, "replay: schema registry: %v; waiting for it\n", err)
		}
	})
}

// detectReads bounds how many messages detect passes over as undecided.
const detectReads = 1000

// detect reads the first records to replay and says whether they are
// events: the first is, unless with delayed labels it could be either a
// record's or an event's label message ({"label": …} alone), when the
// next one decides; none deciding in detectReads messages means records.
// decided is false when no message decided (an empty topic, or only
// ambiguous label messages).
func detect(ctx context.Context, src Source, spans []span, delayed bool) (events, decided bool, err error) {
	k, decided, err := detectKind(ctx, src, spans, delayed)
	return k != KindRecords, decided, err
}

// Kind is what a topic holds.
type Kind int

// The kinds of topics: indexed records, JSON events, or events in the
// wire format (recognised only when a registry is configured).
const (
	KindRecords Kind = iota
	KindEvents
	KindFramed
)

func detectKind(ctx context.Context, src Source, spans []span, delayed bool) (kind Kind, decided bool, err error) {
	seen := 0
	for _, sp := range spans {
		c, err := newCursor(&src, src.Topic, sp.partition, sp.start, sp.end)
		if err != nil {
			return KindRecords, false, err
		}
		fctx, cancel := context.WithTimeout(ctx, src.IdleTimeout)
		defer cancel()
		for ; seen < detectReads; seen++ {
			m, err := c.peek(fctx)
			if err != nil {
				return KindRecords, false, fmt.Errorf("%s/%d: reading the first record: %w", src.Topic, sp.partition, err)
			}
			if m == nil {
				break
			}
			c.take()
			if src.Registry != nil && len(m.Value) >= 5 && m.Value[0] == 0 {
				return KindFramed, true, nil
			}
			_, err = codec.Decode(m.Value, src.Limits)
			var ce *codec.Error
			events := errors.As(err, &ce) && ce.Reason == codec.ReasonMissingFeatures
			if !delayed || !events || !labelAlone(m.Value) {
				if events {
					return KindEvents, true, nil
				}
				return KindRecords, true, nil
			}
		}
	}
	return KindRecords, false, nil
}

// DetectEvents says whether the topic of src holds named-field events or
// indexed records, by its first records from src.From (default earliest)
// as Run's DetectInput decides; decided is false when the topic holds
// nothing that decides. For run --input auto, which must fix the kind
// before it serves a partition.
func DetectEvents(ctx context.Context, src Source, delayed bool) (events, decided bool, err error) {
	k, decided, err := DetectKind(ctx, src, delayed)
	return k != KindRecords, decided, err
}

// DetectKind is DetectEvents, telling events in the wire format apart
// (when src.Registry is set).
func DetectKind(ctx context.Context, src Source, delayed bool) (Kind, bool, error) {
	if src.From == "" {
		src.From = "earliest"
	}
	if src.To == "" {
		src.To = "latest"
	}
	if src.IdleTimeout <= 0 {
		src.IdleTimeout = 10 * time.Second
	}
	closeConns, err := src.connect()
	if err != nil {
		return KindRecords, false, err
	}
	defer closeConns()
	spans, err := resolve(ctx, src)
	if err != nil {
		return KindRecords, false, err
	}
	return detectKind(ctx, src, spans, delayed)
}

// labelAlone says whether a message is a JSON object of one "label" key.
func labelAlone(b []byte) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil || len(obj) != 1 {
		return false
	}
	_, ok := obj["label"]
	return ok
}
