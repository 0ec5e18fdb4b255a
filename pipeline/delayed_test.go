package pipeline

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/kafka/fetch"
	"github.com/streamlearner/streamlearner/internal/model"
)

// delayedStream is Elec2 with its labels sent later: each event without
// its class, keyed by its id, and its label message ({"id","class"})
// 1–100 events after it; every 20th label never comes, and orphans
// labels for ids that never were. Labels share their record's key, so
// they land in its partition.
func delayedStream(t *testing.T, path string, orphans int) (msgs []kafka.Message, records, labels int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, _ := gzip.NewReader(f)
	sc := bufio.NewScanner(zr)
	r := rand.New(rand.NewPCG(15, 1))
	due := map[int][]kafka.Message{}
	i := 0
	for ; sc.Scan(); i++ {
		var ev map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		var id string
		json.Unmarshal(ev["id"], &id)
		label, _ := json.Marshal(map[string]json.RawMessage{"id": ev["id"], "class": ev["class"]})
		delete(ev, "class")
		rec, _ := json.Marshal(ev)
		msgs = append(msgs, due[i]...)
		msgs = append(msgs, kafka.Message{Key: []byte(id), Value: rec})
		records++
		if i%20 != 7 {
			at := i + 1 + r.IntN(100)
			due[at] = append(due[at], kafka.Message{Key: []byte(id), Value: label})
			labels++
		}
		if i%150 == 0 && i/150 < orphans {
			msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprint("nobody-", i)), Value: []byte(fmt.Sprintf(`{"id":"nobody-%d","class":"UP"}`, i))})
		}
	}
	keys := make([]int, 0, len(due))
	for k := range due {
		if k >= i {
			keys = append(keys, k)
		}
	}
	sort.Ints(keys)
	for _, k := range keys {
		msgs = append(msgs, due[k]...)
	}
	return msgs, records, labels
}

// Labels that come later, in the same topic: every record is predicted
// once when it comes; each label makes its partition's model learn the
// record and score the prediction emitted; a label for nothing is a dead
// letter; and each partition's predictions and counters are exactly the
// partition model's played offline over the partition's messages.
func TestDelayedLabelsInTheSameTopic(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	msgs, records, labels := delayedStream(t, "../testdata/elec2.3000.jsonl.gz", 20)
	produce(t, b, "in", msgs, &kafka.Hash{})

	cfg := testConfig(t, b, "rbp:budget=50")
	cfg.Model.Events, cfg.Model.Event, cfg.Model.Labels = true, codec.EventConfig{LabelField: "class", KeyField: "id"}, codec.LabelMap{Positive: []string{"UP"}}
	cfg.DelayedLabels = true
	cfg.Metrics = NewMetrics(nil)
	mt := cfg.Metrics
	runMember(t, cfg)
	preds := readTopic(t, b, "out", records, 60*time.Second)
	if len(preds) != records {
		t.Fatalf("%d predictions for %d records", len(preds), records)
	}
	dead := readTopic(t, b, "in.dlq", 20, 30*time.Second)
	if len(dead) != 20 {
		t.Fatalf("%d dead letters, want the 20 orphan labels", len(dead))
	}
	for _, d := range dead {
		if h := headers(d.msg)[HeaderError]; h != string(codec.ReasonLabelUnknown) {
			t.Fatalf("dead letter %s: reason %q", d.msg.Value, h)
		}
	}
	waitFor(t, "every label learned", 30*time.Second, func() bool { return int(sum(mt.Learned)) == labels })
	got := map[[2]int64]codec.Prediction{}
	for _, r := range preds {
		p, err := codec.DecodePrediction(r.msg.Value)
		if err != nil {
			t.Fatal(err)
		}
		got[[2]int64{int64(p.Partition), p.Offset}] = p
	}
	inputs := readTopic(t, b, "in", len(msgs), 30*time.Second)
	byPart := map[int][]record{}
	for _, r := range inputs {
		byPart[r.partition] = append(byPart[r.partition], r)
	}
	mistakes, pendingLeft := 0, 0
	for part, recs := range byPart {
		sort.Slice(recs, func(i, j int) bool { return recs[i].offset < recs[j].offset })
		twin, err := model.New(cfg.ModelConfig(part))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			want, err := twin.StepAt(r.msg.Value, model.At{Key: r.msg.Key, Time: r.msg.Time.UnixMilli(), Offset: r.offset})
			p, ok := got[[2]int64{int64(part), r.offset}]
			switch {
			case err != nil || want.Late:
				if ok {
					t.Fatalf("partition %d offset %d: a label (%v) was predicted: %+v", part, r.offset, err, p)
				}
			case !ok || p.Margin != want.Margin || p.Key != string(want.Key) || p.Mistake != nil:
				t.Fatalf("partition %d offset %d: %+v (%v), offline %+v", part, r.offset, p, ok, want)
			case p.Class != map[bool]string{true: "UP", false: "not UP"}[p.Predicted > 0] || p.LabelClass != "":
				// --positive UP: the sides are named for people reading them.
				t.Fatalf("partition %d offset %d: prediction %+d named %q (label %q)", part, r.offset, p.Predicted, p.Class, p.LabelClass)
			}
		}
		ev := twin.Eval()
		mistakes += int(ev.Mistakes)
		pendingLeft += twin.Pending().Len()
		if g := testutil.ToFloat64(mt.PendingRecords.WithLabelValues(fmt.Sprint(part))); int(g) != twin.Pending().Len() {
			t.Errorf("partition %d: pending gauge %v, offline %d", part, g, twin.Pending().Len())
		}
	}
	if m := int(sum(mt.Mistakes)); m != mistakes || mistakes == 0 {
		t.Errorf("mistakes counted %d, offline %d", m, mistakes)
	}
	if pendingLeft != records-labels {
		t.Errorf("%d records still pending, %d labels never sent", pendingLeft, records-labels)
	}
	if n := histogramCount(t, mt.LabelDelay); n != uint64(labels) {
		t.Errorf("label delay histogram counted %d labels, %d learned", n, labels)
	}
	if o := sum(mt.OrphanLabels, string(codec.ReasonLabelUnknown)); o != 20 {
		t.Errorf("orphan labels counted %v, want 20", o)
	}
	t.Logf("%d records, %d labels learned, %d mistakes, %d waiting", records, labels, mistakes, pendingLeft)
}

