package pipeline

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
	"github.com/streamlearner/streamlearner/internal/model"
)

// memCheckpoints keeps snapshots in memory, for the pipeline's own tests
// (package checkpoint builds on this one).
type memCheckpoints struct {
	mu    sync.Mutex
	snaps map[string]*State
	n     int
}

func (c *memCheckpoints) Restore(_ context.Context, _ Partition, _ int64, meta string) (*State, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, base := checkpoint.NewModelOffset(meta); meta == "" || base {
		return nil, nil
	}
	s, ok := c.snaps[meta]
	if !ok {
		return nil, fmt.Errorf("no snapshot %q", meta)
	}
	b, _ := s.Model.MarshalBinary()
	m, err := model.Unmarshal(b)
	if err != nil {
		return nil, err
	}
	return &State{Model: m, NextOffset: s.NextOffset, LabelTopic: s.LabelTopic, LabelOffset: s.LabelOffset, Snapshot: meta, SnapshotBytes: len(b)}, nil
}

// get is the snapshot named name (nil: none).
func (c *memCheckpoints) get(name string) *State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snaps[name]
}

// savesOf is how many snapshots of input partition p were saved.
func (c *memCheckpoints) savesOf(p int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for name := range c.snaps {
		if strings.HasPrefix(name, fmt.Sprintf("in/%d/", p)) {
			n++
		}
	}
	return n
}

func (c *memCheckpoints) Save(_ context.Context, p Partition, _ int32, st *State) (string, int, error) {
	b, err := st.Model.MarshalBinary()
	if err != nil {
		return "", 0, err
	}
	m, err := model.Unmarshal(b)
	if err != nil {
		return "", 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snaps == nil {
		c.snaps = map[string]*State{}
	}
	c.n++
	name := fmt.Sprintf("%s/%d/%d", p.Topic, p.ID, c.n)
	c.snaps[name] = &State{Model: m, NextOffset: st.NextOffset, LabelTopic: st.LabelTopic, LabelOffset: st.LabelOffset}
	return name, len(b), nil
}

func (c *memCheckpoints) Committed(context.Context, Partition, string) {}

// readFetched reads partition p of topic from the start until want
// records or d, reading committed unless uncommitted.
func readFetched(t *testing.T, addr, topic string, p, want int, uncommitted bool, d time.Duration) []fetch.Record {
	t.Helper()
	return readRecords(t, addr, topic, p, 0, want, uncommitted, false, d)
}

// readRecords reads partition p of topic from offset from until want
// records or d, reading committed unless uncommitted. A failed fetch fails
// the test, or with retry (a broker under faults) is tried again from
// where the reader stands.
func readRecords(t *testing.T, addr, topic string, p int, from int64, want int, uncommitted, retry bool, d time.Duration) []fetch.Record {
	t.Helper()
	r, err := fetch.NewReader(fetch.Config{Addr: kafka.TCP(addr), Topic: topic, Partition: p, ReadUncommitted: uncommitted, MaxBytes: 1 << 20}, from)
	if err != nil {
		t.Fatal(err)
	}
	var out []fetch.Record
	deadline := time.Now().Add(d)
	for len(out) < want && time.Now().Before(deadline) {
		b, err := r.Fetch(context.Background(), 200*time.Millisecond)
		if err != nil && retry {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range b.Records {
			rec.Key, rec.Value = append([]byte(nil), rec.Key...), append([]byte(nil), rec.Value...)
			out = append(out, rec)
		}
	}
	return out
}

// TestAbortedTransactionRewinds: under exactly-once, a transaction whose
// commit fails is aborted, the partition's model goes back to the last
// committed snapshot and the records are read again, so a read_committed
// consumer sees every prediction once, each the one an uninterrupted run
// makes, while a read_uncommitted one sees the aborted transaction's too.
func TestAbortedTransactionRewinds(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	toOne := kafka.BalancerFunc(func(kafka.Message, ...int) int { return 1 })
	msgs := make([]kafka.Message, 400)
	for i := range msgs {
		y := 1 - 2*(i%3%2)
		msgs[i] = kafka.Message{Value: fmt.Appendf(nil, `{"label": %d, "features": {"1": %d, "%d": 1, "%d": 0.5}}`, y, y, 2+i%7, 9+i%5)}
	}
	produce(t, b, "in", msgs, toOne)
	// The broker refuses the second commit of offsets that names
	// partition 1 (the others are empty), as a broker in trouble would.
	commits := 0
	c := b.Cluster()
	c.ControlKey(int16(kmsg.TxnOffsetCommit), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.TxnOffsetCommitRequest)
		if !namesPartition(req, "in", 1) {
			c.KeepControl()
			return nil, nil, false
		}
		if commits++; commits != 2 {
			c.KeepControl()
			return nil, nil, false
		}
		return refuseOffsets(req, kerr.UnknownServerError.Code), nil, true
	})
	cfg := testConfig(t, b, "rbp:budget=20")
	cfg.ProcessingGuarantee, cfg.Checkpoints, cfg.Metrics = ExactlyOnce, &memCheckpoints{}, NewMetrics(nil)
	cfg.FlushRecords, cfg.CheckpointEvery, cfg.CommitInterval = 40, 100, 300*time.Millisecond
	runMember(t, cfg)
	got := readFetched(t, b.Addr(), "out", 1, len(msgs), false, 30*time.Second)
	if len(got) != len(msgs) {
		t.Fatalf("%d committed predictions for %d records", len(got), len(msgs))
	}
	twin, err := model.New(cfg.ModelConfig(1))
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range got {
		want, _ := twin.Step(msgs[i].Value)
		p := decodePrediction(t, rec.Value)
		if p.Offset != int64(i) || p.Margin != want.Margin {
			t.Fatalf("committed prediction %d: offset %d margin %v; the uninterrupted run's margin %v", i, p.Offset, p.Margin, want.Margin)
		}
	}
	if n := len(readFetched(t, b.Addr(), "out", 1, len(msgs)+1000, true, 2*time.Second)); n <= len(msgs) {
		t.Errorf("read_uncommitted: %d predictions, want more than %d (the aborted transaction's)", n, len(msgs))
	}
	if a := testutil.ToFloat64(cfg.Metrics.Transactions.WithLabelValues("aborted", "error")); a != 1 {
		t.Errorf("%v aborted transactions counted, want 1", a)
	}
	// librdkafka agrees: kcat reading committed sees each prediction
	// once, reading uncommitted the aborted ones too.
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("STREAMLEARNER_REQUIRE_KCAT") != "" {
			t.Fatal("kcat not installed")
		}
		t.Log("kcat not installed: librdkafka's reading not checked")
		return
	}
	for _, iso := range []string{"read_committed", "read_uncommitted"} {
		out, err := exec.Command(kcat, "-C", "-b", b.Addr(), "-t", "out", "-p", "1", "-o", "beginning", "-e", "-q",
			"-X", "isolation.level="+iso, "-f", "%k\n").Output()
		if err != nil {
			t.Fatalf("kcat %s: %v", iso, err)
		}
		keys := strings.Fields(string(out))
		distinct := map[string]bool{}
		for _, k := range keys {
			distinct[k] = true
		}
		if len(distinct) != len(msgs) || iso == "read_committed" && len(keys) != len(msgs) || iso == "read_uncommitted" && len(keys) <= len(msgs) {
			t.Errorf("kcat %s: %d predictions, %d distinct, for %d records", iso, len(keys), len(distinct), len(msgs))
		}
	}
}

