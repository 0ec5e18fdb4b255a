// Package checkpoint stores partition models so that a partition's next
// owner continues with exactly the model the last one had (docs/architecture.md §3).
//
// A Snapshot is immutable and named topic/partition/generation/seq. Its
// encoding is versioned and ends with a CRC-32C of everything before it:
// a flipped bit or a truncation is detected, reported as ErrChecksum, and
// never mistaken for a model. Stores (a directory of files, a compacted
// topic) move encoded snapshots; Protocol plugs them into the pipeline:
// it restores from the snapshot the committed offset's metadata names,
// saves at the configured cadence, and deletes older snapshots only after
// a commit referencing a newer one succeeded, keeping one previous
// snapshot as a fallback.
package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/streamlearner/streamlearner/learners"
)

// Snapshot is one partition's state at a commit point.
type Snapshot struct {
	Topic      string
	Partition  int
	Generation int32
	Seq        uint64 // increases with every save of the partition by any owner
	// Version is the format: 2, Model holds the partition model's
	// snapshot (model.Model: learners, featurizer, classes, evaluator) and
	// Learner its Spec; 3, the same with a label topic's position
	// (LabelTopic, LabelOffset), written when there is one; 1 (read, never
	// written), Model holds a lone learner's state, Eval its evaluator's
	// and Learner the learner spec.
	Version    int
	Learner    string // the model's spec (version 1: the learner's)
	Kernel     string // canonical kernel spec
	NextOffset int64  // first offset not learned from
	Created    time.Time
	Model      []byte
	Eval       []byte // version 1 only
	// LabelTopic is the topic the partition's labels come from, when
	// they have one of their own (co-partitioned: partition Partition of
	// it), and LabelOffset the first of its offsets not yet learned from.
	// Version 3 only.
	LabelTopic  string
	LabelOffset int64
}

// Name is the snapshot's name in every store: topic/partition/generation/seq,
// zero-padded so that names sort in save order.
func (s *Snapshot) Name() string { return Name(s.Topic, s.Partition, s.Generation, s.Seq) }

// Name formats a snapshot name.
func Name(topic string, partition int, generation int32, seq uint64) string {
	return fmt.Sprintf("%s/%d/%010d/%020d", topic, partition, generation, seq)
}

// ParseName splits a snapshot name.
func ParseName(name string) (topic string, partition int, generation int32, seq uint64, err error) {
	parts := strings.Split(name, "/")
	if len(parts) != 4 || parts[0] == "" {
		return "", 0, 0, 0, fmt.Errorf("snapshot name %q: want topic/partition/generation/seq", name)
	}
	p, err1 := strconv.Atoi(parts[1])
	g, err2 := strconv.ParseInt(parts[2], 10, 32)
	s, err3 := strconv.ParseUint(parts[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || p < 0 {
		return "", 0, 0, 0, fmt.Errorf("snapshot name %q: bad number", name)
	}
	return parts[0], p, int32(g), s, nil
}

const (
	magic = "SLCK"
	// version is the format Encode writes; Decode reads it and every
	// older one listed in Snapshot.Version.
	version = 3
)

// ErrChecksum means the bytes are not the snapshot that was saved.
var ErrChecksum = errors.New("snapshot checksum mismatch")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode returns the snapshot's bytes.
func (s *Snapshot) Encode() []byte {
	b, _, _, _ := s.encode(make([]byte, 0, 64+len(s.Model)+len(s.Eval)), func(b []byte) ([]byte, error) {
		return append(b, s.Model...), nil
	})
	return b
}

// encode appends the snapshot's bytes to b, with what model appends as its
// model (s.Model unread): a model encoded straight into the snapshot has
// no buffer of its own to copy. It returns where the model's bytes are.
func (s *Snapshot) encode(b []byte, model func([]byte) ([]byte, error)) (data []byte, from, to int, err error) {
	b = append(b, magic...)
	v := s.Version
	if v == 0 {
		v = 2
		if s.LabelTopic != "" {
			v = 3
		}
	}
	b = binary.AppendUvarint(b, uint64(v))
	str := func(x string) { b = binary.AppendUvarint(b, uint64(len(x))); b = append(b, x...) }
	byt := func(x []byte) { b = binary.AppendUvarint(b, uint64(len(x))); b = append(b, x...) }
	str(s.Topic)
	b = binary.AppendUvarint(b, uint64(s.Partition))
	b = binary.AppendVarint(b, int64(s.Generation))
	b = binary.AppendUvarint(b, s.Seq)
	str(s.Learner)
	str(s.Kernel)
	b = binary.AppendVarint(b, s.NextOffset)
	b = binary.AppendVarint(b, s.Created.UnixNano())
	at := len(b)
	if b, err = learners.AppendSized(b, model); err != nil {
		return nil, 0, 0, err
	}
	n, w := binary.Uvarint(b[at:])
	from, to = at+w, at+w+int(n)
	byt(s.Eval)
	if v >= 3 {
		str(s.LabelTopic)
		b = binary.AppendVarint(b, s.LabelOffset)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), from, to, nil
}

// Decode parses and verifies a snapshot. Corrupt bytes give an error
// wrapping ErrChecksum; a newer format version says so.
func Decode(b []byte) (*Snapshot, error) {
	if len(b) < len(magic)+4 {
		return nil, fmt.Errorf("%w: %d bytes is too short", ErrChecksum, len(b))
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("%w: %d bytes", ErrChecksum, len(b))
	}
	if string(body[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: not a snapshot", ErrChecksum)
	}
	d := reader{b: body[len(magic):]}
	v := d.uvarint()
	if d.err == nil && (v < 1 || v > version) {
		return nil, fmt.Errorf("snapshot format version %d not supported (this build reads 1 to %d)", v, version)
	}
	s := &Snapshot{Version: int(v)}
	s.Topic = string(d.bytes())
	p := d.uvarint()
	g := d.varint()
	s.Seq = d.uvarint()
	s.Learner, s.Kernel = string(d.bytes()), string(d.bytes())
	s.NextOffset = d.varint()
	s.Created = time.Unix(0, d.varint())
	s.Model, s.Eval = d.bytes(), d.bytes()
	if v >= 3 {
		s.LabelTopic = string(d.bytes())
		s.LabelOffset = d.varint()
		if d.err == nil && s.LabelTopic == "" {
			d.err = errors.New("format 3 without a label topic")
		}
	}
	if d.err == nil && (len(d.b) != 0 || p > math.MaxInt32 || g < math.MinInt32 || g > math.MaxInt32) {
		d.err = errors.New("malformed fields")
	}
	if d.err != nil {
		return nil, fmt.Errorf("snapshot: %w", d.err)
	}
	s.Partition, s.Generation = int(p), int32(g)
	return s, nil
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("truncated")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errors.New("truncated")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errors.New("length past the end")
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}
