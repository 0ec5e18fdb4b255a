package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkatest"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners"
)

func startBroker(t *testing.T, topics ...string) *embedded.Broker {
	t.Helper()
	b, err := embedded.Start(embedded.Config{Partitions: 4, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// testConfig is a member of group g on broker b with short group timings.
func testConfig(t *testing.T, b *embedded.Broker, learner string) Config {
	return testConfigAt(t, b.Addr(), learner)
}

// testConfigAt is testConfig for the broker at addr.
func testConfigAt(t *testing.T, addr, learner string) Config {
	k, err := learners.ParseKernel("rbf:gamma=0.02")
	if err != nil {
		t.Fatal(err)
	}
	return Config{Model: model.Config{Learner: learner, Kernel: k, Seed: 7},
		Conn: kafkaconn.Config{Brokers: []string{addr}}, Topic: "in", Group: "g", OutputTopic: "out",
		FlushInterval:     50 * time.Millisecond,
		HeartbeatInterval: 200 * time.Millisecond, SessionTimeout: 3 * time.Second, RebalanceTimeout: 3 * time.Second,
		ShutdownTimeout: 3 * time.Second, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel),
	}
}

// runMember starts a member and returns a function that stops it and
// waits for it, and the latest assignment it reported.
func runMember(t *testing.T, cfg Config) (stop func(), assigned func() (int32, []int)) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var gen int32
	var parts []int
	cfg.OnAssign = func(g int32, p []int) {
		mu.Lock()
		gen, parts = g, p
		mu.Unlock()
	}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("member: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("member did not stop within 20 s")
		}
	}
	t.Cleanup(stop)
	return stop, func() (int32, []int) {
		mu.Lock()
		defer mu.Unlock()
		return gen, append([]int(nil), parts...)
	}
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type record struct {
	partition int
	offset    int64
	msg       kafka.Message
}

// readTopic reads every partition of topic from the start until want
// records arrived (or d passed) and returns them.
func readTopic(t *testing.T, b *embedded.Broker, topic string, want int, d time.Duration) []record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	var out []record
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b.Addr()}, Topic: topic, Partition: p, MaxWait: time.Second, MaxBytes: 16 << 20})
			defer kafkatest.CloseReader(t, r)
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					return
				}
				mu.Lock()
				out = append(out, record{p, m.Offset, m})
				n := len(out)
				mu.Unlock()
				if n >= want {
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	return out
}

func produce(t *testing.T, b *embedded.Broker, topic string, msgs []kafka.Message, balancer kafka.Balancer) {
	t.Helper()
	// A transport of its own: kafka-go's default one, shared by the whole
	// test process, keeps a broker address's metadata for seconds, and a
	// port freed by an earlier test's broker can be this broker's, with
	// other topics (a write to "labels" failed UNKNOWN_TOPIC_OR_PARTITION
	// on a broker that had it).
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Topic: topic, Balancer: balancer, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: 1000, BatchBytes: 16 << 20, Transport: tr}
	defer w.Close()
	for i := 0; i < len(msgs); i += 1000 {
		// A metadata answer that fails (a fault the test injected: the
		// transport of its own has no cached answer to fall back on) fails
		// the whole write before anything is written, which kafka-go does
		// not retry; a producer would, so this does. Partial failures
		// (WriteErrors) are not retried: that would write records twice.
		for try := 0; ; try++ {
			err := w.WriteMessages(context.Background(), msgs[i:min(i+1000, len(msgs))]...)
			var ke kafka.Error
			if err == nil {
				break
			}
			if errors.As(err, &ke) && ke.Temporary() && try < 50 {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			t.Fatal(err)
		}
	}
}