func decodePrediction(t *testing.T, b []byte) codec.Prediction {
	t.Helper()
	p, err := codec.DecodePrediction(b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExactlyOnceConfig(t *testing.T) {
	b := startBroker(t)
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"defaults", func(*Config) {}, ""},
		{"no store", func(c *Config) { c.Checkpoints = nil }, "needs a checkpoint store"},
		{"uncommitted input", func(c *Config) { c.ReadUncommitted = true }, "reads committed input only"},
		{"commit interval", func(c *Config) { c.CommitInterval, c.TransactionTimeout = 6*time.Second, 10*time.Second }, "half the transaction timeout"},
		{"unknown", func(c *Config) { c.ProcessingGuarantee = "exactly-twice" }, "want at-least-once or exactly-once"},
	} {
		cfg := testConfig(t, b, "perceptron")
		cfg.ProcessingGuarantee, cfg.Checkpoints = ExactlyOnce, &memCheckpoints{}
		c.edit(&cfg)
		err := cfg.Validate()
		if (err != nil) != (c.want != "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.want == "" && (cfg.TransactionalIDPrefix != "g" || cfg.CommitInterval != 500*time.Millisecond || cfg.TransactionTimeout != 10*time.Second) {
			t.Errorf("defaults: prefix %q, commit interval %v, timeout %v", cfg.TransactionalIDPrefix, cfg.CommitInterval, cfg.TransactionTimeout)
		}
	}
}

// namesPartition reports whether an offset commit names the partition.
func namesPartition(req *kmsg.TxnOffsetCommitRequest, topic string, p int32) bool {
	for _, t := range req.Topics {
		for _, tp := range t.Partitions {
			if t.Topic == topic && tp.Partition == p {
				return true
			}
		}
	}
	return false
}

// refuseOffsets answers an offset commit with code for every partition.
func refuseOffsets(req *kmsg.TxnOffsetCommitRequest, code int16) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, tp := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = tp.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
