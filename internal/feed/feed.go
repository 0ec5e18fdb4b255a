// Package feed loads example files into a topic as JSON records — how
// users and tests feed streams to the service — and follows a prediction
// topic back out (Tail).
package feed

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strconv"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
)

// ProduceConfig says what to load where.
type ProduceConfig struct {
	Conn  kafkaconn.Config
	Topic string // required
	// Data is a LIBSVM or JSON lines file (records, or events: JSON objects
	// of named fields, sent as they are), or a CSV file with a header row
	// (its name ends in .csv or .csv.gz), each row sent as an event whose
	// fields are the header's names; gzip allowed; required.
	Data string
	// Rate limits records per second; 0 sends as fast as the broker takes them.
	Rate float64
	// Key chooses record keys: "round-robin" (default: no key, records
	// spread evenly over partitions), "line" (the line number, hashed to a
	// partition) or the name of a top-level field of JSON input records
	// (hashed; records without it get no key).
	Key string
	// Limit stops after this many records; 0 loads the whole file.
	Limit int
	// AutoCreateTopic creates the topic if missing (with the broker's
	// default partition count). Default false.
	AutoCreateTopic bool
	// Progress, if set, is called now and then with the records sent.
	Progress func(sent int64)
	// Encode, if set, turns each event (a JSON object) into the bytes
	// sent, e.g. a record in the wire format; an error stops the load,
	// naming the line. Indexed records cannot be encoded.
	Encode func(event []byte) ([]byte, error)
}

// Produce reads cfg.Data and writes one JSON record per example, in file
// order, waiting for every batch to be acknowledged by all in-sync
// replicas. Labels are kept as they are in the file (multi-class labels
// included); the service maps them. It returns the number of records sent.
func Produce(ctx context.Context, cfg ProduceConfig) (int64, error) {
	if err := cfg.Conn.Validate(); err != nil {
		return 0, err
	}
	if cfg.Topic == "" || cfg.Data == "" {
		return 0, errors.New("produce needs a topic and a data file")
	}
	if cfg.Key == "" {
		cfg.Key = "round-robin"
	}
	f, err := os.Open(cfg.Data)
	if err != nil {
		return 0, fmt.Errorf("produce: %w", err)
	}
	defer f.Close()
	r, done, err := gunzip(f)
	if err != nil {
		return 0, err
	}
	defer done()
	var balancer kafka.Balancer = &kafka.RoundRobin{}
	if cfg.Key != "round-robin" {
		balancer = &kafka.Hash{}
	}
	key := recordKey(cfg.Key)
	msgs := lineMessages(r, cfg.Data, key)
	if dataset.IsCSV(cfg.Data) {
		msgs = csvMessages(r, cfg.Data, key)
	}
	return ProduceExamples(ctx, WriterConfig{
		Conn: cfg.Conn, Topic: cfg.Topic, Rate: cfg.Rate, Balancer: balancer,
		AutoCreateTopic: cfg.AutoCreateTopic, Progress: cfg.Progress, Encode: cfg.Encode,
	}, limited(msgs, cfg.Limit))
}

// gunzip reads f, decompressed if it starts with gzip's magic number;
// done closes the decompressor.
func gunzip(f io.Reader) (r io.Reader, done func(), err error) {
	br := bufio.NewReaderSize(f, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("produce: gzip: %w", err)
		}
		return zr, func() { zr.Close() }, nil
	}
	return br, func() {}, nil
}

// recordKey is the key of the record on a line, by ProduceConfig.Key.
func recordKey(name string) func(line int, rec []byte) []byte {
	return func(line int, rec []byte) []byte {
		switch name {
		case "round-robin":
			return nil
		case "line":
			return strconv.AppendInt(nil, int64(line), 10)
		}
		return jsonField(rec, name)
	}
}

// limited stops msgs after limit messages; a limit ≤ 0 lets all through.
func limited(msgs iter.Seq2[Message, error], limit int) iter.Seq2[Message, error] {
	if limit <= 0 {
		return msgs
	}
	return func(yield func(Message, error) bool) {
		n := 0
		for m, err := range msgs {
			if !yield(m, err) || err != nil {
				return
			}
			if n++; n >= limit {
				return
			}
		}
	}
}

// csvMessages is the rows of a CSV file, read from r, as events.
func csvMessages(r io.Reader, data string, key func(int, []byte) []byte) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		n := 0
		for row, err := range dataset.CSVEvents(r) {
			if err != nil {
				yield(Message{}, fmt.Errorf("%s: %w", data, err))
				return
			}
			n++
			if !yield(Message{Raw: row, Key: key(n+1, row)}, nil) {
				return
			}
		}
	}
}

