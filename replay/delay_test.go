package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/dataset"
	"github.com/streamlearner/streamlearner/embedded"
	"github.com/streamlearner/streamlearner/features"
	"github.com/streamlearner/streamlearner/kafkaconn"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/model"
	"github.com/streamlearner/streamlearner/pending"
	"github.com/streamlearner/streamlearner/prequential"
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
	set, err := dataset.Load(context.Background(), "../testdata/a9a.gz", dataset.Options{Limit: 1200})
	if err != nil {
		t.Fatal(err)
	}
	var recs []Record
	for i := range set.X {
		recs = append(recs, Record{Offset: int64(i), X: set.X[i], Y: set.Y[i], Segment: -1})
	}
	events := gzLines(t, "../testdata/covtype.2000.jsonl.gz", 700)
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
	recs := gzLines(t, "../testdata/a9a.gz", n)
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
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, BatchSize: 500, RequiredAcks: kafka.RequireAll,
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
	if err := rep.WriteTable(&table); err != nil || !strings.Contains(table.String(), "perceptron, all partitions: delayed labels: ") ||
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
