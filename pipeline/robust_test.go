package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

func toPartition(p int) kafka.Balancer {
	return kafka.BalancerFunc(func(kafka.Message, ...int) int { return p })
}

func headers(m kafka.Message) map[string]string {
	h := map[string]string{}
	for _, x := range m.Headers {
		if _, dup := h[x.Key]; !dup {
			h[x.Key] = string(x.Value)
		}
	}
	return h
}

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func goodRecord(i int) []byte {
	x := sparse.Vector{Idx: []uint32{uint32(i%7 + 1), 9}, Val: []float64{1, float64(i%3) - 1 + 0.5}}
	return codec.AppendJSON(nil, codec.Example{X: x, Label: strconv.Itoa(2*(i%2) - 1)})
}

// committedOffset is the group's committed offset of in/p (−1: none).
func committedOffset(t *testing.T, b *embedded.Broker, p int) int64 {
	t.Helper()
	return committedOffsetOf(t, b, "in", p)
}

// committedOffsetOf is group g's committed offset of topic's partition p.
func committedOffsetOf(t *testing.T, b *embedded.Broker, topic string, p int) int64 {
	t.Helper()
	cl := &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}}
	resp, err := cl.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: "g", Topics: map[string][]int{topic: {p}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range resp.Topics[topic] {
		if op.Partition == p {
			return op.CommittedOffset
		}
	}
	return -1
}

// Records the broker accepted must never stall their partition, however
// large: a 1,048,400-byte invalid record, two 600 KB ones in one backlog,
// a valid record with a 200 KB key, then 3,000 ordinary records. Every
// one gets its dead letter or prediction, each within the 1 MiB topics, and
// the partition commits to its end.
func TestOversizeRecordsDoNotStallThePartition(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	huge := bytes.Repeat([]byte("x"), 1_048_400)
	big := bytes.Repeat([]byte("{"), 600_000)
	produce(t, b, "in", []kafka.Message{{Key: []byte("huge"), Value: huge}}, toPartition(0))
	produce(t, b, "in", []kafka.Message{{Value: big}}, toPartition(0))
	produce(t, b, "in", []kafka.Message{{Value: big}}, toPartition(0))
	longKey := bytes.Repeat([]byte{1}, 200_000) // 6 bytes each once JSON-escaped
	produce(t, b, "in", []kafka.Message{{Key: longKey, Value: goodRecord(0)}}, toPartition(0))
	var rest []kafka.Message
	for i := range 3000 {
		rest = append(rest, kafka.Message{Value: goodRecord(i)})
	}
	produce(t, b, "in", rest, toPartition(0))

	cfg := testConfig(t, b, "perceptron")
	cfg.CheckpointInterval = 200 * time.Millisecond
	cfg.Metrics = NewMetrics(nil)
	runMember(t, cfg)
	dead := readTopic(t, b, "in.dlq", 3, 30*time.Second)
	preds := readTopic(t, b, "out", 3001, 30*time.Second)
	if len(dead) != 3 || len(preds) != 3001 {
		t.Fatalf("%d dead letters and %d predictions, want 3 and 3001", len(dead), len(preds))
	}
	for _, d := range dead {
		h := headers(d.msg)
		if d.msg.Headers[0].Key != HeaderError || h[HeaderSourceOffset] == "" {
			t.Fatalf("dead letter headers %v", d.msg.Headers)
		}
		if size := recordSize(&d.msg); size > 1<<20 {
			t.Fatalf("dead letter of %d bytes", size)
		}
		if h[HeaderSourceOffset] == "0" {
			if h[HeaderValueSize] != "1048400" || h[HeaderValueSHA256] != hexSHA(huge) || !bytes.HasPrefix(huge, d.msg.Value) || len(d.msg.Value) < 1_000_000 {
				t.Fatalf("cut dead letter: %d bytes kept, headers %v", len(d.msg.Value), h)
			}
		} else if !bytes.Equal(d.msg.Value, big) || h[HeaderValueSize] != "" {
			t.Fatalf("a 600 KB dead letter fits whole, got %d bytes, headers %v", len(d.msg.Value), h)
		}
	}
	for _, r := range preds {
		p, err := codec.DecodePrediction(r.msg.Value)
		if err != nil {
			t.Fatal(err)
		}
		if p.Offset == 3 && (p.KeySize != 200_000 || p.KeySHA256 != hexSHA(longKey) || len(p.Key) != 1024) {
			t.Fatalf("long key carried as %d bytes, size %d, sha %q", len(p.Key), p.KeySize, p.KeySHA256)
		}
	}
	waitFor(t, "the commit to reach the end", 20*time.Second, func() bool { return committedOffset(t, b, 0) == 3004 })
}

