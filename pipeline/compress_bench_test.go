package pipeline

import (
	"fmt"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// BenchmarkCompressBatch is what compressing a flush of 100 predictions
// costs, per record, with each codec.
func BenchmarkCompressBatch(b *testing.B) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var msgs []kafka.Message
	for i := range 100 {
		msgs = append(msgs, kafka.Message{Key: fmt.Appendf(nil, "bench/2/%d", 1000+i), Value: fmt.Appendf(nil, `{"topic":"bench","partition":2,"offset":%d,"key":null,"prediction":-1,"margin":-0.%d,"label":-1,"mistake":false,"learner":"rbp:budget=100","support":100,"seq":%d}`, 1000+i, 123456789+i*7919, 1000+i), Headers: []kafka.Header{{Key: HeaderSourcePartition, Value: []byte("2")}}})
	}
	for _, name := range []string{"none", "lz4", "lz4-pierrec-defaults", "snappy", "zstd", "gzip"} {
		b.Run(name, func(b *testing.B) {
			c, err := (&Config{Compression: strings.TrimSuffix(name, "-pierrec-defaults")}).codec()
			if err != nil {
				b.Fatal(err)
			}
			if name == "lz4-pierrec-defaults" {
				c = compress.Lz4.Codec() // kafka-go's: 4 MiB blocks, a content checksum
			}
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				buf = appendRecordBatch(buf[:0], msgs, now, noProducer)
				if c != nil {
					if buf, err = compressBatch(buf, c); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/record")
			b.ReportMetric(float64(len(buf))/float64(len(msgs)), "bytes/record")
		})
	}
}