// lineMessages is the records of a LIBSVM or JSON lines file, read from
// r, skipping blank lines and comments.
func lineMessages(r io.Reader, data string, key func(int, []byte) []byte) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 1<<16), 16<<20)
		lr := lineReader{lim: codec.Limits{AllowEmpty: true, MaxBytes: 16 << 20}}
		n := 0
		for line := 1; sc.Scan(); line++ {
			b := bytes.TrimSpace(sc.Bytes())
			if len(b) == 0 || b[0] == '#' {
				continue
			}
			msg, err := lr.message(b, n == 0)
			if err != nil {
				yield(Message{}, fmt.Errorf("%s line %d: %w", data, line, err))
				return
			}
			msg.Key = key(line, b)
			if !yield(msg, nil) {
				return
			}
			n++
		}
		if err := sc.Err(); err != nil {
			yield(Message{}, fmt.Errorf("read %s: %w", data, err))
		}
	}
}

// lineReader decodes the lines of a file of records or of events.
type lineReader struct {
	lim    codec.Limits
	events bool // the file holds events, sent as they are
	dec    *codec.EventDecoder
	ev     codec.Event
}

// message decodes line b; first says it is the file's first record.
func (lr *lineReader) message(b []byte, first bool) (Message, error) {
	var msg Message
	ex, err := codec.Decode(b, lr.lim)
	var ce *codec.Error
	if first && errors.As(err, &ce) && ce.Reason == codec.ReasonMissingFeatures {
		// The first record is an event: the file is sent as it is,
		// each line checked to be one JSON object.
		lr.events = true
		lr.dec, _ = codec.NewEventDecoder(codec.EventConfig{Limits: lr.lim})
	}
	if lr.events {
		err = lr.dec.Decode(b, &lr.ev)
		if errors.As(err, &ce) && (ce.Reason == codec.ReasonBadLabel || ce.Reason == codec.ReasonEmptyFeatures) {
			err = nil // the consumer's label field and schema decide
		}
		msg.Raw = bytes.Clone(b)
	}
	if err != nil {
		return Message{}, err
	}
	msg.Example = ex
	return msg, nil
}

// WriterConfig says where and how ProduceExamples writes.
type WriterConfig struct {
	Conn  kafkaconn.Config
	Topic string // required
	// Rate limits records per second; 0 sends as fast as the broker takes them.
	Rate float64
	// Balancer chooses each record's partition; nil spreads records
	// round-robin. Use OnePartition to keep a stream in order.
	Balancer kafka.Balancer
	// AutoCreateTopic creates the topic if missing (with the broker's
	// default partition count). Default false.
	AutoCreateTopic bool
	// MaxBatchBytes bounds one produce request's record batch. Default
	// 1 MiB, just under Kafka's default message.max.bytes (1,048,588):
	// brokers refuse a larger batch whole, which wide records (a few KB
	// each, dense data) reach long before BatchSize records.
	MaxBatchBytes int
	// Progress, if set, is called now and then with the records sent.
	Progress func(sent int64)
	// Encode, if set, turns each event (a JSON object) into the bytes
	// sent, e.g. a record in the wire format; an error stops the load,
	// naming the line. Indexed records cannot be encoded.
	Encode func(event []byte) ([]byte, error)
}

// Message is one record to produce: the example, written as JSON with
// codec.AppendJSON, or Raw, sent as it is (an event); and optionally a key
// and headers.
type Message struct {
	Example codec.Example
	Raw     []byte
	Key     []byte
	Headers []kafka.Header
}

// OnePartition sends every record to partition 0, so that consumers read
// the stream in the order it was produced: what drift evaluation needs.
var OnePartition kafka.Balancer = kafka.BalancerFunc(func(kafka.Message, ...int) int { return 0 })

