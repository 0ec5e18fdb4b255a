package fetch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

// ErrNoTopic is returned (wrapped) for a topic the brokers do not have.
var ErrNoTopic = errors.New("no such topic")

// Partitions lists the partition numbers of topic, asking the brokers in
// turn until one answers. It asks for the metadata of every topic rather
// than of this one: a broker that creates topics on demand (the embedded
// one, Kafka with auto.create.topics.enable) would create a topic asked
// for by name, so a reader's typo would leave an empty topic behind and
// wait on it forever.
func Partitions(ctx context.Context, d *kafka.Dialer, brokers []string, topic string) ([]int, error) {
	var lastErr error
	for _, b := range brokers {
		conn, err := d.DialContext(ctx, "tcp", b)
		if err != nil {
			lastErr = err
			continue
		}
		ps, err := conn.ReadPartitions()
		conn.Close()
		if err != nil {
			return nil, fmt.Errorf("partitions of %s: %w", topic, err)
		}
		var ids []int
		for _, p := range ps {
			if p.Topic == topic {
				ids = append(ids, p.ID)
			}
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("topic %s: %w on %v", topic, ErrNoTopic, brokers)
		}
		slices.Sort(ids)
		return ids, nil
	}
	return nil, &UnreachableError{Brokers: brokers, Err: lastErr}
}

// UnreachableError is the error of a call that reached none of the
// brokers, so that a caller can name the connection as the problem
// rather than what it was asking for.
type UnreachableError struct {
	Brokers []string
	Err     error // the last broker's
}

func (e *UnreachableError) Error() string { return fmt.Sprintf("connect to %v: %v", e.Brokers, e.Err) }
func (e *UnreachableError) Unwrap() error { return e.Err }

// ListOffsets asks for a partition's offsets: first and last when
// requested, and off, the offset a time request found (−1 if none).
func ListOffsets(ctx context.Context, c *kafka.Client, topic string, p int, reqs ...kafka.OffsetRequest) (first, last, off int64, err error) {
	return ListOffsetsAt(ctx, c, kafka.ReadUncommitted, topic, p, reqs...)
}

// ListOffsetsAt is ListOffsets at an isolation level: reading committed,
// the last offset is the last stable one.
func ListOffsetsAt(ctx context.Context, c *kafka.Client, iso kafka.IsolationLevel, topic string, p int, reqs ...kafka.OffsetRequest) (first, last, off int64, err error) {
	resp, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}, IsolationLevel: iso})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("offsets of %s/%d: %w", topic, p, err)
	}
	off = -1
	for _, po := range resp.Topics[topic] {
		if po.Partition != p {
			continue
		}
		if po.Error != nil {
			return 0, 0, 0, fmt.Errorf("offsets of %s/%d: %w", topic, p, po.Error)
		}
		for o := range po.Offsets {
			off = o
		}
		return po.FirstOffset, po.LastOffset, off, nil
	}
	return 0, 0, 0, fmt.Errorf("no offsets for %s/%d in the broker's answer", topic, p)
}

// BoundHelp says what ResolveBound accepts, for flag help and errors.
const BoundHelp = "earliest, latest, an offset, -N (the last N records) or an RFC 3339 time"

// ResolveBound turns a bound of a partition whose records are
// [first, last) into an offset: "earliest", "latest", an offset (clamped
// to the partition), "-N" (N records before the end, as kcat -o -N), or
// an RFC 3339 time (the first record at or after it; the end if none).
// An empty spec is dflt.
func ResolveBound(ctx context.Context, c *kafka.Client, topic string, p int, spec string, dflt, first, last int64) (int64, error) {
	b, err := ParseBound(spec)
	if err != nil {
		return 0, err
	}
	switch {
	case spec == "":
		return dflt, nil
	case b.earliest:
		return first, nil
	case b.latest:
		return last, nil
	case b.back >= 0:
		return max(last-b.back, first), nil
	case b.offset >= 0:
		return min(max(b.offset, first), last), nil
	}
	_, _, off, err := ListOffsets(ctx, c, topic, p, kafka.TimeOffsetOf(p, b.at))
	if err != nil {
		return 0, err
	}
	if off < 0 { // no record at or after the time
		return last, nil
	}
	return off, nil
}

// Bound is a parsed bound spec, for checking a flag before connecting.
type Bound struct {
	earliest, latest bool
	back, offset     int64 // −1 unless given
	at               time.Time
}

// ParseBound checks a bound spec (see ResolveBound) without resolving it.
func ParseBound(spec string) (Bound, error) {
	b := Bound{back: -1, offset: -1}
	switch spec {
	case "", "earliest":
		b.earliest = true
		return b, nil
	case "latest":
		b.latest = true
		return b, nil
	}
	if n, ok := strings.CutPrefix(spec, "-"); ok {
		if back, err := strconv.ParseInt(n, 10, 64); err == nil && back >= 0 {
			b.back = back
			return b, nil
		}
	}
	if off, err := strconv.ParseInt(spec, 10, 64); err == nil && off >= 0 {
		b.offset = off
		return b, nil
	}
	at, err := time.Parse(time.RFC3339, spec)
	if err != nil {
		return b, fmt.Errorf("bound %q: want %s", spec, BoundHelp)
	}
	b.at = at
	return b, nil
}
