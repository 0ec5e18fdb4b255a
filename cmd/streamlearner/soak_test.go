package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/checkpoint"
	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/pipeline"
)

// TestSoak is the service under the worst a stream and its operators do,
// at once, bounded to a few minutes: 200,000 records over 4 partitions
// with about 1 % poison mixed in (records cut to fit only near the broker's
// limit, values that overflow kernels, forged provenance headers, aborted
// transactions beside committed ones), while the service is killed with
// SIGKILL 10 times and the broker once. At the end: every committed input
// record has exactly one distinct prediction or dead letter, aborted
// records have neither, every duplicate is byte-identical, and each
// partition's final model (and evaluator) is byte-identical to an
// uninterrupted run's.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("kills the service 10 times and the broker once; minutes")
	}
	t.Parallel() // a process test that mostly waits: it overlaps the others (make test sets -parallel)
	bin := testBinary(t)
	dir := t.TempDir()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	broker := startBroker(t, bin, filepath.Join(dir, "broker.log"), port, filepath.Join(dir, "kafka"))
	createRunTopics(t, addr)

	lines := a9aLines(t)
	const total = 200_000
	var produced atomic.Int64
	prodDone := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { prodDone <- soakProduce(ctx, addr, lines, total, 50, true, &produced) }()

	const spec, kern = "rbp:budget=100", "rbf:gamma=0.02"
	args := []string{"run", "--brokers", addr, "--topic", "in", "--group", "g", "--output-topic", "out",
		"--learner", spec, "--kernel", kern, "--seed", "3", "--checkpoint-dir", filepath.Join(dir, "ckpt"),
		"--checkpoint-every", "3000", "--checkpoint-interval", "500ms", "--flush-interval", "50ms",
		"--heartbeat-interval", "200ms", "--session-timeout", "2s", "--rebalance-timeout", "2s",
		"--log-format", "json", "--metrics-addr", ""}
	runLog := filepath.Join(dir, "run.log")
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(runLog)
			ls := strings.Split(string(b), "\n")
			t.Logf("last lines of the service's log:\n%s", strings.Join(ls[max(0, len(ls)-40):], "\n"))
		}
	})
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill times drawn with seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 2))
	for kill := range 10 {
		p := start(t, runLog, bin, args...)
		time.Sleep(time.Duration(1500+r.IntN(2000)) * time.Millisecond)
		p.kill()
		if kill == 4 {
			// The broker too, between two lives of the service.
			t.Logf("broker killed at %d of %d records", produced.Load(), total)
			broker.kill()
			broker = startBroker(t, bin, filepath.Join(dir, "broker.log"), port, filepath.Join(dir, "kafka"))
		}
	}
	final := start(t, runLog, bin, args...)
	select {
	case err := <-prodDone:
		if err != nil {
			t.Fatalf("producer: %v", err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("the producer did not finish: %d of %d records", produced.Load(), total)
	}
	ends := partitionEnds(t, addr)
	st := checkpoint.DirStore{Dir: filepath.Join(dir, "ckpt")}
	var snaps map[int]*checkpoint.Snapshot
	waitFor(t, "the final snapshots at the end of every partition", 2*time.Minute, func() bool {
		snaps = newest(t, st)
		for p, end := range ends {
			if snaps[p] == nil || snaps[p].NextOffset != end {
				return false
			}
		}
		return true
	})
	final.stop(t, 20*time.Second)

	// What each input offset got: predictions by key, dead letters by
	// their origin headers.
	preds := readAll(t, addr, "out", nil)
	dead := map[string][][]byte{}
	readAll(t, addr, "in.dlq", func(m kafka.Message) {
		h := map[string]string{}
		for _, x := range m.Headers {
			if _, ok := h[x.Key]; !ok {
				h[x.Key] = string(x.Value)
			}
		}
		key := "in/" + h[pipeline.HeaderSourcePartition] + "/" + h[pipeline.HeaderSourceOffset]
		dead[key] = append(dead[key], append([]byte(m.Value), h[pipeline.HeaderError]...))
	})
	k, _ := learners.ParseKernel(kern)
	var committed, aborted, dups, poisoned int
	for p := range 4 {
		all := readPartition(t, addr, p, true)
		kept := readPartition(t, addr, p, false)
		// The twin is configured as the snapshot says (limits, labels and
		// all), which must be the service's learner, kernel and seed.
		snapModel, err := model.Unmarshal(snaps[p].Model)
		if err != nil {
			t.Fatal(err)
		}
		cfg := snapModel.Config()
		if cfg.Learner != spec || cfg.Kernel != k || cfg.Seed != 3+uint64(p) {
			t.Fatalf("partition %d: snapshot of %s with %s seed %d", p, cfg.Learner, cfg.Kernel, cfg.Seed)
		}
		twin, err := model.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		offsets := slices.Sorted(maps.Keys(all))
		for _, off := range offsets {
			rec := all[off]
			key := codec.PredictionKey("in", int32(p), rec.Offset)
			pv, dv := distinct(preds[key]), distinct(dead[key])
			if _, ok := kept[rec.Offset]; !ok {
				aborted++
				if len(preds[key])+len(dead[key]) > 0 {
					t.Fatalf("aborted record %s was predicted or dead-lettered", key)
				}
				continue
			}
			committed++
			if pv+dv != 1 {
				t.Fatalf("%s: %d distinct predictions and %d distinct dead letters, want exactly one of them", key, pv, dv)
			}
			dups += len(preds[key]) + len(dead[key]) - 1
			// The uninterrupted twin: the same model over the committed
			// records in order; what it refuses, the service dead-letters.
			r, err := twin.Step(rec.Value)
			if err != nil {
				poisoned++
				if dv != 1 {
					t.Fatalf("%s: refused (%v) but not dead-lettered", key, err)
				}
				continue
			}
			if pr, err := codec.DecodePrediction(preds[key][0]); err != nil || pr.Margin != r.Margin {
				t.Fatalf("%s: margin %v, uninterrupted %v (%v)", key, pr.Margin, r.Margin, err)
			}
		}
		want, _ := twin.MarshalBinary()
		if s := snaps[p]; !bytes.Equal(s.Model, want) {
			got, _ := model.Unmarshal(s.Model)
			ge, we := got.Eval(), twin.Eval()
			t.Fatalf("partition %d: the final model differs from the uninterrupted run's: %d rounds, %d mistakes; uninterrupted %d, %d",
				p, ge.Rounds, ge.Mistakes, we.Rounds, we.Mistakes)
		}
	}
	t.Logf("%d committed records (%d dead-lettered), %d aborted, %d duplicates, all byte-identical", committed, poisoned, aborted, dups)
	if committed < total || aborted == 0 || poisoned < total/200 {
		t.Fatalf("the stream was not what the test means: %d committed, %d aborted, %d poisoned", committed, aborted, poisoned)
	}
}

// distinct counts the different values in vs.
func distinct(vs [][]byte) int {
	seen := map[string]bool{}
	for _, v := range vs {
		seen[string(v)] = true
	}
	return len(seen)
}

func a9aLines(t *testing.T) []string {
	f, err := os.Open("../../testdata/a9a.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// readPartition reads partition p of "in" to its end: every record with
// uncommitted (offsets in order), else the committed ones by offset.
func readPartition(t *testing.T, addr string, p int, uncommitted bool) map[int64]fetch.Record {
	t.Helper()
	r, err := fetch.NewReader(fetch.Config{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}, Topic: "in", Partition: p, ReadUncommitted: uncommitted}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, end, err := r.Bounds(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]fetch.Record{}
	for r.Offset() < end {
		b, err := r.Fetch(context.Background(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range b.Records {
			rec.Key, rec.Value = bytes.Clone(rec.Key), bytes.Clone(rec.Value)
			out[rec.Offset] = rec
		}
	}
	return out
}

// createRunTopics creates the topics of a run: in, out and in.dlq, 4
// partitions each.
func createRunTopics(t *testing.T, addr string) {
	t.Helper()
	cl := &kafka.Client{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}}
	if _, err := cl.CreateTopics(context.Background(), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: "in", NumPartitions: 4, ReplicationFactor: 1}, {Topic: "out", NumPartitions: 4, ReplicationFactor: 1},
		{Topic: "in.dlq", NumPartitions: 4, ReplicationFactor: 1},
	}}); err != nil {
		t.Fatal(err)
	}
}

// soakProduce writes total records to the 4 partitions of "in", perTick
// every 10 ms, retrying through broker restarts. With poison about 1 %
// are poison: every 100th record, in turn, a value that overflows
// kernels, an invalid record with forged headers, a valid record with
// forged headers, and a transaction of 5 records (aborted, or every
// other time committed); every 10,000th an invalid record of 1,048,000
// bytes, which only a cut dead letter fits.
func soakProduce(ctx context.Context, addr string, lines []string, total, perTick int, poison bool, produced *atomic.Int64) error {
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "in", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond,
		BatchSize: 100, BatchBytes: 1 << 20, Transport: &kafka.Transport{}, WriteTimeout: 5 * time.Second,
		Balancer: kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return int(m.Key[1] - '0') })}
	defer w.Close()
	forged := []kafka.Header{{Key: pipeline.HeaderSourcePartition, Value: []byte("3")}, {Key: pipeline.HeaderError, Value: []byte("none")}}
	retry := func(f func() error) error {
		for {
			err := f()
			if err == nil || ctx.Err() != nil {
				return err
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	var mu sync.Mutex
	txns := 0
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < total; {
		<-tick.C
		var batch []kafka.Message
		for n := 0; n < perTick && i < total; n, i = n+1, i+1 {
			p := i % 4
			key := []byte(fmt.Sprintf("p%d-%d", p, i))
			m := kafka.Message{Key: key, Value: []byte(lines[i%len(lines)])}
			switch {
			case !poison:
			case i%10_000 == 5_000:
				m.Value = bytes.Repeat([]byte("#"), 1_048_000)
			case i%400 == 100:
				m.Value = []byte("+1 3:1e308 7:1")
			case i%400 == 200:
				m.Value, m.Headers = []byte(`{"label":1,"features":`), forged
			case i%400 == 300:
				m.Headers = forged
			case i%400 == 0:
				var vs [][]byte
				for j := range 5 {
					vs = append(vs, []byte(lines[(i+j)%len(lines)]))
				}
				mu.Lock()
				txns++
				commit, id := txns%2 == 0, fmt.Sprintf("soak-%d", p)
				mu.Unlock()
				if err := retry(func() error {
					return embedded.ProduceTransaction(ctx, addr, "in", int32(p), id, vs, commit)
				}); err != nil {
					return err
				}
				continue
			}
			batch = append(batch, m)
		}
		if err := retry(func() error { return w.WriteMessages(ctx, batch...) }); err != nil {
			return err
		}
		produced.Store(int64(i))
	}
	return nil
}