// A prediction that cannot fit its topic (here: a key allowed to be long
// enough to overflow 1 MiB once JSON-escaped) is refused for good; it
// becomes a dead letter and the partition goes on.
func TestRefusedPredictionBecomesADeadLetter(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	longKey := bytes.Repeat([]byte{1}, 200_000)
	produce(t, b, "in", []kafka.Message{{Key: longKey, Value: goodRecord(1)}}, toPartition(1))
	var rest []kafka.Message
	for i := range 100 {
		rest = append(rest, kafka.Message{Value: goodRecord(i)})
	}
	produce(t, b, "in", rest, toPartition(1))
	cfg := testConfig(t, b, "perceptron")
	cfg.MaxKeyBytes = 1 << 20
	cfg.Metrics = NewMetrics(nil)
	runMember(t, cfg)
	dead := readTopic(t, b, "in.dlq", 1, 30*time.Second)
	preds := readTopic(t, b, "out", 100, 30*time.Second)
	if len(dead) != 1 || len(preds) != 100 {
		t.Fatalf("%d dead letters, %d predictions; want 1 and 100", len(dead), len(preds))
	}
	h := headers(dead[0].msg)
	if h[HeaderError] != string(ReasonOutputRefused) || h[HeaderSourceOffset] != "0" || h[HeaderSourcePartition] != "1" {
		t.Fatalf("dead letter headers %v", h)
	}
	if got := testutil.ToFloat64(cfg.Metrics.DeadLetters.WithLabelValues("1", string(ReasonOutputRefused))); got != 1 {
		t.Fatalf("output_refused dead letters counted %v", got)
	}
}

// 1e308 passes as a float but overflows every kernel that squares it: it is
// refused by the codec (value_too_large); a record that overflows only the
// polynomial kernel of high degree is refused by the learner
// (kernel_overflow). Neither is predicted or learned, and the ordinary
// records after them keep finite margins, equal to a model that never saw
// the bad ones.
func TestNonFiniteNeverPoisonsTheModel(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	var msgs []kafka.Message
	msgs = append(msgs, kafka.Message{Value: []byte("1 1:1e308")})
	msgs = append(msgs, kafka.Message{Value: []byte("1 1:1e9 2:1e9 3:1e9")}) // (3e18+1)^20 overflows
	var good [][]byte
	for i := range 100 {
		good = append(good, []byte(fmt.Sprintf("%+d 1:%g 5:1", 2*(i%2)-1, float64(i%10)/10)))
		msgs = append(msgs, kafka.Message{Value: good[i]})
	}
	produce(t, b, "in", msgs, toPartition(2))
	cfg := testConfig(t, b, "perceptron")
	k, err := learners.ParseKernel("poly:degree=20")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model.Kernel = k
	cfg.Metrics = NewMetrics(nil)
	runMember(t, cfg)
	dead := readTopic(t, b, "in.dlq", 2, 30*time.Second)
	preds := readTopic(t, b, "out", 100, 30*time.Second)
	if len(dead) != 2 || len(preds) != 100 {
		t.Fatalf("%d dead letters, %d predictions; want 2 and 100", len(dead), len(preds))
	}
	reasons := map[string]string{}
	for _, d := range dead {
		h := headers(d.msg)
		reasons[h[HeaderSourceOffset]] = h[HeaderError]
	}
	if reasons["0"] != "value_too_large" || reasons["1"] != learners.RefusedKernel {
		t.Fatalf("reasons %v", reasons)
	}
	twin, _ := learners.New("perceptron", k, cfg.Model.Seed+2)
	margins := map[int64]float64{}
	for _, r := range preds {
		p, _ := codec.DecodePrediction(r.msg.Value)
		margins[p.Offset] = p.Margin
	}
	for i, g := range good {
		ex, _ := codec.Decode(g, codec.Limits{})
		y, _, _ := codec.LabelMap{}.Map(ex.Label)
		want := twin.Round(ex.X, y).Margin
		if got := margins[int64(i+2)]; got != want || math.IsNaN(got) {
			t.Fatalf("record %d: margin %v, a model without the bad records %v", i, got, want)
		}
	}
	mt := cfg.Metrics
	if c, l, p := testutil.ToFloat64(mt.Consumed.WithLabelValues("2")), testutil.ToFloat64(mt.Learned.WithLabelValues("2")), testutil.ToFloat64(mt.Predicted.WithLabelValues("2")); c != 102 || l != 100 || p != 100 {
		t.Fatalf("consumed %v, learned %v, predicted %v; want 102, 100, 100", c, l, p)
	}
}

