package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners"
)

// Headers that the service adds to dead letters (and, for the source
// partition, to predictions). The service
// owns the "streamlearner." prefix: an input header with that prefix is
// carried into a dead letter renamed with OriginalHeaderPrefix in front,
// so that nothing a producer sends can pass for the service's word.
const (
	HeaderError           = "streamlearner.error"            // the reason, e.g. invalid_json
	HeaderErrorDetail     = "streamlearner.error.detail"     // human-readable detail
	HeaderSourceTopic     = "streamlearner.source.topic"     // input topic
	HeaderSourcePartition = "streamlearner.source.partition" // input partition (decimal)
	HeaderSourceOffset    = "streamlearner.source.offset"    // input offset (decimal)
	// Set when a dead letter had to be cut to fit its topic: the original
	// sizes (decimal) and SHA-256 (hex) of what was cut. The value keeps
	// its first bytes; a key or headers that alone did not fit are
	// dropped.
	HeaderValueSize    = "streamlearner.truncated.value.size"
	HeaderValueSHA256  = "streamlearner.truncated.value.sha256"
	HeaderKeySize      = "streamlearner.truncated.key.size"
	HeaderKeySHA256    = "streamlearner.truncated.key.sha256"
	HeaderHeadersCount = "streamlearner.truncated.headers" // input headers dropped

	// OriginalHeaderPrefix is put before input headers that use the
	// service's prefix.
	OriginalHeaderPrefix = "original."
)

// Reasons the service itself gives dead letters, beside codec's.
const (
	ReasonInternal      codec.Reason = "internal"       // could not encode the prediction
	ReasonOutputRefused codec.Reason = "output_refused" // the broker permanently refused the prediction
	// ReasonCorruptBatch: a record batch of the input that every fetch
	// found corrupt; its dead letter holds the batch as the broker sent it.
	ReasonCorruptBatch codec.Reason = "corrupt_batch"
)

// Reasons lists every dead-letter reason the service can report, every
// label value streamlearner_dead_letters_total can carry: codec's, the
// learners' refusals and its own.
func Reasons() []codec.Reason {
	return append(codec.Reasons(), learners.RefusedKernel, learners.RefusedMargin, ReasonInternal, ReasonOutputRefused, ReasonCorruptBatch,
		model.ReasonMissingLabel)
}

// Reasons returns the dead-letter reasons a member with this configuration
// can report: Reasons() less those of delayed labels without them, of
// many classes without them, and of the input format it does not read
// (records: JSON records and LIBSVM lines; events: named fields).
func (c *Config) Reasons() []codec.Reason {
	out := Reasons()
	delayed := c.DelayedLabels || c.LabelTopic != ""
	return slices.DeleteFunc(out, func(r codec.Reason) bool {
		switch r {
		case codec.ReasonLabelUnknown, codec.ReasonLabelExpired, codec.ReasonLabelEvicted, codec.ReasonLabelNoKey, codec.ReasonKeyTooLarge:
			return !delayed
		case codec.ReasonTooManyClasses:
			return len(c.Model.Classes) == 0
		case model.ReasonMissingLabel:
			return !c.Model.LabelRequired || delayed
		case codec.ReasonBadField:
			return !c.Model.Events
		case codec.ReasonBadFraming, codec.ReasonUnknownSchema, codec.ReasonSchemaMismatch, codec.ReasonSchemaTooLarge, codec.ReasonBadSchema:
			return !c.Model.Format.Framed()
		case codec.ReasonInvalidLIBSVM, codec.ReasonMissingFeatures, codec.ReasonBadIndex, codec.ReasonIndexTooLarge, codec.ReasonDuplicateIndex:
			return c.Model.Events
		}
		return false
	})
}

// recordOverhead bounds what a record costs in a batch beyond its key,
// value and header bytes (length varints, attributes, timestamp and
// offset deltas), and batchOverhead the batch header; both are rounded up
// generously, because a broker refuses a batch by its encoded size.
const (
	recordOverhead = 64
	headerOverhead = 10
	batchOverhead  = 128
)

