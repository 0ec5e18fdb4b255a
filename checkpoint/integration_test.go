package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkatest"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/sparse"
	"github.com/streamlearner/streamlearner/pipeline"
)

// crashable stops saving when crashed is set, as a process killed between
// two checkpoints would: its last flushes reach the output topic, its
// model never reaches a snapshot.
type crashable struct {
	*checkpoint.Protocol
	crashed atomic.Bool
}

func (c *crashable) Save(ctx context.Context, p pipeline.Partition, g int32, st *pipeline.State) (string, int, error) {
	if c.crashed.Load() {
		return "", 0, errors.New("crashed")
	}
	return c.Protocol.Save(ctx, p, g, st)
}

func member(t *testing.T, b *embedded.Broker, cp pipeline.Checkpointer, spec string, k learners.Kernel) (stop func()) {
	cfg := pipeline.Config{Model: model.Config{Learner: spec, Kernel: k, Seed: 5},
		Conn: kafkaconn.Config{Brokers: []string{b.Addr()}}, Topic: "in", Group: "g", OutputTopic: "out",
		FlushInterval: 20 * time.Millisecond, CheckpointEvery: 300, CheckpointInterval: time.Hour,
		HeartbeatInterval: 200 * time.Millisecond, SessionTimeout: 3 * time.Second, RebalanceTimeout: 3 * time.Second,
		ShutdownTimeout: 3 * time.Second, Checkpoints: cp, Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { pipeline.Run(ctx, cfg); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Error("member did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func produceA9A(t *testing.T, b *embedded.Broker, from, to int) {
	set, err := dataset.Load(context.Background(), "../testdata/a9a.gz", dataset.Options{Limit: to})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []kafka.Message
	for i := from; i < to; i++ {
		ex := codec.Example{X: set.X[i], Label: strconv.Itoa(set.Y[i])}
		if i%9 == 4 {
			ex.Label = ""
		}
		msgs = append(msgs, kafka.Message{Value: codec.AppendJSON(nil, ex)})
	}
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Topic: "in", Balancer: &kafka.RoundRobin{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
}

// outputs reads the prediction topic until it holds want distinct keys.
func outputs(t *testing.T, b *embedded.Broker, want int) map[string][][]byte {
	t.Helper()
	got := map[string][][]byte{}
	deadline := time.Now().Add(60 * time.Second)
	for len(got) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%d distinct predictions, want %d", len(got), want)
		}
		got = map[string][][]byte{}
		for p := range 4 {
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b.Addr()}, Topic: "out", Partition: p, MaxWait: time.Second})
			ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					break
				}
				got[string(m.Key)] = append(got[string(m.Key)], m.Value)
			}
			cancel()
			kafkatest.CloseReader(t, r)
		}
	}
	return got
}

// checkAgainstOffline replays each input partition through a fresh
// learner and checks every prediction, duplicates included, against it.
func checkAgainstOffline(t *testing.T, b *embedded.Broker, preds map[string][][]byte, spec string, k learners.Kernel) (dups int) {
	for p := range 4 {
		l, _ := learners.New(spec, k, 5+uint64(p))
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b.Addr()}, Topic: "in", Partition: p, MaxWait: time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				break
			}
			ex, _ := codec.Decode(m.Value, codec.Limits{})
			y, _, _ := codec.LabelMap{}.Map(ex.Label)
			o := l.Round(ex.X, y)
			vals := preds[codec.PredictionKey("in", int32(p), m.Offset)]
			if len(vals) == 0 {
				t.Fatalf("no prediction for partition %d offset %d", p, m.Offset)
			}
			for _, v := range vals {
				if string(v) != string(vals[0]) {
					t.Fatalf("partition %d offset %d: a re-emitted prediction differs:\n%s\n%s", p, m.Offset, vals[0], v)
				}
			}
			dups += len(vals) - 1
			pr, _ := codec.DecodePrediction(vals[0])
			if pr.Margin != o.Margin {
				t.Fatalf("partition %d offset %d: margin %v, uninterrupted model %v", p, m.Offset, pr.Margin, o.Margin)
			}
		}
		cancel()
		kafkatest.CloseReader(t, r)
	}
	return dups
}