// TestTwoMembersServeA9A is the service's main contract: two members split
// a 4-partition topic; every input record gets exactly one prediction; each
// partition's margins are bit-identical to an offline run over that
// partition's records in order (unlabeled records predicted, not learned);
// and when one member leaves, the other takes over its partitions.
func TestTwoMembersServeA9A(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	const spec = "rbp:budget=60"
	cfg := testConfig(t, b, spec)
	stopA, assignedA := runMember(t, cfg)
	_, assignedB := runMember(t, cfg)
	waitFor(t, "both members to hold two partitions each", 30*time.Second, func() bool {
		ga, pa := assignedA()
		gb, pb := assignedB()
		return ga == gb && len(pa) == 2 && len(pb) == 2
	})

	set, err := dataset.Load(context.Background(), "../testdata/a9a.gz", dataset.Options{Limit: 12000})
	if err != nil {
		t.Fatal(err)
	}
	msgs := make([]kafka.Message, set.Len())
	for i := range msgs {
		ex := codec.Example{X: set.X[i], Label: strconv.Itoa(set.Y[i])}
		if i%10 == 3 {
			ex.Label = "" // unlabeled: predicted, not learned
		}
		msgs[i] = kafka.Message{Key: []byte(strconv.Itoa(i)), Value: codec.AppendJSON(nil, ex)}
	}
	produce(t, b, "in", msgs, &kafka.RoundRobin{})

	preds := readTopic(t, b, "out", len(msgs), 60*time.Second)
	if len(preds) != len(msgs) {
		t.Fatalf("%d predictions for %d records", len(preds), len(msgs))
	}
	byPart := map[int]map[int64]codec.Prediction{}
	for _, r := range preds {
		p, err := codec.DecodePrediction(r.msg.Value)
		if err != nil {
			t.Fatal(err)
		}
		if string(r.msg.Key) != codec.PredictionKey("in", p.Partition, p.Offset) {
			t.Fatalf("prediction key %q for %+v", r.msg.Key, p)
		}
		if int(p.Partition) != r.partition {
			t.Fatalf("prediction of input partition %d in output partition %d", p.Partition, r.partition)
		}
		if byPart[r.partition] == nil {
			byPart[r.partition] = map[int64]codec.Prediction{}
		}
		if _, dup := byPart[r.partition][p.Offset]; dup {
			t.Fatalf("two predictions for partition %d offset %d", r.partition, p.Offset)
		}
		byPart[r.partition][p.Offset] = p
	}

	// The offline twin: each partition's records, in order, through a
	// learner seeded as the service seeds it.
	inputs := readTopic(t, b, "in", len(msgs), 30*time.Second)
	perPart := map[int][]record{}
	for _, r := range inputs {
		perPart[r.partition] = append(perPart[r.partition], r)
	}
	for part, recs := range perPart {
		l, _ := learners.New(spec, cfg.Model.Kernel, cfg.Model.Seed+uint64(part))
		for i, r := range recs {
			if r.offset != int64(i) {
				t.Fatalf("partition %d: offset %d at position %d", part, r.offset, i)
			}
			ex, err := codec.Decode(r.msg.Value, codec.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			y, _, _ := codec.LabelMap{}.Map(ex.Label)
			o := l.Round(ex.X, y)
			p := byPart[part][r.offset]
			if p.Margin != o.Margin {
				t.Fatalf("partition %d offset %d: service margin %v, offline %v", part, r.offset, p.Margin, o.Margin)
			}
			if (y == 0) != (p.Mistake == nil) || p.Label != y {
				t.Fatalf("partition %d offset %d: label %d, prediction %+v", part, r.offset, y, p)
			}
		}
	}

	// Member A leaves: B takes all four partitions and goes on.
	stopA()
	waitFor(t, "the remaining member to hold all partitions", 30*time.Second, func() bool {
		_, pb := assignedB()
		return len(pb) == 4
	})
	more := make([]kafka.Message, 400)
	for i := range more {
		more[i] = kafka.Message{Value: codec.AppendJSON(nil, codec.Example{X: set.X[i], Label: strconv.Itoa(set.Y[i])})}
	}
	produce(t, b, "in", more, &kafka.RoundRobin{})
	after := readTopic(t, b, "out", len(msgs)+len(more), 60*time.Second)
	seen := map[string]bool{}
	for _, r := range after {
		seen[string(r.msg.Key)] = true
	}
	if len(seen) != len(msgs)+len(more) {
		t.Fatalf("after the takeover: %d distinct predictions for %d records", len(seen), len(msgs)+len(more))
	}
}

// TestBadInputsGoToTheDeadLetterTopic sends every kind of bad record
// between good ones into one partition: each bad record lands in the
// dead-letter topic with its reason and origin, every good one is
// predicted, and nothing is lost.
func TestBadInputsGoToTheDeadLetterTopic(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	cfg := testConfig(t, b, "perceptron")
	cfg.Model.Limits = codec.Limits{MaxBytes: 4096}
	runMember(t, cfg)

	bad := []struct {
		value  []byte
		reason codec.Reason
	}{
		{[]byte(`{"label": 1, "features": {"1": 0.5}`), codec.ReasonInvalidJSON}, // truncated
		{[]byte(`{"label": 1, features: {}}`), codec.ReasonInvalidJSON},
		{[]byte(`{"label": 1, "features": {"1": NaN}}`), codec.ReasonInvalidJSON},
		{[]byte(`+1 1:nan 2:1`), codec.ReasonNonFinite},
		{[]byte(`{"label": 1, "features": {"1": 1e999}}`), codec.ReasonNonFinite},
		{[]byte(`{"label": 7, "features": {"1": 1}}`), codec.ReasonBadLabel},
		{[]byte(`{"label": 1, "features": {}}`), codec.ReasonEmptyFeatures},
		{[]byte(`{"label": 1, "features": {"-1": 1}}`), codec.ReasonBadIndex},
		{[]byte(`{"label": 1, "features": {"99999999999": 1}}`), codec.ReasonIndexTooLarge},
		{[]byte(`{"label": 1, "features": {"3": 1, "03": 2}}`), codec.ReasonDuplicateIndex},
		{[]byte("{\"label\": 1, \"features\": {\"1\": 1}, \"note\": \"\xff\xfe\"}"), codec.ReasonInvalidUTF8},
		{[]byte(`{"label": 1, "features": [` + strings.Repeat("0.5,", 2000) + `1]}`), codec.ReasonTooLarge},
		{nil, codec.ReasonEmptyMessage},
		{[]byte{}, codec.ReasonEmptyMessage},
	}
	good := []byte(`{"label": -1, "features": {"1": 0.5, "2": 1}}`)
	var msgs []kafka.Message
	for i, c := range bad {
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprint("good", i)), Value: good})
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprint("bad", i)), Value: c.value,
			Headers: []kafka.Header{{Key: "origin", Value: []byte("test")}}})
	}
	msgs = append(msgs, kafka.Message{Key: []byte("last"), Value: good})
	produce(t, b, "in", msgs, kafka.BalancerFunc(func(kafka.Message, ...int) int { return 2 }))

	preds := readTopic(t, b, "out", len(bad)+1, 30*time.Second)
	dead := readTopic(t, b, "in.dlq", len(bad), 30*time.Second)
	if len(preds) != len(bad)+1 || len(dead) != len(bad) {
		t.Fatalf("%d inputs gave %d predictions and %d dead letters", len(msgs), len(preds), len(dead))
	}
	for _, d := range dead {
		h := map[string]string{}
		for _, x := range d.msg.Headers {
			h[x.Key] = string(x.Value)
		}
		i, err := strconv.Atoi(strings.TrimPrefix(string(d.msg.Key), "bad"))
		if err != nil {
			t.Fatalf("dead letter with key %q", d.msg.Key)
		}
		if h[HeaderError] != string(bad[i].reason) {
			t.Errorf("record %d: reason %q (%s), want %q", i, h[HeaderError], h[HeaderErrorDetail], bad[i].reason)
		}
		if h["origin"] != "test" || h[HeaderSourceTopic] != "in" || h[HeaderSourcePartition] != "2" || h[HeaderSourceOffset] != strconv.Itoa(2*i+1) {
			t.Errorf("record %d: headers %v", i, h)
		}
		if string(d.msg.Value) != string(bad[i].value) {
			t.Errorf("record %d: value changed", i)
		}
	}
}

