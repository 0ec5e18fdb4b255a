package pipeline

import (
	"testing"
	"time"

	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn/kafkaconntest"
)

// Run closes the connections it opened when it returns. They used to
// wait for their idle timeout (30 s), each with a goroutine and buffers:
// a process running members one after another (bench, tests) held
// hundreds.
func TestRunClosesItsConnections(t *testing.T) {
	b := startBroker(t, "in", "out", "in.dlq")
	before := kafkaconntest.Open()
	stop, assigned := runMember(t, testConfig(t, b, "lbp:budget=20"))
	waitFor(t, "an assignment", 20*time.Second, func() bool { _, p := assigned(); return len(p) > 0 })
	waitFor(t, "connections of the member", 10*time.Second, func() bool { return len(kafkaconntest.Open()) > len(before) })
	stop()
	kafkaconntest.Closed(t, before, 5*time.Second)
}