func TestNewOwnerContinuesTheSameModel(t *testing.T) {
	for _, c := range []struct {
		crash bool
		store string
	}{{false, "dir"}, {true, "dir"}, {true, "topic"}} {
		crash := c.crash
		name := "graceful-" + c.store
		if crash {
			name = "crash-" + c.store
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each run has its own broker and mostly waits on the group
			b, err := embedded.Start(embedded.Config{Partitions: 4, Topics: []string{"in", "out", "in.dlq"}})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			const spec = "rbp:budget=40"
			k, _ := learners.ParseKernel("rbf:gamma=0.02")
			var store checkpoint.Store = checkpoint.DirStore{Dir: t.TempDir()}
			if c.store == "topic" {
				ts := &checkpoint.TopicStore{Brokers: []string{b.Addr()}, Topic: "ckpt", ChunkBytes: 4096}
				defer ts.Close()
				if err := ts.Ensure(context.Background(), 2); err != nil {
					t.Fatal(err)
				}
				store = ts
			}
			first := &crashable{Protocol: &checkpoint.Protocol{Store: store, Model: modelOfSpec(spec, k), Log: zerolog.Nop()}}
			stopA := member(t, b, first, spec, k)
			produceA9A(t, b, 0, 3000)
			outputs(t, b, 3000)
			// 100 more: 25 a partition, below the 300-record cadence, so
			// they are predicted but not checkpointed before the crash.
			produceA9A(t, b, 3000, 3100)
			outputs(t, b, 3100)
			first.crashed.Store(crash)
			stopA()
			produceA9A(t, b, 3100, 6000)
			second := &checkpoint.Protocol{Store: store, Model: modelOfSpec(spec, k), Log: zerolog.Nop()}
			member(t, b, second, spec, k)
			preds := outputs(t, b, 6000)
			dups := checkAgainstOffline(t, b, preds, spec, k)
			if crash && dups == 0 {
				t.Fatal("a crash after the last checkpoint re-emitted nothing: the test proves little")
			}
			if !crash && dups != 0 {
				t.Fatalf("%d duplicates after a graceful handover", dups)
			}
		})
	}
}

// TestRebalanceKeepsTheModels: three members share the partitions; one
// crashes and a fourth joins mid-stream. Every prediction (duplicates
// included) equals the uninterrupted model's, and each partition's final
// snapshot holds exactly the uninterrupted model.
func TestRebalanceKeepsTheModels(t *testing.T) {
	t.Parallel() // its own broker; it mostly waits on the group
	b, err := embedded.Start(embedded.Config{Partitions: 4, Topics: []string{"in", "out", "in.dlq"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const spec = "forgetron:budget=30"
	k, _ := learners.ParseKernel("rbf:gamma=0.02")
	store := checkpoint.DirStore{Dir: t.TempDir()}
	proto := func() *crashable {
		return &crashable{Protocol: &checkpoint.Protocol{Store: store, Model: modelOfSpec(spec, k), Log: zerolog.Nop()}}
	}
	a := proto()
	stopA := member(t, b, a, spec, k)
	stopB := member(t, b, proto(), spec, k)
	stopC := member(t, b, proto(), spec, k)
	produceA9A(t, b, 0, 2000)
	outputs(t, b, 2000)
	a.crashed.Store(true) // A dies between checkpoints
	stopA()
	produceA9A(t, b, 2000, 3500)
	stopD := member(t, b, proto(), spec, k)
	produceA9A(t, b, 3500, 5000)
	preds := outputs(t, b, 5000)
	stopB()
	stopC()
	stopD()
	checkAgainstOffline(t, b, preds, spec, k)

	// Each partition's newest snapshot is the model after all its records.
	for p := range 4 {
		names, _ := store.List(context.Background(), fmt.Sprintf("in/%d/", p))
		raw, err := store.Load(context.Background(), names[len(names)-1])
		if err != nil {
			t.Fatal(err)
		}
		snap, err := checkpoint.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		twin, _ := model.New(model.Config{Learner: spec, Kernel: k, Seed: 5 + uint64(p)})
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b.Addr()}, Topic: "in", Partition: p, MaxWait: time.Second})
		for off := int64(0); off < snap.NextOffset; off++ {
			m, err := r.ReadMessage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			twin.Step(m.Value)
		}
		kafkatest.CloseReader(t, r)
		want, _ := twin.MarshalBinary()
		if snap.NextOffset != 1250 || string(snap.Model) != string(want) {
			t.Fatalf("partition %d: final snapshot at %d differs from the uninterrupted model", p, snap.NextOffset)
		}
	}
}