// TestIdlePartitionCommitsByTime: records that arrive and then stop are
// committed by the checkpoint interval, not left uncommitted until more
// records come.
func TestIdlePartitionCommitsByTime(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	cfg := testConfig(t, b, "perceptron")
	cfg.CheckpointEvery, cfg.CheckpointInterval = 1_000_000, 300*time.Millisecond
	runMember(t, cfg)
	msgs := make([]kafka.Message, 40)
	for i := range msgs {
		msgs[i] = kafka.Message{Value: []byte(`{"label": 1, "features": {"1": 1}}`)}
	}
	produce(t, b, "in", msgs, kafka.BalancerFunc(func(kafka.Message, ...int) int { return 1 }))
	readTopic(t, b, "out", len(msgs), 30*time.Second)
	cl := &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}}
	waitFor(t, "the offset of an idle partition to be committed", 10*time.Second, func() bool {
		resp, err := cl.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: "g", Topics: map[string][]int{"in": {1}}})
		return err == nil && len(resp.Topics["in"]) == 1 && resp.Topics["in"][0].CommittedOffset == int64(len(msgs))
	})
}

// TestReadyFlipsWithRestoredPartitions: a member is ready only while every
// assigned partition has restored its model.
func TestReadyFlipsWithRestoredPartitions(t *testing.T) {
	b := startBroker(t, "in", "out", "in.dlq")
	cfg := testConfig(t, b, "perceptron")
	cfg.Metrics = NewMetrics(nil)
	if cfg.Metrics.Ready() {
		t.Fatal("ready before joining")
	}
	stop, assigned := runMember(t, cfg)
	waitFor(t, "readiness", 30*time.Second, cfg.Metrics.Ready)
	if _, parts := assigned(); len(parts) != 4 || gaugeValue(cfg.Metrics.ReadyGauge) != 4 {
		t.Fatalf("ready with %d partitions restored of %v", int(gaugeValue(cfg.Metrics.ReadyGauge)), parts)
	}
	stop()
	if cfg.Metrics.Ready() || gaugeValue(cfg.Metrics.ReadyGauge) != 0 {
		t.Fatal("still ready after leaving the group")
	}
}