// recordSize estimates from above what m adds to a record batch.
func recordSize(m *kafka.Message) int {
	n := recordOverhead + len(m.Key) + len(m.Value)
	for _, h := range m.Headers {
		n += headerOverhead + len(h.Key) + len(h.Value)
	}
	return n
}

// deadLetter makes the dead letter of input record m: the service's
// headers first (error, detail, origin), then the input's headers (those
// with the service's prefix renamed), key and value. When the whole would
// exceed limit bytes it is cut, in this order, until it fits: the value
// to what room is left, the input headers dropped, the key dropped —
// each cut recorded with the original size and SHA-256.
func deadLetter(m kafka.Message, reason codec.Reason, detail string, limit int) kafka.Message {
	if len(detail) > 512 {
		detail = detail[:512]
	}
	h := make([]kafka.Header, 0, len(m.Headers)+5)
	h = append(h,
		kafka.Header{Key: HeaderError, Value: []byte(reason)},
		kafka.Header{Key: HeaderErrorDetail, Value: []byte(detail)},
		kafka.Header{Key: HeaderSourceTopic, Value: []byte(m.Topic)},
		kafka.Header{Key: HeaderSourcePartition, Value: []byte(strconv.Itoa(m.Partition))},
		kafka.Header{Key: HeaderSourceOffset, Value: []byte(strconv.FormatInt(m.Offset, 10))},
	)
	own := len(h)
	for _, ih := range m.Headers {
		if strings.HasPrefix(ih.Key, "streamlearner.") {
			ih.Key = OriginalHeaderPrefix + ih.Key
		}
		h = append(h, ih)
	}
	dl := kafka.Message{Key: m.Key, Value: m.Value, Headers: h}
	return fit(dl, own, limit)
}

// fit cuts dl (whose first own headers are the service's) to at most
// limit bytes; see deadLetter.
func fit(dl kafka.Message, own, limit int) kafka.Message {
	if recordSize(&dl) <= limit {
		return dl
	}
	note := func(k string, v []byte) { dl.Headers = append(dl.Headers, kafka.Header{Key: k, Value: v}) }
	sum := func(b []byte) []byte {
		s := sha256.Sum256(b)
		return []byte(hex.EncodeToString(s[:]))
	}
	// The notes cost up to ~200 bytes; reserve them before cutting.
	const notes = 3*headerOverhead + 64 + 20 + len(HeaderValueSize) + len(HeaderValueSHA256)
	value := dl.Value
	dl.Value = nil
	note(HeaderValueSize, []byte(strconv.Itoa(len(value))))
	note(HeaderValueSHA256, sum(value))
	if room := limit - recordSize(&dl) - notes; room > 0 {
		dl.Value = value[:min(room, len(value))]
		return dl
	}
	if len(dl.Headers) > own+2 {
		// Drop the input headers, keeping the service's and the notes.
		dropped := len(dl.Headers) - own - 2
		kept := append([]kafka.Header(nil), dl.Headers[:own]...)
		dl.Headers = append(kept, dl.Headers[len(dl.Headers)-2:]...)
		note(HeaderHeadersCount, []byte(strconv.Itoa(dropped)))
		if room := limit - recordSize(&dl) - notes; room > 0 {
			dl.Value = value[:min(room, len(value))]
			return dl
		}
	}
	if dl.Key != nil {
		key := dl.Key
		dl.Key = nil
		note(HeaderKeySize, []byte(strconv.Itoa(len(key))))
		note(HeaderKeySHA256, sum(key))
		if room := limit - recordSize(&dl) - notes; room > 0 {
			dl.Value = value[:min(room, len(value))]
		}
	}
	return dl
}

// boundKey limits the key a prediction carries to max bytes: a longer one
// is cut, with its size and SHA-256.
func boundKey(p *codec.Prediction, key []byte, max int) {
	if len(key) <= max {
		p.Key = string(key)
		return
	}
	s := sha256.Sum256(key)
	p.Key, p.KeySize, p.KeySHA256 = string(key[:max]), len(key), hex.EncodeToString(s[:])
}
