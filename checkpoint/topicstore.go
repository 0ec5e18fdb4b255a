package checkpoint

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
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
	Brokers    []string
	Topic      string
	Dialer     *kafka.Dialer    // default kafka.DefaultDialer
	Transport  *kafka.Transport // default a new one
	ChunkBytes int              // default 512 KiB, below Kafka's 1 MiB default message limit

	mu     sync.Mutex
	writer *kafka.Writer
	index  map[string][]byte  // manifest key → latest value
	chunks map[string]chunkAt // chunk key → where its latest value is
	next   map[int]int64      // partition → next offset to read
}

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
		tr := s.Transport
		if tr == nil {
			tr = &kafka.Transport{}
		}
		s.writer = &kafka.Writer{
			Addr: kafka.TCP(s.Brokers...), Topic: s.Topic, Balancer: namePartitioner{}, Transport: tr,
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

// catchUp reads every partition from where it stopped to its end.
func (s *TopicStore) catchUp(ctx context.Context) error {
	d := s.Dialer
	if d == nil {
		d = kafka.DefaultDialer
	}
	s.init()
	conn, err := d.DialContext(ctx, "tcp", s.Brokers[0])
	if err != nil {
		return fmt.Errorf("checkpoint topic %s: %w", s.Topic, err)
	}
	parts, err := conn.ReadPartitions(s.Topic)
	conn.Close()
	if err != nil {
		return fmt.Errorf("checkpoint topic %s: %w", s.Topic, err)
	}
	for _, p := range parts {
		lc, err := d.DialLeader(ctx, "tcp", s.Brokers[0], s.Topic, p.ID)
		if err != nil {
			return fmt.Errorf("checkpoint topic %s: %w", s.Topic, err)
		}
		first, last, err := lc.ReadOffsets()
		lc.Close()
		if err != nil {
			return fmt.Errorf("checkpoint topic %s: %w", s.Topic, err)
		}
		from := max(s.next[p.ID], first)
		if from >= last {
			s.next[p.ID] = last
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: s.Brokers, Topic: s.Topic, Partition: p.ID, Dialer: d, MaxWait: time.Second, MaxBytes: 64 << 20})
		if err := r.SetOffset(from); err != nil {
			r.Close()
			return err
		}
		for from < last {
			// Compaction can leave the end of the log without a record
			// (a tombstone removed after a delete): a read that finds
			// nothing more within a short wait has read all there is.
			rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			m, err := r.ReadMessage(rctx)
			cancel()
			if err != nil {
				if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
					from = last
					break
				}
				r.Close()
				return fmt.Errorf("read checkpoint topic %s: %w", s.Topic, err)
			}
			key := string(m.Key)
			chunk := strings.Contains(key, "#")
			switch {
			case chunk && m.Value == nil:
				delete(s.chunks, key)
			case chunk:
				s.chunks[key] = chunkAt{p.ID, m.Offset}
			case m.Value == nil:
				delete(s.index, key)
			default:
				s.index[key] = m.Value
			}
			from = m.Offset + 1
		}
		r.Close()
		s.next[p.ID] = from
	}
	return nil
}

func (s *TopicStore) Load(ctx context.Context, name string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.catchUp(ctx); err != nil {
		return nil, err
	}
	m, ok := s.index[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	if len(m) < len(manifestMagic) || string(m[:len(manifestMagic)]) != manifestMagic {
		return nil, fmt.Errorf("%w: manifest of %s", ErrChecksum, name)
	}
	rest := m[len(manifestMagic):]
	n, k := binary.Uvarint(rest)
	size, k2 := binary.Uvarint(rest[max(k, 0):])
	if k <= 0 || k2 <= 0 || n > 1<<20 {
		return nil, fmt.Errorf("%w: manifest of %s", ErrChecksum, name)
	}
	at := make([]chunkAt, n)
	for i := range n {
		c, ok := s.chunks[name+"#"+strconv.FormatUint(i, 10)]
		if !ok {
			return nil, fmt.Errorf("%w: chunk %d of %s missing", ErrChecksum, i, name)
		}
		at[i] = c
	}
	data, err := s.readChunks(ctx, name, at, make([]byte, 0, min(size, 1<<30)))
	if err != nil {
		return nil, err
	}
	if uint64(len(data)) != size {
		return nil, fmt.Errorf("%w: %s has %d bytes, manifest says %d", ErrChecksum, name, len(data), size)
	}
	return data, nil
}

// readChunks appends the chunks of snapshot name, where at says they are,
// to data. They were written in order to one partition: one reader reads
// from the first on, skipping what other snapshots wrote between them.
func (s *TopicStore) readChunks(ctx context.Context, name string, at []chunkAt, data []byte) ([]byte, error) {
	d := s.Dialer
	if d == nil {
		d = kafka.DefaultDialer
	}
	var r *kafka.Reader
	defer func() {
		if r != nil {
			r.Close()
		}
	}()
	next := int64(-1) // the offset r reads next
	for i, c := range at {
		key := name + "#" + strconv.Itoa(i)
		if r == nil || c.partition != at[max(i-1, 0)].partition || c.offset < next {
			if r != nil {
				r.Close()
			}
			r = kafka.NewReader(kafka.ReaderConfig{Brokers: s.Brokers, Topic: s.Topic, Partition: c.partition, Dialer: d, MaxWait: time.Second, MaxBytes: 64 << 20})
			if err := r.SetOffset(c.offset); err != nil {
				return nil, fmt.Errorf("read checkpoint topic %s: %w", s.Topic, err)
			}
		}
		for {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			m, err := r.ReadMessage(rctx)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("read %s from checkpoint topic %s: %w", key, s.Topic, err)
			}
			next = m.Offset + 1
			if m.Offset < c.offset {
				continue
			}
			if m.Offset != c.offset || string(m.Key) != key {
				return nil, fmt.Errorf("%w: %s is no longer at offset %d of partition %d", ErrChecksum, key, c.offset, c.partition)
			}
			data = append(data, m.Value...)
			break
		}
	}
	return data, nil
}

func (s *TopicStore) List(ctx context.Context, prefix string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.catchUp(ctx); err != nil {
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
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.index[name]
	if !ok { // not written by this store: read what others wrote
		if err := s.catchUp(ctx); err != nil {
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

// Close releases the writer.
func (s *TopicStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writer == nil {
		return nil
	}
	return s.writer.Close()
}

var _ Store = (*TopicStore)(nil)

// Ensure creates the topic, compacted, if it does not exist.
func (s *TopicStore) Ensure(ctx context.Context, partitions int) error {
	tr := s.Transport
	if tr == nil {
		tr = &kafka.Transport{}
	}
	cl := &kafka.Client{Addr: kafka.TCP(s.Brokers...), Transport: tr}
	resp, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
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
