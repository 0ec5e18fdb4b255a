package checkpoint

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

// TopicStore keeps snapshots in a compacted topic, for groups spread over
// machines. A snapshot is written as chunks (keys "<name>#<i>") followed by
// a manifest (key "<name>": chunk count and length), all to one partition,
// so snapshots larger than the topic's message limit still fit, and a
// reader that sees the manifest has seen every chunk. Deleting writes
// tombstones; compaction then drops the old records.
//
// Loads and lists read the topic from where the store last stopped to its
// end, keeping the latest manifest of each snapshot in memory and, of each
// chunk, only where it is: the topic holds the snapshots of every
// partition of the group (Protocol keeps two per partition), which a
// member holding their bytes would pay for in memory. A load reads its
// chunks again from there.
type TopicStore struct {
	Brokers []string
	Topic   string
	// Transport carries every request of the store (writes, reads, the
	// topic's creation), and so its TLS and SASL settings. Default one of
	// the store's own, whose connections Close closes.
	Transport  *kafka.Transport
	ChunkBytes int // default 512 KiB, below Kafka's 1 MiB default message limit

	ownMu sync.Mutex
	own   *kafka.Transport // the default Transport, made on first use

	mu     sync.Mutex
	writer *kafka.Writer
	index  map[string][]byte  // manifest key → latest value
	chunks map[string]chunkAt // chunk key → where its latest value is
	next   map[int]int64      // partition → next offset to read
	// caughtUp is when the last catch-up that succeeded began: the index
	// holds everything written before then.
	caughtUp time.Time

	// reading bounds the loads reading their chunks at once
	// (concurrentReads), made on first use.
	readingOnce sync.Once
	reading     chan struct{}
}

// concurrentReads is how many loads read their chunks at once: each
// holds a fetch answer, a snapshot's size or so.
const concurrentReads = 8

// chunkAt is where a chunk's latest value is in the topic.
type chunkAt struct {
	partition int
	offset    int64
}

const manifestMagic = "SLCM"

func (s *TopicStore) chunk() int {
	if s.ChunkBytes <= 0 {
		return 512 << 10
	}
	return s.ChunkBytes
}

// namePartitioner sends every record of a snapshot to the partition of its
// name, so that chunks precede their manifest.
type namePartitioner struct{}

func (namePartitioner) Balance(msg kafka.Message, partitions ...int) int {
	name, _, _ := strings.Cut(string(msg.Key), "#")
	h := fnv.New32a()
	h.Write([]byte(name))
	return partitions[int(h.Sum32()%uint32(len(partitions)))]
}

func (s *TopicStore) w() *kafka.Writer {
	if s.writer == nil {
		s.writer = &kafka.Writer{
			Addr: kafka.TCP(s.Brokers...), Topic: s.Topic, Balancer: namePartitioner{}, Transport: s.transport(),
			RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchBytes: int64(s.chunk()) + 1<<16,
		}
	}
	return s.writer
}

func (s *TopicStore) Save(ctx context.Context, name string, data []byte) error {
	if _, _, _, _, err := ParseName(name); err != nil {
		return err
	}
	// Chunks are never empty: an empty value is a tombstone to Kafka.
	var msgs []kafka.Message
	n := 0
	for off := 0; off < len(data); off += s.chunk() {
		end := min(off+s.chunk(), len(data))
		msgs = append(msgs, kafka.Message{Key: []byte(name + "#" + strconv.Itoa(n)), Value: append([]byte{}, data[off:end]...)})
		n++
	}
	m := binary.AppendUvarint([]byte(manifestMagic), uint64(n))
	m = binary.AppendUvarint(m, uint64(len(data)))
	msgs = append(msgs, kafka.Message{Key: []byte(name), Value: m})
	s.mu.Lock()
	defer s.mu.Unlock()
	// One message per write: a batch of chunks may not exceed the broker's
	// limit either, and order within the partition is kept anyway.
	for _, msg := range msgs {
		if err := s.w().WriteMessages(ctx, msg); err != nil {
			return fmt.Errorf("save snapshot %s to topic %s: %w", name, s.Topic, err)
		}
	}
	// Remember the manifest, so that deleting the snapshot later needs no
	// read; where its chunks are, the next read of the topic learns.
	s.init()
	s.index[name] = m
	return nil
}