// TestRevokedPartitionsLoseTheirGauges: when a second member takes two of
// the first one's partitions, the first stops reporting gauges for them
// (their models live elsewhere now), keeps its counters, and keeps the
// last gauge values when it shuts down.
func TestRevokedPartitionsLoseTheirGauges(t *testing.T) {
	b := startBroker(t, "in", "out", "in.dlq")
	cfg := testConfig(t, b, "perceptron")
	cfg.Metrics = NewMetrics(nil)
	stopA, _ := runMember(t, cfg)
	waitFor(t, "the first member to serve all four partitions", 30*time.Second, func() bool {
		return cfg.Metrics.Ready() && testutil.CollectAndCount(cfg.Metrics.Support) == 4
	})
	for p := range 4 {
		cfg.Metrics.Consumed.WithLabelValues(strconv.Itoa(p)).Add(0)
	}
	cfgB := cfg
	cfgB.Metrics = NewMetrics(nil)
	runMember(t, cfgB)
	waitFor(t, "two partitions each, and the gauges to follow", 30*time.Second, func() bool {
		return gaugeValue(cfg.Metrics.ReadyGauge) == 2 && gaugeValue(cfgB.Metrics.ReadyGauge) == 2 &&
			testutil.CollectAndCount(cfg.Metrics.Support) == 2 && testutil.CollectAndCount(cfgB.Metrics.Support) == 2
	})
	if n := testutil.CollectAndCount(cfg.Metrics.WindowRate); n != 2 {
		t.Errorf("%d windowed-rate series for two partitions", n)
	}
	if n := testutil.CollectAndCount(cfg.Metrics.Consumed); n != 4 {
		t.Errorf("%d consumed-records series, want all four kept", n)
	}
	if n := testutil.CollectAndCount(cfg.Metrics.CheckpointTime); n != 0 {
		t.Errorf("%d checkpoint series without checkpoints", n)
	}
	stopA()
	if n := testutil.CollectAndCount(cfg.Metrics.Support); n != 2 {
		t.Errorf("%d support series after shutdown, want the last two kept", n)
	}
}