// An input header in the service's namespace is carried, renamed, behind
// the service's own: it cannot route the dead letter or pass for the
// service's word.
func TestForgedHeadersAreRenamed(t *testing.T) {
	b := startBroker(t, "in", "out", "in.dlq")
	produce(t, b, "in", []kafka.Message{{Value: []byte("not a record"), Headers: []kafka.Header{
		{Key: HeaderSourcePartition, Value: []byte("3")}, {Key: HeaderError, Value: []byte("none")}, {Key: "trace", Value: []byte("t1")},
	}}}, toPartition(0))
	runMember(t, testConfig(t, b, "perceptron"))
	dead := readTopic(t, b, "in.dlq", 1, 30*time.Second)
	if len(dead) != 1 {
		t.Fatalf("%d dead letters", len(dead))
	}
	d := dead[0]
	if d.partition != 0 {
		t.Fatalf("dead letter of partition 0 routed to DLQ partition %d", d.partition)
	}
	var own, renamed []string
	for _, h := range d.msg.Headers {
		switch {
		case strings.HasPrefix(h.Key, "streamlearner."):
			own = append(own, h.Key+"="+string(h.Value))
		case strings.HasPrefix(h.Key, OriginalHeaderPrefix):
			renamed = append(renamed, h.Key+"="+string(h.Value))
		}
	}
	if d.msg.Headers[0].Key != HeaderError || fmt.Sprint(renamed) != "[original.streamlearner.source.partition=3 original.streamlearner.error=none]" {
		t.Fatalf("headers %v", d.msg.Headers)
	}
	for _, o := range own {
		if o == HeaderSourcePartition+"=3" || o == HeaderError+"=none" {
			t.Fatalf("a forged header kept its name: %v", own)
		}
	}
	if headers(d.msg)["trace"] != "t1" {
		t.Fatalf("the input's own headers are kept: %v", d.msg.Headers)
	}
}

// With a transactional producer, the records of aborted transactions are
// neither predicted nor learned, and no transaction marker reaches the
// decoder (nothing in the dead-letter topic); reading uncommitted, the
// aborted records are played too, still without the markers.
func TestTransactionsAreReadCommitted(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	for _, uncommitted := range []bool{false, true} {
		t.Run(fmt.Sprint("uncommitted=", uncommitted), func(t *testing.T) {
			b := startBroker(t, "in", "out", "in.dlq")
			ctx := context.Background()
			txn := func(id string, commit bool, from int) {
				var vs [][]byte
				for i := range 5 {
					vs = append(vs, goodRecord(from+i))
				}
				if err := embedded.ProduceTransaction(ctx, b.Addr(), "in", 3, id, vs, commit); err != nil {
					t.Fatal(err)
				}
			}
			txn("a", false, 0)
			txn("b", true, 5)
			txn("a", true, 10)
			txn("b", false, 15)
			produce(t, b, "in", []kafka.Message{{Value: goodRecord(20)}}, toPartition(3))
			cfg := testConfig(t, b, "perceptron")
			cfg.ReadUncommitted = uncommitted
			cfg.Metrics = NewMetrics(nil)
			runMember(t, cfg)
			want := 11
			if uncommitted {
				want = 21
			}
			preds := readTopic(t, b, "out", want, 20*time.Second)
			time.Sleep(500 * time.Millisecond)
			if len(preds) != want {
				t.Fatalf("%d predictions, want %d", len(preds), want)
			}
			// Offsets: a 0–4 (aborted), marker 5, b 6–10, marker 11, a 12–16,
			// marker 17, b 18–22 (aborted), marker 23, plain 24.
			aborted := func(off int64) bool { return off <= 4 || off >= 18 && off <= 22 }
			for _, r := range preds {
				p, _ := codec.DecodePrediction(r.msg.Value)
				if aborted(p.Offset) && !uncommitted || p.Offset == 5 || p.Offset == 11 || p.Offset == 17 || p.Offset == 23 {
					t.Fatalf("prediction for offset %d", p.Offset)
				}
			}
			for _, r := range Reasons() {
				if dl := testutil.ToFloat64(cfg.Metrics.DeadLetters.WithLabelValues("3", string(r))); dl != 0 {
					t.Fatalf("%v dead letters (%s): markers were decoded", dl, r)
				}
			}
			if got := testutil.ToFloat64(cfg.Metrics.Learned.WithLabelValues("3")); got != float64(want) {
				t.Fatalf("learned %v, want %d", got, want)
			}
			waitFor(t, "the commit past the last marker", 20*time.Second, func() bool { return committedOffset(t, b, 3) == 25 })
		})
	}
}