func (s *TopicStore) init() {
	if s.index == nil {
		s.index, s.chunks, s.next = map[string][]byte{}, map[string]chunkAt{}, map[int]int64{}
	}
}

// Reads go through a kafka.Client, request by request, each bounded by its
// context: kafka-go's Reader, used here before, ran goroutines whose Close
// could hang (segmentio/kafka-go#1248), stalling a partition's restore.
const (
	// fetchBytes bounds one fetch answer; a first batch larger than this
	// still comes whole.
	fetchBytes = 64 << 20
	// fetchWait is how long a broker may hold a fetch for records to
	// arrive; the store only asks for offsets below the end, which the
	// broker answers at once.
	fetchWait = time.Second
	// requestTimeout bounds one request: a broker that accepted it and
	// never answers costs this, then the request is tried again.
	requestTimeout = 10 * time.Second
	// patience is how long failures that may pass (a broker restarting, a
	// leader moving, metadata the transport has yet to refresh) are tried
	// again before the error is returned.
	patience = 10 * time.Second
)

// call runs op, each attempt within requestTimeout, again after failures
// that may pass until patience runs out. ctx ends it at any time, with an
// error that wraps ctx's.
func call(ctx context.Context, op func(context.Context) error) error {
	var giveUp time.Time
	backoff := 100 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, requestTimeout)
		err := op(actx)
		cancel()
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			if errors.Is(err, ctx.Err()) {
				return err
			}
			return fmt.Errorf("%w (%v)", ctx.Err(), err)
		case !mayPass(err):
			return err
		case giveUp.IsZero():
			giveUp = time.Now().Add(patience)
		case time.Now().After(giveUp):
			return fmt.Errorf("still failing after %v: %w", patience, err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (after %v)", ctx.Err(), err)
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// mayPass says whether trying again may help: Kafka's temporary errors,
// and those of the network and the transport (a request that timed out,
// a connection to a broker that went away). UNKNOWN_SERVER_ERROR is one
// of them: kafka-go's ListOffsets splits a request that asks for both
// ends of a partition in two, and a part that meets a network error (a
// broker restarting) comes back as that code for its partitions, not as
// the network error.
func mayPass(err error) bool {
	var ke kafka.Error
	if errors.As(err, &ke) {
		return ke.Temporary() || ke == kafka.Unknown
	}
	return true
}

// transport is what every request of the store goes through.
func (s *TopicStore) transport() *kafka.Transport {
	if s.Transport != nil {
		return s.Transport
	}
	s.ownMu.Lock()
	defer s.ownMu.Unlock()
	if s.own == nil {
		s.own = &kafka.Transport{}
	}
	return s.own
}

func (s *TopicStore) client() *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(s.Brokers...), Transport: s.transport()}
}

// fetch returns the records of partition from offset on (an answer may
// begin with records before offset: the batch that holds it).
func (s *TopicStore) fetch(ctx context.Context, cl *kafka.Client, partition int, offset int64, maxBytes int) (*kafka.FetchResponse, error) {
	var resp *kafka.FetchResponse
	err := call(ctx, func(ctx context.Context) error {
		r, err := cl.Fetch(ctx, &kafka.FetchRequest{
			Topic: s.Topic, Partition: partition, Offset: offset,
			MinBytes: 1, MaxBytes: int64(maxBytes), MaxWait: fetchWait, IsolationLevel: kafka.ReadUncommitted,
		})
		if err != nil {
			return err
		}
		if r.Error != nil {
			return r.Error
		}
		resp = r
		return nil
	})
	return resp, err
}