// With every snapshot of the partitions unreadable, the service refuses
// to serve them — never silently an empty model — until --reset-model,
// which starts new models at the committed offsets, says so for each and
// predicts every later record exactly once.
func TestResetModelRecoversFromUnreadableSnapshots(t *testing.T) {
	t.Parallel() // its own broker; it mostly waits on the group
	b, err := embedded.Start(embedded.Config{Partitions: 4, Topics: []string{"in", "out", "in.dlq"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const spec = "rbp:budget=40"
	k, _ := learners.ParseKernel("rbf:gamma=0.02")
	dir := t.TempDir()
	stop := member(t, b, &checkpoint.Protocol{Store: checkpoint.DirStore{Dir: dir}, Model: modelOfSpec(spec, k), Log: zerolog.Nop()}, spec, k)
	produceA9A(t, b, 0, 2000)
	outputs(t, b, 2000)
	stop()
	// Damage every snapshot of every partition.
	names, _ := checkpoint.DirStore{Dir: dir}.List(context.Background(), "")
	if len(names) < 4 {
		t.Fatalf("%d snapshots", len(names))
	}
	for _, n := range names {
		path, _ := checkpoint.DirStorePath(checkpoint.DirStore{Dir: dir}, n)
		data, _ := os.ReadFile(path)
		data[len(data)/2] ^= 0xff
		os.WriteFile(path, data, 0o600)
	}
	produceA9A(t, b, 2000, 2400)
	// Without the flag: nothing more is served.
	stop = member(t, b, &checkpoint.Protocol{Store: checkpoint.DirStore{Dir: dir}, Model: modelOfSpec(spec, k), Log: zerolog.Nop()}, spec, k)
	time.Sleep(3 * time.Second)
	if got := outputs(t, b, 2000); len(got) != 2000 {
		t.Fatalf("%d predictions with unreadable snapshots and no --reset-model, want the 2000 from before", len(got))
	}
	stop()
	var mu sync.Mutex
	resets := map[int]string{}
	p := &checkpoint.Protocol{Store: checkpoint.DirStore{Dir: dir}, Model: modelOfSpec(spec, k), ResetModel: true, Log: zerolog.Nop(),
		OnReset: func(part pipeline.Partition, reason string) { mu.Lock(); resets[part.ID] = reason; mu.Unlock() }}
	member(t, b, p, spec, k)
	got := outputs(t, b, 2400)
	for key, vals := range got {
		if len(vals) != 1 {
			t.Fatalf("%s predicted %d times", key, len(vals))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(resets) != 4 || resets[0] != "unreadable" {
		t.Fatalf("resets %v, want each of the 4 partitions reset as unreadable", resets)
	}
}

// TestModelMemoryCoversASave: the start-up estimate with checkpoints
// (pipeline.Config.ModelMemory) covers what the model holds and what a
// save allocates beside it, within 1.5 times; without its count of the
// save it was 0.47 times that. For a lone learner, with a challenger,
// with three classes and with delayed labels; the data is what the
// estimate assumes: --expected-non-zeros features, all of them used.
func TestModelMemoryCoversASave(t *testing.T) {
	// settledHeap is the live heap once it holds still: two collections a
	// reading (a sync.Pool's victim cache outlives one), repeated until
	// two readings 20 ms apart agree within 64 KiB (the goroutines of
	// earlier tests winding down free memory meanwhile), at most 50 times.
	settledHeap := func() uint64 {
		var ms runtime.MemStats
		read := func() uint64 {
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&ms)
			return ms.HeapAlloc
		}
		last := read()
		for range 50 {
			time.Sleep(20 * time.Millisecond)
			now := read()
			if max(now, last)-min(now, last) < 64<<10 {
				return now
			}
			last = now
		}
		return last
	}
	ctx := context.Background()
	k, _ := learners.ParseKernel("rbf:gamma=0.5")
	for _, cfg := range []pipeline.Config{
		{Model: model.Config{Learner: "rbp:budget=2000"}},
		{Model: model.Config{Learner: "forgetron:budget=500"}},
		{Model: model.Config{Learner: "rbp:budget=500", Challengers: []model.Candidate{{Learner: "forgetron:budget=500"}}}},
		{Model: model.Config{Learner: "rbp:budget=300", Classes: []string{"a", "b", "c"}}},
		// Many classes, every one-vs-rest learner at its budget.
		{Model: model.Config{Learner: "rbp:budget=100", Classes: strings.Fields("a b c d e f g h i j k l m n o p q r s t")}},
		// auto's estimate is its memory= bound (per class), which the
		// wide search may reach; after the halving it holds far less, so
		// only the bound is checked.
		{Model: model.Config{Learner: "auto:memory=2MiB"}},
		{Model: model.Config{Learner: "auto:memory=1MiB", Classes: strings.Fields("a b c d e f g h i j")}},
		// The pending store at its byte bound: most records wait, a few
		// carry their label.
		{Model: model.Config{Learner: "rbp:budget=300"}, DelayedLabels: true, PendingMaxRecords: 100_000, PendingMaxBytes: 2 << 20},
	} {
		cfg.Model.Kernel, cfg.ExpectedNonZeros = k, 14
		cfg.Checkpoints = &checkpoint.Protocol{Store: checkpoint.DirStore{Dir: t.TempDir()}, Model: cfg.ModelConfig, Log: zerolog.Nop()}
		p := cfg.Checkpoints.(*checkpoint.Protocol)
		est, per, err := cfg.ModelMemory()
		if err != nil {
			t.Fatal(err)
		}
		labels := []string{"1", "-1"}
		if len(cfg.Model.Classes) > 0 {
			labels = cfg.Model.Classes
		}
		part := pipeline.Partition{Topic: "in", ID: 0}
		grow := func() (*model.Model, int64) {
			r := rand.New(rand.NewPCG(1, 2))
			before := settledHeap()
			m, err := model.New(cfg.ModelConfig(part.ID))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 12000 {
				label := labels[r.IntN(len(labels))]
				if cfg.DelayedLabels {
					line := []byte(label)
					if i%4 != 0 {
						line = nil
					}
					for j := range 14 {
						line = fmt.Appendf(line, " %d:%g", j+1, r.NormFloat64())
					}
					at := model.At{Key: fmt.Appendf(nil, "record-%d", i), Time: int64(i), Offset: int64(i)}
					if _, err := m.StepAt(bytes.TrimSpace(line), at); err != nil {
						t.Fatal(err)
					}
					continue
				}
				x := sparse.Vector{Idx: make([]uint32, 14), Val: make([]float64, 14)}
				for j := range x.Idx {
					x.Idx[j], x.Val[j] = uint32(j+1), r.NormFloat64()
				}
				if _, err := m.StepVector(x, []byte(label)); err != nil {
					t.Fatal(err)
				}
			}
			after := settledHeap()
			runtime.KeepAlive(m)
			return m, int64(after) - int64(before)
		}
		bound := strings.HasPrefix(cfg.Model.Learner, "auto")
		// The heap is read around the model's growth; the goroutines that
		// earlier tests left winding down can free memory in between and
		// make that less than the model, even below zero: a reading out of
		// bounds is taken again, up to three times.
		var held, saved int64
		for attempt := 0; attempt < 3; attempt++ {
			var m *model.Model
			m, held = grow()
			st := &pipeline.State{Model: m, NextOffset: 12000}
			if _, _, err := p.Save(ctx, part, 1, st); err != nil {
				t.Fatal(err)
			}
			saved = int64(checkpoint.Allocated(func() {
				if _, _, err := p.Save(ctx, part, 1, st); err != nil {
					t.Fatal(err)
				}
			}))
			runtime.KeepAlive(m)
			need := held + saved
			t.Logf("the model holds %d bytes, a save allocates %d; estimate %d (%.2f): %s", held, saved, est.Peak, float64(est.Peak)/float64(need), est.Describe(per))
			if est.Peak >= need && (bound || float64(est.Peak) <= 1.5*float64(need)) {
				break
			}
			if attempt == 2 {
				t.Errorf("%s: estimate %d bytes, for a model that holds %d and a save that allocates %d (%.2f×, want 1 to 1.5)",
					est.Describe(per), est.Peak, held, saved, float64(est.Peak)/float64(need))
			}
		}
	}
}

// modelOfSpec is the Protocol.Model of member's binary record models:
// spec with kernel k, seed 5 plus the partition, as member configures them.
func modelOfSpec(spec string, k learners.Kernel) func(int) model.Config {
	return func(p int) model.Config { return model.Config{Learner: spec, Kernel: k, Seed: 5 + uint64(p)} }
}