// A missing output topic fails the start, naming it; unreachable brokers
// fail it after the connect timeout.
func TestStartFailsClearly(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "in.dlq")
	cfg := testConfig(t, b, "perceptron")
	err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), `output topic "out" does not exist`) {
		t.Fatalf("missing output topic: %v", err)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	cfg.Conn.Brokers = []string{addr}
	cfg.ConnectTimeout = 1500 * time.Millisecond
	t0 := time.Now()
	err = Run(context.Background(), cfg)
	if took := time.Since(t0); err == nil || !strings.Contains(err.Error(), "did not answer within 1.5s") || took > 10*time.Second {
		t.Fatalf("unreachable brokers: %v after %v", err, took)
	}
}

// A partition that cannot write its output is not ready: /readyz turns 503
// after the stuck threshold, the stuck gauge says so, and the lag gauge
// keeps growing as records arrive; once the writes go through, all is well
// again.
func TestStuckPartitionShowsInReadinessAndLag(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	cfg := testConfig(t, b, "perceptron")
	cfg.StuckAfter = time.Second
	cfg.LagInterval = 200 * time.Millisecond
	cfg.Metrics = NewMetrics(nil)
	runMember(t, cfg)
	waitFor(t, "readiness", 20*time.Second, cfg.Metrics.Ready)
	cl := &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}}
	if _, err := cl.DeleteTopics(context.Background(), &kafka.DeleteTopicsRequest{Topics: []string{"in.dlq"}}); err != nil {
		t.Fatal(err)
	}
	produce(t, b, "in", []kafka.Message{{Value: []byte("bad")}}, toPartition(1))
	waitFor(t, "not ready", 20*time.Second, func() bool { return !cfg.Metrics.Ready() })
	// Records that arrive while the partition is stuck show as lag.
	var more []kafka.Message
	for i := range 500 {
		more = append(more, kafka.Message{Value: goodRecord(i)})
	}
	produce(t, b, "in", more, toPartition(1))
	if got := testutil.ToFloat64(cfg.Metrics.Stuck); got != 1 {
		t.Fatalf("stuck partitions %v", got)
	}
	waitFor(t, "the lag to show", 10*time.Second, func() bool {
		return testutil.ToFloat64(cfg.Metrics.Lag.WithLabelValues("1")) >= 500
	})
	if _, err := cl.CreateTopics(context.Background(), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "in.dlq", NumPartitions: 4, ReplicationFactor: 1}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ready again", 30*time.Second, cfg.Metrics.Ready)
	waitFor(t, "the lag to drain", 20*time.Second, func() bool {
		return testutil.ToFloat64(cfg.Metrics.Lag.WithLabelValues("1")) == 0
	})
	if got := testutil.ToFloat64(cfg.Metrics.Stuck); got != 0 {
		t.Fatalf("stuck partitions %v after recovery", got)
	}
}

// An offset past the end of the log (a recreated topic) is not a silent
// loop: the worker says so, counts it, and reads from the log's start.
func TestOffsetOutOfRangeResetsLoudly(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	cl := &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}}
	if _, err := cl.OffsetCommit(context.Background(), &kafka.OffsetCommitRequest{GroupID: "g", GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{"in": {{Partition: 0, Offset: 5000}}}}); err != nil {
		t.Fatal(err)
	}
	var msgs []kafka.Message
	for i := range 50 {
		msgs = append(msgs, kafka.Message{Value: goodRecord(i)})
	}
	produce(t, b, "in", msgs, toPartition(0))
	cfg := testConfig(t, b, "perceptron")
	cfg.Metrics = NewMetrics(nil)
	runMember(t, cfg)
	preds := readTopic(t, b, "out", 50, 20*time.Second)
	if len(preds) != 50 {
		t.Fatalf("%d predictions after the reset, want 50", len(preds))
	}
	if got := testutil.ToFloat64(cfg.Metrics.OffsetResets.WithLabelValues("0")); got != 1 {
		t.Fatalf("offset resets %v", got)
	}
}

