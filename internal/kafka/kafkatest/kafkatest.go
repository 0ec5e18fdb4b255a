// Package kafkatest holds what the project's tests share about kafka-go.
package kafkatest

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CloseReader closes r, waiting at most 5 s: kafka-go's Reader.Close can
// hang (segmentio/kafka-go#1248), and a test must not outlive its own
// deadline for it. A Close still running is logged and left behind.
func CloseReader(t testing.TB, r *kafka.Reader) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		r.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		c := r.Config()
		t.Logf("reader of %s/%d: Close still running after 5 s (segmentio/kafka-go#1248); left behind", c.Topic, c.Partition)
	}
}

// CountRequests counts the requests of kind key the embedded cluster c
// answers from now on. The first is held until hold returns, which
// waits until what the test sends meanwhile has queued behind it: how
// the tests of shared requests (many partitions, a few requests) see what
// the broker saw, whatever the speed of the machine's scheduler.
func CountRequests(c *kfake.Cluster, key kmsg.Key, hold func(first kmsg.Request)) func() int {
	var n atomic.Int32
	c.ControlKey(int16(key), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if n.Add(1) == 1 {
			hold(r)
		}
		return nil, nil, false
	})
	return func() int { return int(n.Load()) }
}

// WaitFor polls ok every millisecond until it holds or 10 s have passed:
// a CountRequests hold gives up rather than hang a test whose code sent
// fewer requests than it expected.
func WaitFor(ok func() bool) {
	for deadline := time.Now().Add(10 * time.Second); !ok() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}
