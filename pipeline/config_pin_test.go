package pipeline

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/streamlearner/streamlearner/internal/golden"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners"
)

// TestValidatePin holds what Validate answers — the first error, or the
// defaults it fills in — for a valid configuration and one mutation of
// it per rule, in testdata/validate.golden.
func TestValidatePin(t *testing.T) {
	base := func() Config {
		return Config{Conn: kafkaconn.Config{Brokers: []string{"127.0.0.1:9092"}}, Topic: "in", Group: "g", OutputTopic: "out",
			Model: model.Config{Learner: "rbp:budget=10", Kernel: learners.Kernel{Kind: learners.Linear}}}
	}
	cases := []struct {
		name string
		mut  func(c *Config)
	}{
		{"valid", func(c *Config) {}},
		{"no brokers", func(c *Config) { c.Conn.Brokers = nil }},
		{"no topic", func(c *Config) { c.Topic = "" }},
		{"no group", func(c *Config) { c.Group = "" }},
		{"no output", func(c *Config) { c.OutputTopic = "" }},
		{"no learner", func(c *Config) { c.Model.Learner = "" }},
		{"same topics", func(c *Config) { c.DLQTopic = "out" }},
		{"bad learner", func(c *Config) { c.Model.Learner = "nope" }},
		{"framed without registry", func(c *Config) { c.Model.Events = true; c.Model.Format = 2 }},
		{"negative pending", func(c *Config) { c.PendingMaxBytes = -1 }},
		{"bad reset", func(c *Config) { c.ResetOffsets = "yesterday" }},
		{"offset reset with label topic", func(c *Config) { c.ResetOffsets = "5"; c.LabelTopic = "labels" }},
		{"label topic is output", func(c *Config) { c.LabelTopic = "out" }},
		{"label topic", func(c *Config) { c.LabelTopic = "labels" }},
		{"delayed", func(c *Config) { c.DelayedLabels = true }},
		{"model too big", func(c *Config) { c.MaxModelBytes = 1000 }},
		{"bad start", func(c *Config) { c.StartOffset = "middle" }},
		{"negative fetch", func(c *Config) { c.FetchMaxBytes = -1 }},
		{"small messages", func(c *Config) { c.MaxMessageBytes = 100 }},
		{"slow heartbeat", func(c *Config) { c.HeartbeatInterval = time.Minute }},
		{"eos without checkpoints", func(c *Config) { c.ProcessingGuarantee = ExactlyOnce }},
		{"eos uncommitted", func(c *Config) {
			c.ProcessingGuarantee, c.ReadUncommitted, c.Checkpoints = ExactlyOnce, true, &memCheckpoints{}
		}},
		{"eos", func(c *Config) { c.ProcessingGuarantee, c.Checkpoints = ExactlyOnce, &memCheckpoints{} }},
		{"bad guarantee", func(c *Config) { c.ProcessingGuarantee = "twice" }},
		{"bad compression", func(c *Config) { c.Compression = "rar" }},
		{"negative snapshot rate", func(c *Config) { c.SnapshotMaxRate = -1 }},
		{"commit past timeout", func(c *Config) {
			c.ProcessingGuarantee, c.Checkpoints, c.CommitInterval = ExactlyOnce, &memCheckpoints{}, 6*time.Second
		}},
		{"set values kept", func(c *Config) {
			c.FlushRecords, c.FlushInterval, c.MaxKeyBytes, c.SnapshotMaxRate, c.Compression = 7, time.Second, 9, 1000, "zstd"
		}},
	}
	var b strings.Builder
	for _, tc := range cases {
		c := base()
		tc.mut(&c)
		fmt.Fprintf(&b, "== %s\n", tc.name)
		if err := c.Validate(); err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
			continue
		}
		writeScalars(&b, reflect.ValueOf(c), "")
	}
	golden.Check(t, "validate.golden", []byte(b.String()))
}

// writeScalars prints the exported fields of a struct that are plain
// values (no pointers, funcs or interfaces), one a line.
func writeScalars(b *strings.Builder, v reflect.Value, prefix string) {
	for i := 0; i < v.NumField(); i++ {
		f, fv := v.Type().Field(i), v.Field(i)
		if !f.IsExported() {
			continue
		}
		switch fv.Kind() {
		case reflect.Pointer, reflect.Func, reflect.Interface, reflect.Chan, reflect.Map:
			fmt.Fprintf(b, "%s%s set=%v\n", prefix, f.Name, !fv.IsNil())
		case reflect.Struct:
			if f.Type == reflect.TypeOf(time.Time{}) {
				continue
			}
			writeScalars(b, fv, prefix+f.Name+".")
		default:
			fmt.Fprintf(b, "%s%s=%v\n", prefix, f.Name, fv.Interface())
		}
	}
}