// Without a checkpoint store a partition the member keeps through a
// rebalance keeps its model: its margins after the rebalance are those of
// one uninterrupted model.
func TestKeptPartitionsKeepTheirModelsWithoutAStore(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	cfg := testConfig(t, b, "perceptron")
	_, assignedA := runMember(t, cfg)
	waitFor(t, "four partitions", 20*time.Second, func() bool { _, p := assignedA(); return len(p) == 4 })
	var first []kafka.Message
	for i := range 400 {
		first = append(first, kafka.Message{Value: goodRecord(i)})
	}
	produce(t, b, "in", first, &kafka.RoundRobin{})
	readTopic(t, b, "out", 400, 20*time.Second)
	waitFor(t, "commits", 20*time.Second, func() bool {
		for p := range 4 {
			if committedOffset(t, b, p) != 100 {
				return false
			}
		}
		return true
	})
	_, assignedB := runMember(t, cfg)
	waitFor(t, "two partitions each", 30*time.Second, func() bool {
		ga, pa := assignedA()
		gb, pb := assignedB()
		return ga == gb && len(pa) == 2 && len(pb) == 2
	})
	_, kept := assignedA()
	var second []kafka.Message
	for i := range 400 {
		second = append(second, kafka.Message{Value: goodRecord(i + 7)})
	}
	produce(t, b, "in", second, &kafka.RoundRobin{})
	preds := readTopic(t, b, "out", 800, 30*time.Second)
	inputs := readTopic(t, b, "in", 800, 30*time.Second)
	margins := map[[2]int64]float64{}
	for _, r := range preds {
		p, _ := codec.DecodePrediction(r.msg.Value)
		margins[[2]int64{int64(p.Partition), p.Offset}] = p.Margin
	}
	for _, part := range kept {
		twin, _ := learners.New("perceptron", cfg.Model.Kernel, cfg.Model.Seed+uint64(part))
		n := 0
		for off := int64(0); off < 200; off++ {
			for _, r := range inputs {
				if r.partition == part && r.offset == off {
					ex, _ := codec.Decode(r.msg.Value, codec.Limits{})
					y, _, _ := codec.LabelMap{}.Map(ex.Label)
					want := twin.Round(ex.X, y).Margin
					if got, ok := margins[[2]int64{int64(part), off}]; !ok || got != want {
						t.Fatalf("kept partition %d offset %d: margin %v, one uninterrupted model %v", part, off, got, want)
					}
					n++
				}
			}
		}
		if n != 200 {
			t.Fatalf("partition %d: %d records", part, n)
		}
	}
}

// A model that will not fit is refused at start, saying what to lower;
// with many classes the estimate counts a learner per class.
func TestModelMemoryGuard(t *testing.T) {
	b := startBroker(t)
	cfg := testConfig(t, b, "tighter0:budget=10000")
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "--max-model-bytes") || !strings.Contains(err.Error(), "lower") {
		t.Fatalf("tighter0:budget=10000: %v", err)
	}
	cfg = testConfig(t, b, "tighter0:budget=2000")
	if err := cfg.Validate(); err != nil {
		t.Fatalf("tighter0:budget=2000 alone: %v", err)
	}
	cfg = testConfig(t, b, "tighter0:budget=2000")
	cfg.Model.Classes = []string{"auto"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "100 classes") {
		t.Fatalf("tighter0:budget=2000 over 100 classes: %v", err)
	}
	cfg = testConfig(t, b, "tighter0:budget=2000")
	cfg.Model.Classes, cfg.Model.MaxClasses = []string{"auto"}, 10
	if err := cfg.Validate(); err != nil {
		t.Fatalf("tighter0:budget=2000 over 10 classes: %v", err)
	}
}