// A partition flushes when its part of FlushMaxBytes fills, before
// FlushRecords or FlushInterval would have it: with hundreds of
// partitions, their output buffers must not grow with them.
func TestFlushMaxBytesBoundsTheOutputBuffers(t *testing.T) {
	b := startBroker(t, "in", "out", "in.dlq")
	toOne := kafka.BalancerFunc(func(kafka.Message, ...int) int { return 0 })
	msgs := make([]kafka.Message, 600)
	for i := range msgs {
		msgs[i] = kafka.Message{Value: fmt.Appendf(nil, `{"label": %d, "features": {"1": %d, "%d": 1}}`, 1-2*(i%2), i%3, 2+i%7)}
	}
	produce(t, b, "in", msgs, toOne)
	cfg := testConfig(t, b, "rbp:budget=20")
	// 600 predictions are about 100 kB; 4 partitions share 1 byte, so
	// each flushes at its floor of 1 KiB. Neither the record count nor
	// the interval would flush in the test's time.
	cfg.FlushRecords, cfg.FlushInterval, cfg.FlushMaxBytes = 100_000, time.Hour, 1
	cfg.CheckpointEvery, cfg.CheckpointInterval = 100_000, time.Hour
	stop, _ := runMember(t, cfg)
	defer stop()
	got := readFetched(t, b.Addr(), "out", 0, len(msgs)/2, false, 5*time.Second)
	if len(got) < len(msgs)/2 {
		t.Fatalf("%d predictions within 5 s: the output buffer was not flushed at 1 KiB", len(got))
	}
}

// TestFlushSharesAddUpToTheMemberBound: the partitions' flush shares add
// up to FlushMaxBytes at any partition count up to FlushMaxBytes/1 KiB
// (the 16 KiB floor they had made it 16 MiB at 1,024 partitions).
func TestFlushSharesAddUpToTheMemberBound(t *testing.T) {
	const bound = 8 << 20
	for _, parts := range []int{1, 4, 256, 512, 1024, 4096, 8192} {
		if got := flushShare(bound, parts) * int64(parts); got > bound {
			t.Errorf("%d partitions buffer up to %d bytes, over the bound of %d", parts, got, bound)
		}
	}
	if got := flushShare(bound, 1<<20); got < 1<<10 {
		t.Errorf("a million partitions: share %d, want at least 1 KiB", got)
	}
	// A new arena holds a small share whole, and does not take a large
	// one (a few partitions, flushed at FlushRecords) up front: 2 MiB
	// each at 4 partitions raised their resident memory by 12 MB.
	if share := flushShare(bound, 1024); arenaCap(share) != share {
		t.Errorf("1,024 partitions: a new arena of %d bytes for a share of %d", arenaCap(share), share)
	}
	if c := arenaCap(flushShare(bound, 4)); c > 128<<10 {
		t.Errorf("4 partitions: a new arena of %d bytes", c)
	}
	// A partition flushes before its arena must grow: 250-byte
	// predictions fill the 8 KiB arena of 1,024 partitions to within one
	// of its end (its room past the share took a size class of 9.25 KiB).
	w := &worker{m: &member{cfg: &Config{FlushRecords: 1000}}}
	w.m.flushBytes.Store(flushShare(bound, 1024))
	w.arena = w.newArena()
	for !w.full() {
		w.arena = append(w.arena, make([]byte, 250)...)
		w.preds = append(w.preds, pred{})
	}
	if c, n := cap(w.arena), len(w.arena); c != 8<<10 || n < 7<<10 {
		t.Errorf("1,024 partitions: flushed at %d bytes of an arena of %d, want 7–8 KiB of 8 KiB", n, c)
	}
}
