package pipeline

import (
	"context"
	"fmt"
	"strings"

	kafka "github.com/segmentio/kafka-go"
	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
)

// A committed offset's metadata names the partition's snapshot and, once
// Config.ResetOffsets was applied to the partition, that reset:
// "SNAPSHOT reset=SPEC" (either part may be empty). Every later commit
// carries the tag on, so a member restarted with the same --reset-offsets
// does not rewind again: a reset is applied once per value.
const resetTag = "reset="

// splitMeta reads a committed offset's metadata: the snapshot's name and
// the reset last applied.
func splitMeta(meta string) (snapshot, reset string) {
	if i := strings.Index(meta, resetTag); i >= 0 && (i == 0 || meta[i-1] == ' ') {
		return strings.TrimSuffix(meta[:i], " "), meta[i+len(resetTag):]
	}
	return meta, ""
}

// joinMeta is the metadata of a commit: the snapshot's name, and the
// reset applied to the partition.
func joinMeta(snapshot, reset string) string {
	switch {
	case reset == "":
		return snapshot
	case snapshot == "":
		return resetTag + reset
	}
	return snapshot + " " + resetTag + reset
}

// resetTarget is where --reset-offsets spec puts partition p of topic:
// earliest, latest, an offset (clamped to the log), -N (N before the end)
// or an RFC 3339 time (the first record at or after it).
func (m *member) resetTarget(ctx context.Context, topic string, p int, spec string) (int64, error) {
	first, last, _, err := fetch.ListOffsets(ctx, m.client, topic, p, kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
	if err != nil {
		return 0, err
	}
	off, err := fetch.ResolveBound(ctx, m.client, topic, p, spec, first, first, last)
	if err != nil {
		return 0, fmt.Errorf("--reset-offsets %s for %s/%d: %w", spec, topic, p, err)
	}
	return off, nil
}
