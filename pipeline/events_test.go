package pipeline

import (
	"bufio"
	"compress/gzip"
	"os"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/internal/model"
)

// Named-field events as producers write them — Covertype rows with a
// string id and a class column — are served unchanged: seven classes are
// discovered online, each prediction carries the event's id, the predicted
// class, every class's margin and the true class, and each partition's
// predictions are exactly those of the partition model played offline.
func TestNamedFieldManyClassEvents(t *testing.T) {
	t.Parallel() // mostly waits: it overlaps the others (make test sets -parallel)
	b := startBroker(t, "in", "out", "in.dlq")
	f, err := os.Open("../testdata/covtype.2000.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, _ := gzip.NewReader(f)
	var msgs []kafka.Message
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		msgs = append(msgs, kafka.Message{Value: append([]byte(nil), sc.Bytes()...)})
	}
	produce(t, b, "in", msgs, &kafka.RoundRobin{})

	cfg := testConfig(t, b, "rbp:budget=50")
	cfg.Model.Events, cfg.Model.Classes = true, []string{model.Auto}
	cfg.Model.Event = codec.EventConfig{LabelField: "Cover_Type", KeyField: "id"}
	cfg.Model.Features = features.Config{Scale: features.ScaleOnline}
	runMember(t, cfg)
	preds := readTopic(t, b, "out", len(msgs), 60*time.Second)
	if len(preds) != len(msgs) {
		t.Fatalf("%d predictions for %d events", len(preds), len(msgs))
	}
	got := map[[2]int64]codec.Prediction{}
	for _, r := range preds {
		p, err := codec.DecodePrediction(r.msg.Value)
		if err != nil {
			t.Fatalf("%s: %v", r.msg.Value, err)
		}
		got[[2]int64{int64(p.Partition), p.Offset}] = p
	}
	inputs := readTopic(t, b, "in", len(msgs), 30*time.Second)
	byPart := map[int][]record{}
	for _, r := range inputs {
		byPart[r.partition] = append(byPart[r.partition], r)
	}
	classes := map[string]bool{}
	for part, recs := range byPart {
		twin, err := model.New(cfg.ModelConfig(part))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			want, err := twin.Step(r.msg.Value)
			if err != nil {
				t.Fatal(err)
			}
			p := got[[2]int64{int64(part), r.offset}]
			if p.Margin != want.Margin || p.Class != want.Class || p.Predicted != want.Predicted || len(p.Margins) != len(want.Margins) {
				t.Fatalf("partition %d offset %d: %+v, offline %+v", part, r.offset, p, want)
			}
			for k, cm := range p.Margins {
				if cm.Class != twin.Class(k) || cm.Margin != want.Margins[k] {
					t.Fatalf("partition %d offset %d: class margins %+v", part, r.offset, p.Margins)
				}
			}
			if p.Key != string(want.Key) || len(p.Key) == 0 || p.LabelClass == "" || p.Mistake == nil || *p.Mistake != want.Mistake {
				t.Fatalf("partition %d offset %d: key %q (%q), label %q, mistake %v", part, r.offset, p.Key, want.Key, p.LabelClass, p.Mistake)
			}
			classes[p.LabelClass] = true
		}
	}
	if len(classes) != 7 {
		t.Fatalf("%d classes seen: %v", len(classes), classes)
	}
}