// sum adds a partition series (with further label values) over the four
// partitions.
func sum(v *SeriesVec, labels ...string) (s float64) {
	for p := range 4 {
		s += testutil.ToFloat64(v.WithLabelValues(append([]string{fmt.Sprint(p)}, labels...)...))
	}
	return s
}

func histogramCount(t *testing.T, h prometheus.Histogram) uint64 {
	var d dto.Metric
	if err := h.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetHistogram().GetSampleCount()
}

// Labels in a topic of their own, co-partitioned with the input: with
// both topics written before the member starts, each partition plays its
// records and labels merged by time (then input first, then offset) —
// replay's order — so its predictions and final model are exactly the
// partition model's over that merge; both positions are committed; a
// label topic of another partition count, or none, fails the start.
func TestLabelTopic(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq", "labels")
	msgs, records, labels := delayedStream(t, "../testdata/elec2.3000.jsonl.gz", 20)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var recs, labs []kafka.Message
	for i, m := range msgs {
		m.Time = base.Add(time.Duration(i) * 10 * time.Millisecond)
		if bytes.Contains(m.Value, []byte(`"class"`)) {
			labs = append(labs, m)
		} else {
			recs = append(recs, m)
		}
	}
	// A label stamped at its record's time plays after it (input first).
	labs[5].Time = recs[len(recs)/2].Time
	for i := range labs {
		labs[i].Headers = []kafka.Header{{Key: "origin", Value: []byte("label service")}}
	}
	produce(t, b, "in", recs, &kafka.Hash{})
	produce(t, b, "labels", labs, &kafka.Hash{})

	cfg := testConfig(t, b, "rbp:budget=50")
	cfg.Model.Events, cfg.Model.Event, cfg.Model.Labels = true, codec.EventConfig{LabelField: "class", KeyField: "id"}, codec.LabelMap{Positive: []string{"UP"}}
	cfg.LabelTopic = "labels"
	cfg.Metrics = NewMetrics(nil)
	mt := cfg.Metrics
	stop, _ := runMember(t, cfg)
	preds := readTopic(t, b, "out", records, 60*time.Second)
	if len(preds) != records {
		t.Fatalf("%d predictions for %d records", len(preds), records)
	}
	waitFor(t, "every label learned", 30*time.Second, func() bool { return int(sum(mt.Learned)) == labels })
	stop()
	got := map[[2]int64]codec.Prediction{}
	for _, r := range preds {
		p, _ := codec.DecodePrediction(r.msg.Value)
		got[[2]int64{int64(p.Partition), p.Offset}] = p
	}
	byPart := func(topic string, n int) map[int][]record {
		out := map[int][]record{}
		for _, r := range readTopic(t, b, topic, n, 30*time.Second) {
			out[r.partition] = append(out[r.partition], r)
		}
		for _, rs := range out {
			sort.Slice(rs, func(i, j int) bool { return rs[i].offset < rs[j].offset })
		}
		return out
	}
	in, lab := byPart("in", len(recs)), byPart("labels", len(labs))
	for part := range 4 {
		twin, err := model.New(cfg.ModelConfig(part))
		if err != nil {
			t.Fatal(err)
		}
		rs, ls := in[part], lab[part]
		for len(rs)+len(ls) > 0 {
			fromLabels := len(rs) == 0 || len(ls) > 0 && ls[0].msg.Time.Before(rs[0].msg.Time)
			var r record
			if fromLabels {
				r, ls = ls[0], ls[1:]
			} else {
				r, rs = rs[0], rs[1:]
			}
			want, err := twin.StepAt(r.msg.Value, model.At{Key: r.msg.Key, Time: r.msg.Time.UnixMilli(), Offset: r.offset, LabelTopic: fromLabels})
			if fromLabels {
				continue
			}
			p, ok := got[[2]int64{int64(part), r.offset}]
			if err != nil || !ok || p.Margin != want.Margin {
				t.Fatalf("partition %d offset %d: %+v (%v), merged offline %+v (%v)", part, r.offset, p, ok, want, err)
			}
		}
		if ev := twin.Eval(); testutil.ToFloat64(mt.Learned.WithLabelValues(fmt.Sprint(part))) != float64(ev.Labeled) ||
			testutil.ToFloat64(mt.Mistakes.WithLabelValues(fmt.Sprint(part))) != float64(ev.Mistakes) {
			t.Fatalf("partition %d: learned/mistakes counted differ from the merged twin's %d/%d", part, ev.Labeled, ev.Mistakes)
		}
		if c, want := committedOffset(t, b, part), int64(len(in[part])); c != want {
			t.Errorf("partition %d: input committed at %d, want %d", part, c, want)
		}
		if c, want := committedOffsetOf(t, b, "labels", part), int64(len(lab[part])); c != want {
			t.Errorf("partition %d: labels committed at %d, want %d", part, c, want)
		}
	}
	dead := readTopic(t, b, "in.dlq", 20, 30*time.Second)
	for _, d := range dead {
		if h := headers(d.msg); h[HeaderError] != string(codec.ReasonLabelUnknown) || h[HeaderSourceTopic] != "labels" || h["origin"] != "label service" {
			t.Fatalf("dead letter %s: %v", d.msg.Value, h)
		}
	}
	if len(dead) != 20 {
		t.Fatalf("%d dead letters, want the 20 orphan labels", len(dead))
	}

	// The start checks co-partitioning.
	cl := &kafka.Client{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}}
	if _, err := cl.CreateTopics(context.Background(), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "three", NumPartitions: 3, ReplicationFactor: 1}}}); err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]string{"three": "has 3 partitions, input topic \"in\" has 4", "nowhere": "does not exist"} {
		c := testConfig(t, b, "rbp:budget=50")
		c.Group, c.LabelTopic, c.ConnectTimeout = "g2", topic, 5*time.Second
		err := Run(context.Background(), c)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("label topic %s: %v, want an error saying %q", topic, err, want)
		}
	}
}

