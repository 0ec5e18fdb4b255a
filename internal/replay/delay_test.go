package replay

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/internal/pending"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/prequential"
)

// gzLines reads the first n lines of a gzipped test file.
func gzLines(t *testing.T, path string, n int) [][]byte {
	t.Helper()
	var out [][]byte
	err := dataset.LinesOf(context.Background(), path, func(_ int, l []byte) (bool, error) {
		out = append(out, bytes.Clone(l))
		return len(out) < n, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameAsModel fails unless a learner's report holds m's numbers.
func sameAsModel(t *testing.T, what string, l LearnerReport, m *model.Model) {
	t.Helper()
	ev := m.Eval()
	classes := m.Classes()
	if !m.Multi() {
		classes = prequential.BinaryClasses
	}
	if l.Rounds != ev.Rounds || l.Labeled != ev.Labeled || l.Mistakes != ev.Mistakes || l.Updates != ev.Updates ||
		l.BaselineMistakes != ev.BaselineMistakes || l.WindowRate != ev.WindowRate() || l.Kappa != ev.Scores().Kappa ||
		l.Support != ev.Support || l.SupportMax != ev.SupportMax || !reflect.DeepEqual(l.Confusion, ev.Confusion()) ||
		!reflect.DeepEqual(l.Classes, classes) {
		t.Fatalf("%s: replay %d rounds, %d/%d mistakes, %d updates, support %d (max %d), classes %q; model %d rounds, %d/%d, %d, %d (%d), %q",
			what, l.Rounds, l.Mistakes, l.Labeled, l.Updates, l.Support, l.SupportMax, l.Classes,
			ev.Rounds, ev.Mistakes, ev.Labeled, ev.Updates, ev.Support, ev.SupportMax, classes)
	}
	var segLabeled int64
	for _, s := range l.Segments {
		segLabeled += s.Labeled
	}
	if uint64(segLabeled) != l.Labeled {
		t.Fatalf("%s: segments hold %d labeled records, the learner %d", what, segLabeled, l.Labeled)
	}
}

// playInBatches plays recs through a new stream of cfg, n at a time, and
// ends it.
func playInBatches(t *testing.T, cfg Config, partition int, recs []Record, n int) PartitionReport {
	t.Helper()
	s, err := NewStream(cfg, partition)
	if err != nil {
		t.Fatal(err)
	}
	for len(recs) > 0 {
		k := min(n, len(recs))
		s.Play(recs[:k])
		recs = recs[k:]
	}
	s.Flush()
	return s.Report()
}

// A replay with labels N records late is, learner by learner, a
// model.Delayer over the same records, the labels still in flight at the
// end revealed by Flush: on indexed records and on events (classes found
// online, online scaling), whatever the batches.
func TestDelayReplayIsTheDelayer(t *testing.T) {
	set, err := dataset.Load(context.Background(), "../../testdata/a9a.gz", dataset.Options{Limit: 1200})
	if err != nil {
		t.Fatal(err)
	}
	var recs []Record
	for i := range set.X {
		recs = append(recs, Record{Offset: int64(i), X: set.X[i], Y: set.Y[i], Segment: -1})
	}
	events := gzLines(t, "../../testdata/covtype.2000.jsonl.gz", 700)
	var evRecs []Record
	for i, b := range events {
		evRecs = append(evRecs, Record{Offset: int64(i), Value: b, Segment: -1})
	}
	rbf, _ := learners.ParseKernel("rbf:gamma=0.5")
	cases := []struct {
		name string
		cfg  Config
		recs []Record
	}{
		{"records", Config{Learners: []string{"perceptron", "rbp:budget=40", "projectron++:budget=40"}, Kernel: rbf, Seed: 3,
			Detectors: []string{"ddm"}, ShiftOffsets: []int64{600}}, recs},
		{"events", Config{Learners: []string{"rbp:budget=20", "forgetron:budget=20"}, Kernel: rbf, Seed: 3, Detectors: []string{},
			Model: model.Config{Events: true, Event: codec.EventConfig{LabelField: "Cover_Type", KeyField: "id"},
				Classes: []string{model.Auto}, Features: features.Config{Scale: features.ScaleOnline}}}, evRecs},
	}
	for _, c := range cases {
		prompt := playInBatches(t, c.cfg, 2, c.recs, 1000)
		for _, n := range []int{1, 60} {
			cfg := c.cfg
			cfg.Delay = n
			rep := playInBatches(t, cfg, 2, c.recs, 97)
			if again := playInBatches(t, cfg, 2, c.recs, 1000); !reflect.DeepEqual(withoutSpeed(again), withoutSpeed(rep)) {
				t.Fatalf("%s, delay %d: the batches change the report", c.name, n)
			}
			differs := false
			for i, l := range rep.Learners {
				mc := c.cfg.Model
				mc.Learner, mc.Kernel, mc.Seed, mc.Window, mc.Delayed = c.cfg.Learners[i], c.cfg.Kernel, c.cfg.Seed+2, 1000, model.DelayConfig(n)
				m, err := model.New(mc)
				if err != nil {
					t.Fatal(err)
				}
				d, err := model.NewDelayer(m, n)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range c.recs {
					if r.Value != nil {
						err = d.Step(r.Value, func(model.Result) {})
					} else {
						err = d.StepVector(r.X, binaryToken[r.Y], func(model.Result) {})
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				if err := d.Flush(func(model.Result) {}); err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("%s, delay %d, %s", c.name, n, l.Spec)
				sameAsModel(t, what, l, m)
				if l.Labeled != uint64(len(c.recs)) || l.Labels == nil || l.Labels.Held != l.Labeled || l.Labels.Late != l.Labeled || l.Labels.Pending != 0 {
					t.Fatalf("%s: %d labeled of %d records, labels %+v", what, l.Labeled, len(c.recs), l.Labels)
				}
				differs = differs || l.Mistakes != prompt.Learners[i].Mistakes
			}
			if !differs {
				t.Fatalf("%s: a delay of %d changes no learner's mistakes", c.name, n)
			}
		}
	}
	if err := (Config{Learners: []string{"perceptron"}, Kernel: rbf, Delay: -1}).Validate(); err == nil {
		t.Fatal("a negative delay was taken")
	}
}

// withoutSpeed drops the one figure that depends on the clock.
func withoutSpeed(p PartitionReport) PartitionReport {
	p.Learners = append([]LearnerReport(nil), p.Learners...)
	for i := range p.Learners {
		p.Learners[i].ExamplesPerSecond = 0
	}
	return p
}

// delayedMessages is a keyed stream of a9a records whose labels come in
// their own messages (a LIBSVM line of the label alone) 0 to 40 records
// later, each at its own time: some records carry their label, a few
// labels never come, a few are for no record, a few have no key, and one
// record is sent again under the same key before its label.
func delayedMessages(t *testing.T, n int) []kafka.Message {
	t.Helper()
	recs := gzLines(t, "../../testdata/a9a.gz", n)
	rnd := rand.New(rand.NewPCG(7, 1))
	type due struct {
		at  int
		msg kafka.Message
	}
	var later []due
	var out []kafka.Message
	for i, line := range recs {
		key := []byte(fmt.Sprint("r", i))
		label, features, _ := bytes.Cut(line, []byte(" "))
		out = append(out, kafka.Message{Key: key, Value: features})
		switch {
		case i%10 == 0:
			out[len(out)-1].Value = line // labeled at once
		case i%17 == 0:
			// Its label never comes.
		case i == 301:
			out = append(out, kafka.Message{Key: key, Value: features}) // replaced
			fallthrough
		default:
			later = append(later, due{i + rnd.IntN(41), kafka.Message{Key: key, Value: label}})
		}
		if i%97 == 0 {
			out = append(out, kafka.Message{Key: []byte(fmt.Sprint("nobody", i)), Value: []byte("+1")})
		}
		if i%131 == 0 {
			out = append(out, kafka.Message{Value: []byte("-1")})
		}
		for j := 0; j < len(later); {
			if later[j].at <= i {
				out = append(out, later[j].msg)
				later = append(later[:j], later[j+1:]...)
				continue
			}
			j++
		}
	}
	for _, d := range later {
		out = append(out, d.msg)
	}
	for i := range out {
		// Times in ms, 10 apart, with a pause of 5 s after message 700:
		// the records held across it expire under a max age of 2 s.
		ms := int64(10 * i)
		if i > 700 {
			ms += 5000
		}
		out[i].Time = time.UnixMilli(t0 + ms)
	}
	return out
}

// t0 is the first test message's time (ms).
const t0 = 1_700_000_000_000

// writeTo writes msgs to topic, each to the partition it names.
func writeTo(t *testing.T, ctx context.Context, addr, topic string, msgs []kafka.Message) {
	t.Helper()
	w := &kafka.Writer{Transport: &kafka.Transport{}, Addr: kafka.TCP(addr), Topic: topic, BatchSize: 500, BatchTimeout: 10 * time.Millisecond, RequiredAcks: kafka.RequireAll,
		Balancer: kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return m.Partition })}
	defer w.Close()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
}

// A topic of records and their label messages replays as the service
// plays it: model.StepAt with each message's key, time and offset, the
// refused labels counted by reason, none of them stopping the replay.
func TestDelayedLabelsReplayIsStepAt(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"keyed"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msgs := delayedMessages(t, 1000)
	writeTo(t, ctx, b.Addr(), "keyed", msgs)

	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	pc := pending.Config{MaxRecords: 20, MaxAge: 2000}
	cfg := Config{Learners: []string{"perceptron", "rbp:budget=40"}, Kernel: k, Seed: 9, Detectors: []string{}, Window: 200,
		Model: model.Config{Delayed: &pc}}
	rep, err := Run(ctx, Source{Conn: kafkaconn.Config{Brokers: []string{b.Addr()}}, Topic: "keyed", Batch: 64}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Partitions[0]
	if p.Rounds != int64(len(msgs)) || len(p.Bad) != 0 {
		t.Fatalf("%d rounds of %d messages, bad %v", p.Rounds, len(msgs), p.Bad)
	}
	for i, l := range p.Learners {
		m, err := model.New(model.Config{Learner: cfg.Learners[i], Kernel: k, Seed: 9, Window: 200, Delayed: &pc})
		if err != nil {
			t.Fatal(err)
		}
		refused := map[string]int64{}
		var held, late uint64
		for off, msg := range msgs {
			r, err := m.StepAt(msg.Value, model.At{Key: msg.Key, Time: msg.Time.UnixMilli(), Offset: int64(off)})
			if err != nil {
				refused[string(reasonOf(t, err))]++
				continue
			}
			if r.Held {
				held++
			}
			if r.Late {
				late++
			}
		}
		sameAsModel(t, l.Spec, l, m)
		st := m.Pending()
		want := DelayedLabels{Held: held, Late: late, Pending: st.Len(), Evicted: st.Evicted, Expired: st.Expired, Replaced: st.Replaced, Refused: refused}
		if l.Labels == nil || !reflect.DeepEqual(*l.Labels, want) || len(l.Failed) != 0 {
			t.Fatalf("%s: delayed labels %+v, failed %v; the model's %+v", l.Spec, l.Labels, l.Failed, want)
		}
		// The stream holds every kind of refusal, and the records that
		// left the store unlabeled.
		for _, r := range []codec.Reason{codec.ReasonLabelUnknown, codec.ReasonLabelExpired, codec.ReasonLabelEvicted, codec.ReasonLabelNoKey} {
			if refused[string(r)] == 0 {
				t.Fatalf("%s: no %s among %v", l.Spec, r, refused)
			}
		}
		if want.Evicted == 0 || want.Expired == 0 || want.Replaced != 1 || late == 0 || want.Pending == 0 {
			t.Fatalf("%s: the stream misses a case: %+v", l.Spec, want)
		}
	}
	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil || !strings.Contains(table.String(), "perceptron:max=0, all partitions: delayed labels: ") ||
		!strings.Contains(table.String(), " label_unknown") {
		t.Fatalf("table (%v):\n%s", err, table.String())
	}
}

func reasonOf(t *testing.T, err error) codec.Reason {
	t.Helper()
	var ce *codec.Error
	if !errors.As(err, &ce) {
		t.Fatalf("not a codec error: %v", err)
	}
	return ce.Reason
}

// elec2Split cuts the first n Elec2 events into records (the event
// without its class) and label messages (id and class), partition i%2,
// the record of event i at t0 + 10i ms. Its label comes 0 to 30 records
// later; the label topic is in the order the labels come, but every 13th
// label is stamped 15 ms early, so its time may be before the one
// written ahead of it (a merge keeps the topic's order; a sort would
// not). Every 25th label has its record's very time, every 19th never
// comes, and every 100th event has a label for no record beside it.
func elec2Split(t *testing.T, n int) (records, labels []kafka.Message) {
	t.Helper()
	rnd := rand.New(rand.NewPCG(3, 5))
	type due struct {
		at  int64
		msg kafka.Message
	}
	var dues []due
	for i, line := range gzLines(t, "../../testdata/elec2.3000.jsonl.gz", n) {
		var ev map[string]json.RawMessage
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatal(err)
		}
		lab, _ := json.Marshal(map[string]json.RawMessage{"id": ev["id"], "class": ev["class"]})
		delete(ev, "class")
		rec, _ := json.Marshal(ev)
		at := t0 + 10*int64(i)
		records = append(records, kafka.Message{Partition: i % 2, Value: rec, Time: time.UnixMilli(at)})
		d := int64(rnd.IntN(31))
		switch {
		case i%25 == 0:
			d = 0
		case i%19 == 0:
			continue
		}
		dues = append(dues, due{at + 10*d, kafka.Message{Partition: i % 2, Value: lab}})
		if i%100 == 0 {
			dues = append(dues, due{at, kafka.Message{Partition: i % 2, Value: []byte(fmt.Sprintf(`{"id":"nobody-%d","class":"UP"}`, i))}})
		}
	}
	slices.SortStableFunc(dues, func(a, b due) int { return cmp.Compare(a.at, b.at) })
	for i, d := range dues {
		if i%13 == 0 {
			d.at -= 15
		}
		d.msg.Time = time.UnixMilli(d.at)
		labels = append(labels, d.msg)
	}
	return records, labels
}

// mergeByHand is each partition's records and labels in the documented
// order: by time, records before labels when the times tie, each topic in
// its own order.
func mergeByHand(records, labels []kafka.Message) []kafka.Message {
	var out []kafka.Message
	for p := range 2 {
		var rs, ls []kafka.Message
		for _, m := range records {
			if m.Partition == p {
				rs = append(rs, m)
			}
		}
		for _, m := range labels {
			if m.Partition == p {
				ls = append(ls, m)
			}
		}
		for len(rs) > 0 || len(ls) > 0 {
			if len(ls) == 0 || len(rs) > 0 && !rs[0].Time.After(ls[0].Time) {
				out, rs = append(out, rs[0]), rs[1:]
			} else {
				out, ls = append(out, ls[0]), ls[1:]
			}
		}
	}
	return out
}

// Labels in a co-partitioned label topic replay as the same messages
// merged by hand into one topic: the same report, learner by learner.
func TestLabelTopicReplaysAsTheMergedTopic(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 2, Topics: []string{"in", "labels", "merged"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	records, labels := elec2Split(t, 1200)
	writeTo(t, ctx, b.Addr(), "in", records)
	writeTo(t, ctx, b.Addr(), "labels", labels)
	writeTo(t, ctx, b.Addr(), "merged", mergeByHand(records, labels))

	k, _ := learners.ParseKernel("rbf:gamma=1")
	labelMap := codec.LabelMap{Positive: []string{"UP"}, Negative: []string{"DOWN"}}
	cfg := Config{Learners: []string{"perceptron", "rbp:budget=30"}, Kernel: k, Seed: 2, Detectors: []string{"adwin"}, Window: 200,
		Model: model.Config{Event: codec.EventConfig{LabelField: "class", KeyField: "id"}, Labels: labelMap,
			Delayed: &pending.Config{MaxRecords: 8}}}
	conn := kafkaconn.Config{Brokers: []string{b.Addr()}}
	src := Source{Conn: conn, Labels: labelMap, DetectInput: true, Batch: 100}
	pair, one := src, src
	pair.Topic, pair.LabelTopic, one.Topic = "in", "labels", "merged"
	got, err := Run(ctx, pair, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Run(ctx, one, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got.LabelTopic != "labels" || len(got.Partitions) != 2 {
		t.Fatalf("label topic %q, %d partitions", got.LabelTopic, len(got.Partitions))
	}
	for p := range got.Partitions {
		g, w := got.Partitions[p], want.Partitions[p]
		if g.LabelRecords == 0 || g.Rounds != w.Rounds || g.Rounds != int64(g.LastOffset-g.FirstOffset+1)+g.LabelRecords || len(g.Bad) != 0 {
			t.Fatalf("partition %d: %d rounds (%d labels, offsets %d..%d), merged %d; bad %v", p, g.Rounds, g.LabelRecords, g.FirstOffset, g.LastOffset, w.Rounds, g.Bad)
		}
		for i := range g.Learners {
			gl, wl := comparable(g.Learners[i]), comparable(w.Learners[i])
			if !reflect.DeepEqual(gl, wl) {
				t.Fatalf("partition %d, %s:\nlabel topic %+v\nmerged      %+v", p, gl.Spec, gl, wl)
			}
			dl := gl.Labels
			if dl.Late == 0 || dl.Evicted == 0 || dl.Pending == 0 || dl.Refused["label_unknown"] == 0 || dl.Refused["label_evicted"] == 0 {
				t.Fatalf("partition %d, %s: the stream misses a case: %+v", p, gl.Spec, dl)
			}
		}
	}
	if !reflect.DeepEqual(got.Learners, want.Learners) {
		t.Fatalf("summaries differ:\n%+v\n%+v", got.Learners, want.Learners)
	}

	// A label topic of another partition count is refused before reading,
	// naming both counts; so is a bound that is one topic's offset.
	c, err := kafka.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	err = c.CreateTopics(kafka.TopicConfig{Topic: "three", NumPartitions: 3, ReplicationFactor: 1})
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	pair.LabelTopic = "three"
	if _, err := Run(ctx, pair, cfg); err == nil || !strings.Contains(err.Error(), "in has 2 partitions and label topic three has 3") {
		t.Fatalf("label topic of 3 partitions: %v", err)
	}
	pair.LabelTopic, pair.From = "labels", "100"
	if _, err := Run(ctx, pair, cfg); err == nil || !strings.Contains(err.Error(), "earliest, latest or a time") {
		t.Fatalf("offset bound with a label topic: %v", err)
	}
}

// comparable is a learner report without what depends on the clock or on
// which topic an offset is in.
func comparable(l LearnerReport) LearnerReport {
	l.ExamplesPerSecond = 0
	l.Segments = slices.Clone(l.Segments)
	for i := range l.Segments {
		l.Segments[i].StartOffset = 0
	}
	l.Trace = slices.Clone(l.Trace)
	for i := range l.Trace {
		l.Trace[i].Offset = 0
	}
	return l
}

// With delayed labels, input detection passes over a first message that
// could be a record's label or an event's ({"label": …} alone) and lets
// the next one decide (a topic may mix JSON and LIBSVM records; as events,
// the LIBSVM lines would be bad records).
func TestDetectPassesOverALabelAlone(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"records", "events"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := kafka.Message{Key: []byte("a"), Value: []byte(`{"label":1}`)}
	writeTo(t, ctx, b.Addr(), "records", []kafka.Message{first,
		{Key: []byte("a"), Value: []byte(`1:0.5`)}, {Key: []byte("a"), Value: []byte(`-1`)}})
	writeTo(t, ctx, b.Addr(), "events", []kafka.Message{first,
		{Key: []byte("a"), Value: []byte(`{"x":0.5}`)}, {Key: []byte("a"), Value: []byte(`{"label":-1}`)}})
	k, _ := learners.ParseKernel("linear")
	cfg := Config{Learners: []string{"perceptron"}, Kernel: k, Detectors: []string{}, Model: model.Config{Delayed: &pending.Config{}}}
	for _, topic := range []string{"records", "events"} {
		rep, err := Run(ctx, Source{Conn: kafkaconn.Config{Brokers: []string{b.Addr()}}, Topic: topic, DetectInput: true}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := rep.Partitions[0]
		l := p.Learners[0]
		if p.Rounds != 3 || len(p.Bad) != 0 || l.Labels.Late != 1 || l.Labels.Refused["label_unknown"] != 1 || l.Labeled != 1 {
			t.Fatalf("%s: %d rounds, bad %v, labels %+v, %d labeled", topic, p.Rounds, p.Bad, l.Labels, l.Labeled)
		}
	}
}
