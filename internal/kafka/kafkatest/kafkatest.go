// Package kafkatest holds what the project's tests share about kafka-go.
package kafkatest

import (
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
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