// A flood of labels for nothing is a flood of dead letters: the label
// side hands control back to be flushed whenever the output buffers hold
// FlushRecords, instead of buffering the flood (before, 5,000 orphan
// labels stamped before the next record were all buffered at once).
func TestLabelFloodIsFlushedAsItGoes(t *testing.T) {
	b := startBroker(t, "labels")
	var flood []kafka.Message
	for i := range 5000 {
		flood = append(flood, kafka.Message{Partition: 0, Key: []byte(fmt.Sprint("nobody-", i)), Value: []byte(fmt.Sprintf(`{"id":"nobody-%d","label":1}`, i))})
	}
	produce(t, b, "labels", flood, toPartition(0))
	cfg := testConfig(t, b, "perceptron")
	cfg.Model.Events, cfg.Model.Event, cfg.LabelTopic, cfg.FlushRecords = true, codec.EventConfig{KeyField: "id"}, "labels", 100
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	m, err := model.New(cfg.ModelConfig(0))
	if err != nil {
		t.Fatal(err)
	}
	r, err := fetch.NewReader(fetch.Config{Addr: kafka.TCP(b.Addr()), Transport: &kafka.Transport{}, Topic: "labels", Partition: 0}, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := &worker{m: &member{cfg: &cfg, dlqLimit: 1 << 20}, part: Partition{Topic: "in", ID: 0}, label: "0",
		st: &State{Model: m, LabelTopic: "labels"}, labels: &labelSide{r: r}, log: cfg.Log, bad: cfg.Log}
	played := 0
	for rounds := 0; ; rounds++ {
		status := w.playLabels(context.Background(), time.Now())
		if n := len(w.dead); n > cfg.FlushRecords {
			t.Fatalf("%d dead letters buffered, flush bound %d", n, cfg.FlushRecords)
		}
		played += len(w.dead)
		w.dead = w.dead[:0] // what settle's flush does
		if status == labelsDone {
			break
		}
		if status != labelsFull || rounds > 100 {
			t.Fatalf("status %d after %d rounds", status, rounds)
		}
	}
	if played != 5000 || w.st.LabelOffset != 5000 {
		t.Fatalf("%d dead letters for 5,000 orphan labels, label offset %d", played, w.st.LabelOffset)
	}
}