// ProduceExamples writes the messages of msgs, in order, in batches, each
// acknowledged by all in-sync replicas before the next is sent. It stops at
// the first error msgs yields, or when ctx is cancelled, and returns the
// number of records acknowledged.
func ProduceExamples(ctx context.Context, cfg WriterConfig, msgs iter.Seq2[Message, error]) (int64, error) {
	if err := cfg.Conn.Validate(); err != nil {
		return 0, err
	}
	if cfg.Topic == "" {
		return 0, errors.New("produce needs a topic")
	}
	transport, err := cfg.Conn.Transport()
	if err != nil {
		return 0, err
	}
	// After the writer's Close (deferred below): its connections would
	// otherwise stay open until their idle timeout.
	defer transport.CloseIdleConnections()
	w := newWriter(cfg, transport)
	defer w.Close()
	p := &producer{ctx: ctx, cfg: cfg, w: w, batch: make([]kafka.Message, 0, 1000), start: time.Now(), batchSize: 1000}
	if cfg.Rate > 0 {
		p.batchSize = max(1, min(1000, int(cfg.Rate/10)))
	}
	for m, err := range msgs {
		if err != nil {
			return p.sent, err
		}
		if err := p.add(m); err != nil {
			return p.sent, err
		}
	}
	err = p.flush()
	return p.sent, err
}

// newWriter is the writer of cfg's records over transport.
func newWriter(cfg WriterConfig, transport *kafka.Transport) *kafka.Writer {
	balancer := cfg.Balancer
	if balancer == nil {
		balancer = &kafka.RoundRobin{}
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = 1 << 20
	}
	return &kafka.Writer{
		Addr: kafka.TCP(cfg.Conn.Brokers...), Topic: cfg.Topic, Balancer: balancer,
		RequiredAcks: kafka.RequireAll, BatchTimeout: 5 * time.Millisecond, BatchSize: 1000,
		BatchBytes: int64(cfg.MaxBatchBytes), AllowAutoTopicCreation: cfg.AutoCreateTopic, Transport: transport,
	}
}

// producer batches the records of ProduceExamples.
type producer struct {
	ctx       context.Context
	cfg       WriterConfig
	w         *kafka.Writer
	batch     []kafka.Message
	batchSize int
	sent      int64
	start     time.Time
}

// add queues m, encoded, and flushes a full batch.
func (p *producer) add(m Message) error {
	value := m.Raw
	if p.cfg.Encode != nil {
		if value == nil {
			return fmt.Errorf("record %d: indexed records (LIBSVM, {\"label\",\"features\"}) cannot be sent in a schema format; those carry named-field events", p.sent+int64(len(p.batch))+1)
		}
		var err error
		if value, err = p.cfg.Encode(value); err != nil {
			return fmt.Errorf("record %d: %w", p.sent+int64(len(p.batch))+1, err)
		}
	}
	if value == nil {
		value = codec.AppendJSON(nil, m.Example)
	}
	p.batch = append(p.batch, kafka.Message{Key: m.Key, Value: value, Headers: m.Headers})
	if len(p.batch) >= p.batchSize {
		return p.flush()
	}
	return nil
}

// flush writes the batch, then paces: the n-th record goes out no earlier
// than n/rate.
func (p *producer) flush() error {
	if len(p.batch) == 0 {
		return nil
	}
	if err := p.w.WriteMessages(p.ctx, p.batch...); err != nil {
		err = summarize(err)
		if errors.Is(err, kafka.UnknownTopicOrPartition) && !p.cfg.AutoCreateTopic {
			return fmt.Errorf("produce to %s: the topic does not exist: create it, or pass --auto-create: %w", p.cfg.Topic, err)
		}
		return fmt.Errorf("produce to %s: %w", p.cfg.Topic, err)
	}
	p.sent += int64(len(p.batch))
	p.batch = p.batch[:0]
	if p.cfg.Progress != nil {
		p.cfg.Progress(p.sent)
	}
	if p.cfg.Rate > 0 {
		if ahead := time.Duration(float64(p.sent)/p.cfg.Rate*float64(time.Second)) - time.Since(p.start); ahead > 0 {
			select {
			case <-p.ctx.Done():
				return p.ctx.Err()
			case <-time.After(ahead):
			}
		}
	}
	return nil
}

// summarize shortens kafka-go's per-message errors, which repeat one
// cause for each of up to a thousand records, to a count and the first.
func summarize(err error) error {
	var we kafka.WriteErrors
	if !errors.As(err, &we) {
		return err
	}
	for _, e := range we {
		if e != nil {
			return fmt.Errorf("%d of %d records refused, the first: %w", we.Count(), len(we), e)
		}
	}
	return err
}

// jsonField returns the raw text of a top-level field of a JSON record
// (strings without their quotes), or nil.
func jsonField(rec []byte, name string) []byte {
	if len(rec) == 0 || rec[0] != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(rec, &m) != nil {
		return nil
	}
	v, ok := m[name]
	if !ok {
		return nil
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return []byte(s)
	}
	return v
}