// eachRecord calls f on the records of rr in turn until f returns false
// or an error, and closes every record (kafka-go pools their bytes).
func eachRecord(rr kafka.RecordReader, f func(*kafka.Record) (bool, error)) error {
	more := true
	for {
		rec, err := rr.ReadRecord()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("decode records: %w", err)
		}
		if more {
			more, err = f(rec)
		}
		if rec.Key != nil {
			rec.Key.Close()
		}
		if rec.Value != nil {
			rec.Value.Close()
		}
		if err != nil {
			return err
		}
	}
}

// partitions returns the partitions of the topic and where each begins
// and ends.
func (s *TopicStore) partitions(ctx context.Context, cl *kafka.Client) ([]kafka.PartitionOffsets, error) {
	var ids []int
	err := call(ctx, func(ctx context.Context) error {
		resp, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{s.Topic}})
		if err != nil {
			return err
		}
		for _, t := range resp.Topics {
			if t.Name == s.Topic {
				if t.Error != nil {
					return t.Error
				}
				ids = ids[:0]
				for _, p := range t.Partitions {
					ids = append(ids, p.ID)
				}
				return nil
			}
		}
		return kafka.UnknownTopicOrPartition
	})
	if err != nil {
		return nil, err
	}
	var reqs []kafka.OffsetRequest
	for _, id := range ids {
		reqs = append(reqs, kafka.FirstOffsetOf(id), kafka.LastOffsetOf(id))
	}
	var offs []kafka.PartitionOffsets
	err = call(ctx, func(ctx context.Context) error {
		resp, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{s.Topic: reqs}})
		if err != nil {
			return err
		}
		offs = resp.Topics[s.Topic]
		for _, o := range offs {
			if o.Error != nil {
				return fmt.Errorf("offsets of partition %d: %w", o.Partition, o.Error)
			}
		}
		if len(offs) != len(ids) {
			return fmt.Errorf("offsets of %d partitions, asked for %d", len(offs), len(ids))
		}
		return nil
	})
	slices.SortFunc(offs, func(a, b kafka.PartitionOffsets) int { return a.Partition - b.Partition })
	return offs, err
}

// catchUpSince catches up unless a catch-up that began at or after asked
// (when the caller asked, before it waited for s.mu) already succeeded:
// that one read the topic to an end at least as late. At a generation's
// start every partition restores at once, a List and a Load each; one
// catch-up each (a Metadata, a ListOffsets and a Fetch, under s.mu)
// left 1,024 partitions unserved for up to 29 s after a rebalance. s.mu
// held.
func (s *TopicStore) catchUpSince(ctx context.Context, asked time.Time) error {
	if !s.caughtUp.IsZero() && !s.caughtUp.Before(asked) {
		return nil
	}
	began := time.Now()
	if err := s.catchUp(ctx); err != nil {
		return err
	}
	s.caughtUp = began
	return nil
}

// catchUp reads every partition from where it stopped to its end.
func (s *TopicStore) catchUp(ctx context.Context) error {
	s.init()
	cl := s.client()
	parts, err := s.partitions(ctx, cl)
	if err != nil {
		return fmt.Errorf("checkpoint topic %s: %w", s.Topic, err)
	}
	for _, p := range parts {
		if err := s.catchUpPartition(ctx, cl, p.Partition, p.FirstOffset, p.LastOffset); err != nil {
			return err
		}
	}
	return nil
}

