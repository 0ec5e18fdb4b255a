// Package kafkaconntest checks, in tests, that code closes the kafka-go
// connections it opened: a kafka.Transport keeps each idle connection (a
// goroutine and its buffers) until its idle timeout, 30 s by default, so a
// transport not closed outlives its user.
package kafkaconntest

import (
	"bytes"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// Open returns the ids of the goroutines of kafka-go connections running
// now.
func Open() map[string]bool {
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

// Closed fails t unless every kafka-go connection opened since before
// (an Open) is closed within d.
func Closed(t testing.TB, before map[string]bool, d time.Duration) {
	t.Helper()
	left := 0
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		left = 0
		for id := range Open() {
			if !before[id] {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d kafka-go connections still open %v after their user returned", left, d)
		}
	}
}
