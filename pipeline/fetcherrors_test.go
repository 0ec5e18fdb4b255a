package pipeline

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A fetch the broker answers with an error (here a corrupt batch, as the
// fetcher reports a bad CRC) is counted and retried; the partition then
// goes on, and every record is predicted.
func TestFetchErrorsAreCountedAndRetried(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "out", "in.dlq"), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const bad = 3
	var failed atomic.Int64
	c.ControlKey(int16(kmsg.Fetch), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if failed.Load() >= bad {
			return nil, nil, false
		}
		failed.Add(1)
		req := r.(*kmsg.FetchRequest)
		res := req.ResponseKind().(*kmsg.FetchResponse)
		for _, rt := range req.Topics {
			t := kmsg.NewFetchResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewFetchResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, kerr.CorruptMessage.Code
				t.Partitions = append(t.Partitions, p)
			}
			res.Topics = append(res.Topics, t)
		}
		return res, nil, true
	})
	addr := c.ListenAddrs()[0]
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "in", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	const n = 50
	var msgs []kafka.Message
	for i := range n {
		msgs = append(msgs, kafka.Message{Value: fmt.Appendf(nil, `{"label": %d, "features": {"1": %g}}`, 1-2*(i%2), float64(i%7+1)/7)})
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	cfg := testConfigAt(t, addr, "rbp:budget=10")
	cfg.Metrics = NewMetrics(nil)
	runMember(t, cfg)
	waitFor(t, "every prediction", 30*time.Second, func() bool { return testutil.ToFloat64(cfg.Metrics.Produced) >= n })
	if got := testutil.ToFloat64(cfg.Metrics.FetchErrors); got != bad {
		t.Errorf("fetch errors counted %v, want %d", got, bad)
	}
}