// catchUpPartition reads partition from where the store stopped to last,
// its end when the read began.
func (s *TopicStore) catchUpPartition(ctx context.Context, cl *kafka.Client, partition int, first, last int64) error {
	from := max(s.next[partition], first)
	if from >= last {
		s.next[partition] = last
		return nil
	}
	for from < last {
		resp, err := s.fetch(ctx, cl, partition, from, fetchBytes)
		if err != nil {
			return fmt.Errorf("read checkpoint topic %s, partition %d at offset %d: %w", s.Topic, partition, from, err)
		}
		next := from
		err = eachRecord(resp.Records, func(m *kafka.Record) (bool, error) {
			if m.Offset < next { // the batch began before from
				return true, nil
			}
			k, err := kafka.ReadAll(m.Key)
			if err != nil {
				return false, err
			}
			key := string(k)
			chunk := strings.Contains(key, "#")
			switch {
			case chunk && m.Value == nil:
				delete(s.chunks, key)
			case chunk:
				s.chunks[key] = chunkAt{partition, m.Offset}
			case m.Value == nil:
				delete(s.index, key)
			default:
				v, err := kafka.ReadAll(m.Value)
				if err != nil {
					return false, err
				}
				s.index[key] = v
			}
			next = m.Offset + 1
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("read checkpoint topic %s, partition %d at offset %d: %w", s.Topic, partition, from, err)
		}
		if next == from {
			// No record at or after from, below the end: compaction
			// removed the rest (tombstones dropped after a delete), or
			// what is left holds none (transaction markers). An answer
			// holds every batch from the one with from on, up to
			// fetchBytes, so there is nothing more to read.
			next = last
		}
		from = next
		s.next[partition] = from
	}
	return nil
}

func (s *TopicStore) Load(ctx context.Context, name string) ([]byte, error) {
	at, size, err := s.locate(ctx, name)
	if err != nil {
		return nil, err
	}
	// The chunks are read without the store's lock, a few loads at a
	// time: a generation's restores read theirs one after another
	// under it, and 1,024 partitions waited up to 24 s to be served.
	s.readingOnce.Do(func() { s.reading = make(chan struct{}, concurrentReads) })
	select {
	case s.reading <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	data, err := s.readChunks(ctx, name, at, make([]byte, 0, min(size, 1<<30)))
	<-s.reading
	if err != nil {
		return nil, err
	}
	if uint64(len(data)) != size {
		return nil, fmt.Errorf("%w: %s has %d bytes, manifest says %d", ErrChecksum, name, len(data), size)
	}
	return data, nil
}

// locate returns where name's chunks are and its size, as of a catch-up
// begun after the call.
func (s *TopicStore) locate(ctx context.Context, name string) ([]chunkAt, uint64, error) {
	asked := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.catchUpSince(ctx, asked); err != nil {
		return nil, 0, err
	}
	m, ok := s.index[name]
	if !ok {
		return nil, 0, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	if len(m) < len(manifestMagic) || string(m[:len(manifestMagic)]) != manifestMagic {
		return nil, 0, fmt.Errorf("%w: manifest of %s", ErrChecksum, name)
	}
	rest := m[len(manifestMagic):]
	n, k := binary.Uvarint(rest)
	size, k2 := binary.Uvarint(rest[max(k, 0):])
	if k <= 0 || k2 <= 0 || n > 1<<20 {
		return nil, 0, fmt.Errorf("%w: manifest of %s", ErrChecksum, name)
	}
	at := make([]chunkAt, n)
	for i := range n {
		c, ok := s.chunks[name+"#"+strconv.FormatUint(i, 10)]
		if !ok {
			return nil, 0, fmt.Errorf("%w: chunk %d of %s missing", ErrChecksum, i, name)
		}
		at[i] = c
	}
	return at, size, nil
}

// chunkSlack is room in a chunk read for the records' framing.
const chunkSlack = 64 << 10

func (s *TopicStore) readChunks(ctx context.Context, name string, at []chunkAt, data []byte) ([]byte, error) {
	cl := s.client()
	gone := func(i int) error {
		return fmt.Errorf("%w: %s#%d is no longer at offset %d of partition %d", ErrChecksum, name, i, at[i].offset, at[i].partition)
	}
	for i := 0; i < len(at); {
		c, first := at[i], i
		// The chunks left, not the partition's log after them: a fetch of
		// fetchBytes carried every later snapshot in the partition.
		resp, err := s.fetch(ctx, cl, c.partition, c.offset, min(fetchBytes, max(cap(data)-len(data), 0)+chunkSlack))
		if errors.Is(err, kafka.OffsetOutOfRange) { // the log no longer reaches it
			return nil, gone(i)
		}
		if err != nil {
			return nil, fmt.Errorf("read %s#%d from checkpoint topic %s: %w", name, i, s.Topic, err)
		}
		err = eachRecord(resp.Records, func(m *kafka.Record) (bool, error) {
			// An answer is a stretch of the log from c.offset on: the next
			// chunk is in it if it lies further on in the partition.
			if i == len(at) || at[i].partition != c.partition || (i > first && at[i].offset <= at[i-1].offset) {
				return false, nil
			}
			if m.Offset < at[i].offset {
				return true, nil
			}
			k, err := kafka.ReadAll(m.Key)
			if err != nil {
				return false, err
			}
			if m.Offset != at[i].offset || string(k) != name+"#"+strconv.Itoa(i) || m.Value == nil {
				return false, gone(i)
			}
			n := m.Value.Len()
			data = slices.Grow(data, n)
			if _, err := io.ReadFull(m.Value, data[len(data):len(data)+n]); err != nil {
				return false, err
			}
			data = data[:len(data)+n]
			i++
			return true, nil
		})
		if errors.Is(err, ErrChecksum) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("read %s#%d from checkpoint topic %s: %w", name, i, s.Topic, err)
		}
		if i == first { // nothing at or after c.offset: compacted away
			return nil, gone(i)
		}
	}
	return data, nil
}

func (s *TopicStore) List(ctx context.Context, prefix string) ([]string, error) {
	asked := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.catchUpSince(ctx, asked); err != nil {
		return nil, err
	}
	var names []string
	for k := range s.index {
		if !strings.Contains(k, "#") && strings.HasPrefix(k, prefix) {
			names = append(names, k)
		}
	}
	sortNames(names)
	return names, nil
}

func (s *TopicStore) Delete(ctx context.Context, name string) error {
	asked := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.index[name]
	if !ok { // not written by this store: read what others wrote
		if err := s.catchUpSince(ctx, asked); err != nil {
			return err
		}
		if m, ok = s.index[name]; !ok {
			return nil
		}
	}
	n := uint64(0)
	if len(m) > len(manifestMagic) {
		n, _ = binary.Uvarint(m[len(manifestMagic):])
	}
	// The manifest goes first: a reader never sees a manifest whose chunks
	// are gone.
	msgs := []kafka.Message{{Key: []byte(name)}}
	for i := range min(n, 1<<20) {
		msgs = append(msgs, kafka.Message{Key: []byte(name + "#" + strconv.FormatUint(i, 10))})
	}
	if err := s.w().WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("delete snapshot %s: %w", name, err)
	}
	for _, msg := range msgs {
		delete(s.index, string(msg.Key))
		delete(s.chunks, string(msg.Key))
	}
	return nil
}

// Close releases the writer, and the connections of the store's own
// transport.
func (s *TopicStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if s.writer != nil {
		err = s.writer.Close()
	}
	s.ownMu.Lock()
	if s.own != nil {
		s.own.CloseIdleConnections()
	}
	s.ownMu.Unlock()
	return err
}

var _ Store = (*TopicStore)(nil)

// Ensure creates the topic, compacted, if it does not exist.
func (s *TopicStore) Ensure(ctx context.Context, partitions int) error {
	resp, err := s.client().CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: s.Topic, NumPartitions: max(partitions, 1), ReplicationFactor: -1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}},
	}}})
	if err == nil {
		err = resp.Errors[s.Topic]
	}
	if err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		return fmt.Errorf("create checkpoint topic %s: %w", s.Topic, err)
	}
	return nil
}
