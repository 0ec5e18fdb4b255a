package replay

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/internal/dev/embedded"
	"github.com/streamlearner/streamlearner/internal/feed"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn"
	"github.com/streamlearner/streamlearner/internal/kafka/kafkaconn/kafkaconntest"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/internal/offline"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/selection"
)

// a9aHead writes the first n lines of testdata's a9a to a file and loads
// them.
func a9aHead(t *testing.T, n int) (string, *dataset.Set) {
	t.Helper()
	ctx := context.Background()
	set, err := dataset.Load(ctx, "../../testdata/a9a.gz", dataset.Options{Limit: n})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("../../testdata/a9a.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "head.libsvm")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	for lines := 0; lines < n; {
		if _, err := zr.Read(buf); err != nil {
			t.Fatal(err)
		}
		out.Write(buf)
		if buf[0] == '\n' {
			lines++
		}
	}
	out.Close()
	return path, set
}

func TestReplayEqualsEvalOnTheSameRecords(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"stream"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path, set := a9aHead(t, 3000)
	conn := kafkaconn.Config{Brokers: []string{b.Addr()}}
	if n, err := feed.Produce(ctx, feed.ProduceConfig{Conn: conn, Topic: "stream", Data: path}); err != nil || n != 3000 {
		t.Fatalf("produced %d: %v", n, err)
	}
	// A record replay cannot read: counted, not played.
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Topic: "stream", RequiredAcks: kafka.RequireAll}
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte(`{"label": 1, "features": {"3": NaN}}`)}); err != nil {
		t.Fatal(err)
	}
	w.Close()

	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	specs := []string{"perceptron", "rbp:budget=50", "forgetron:budget=50", "projectron++:budget=50"}
	cfg := Config{Learners: specs, Kernel: k, Seed: 5, Detectors: []string{}}
	var calls int
	rep, err := Run(ctx, Source{Conn: conn, Topic: "stream", Progress: func(done, total int64) { calls++ }}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Partitions) != 1 || rep.Partitions[0].Rounds != 3000 || rep.Partitions[0].Bad["invalid_json"] != 1 {
		t.Fatalf("partitions %d, rounds %d, bad %v", len(rep.Partitions), rep.Partitions[0].Rounds, rep.Partitions[0].Bad)
	}
	if calls == 0 {
		t.Error("no progress reported")
	}
	// eval --keep-order --seed 5 on the same records: the same numbers.
	want, err := offline.Run(ctx, set, nil, offline.Config{Learners: specs, Kernel: k, Seed: 5, KeepOrder: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range rep.Partitions[0].Learners {
		if l.MistakeRate != want[i].MistakeRate || float64(l.Support) != want[i].Support || float64(l.SupportMax) != want[i].SupportMax {
			t.Errorf("%s: replay %v (support %d, max %d), eval %v (%v, %v)", l.Spec,
				l.MistakeRate, l.Support, l.SupportMax, want[i].MistakeRate, want[i].Support, want[i].SupportMax)
		}
	}

	// The same with a selection over the learners and a challenger on
	// another kernel: every row, the selector's included, is eval's.
	wide, _ := learners.ParseKernel("rbf:gamma=0.5")
	sel := selection.Config{Window: 300, Margin: 0.005, Detector: "adwin"}
	chall := []model.Candidate{{Learner: "rbp:budget=50", Kernel: wide}}
	scfg := cfg
	scfg.Select, scfg.Challengers = &sel, chall
	rep, err = Run(ctx, Source{Conn: conn, Topic: "stream"}, scfg)
	if err != nil {
		t.Fatal(err)
	}
	want, err = offline.Run(ctx, set, nil, offline.Config{Learners: specs, Kernel: k, Seed: 5, KeepOrder: true, Select: &sel, Challengers: chall})
	if err != nil {
		t.Fatal(err)
	}
	got := rep.Partitions[0].Learners
	if len(got) != len(specs)+2 || len(want) != len(got) || !got[len(got)-1].Selector || got[len(got)-1].Switches == 0 {
		t.Fatalf("%d rows, eval %d; selector %+v", len(got), len(want), got[len(got)-1].Spec)
	}
	for i, l := range got {
		if l.MistakeRate != want[i].MistakeRate || float64(l.Support) != want[i].Support ||
			l.Selector != want[i].Selector || float64(l.Switches) != want[i].Switches {
			t.Errorf("%s: replay %v (support %d, %d switches), eval %s %v (%v, %v)", l.Spec, l.MistakeRate, l.Support, l.Switches,
				want[i].Spec, want[i].MistakeRate, want[i].Support, want[i].Switches)
		}
	}
	var table bytes.Buffer
	rep.WriteTable(&table)
	if !strings.Contains(table.String(), "best single learner in hindsight") {
		t.Errorf("table:\n%s", table.String())
	}

	// Bounds: offsets [1000, 2000) are eval on records 1000..1999.
	rep, err = Run(ctx, Source{Conn: conn, Topic: "stream", From: "1000", To: "2000"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Partitions[0]
	if p.Rounds != 1000 || p.FirstOffset != 1000 || p.LastOffset != 1999 {
		t.Fatalf("bounded replay: %d rounds, offsets %d..%d", p.Rounds, p.FirstOffset, p.LastOffset)
	}
	mid := &dataset.Set{X: set.X[1000:2000], Y: set.Y[1000:2000]}
	want, err = offline.Run(ctx, mid, nil, offline.Config{Learners: specs, Kernel: k, Seed: 5, KeepOrder: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range p.Learners {
		if l.MistakeRate != want[i].MistakeRate {
			t.Errorf("%s on [1000, 2000): replay %v, eval %v", l.Spec, l.MistakeRate, want[i].MistakeRate)
		}
	}

	// A time bound after the last record replays nothing; a missing
	// partition is an error.
	rep, err = Run(ctx, Source{Conn: conn, Topic: "stream", From: time.Now().Add(time.Hour).Format(time.RFC3339)}, cfg)
	if err != nil || rep.Partitions[0].Rounds != 0 {
		t.Fatalf("replay from the future: %v, %+v", err, rep.Partitions)
	}
	if _, err := Run(ctx, Source{Conn: conn, Topic: "stream", Partitions: []int{3}}, cfg); err == nil {
		t.Fatal("partition 3 of a one-partition topic was replayed")
	}
}

// TestReplayEqualsEvalOnEvents: named-field events, many classes found
// online, online scaling: replay (input detected) and eval give the same
// numbers, class by class.
func TestReplayEqualsEvalOnEvents(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 1, Topics: []string{"events"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var lines [][]byte
	err = dataset.LinesOf(ctx, "../../testdata/covtype.2000.jsonl.gz", func(_ int, l []byte) (bool, error) {
		lines = append(lines, bytes.Clone(l))
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr()), Topic: "events", BatchSize: 1000, RequiredAcks: kafka.RequireAll}
	msgs := []kafka.Message{}
	for i, l := range lines {
		msgs = append(msgs, kafka.Message{Value: l})
		if i == 400 {
			msgs = append(msgs, kafka.Message{Value: []byte(`{"Cover_Type":1,"Elevation":`)}) // bad: counted, not played
		}
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	k, _ := learners.ParseKernel("rbf:gamma=0.5")
	specs := []string{"rbp:budget=20", "forgetron:budget=20"}
	mc := model.Config{Event: codec.EventConfig{LabelField: "Cover_Type", KeyField: "id"}, Classes: []string{model.Auto},
		Features: features.Config{Scale: features.ScaleOnline}}
	cfg := Config{Learners: specs, Kernel: k, Seed: 5, Detectors: []string{}, Model: mc}
	conn := kafkaconn.Config{Brokers: []string{b.Addr()}}
	rep, err := Run(ctx, Source{Conn: conn, Topic: "events", DetectInput: true}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Partitions[0]
	if p.Rounds != 2000 || p.Bad["invalid_json"] != 1 {
		t.Fatalf("rounds %d bad %v", p.Rounds, p.Bad)
	}
	mc.Events = true
	want, err := offline.RunData(ctx, &offline.Data{Events: lines}, nil, offline.Config{Learners: specs, Kernel: k, Seed: 5, KeepOrder: true, Model: mc})
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range p.Learners {
		if l.MistakeRate != want[i].MistakeRate || float64(l.Support) != want[i].Support || !slices.Equal(l.Classes, want[i].Classes) ||
			l.Kappa != want[i].Kappa || len(l.Classes) < 5 {
			t.Errorf("%s: replay %v %d %q, eval %v %v %q", l.Spec, l.MistakeRate, l.Support, l.Classes, want[i].MistakeRate, want[i].Support, want[i].Classes)
		}
	}
	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil || !strings.Contains(table.String(), "rbp:budget=20, all partitions: 7 classes, accuracy") ||
		!strings.Contains(table.String(), "recall %") {
		t.Fatalf("table (%v):\n%s", err, table.String())
	}
	// Room for three classes: the records of a fourth are refused, once
	// for all learners.
	cfg.Model.MaxClasses = 3
	rep, err = Run(ctx, Source{Conn: conn, Topic: "events", DetectInput: true}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Partitions[0]; p.Bad["too_many_classes"] == 0 || p.Rounds+p.Bad["too_many_classes"] != 2000 || len(p.Learners[0].Classes) != 3 {
		t.Fatalf("with 3 classes: rounds %d, bad %v, classes %q", p.Rounds, p.Bad, p.Learners[0].Classes)
	}
}

// A replay shares one transport over its partitions and closes its
// connections when it returns. It had a transport a partition, open
// after the replay until their idle timeout. So does the producer.
func TestReplayClosesItsConnections(t *testing.T) {
	b, err := embedded.Start(embedded.Config{Partitions: 3, Topics: []string{"stream"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path, _ := a9aHead(t, 300)
	conn := kafkaconn.Config{Brokers: []string{b.Addr()}}
	before := kafkaconntest.Open()
	// The producer closes its connections too.
	if n, err := feed.Produce(ctx, feed.ProduceConfig{Conn: conn, Topic: "stream", Data: path}); err != nil || n != 300 {
		t.Fatalf("produced %d: %v", n, err)
	}
	kafkaconntest.Closed(t, before, 5*time.Second)
	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	rep, err := Run(ctx, Source{Conn: conn, Topic: "stream"}, Config{Learners: []string{"rbp:budget=20"}, Kernel: k, Seed: 5, Detectors: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	var rounds int64
	for _, p := range rep.Partitions {
		rounds += p.Rounds
	}
	if len(rep.Partitions) != 3 || rounds != 300 {
		t.Fatalf("%d partitions, %d rounds; want 3, 300", len(rep.Partitions), rounds)
	}
	kafkaconntest.Closed(t, before, 5*time.Second)
}