// TestDegradedPartitionShowsInReadiness: a partition whose records are all
// dead-lettered, or whose predictions the brokers all refuse, reads and
// commits (it is never stuck) yet serves nobody: after degradedAfter such
// records it is counted in streamlearner_degraded_partitions and /readyz
// is 503 naming it and why, until a record is used and its prediction
// delivered. Both stayed ready before.
func TestDegradedPartitionShowsInReadiness(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	t.Run("dead-lettered", func(t *testing.T) {
		b := startBroker(t, "in", "out", "in.dlq")
		cfg := testConfig(t, b, "perceptron")
		cfg.Metrics = NewMetrics(nil)
		runMember(t, cfg)
		waitFor(t, "readiness", 20*time.Second, cfg.Metrics.Ready)
		var bad []kafka.Message
		for i := range degradedAfter {
			bad = append(bad, kafka.Message{Value: fmt.Appendf(nil, `{"id":%d,"amount":12.5}`, i)})
		}
		produce(t, b, "in", bad, toPartition(2))
		waitFor(t, "degraded", 20*time.Second, func() bool { return testutil.ToFloat64(cfg.Metrics.Degraded) == 1 })
		why := cfg.Metrics.Degradations()
		if cfg.Metrics.Ready() || len(why) != 1 || !strings.Contains(why[0], "partition 2: the last 1000 records were all dead-lettered (last reason missing_features)") {
			t.Fatalf("ready %v, %q", cfg.Metrics.Ready(), why)
		}
		produce(t, b, "in", []kafka.Message{{Value: goodRecord(1)}}, toPartition(2))
		waitFor(t, "ready again", 20*time.Second, cfg.Metrics.Ready)
		if got := testutil.ToFloat64(cfg.Metrics.Degraded); got != 0 {
			t.Fatalf("degraded partitions %v after a good record", got)
		}
	})
	t.Run("output refused", func(t *testing.T) {
		b := startBroker(t, "in", "in.dlq")
		cl := &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}}
		if _, err := cl.CreateTopics(context.Background(), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "out", NumPartitions: 4, ReplicationFactor: 1,
			ConfigEntries: []kafka.ConfigEntry{{ConfigName: "max.message.bytes", ConfigValue: "100"}}}}}); err != nil {
			t.Fatal(err)
		}
		cfg := testConfig(t, b, "perceptron")
		cfg.Metrics = NewMetrics(nil)
		var good []kafka.Message
		for i := range degradedAfter {
			good = append(good, kafka.Message{Value: goodRecord(i)})
		}
		produce(t, b, "in", good, toPartition(3))
		runMember(t, cfg)
		waitFor(t, "degraded", 30*time.Second, func() bool { return testutil.ToFloat64(cfg.Metrics.Degraded) == 1 })
		why := cfg.Metrics.Degradations()
		if cfg.Metrics.Ready() || len(why) != 1 || !strings.Contains(why[0], "partition 3: the last 1000 records all had their predictions refused by the brokers (last reason output_refused") {
			t.Fatalf("ready %v, %q", cfg.Metrics.Ready(), why)
		}
		if got := testutil.ToFloat64(cfg.Metrics.Stuck); got != 0 {
			t.Fatalf("stuck partitions %v", got)
		}
	})
}

// TestModelMemoryCountsThePendingStore: the estimate and the model-size
// guard count the records awaiting labels at the store's byte bound, not
// at a typical record's size times the count.
func TestModelMemoryCountsThePendingStore(t *testing.T) {
	b := startBroker(t)
	cfg := testConfig(t, b, "rbp:budget=100")
	cfg.DelayedLabels, cfg.PendingMaxBytes = true, 512<<20
	cfg.MaxModelBytes = 256 << 20
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--max-model-bytes") || !strings.Contains(err.Error(), "awaiting labels in 512 MB") {
		t.Fatalf("a pending store of 512 MB under a 256 MB limit: %v", err)
	}
	cfg.PendingMaxBytes = 64 << 20
	if err := cfg.Validate(); err != nil {
		t.Fatalf("64 MB: %v", err)
	}
	mem, per, err := cfg.ModelMemory()
	if err != nil || mem.Held < 64<<20 || mem.Held > 80<<20 || !strings.Contains(per, "in 64 MB") {
		t.Fatalf("estimate %+v %q %v", mem, per, err)
	}
}

// TestAutoCreateMakesTheOutputTopicsAtStart: with --auto-create the
// output and dead-letter topics exist once the member serves, before any
// record is written to them (a tail could not start while every record
// was dead-lettered). A missing input topic is not created:
// TestMissingInputTopicIsWaitedForNotCreated.
func TestAutoCreateMakesTheOutputTopicsAtStart(t *testing.T) {
	b := startBroker(t, "in", "other")
	cfg := testConfig(t, b, "perceptron")
	cfg.AutoCreateTopics = true
	cfg.Metrics = NewMetrics(nil)
	runMember(t, cfg)
	waitFor(t, "readiness", 20*time.Second, cfg.Metrics.Ready)
	cl := &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}}
	md, err := cl.Metadata(context.Background(), &kafka.MetadataRequest{Topics: []string{"out", "in.dlq"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range md.Topics {
		if tp.Error != nil || len(tp.Partitions) == 0 {
			t.Errorf("topic %s: %v, %d partitions", tp.Name, tp.Error, len(tp.Partitions))
		}
	}
}

// syncWriter lets a test read a log the member writes from its goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
