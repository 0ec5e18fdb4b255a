package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"

	"github.com/streamlearner/streamlearner/internal/dev/embedded"
)

// BenchmarkProduceBatches is the output path's cost per batch at 1,024
// partitions: batches of 39 predictions (what a flush holds at 1,024
// input partitions and the default --flush-interval), lz4, from each of
// 1,024 input partitions in turn, through one send queue and the
// member's limit of requests in flight to a 1,024-partition topic on
// the embedded broker. As in the member, requestsInFlight flushes are
// under way at once, each writer an idempotent producer. The broker runs
// in the process, so cpu-ns/op counts its share too; a profile tells
// them apart.
func BenchmarkProduceBatches(b *testing.B) {
	const parts, perBatch, writers = 1024, 39, requestsInFlight
	br, err := embedded.Start(embedded.Config{Partitions: parts, Topics: []string{"out"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(br.Close)
	c, err := (&Config{Compression: "lz4"}).codec()
	if err != nil {
		b.Fatal(err)
	}
	tr := &kafka.Transport{}
	b.Cleanup(tr.CloseIdleConnections)
	counted := &countingTransport{rt: tr}
	client := &kafka.Client{Addr: kafka.TCP(br.Addr()), Transport: &limitedTransport{rt: counted, slots: make(chan struct{}, requestsInFlight)}}
	out := &producer{client: client, topic: "out", limit: 1 << 20, codec: c, q: newSendQueue()}
	msgs := make([][]kafka.Message, parts)
	for src := range msgs {
		msgs[src] = benchPredictions(src, perBatch)
	}
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := benchCPU(b)
	counted.reset()
	for w := range writers {
		wg.Go(func() {
			idem := &idempotent{client: client}
			if err := idem.init(context.Background()); err != nil {
				b.Error(err)
				return
			}
			wr := &atLeastOnce{idem: idem}
			var buf []byte
			for src := w; left.Add(-1) >= 0; src = (src + writers) % parts {
				if err := out.produce(context.Background(), src, msgs[src], &buf, wr); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(benchCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(counted.count(protocol.Produce))/float64(b.N), "produces/op")
	b.ReportMetric(float64(counted.count(protocol.Metadata))/float64(b.N), "metadata/op")
}

// benchPredictions is n predictions of input partition src, as a flush
// hands them to the producer.
func benchPredictions(src, n int) []kafka.Message {
	hdrs := []kafka.Header{{Key: HeaderSourcePartition, Value: []byte(strconv.Itoa(src))}}
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{
			Key:     fmt.Appendf(nil, "in/%d/%d", src, 1000+i),
			Value:   fmt.Appendf(nil, `{"topic":"in","partition":%d,"offset":%d,"key":null,"prediction":-1,"margin":-0.%d,"label":-1,"mistake":false,"learner":"rbp:budget=100","support":100,"seq":%d}`, src, 1000+i, 123456789+i*7919, 1000+i),
			Headers: hdrs,
		}
	}
	return msgs
}

// benchCPU is the process's user and system time.
func benchCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
