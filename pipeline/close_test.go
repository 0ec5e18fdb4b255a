package pipeline

import (
	"bytes"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// connGoroutines returns the ids of kafka-go's connection goroutines
// running now.
func connGoroutines() map[string]bool {
	var b bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&b, 2)
	ids := map[string]bool{}
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "kafka-go.(*conn).run") {
			ids[strings.Fields(g)[1]] = true
		}
	}
	return ids
}

// Run closes the connections it opened when it returns. They used to
// wait for their idle timeout (30 s), each with a goroutine and buffers:
// a process running members one after another (bench, tests) held
// hundreds.
func TestRunClosesItsConnections(t *testing.T) {
	b := startBroker(t, "in", "out", "in.dlq")
	before := connGoroutines()
	stop, assigned := runMember(t, testConfig(t, b, "lbp:budget=20"))
	waitFor(t, "an assignment", 20*time.Second, func() bool { _, p := assigned(); return len(p) > 0 })
	waitFor(t, "connections of the member", 10*time.Second, func() bool { return len(connGoroutines()) > len(before) })
	stop()
	left := 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		left = 0
		for id := range connGoroutines() {
			if !before[id] {
				left++
			}
		}
		if left == 0 {
			return
		}
	}
	t.Fatalf("%d connections of the member still open 5 s after Run returned", left)
}
