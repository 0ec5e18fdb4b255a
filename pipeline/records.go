package pipeline

import (
	"strconv"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
)

// Headers that the service adds to dead letters (and, for the source
// partition, to predictions, where the partitioner reads it).
const (
	HeaderError           = "streamlearner.error"            // the codec reason, e.g. invalid_json
	HeaderErrorDetail     = "streamlearner.error.detail"     // human-readable detail
	HeaderSourceTopic     = "streamlearner.source.topic"     // input topic
	HeaderSourcePartition = "streamlearner.source.partition" // input partition (decimal)
	HeaderSourceOffset    = "streamlearner.source.offset"    // input offset (decimal)
)

// deadLetter keeps the original key, value and headers and adds the error
// and the record's origin, so nothing of the input is lost.
func deadLetter(m kafka.Message, reason codec.Reason, detail string) kafka.Message {
	h := make([]kafka.Header, 0, len(m.Headers)+5)
	h = append(h, m.Headers...)
	h = append(h,
		kafka.Header{Key: HeaderError, Value: []byte(reason)},
		kafka.Header{Key: HeaderErrorDetail, Value: []byte(detail)},
		kafka.Header{Key: HeaderSourceTopic, Value: []byte(m.Topic)},
		kafka.Header{Key: HeaderSourcePartition, Value: []byte(strconv.Itoa(m.Partition))},
		kafka.Header{Key: HeaderSourceOffset, Value: []byte(strconv.FormatInt(m.Offset, 10))},
	)
	return kafka.Message{Key: m.Key, Value: m.Value, Headers: h}
}

// sourcePartitioner sends each output record to partition
// (source partition mod n), so that the predictions of one input
// partition stay in order in one output partition.
type sourcePartitioner struct{}

func (sourcePartitioner) Balance(msg kafka.Message, partitions ...int) int {
	for _, h := range msg.Headers {
		if h.Key == HeaderSourcePartition {
			if p, err := strconv.Atoi(string(h.Value)); err == nil && p >= 0 {
				return partitions[p%len(partitions)]
			}
		}
	}
	return partitions[0]
}
