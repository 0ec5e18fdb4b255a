package replay

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/features"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/model"
)

// TestManyClassFiguresCountEveryLabeledRecord: with late labels a
// many-class model answers nothing until it has learned a class; those
// records are mistakes, and every figure of the report counts them: the
// accuracy is 1 − the mistake rate, and each class's recall is over all
// its labeled records.
func TestManyClassFiguresCountEveryLabeledRecord(t *testing.T) {
	events := gzLines(t, "../testdata/covtype.2000.jsonl.gz", 700)
	rbf, _ := learners.ParseKernel("rbf:gamma=0.02")
	cfg := Config{Learners: []string{"rbp:budget=50"}, Kernel: rbf, Seed: 1, Detectors: []string{}, Delay: 60,
		Model: model.Config{Events: true, Event: codec.EventConfig{LabelField: "Cover_Type", KeyField: "id"},
			Classes: []string{model.Auto}, Features: features.Config{Scale: features.ScaleOnline}}}
	var parts []PartitionReport
	for p := range 2 {
		var recs []Record
		for i := p; i < len(events); i += 2 {
			recs = append(recs, Record{Offset: int64(i / 2), Value: events[i], Segment: -1})
		}
		parts = append(parts, playInBatches(t, cfg, p, recs, 100))
	}
	rep := Assemble("cov", cfg, parts)
	sm := rep.Learners[0]
	if sm.Labeled != uint64(len(events)) {
		t.Fatalf("%d labeled of %d", sm.Labeled, len(events))
	}
	if math.Abs(sm.Accuracy-(1-sm.MistakeRate)) > 1e-12 {
		t.Errorf("accuracy %v, mistake rate %v: not the same records", sm.Accuracy, sm.MistakeRate)
	}
	var answered, unanswered uint64
	for c, row := range sm.Confusion {
		var n uint64
		for _, c := range row {
			n += c
		}
		answered += n
		unanswered += sm.Unanswered[c]
		if want := float64(row[c]) / float64(n+sm.Unanswered[c]); sm.Recall[c] != want {
			t.Errorf("class %s: recall %v, want %v over its %d labeled records", sm.Classes[c], sm.Recall[c], want, n+sm.Unanswered[c])
		}
	}
	if unanswered == 0 || answered+unanswered != sm.Labeled {
		t.Errorf("%d answered and %d unanswered of %d labeled", answered, unanswered, sm.Labeled)
	}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("accuracy %.2f %%, macro-F1 %.3f, over %d labeled records, %d of them with no prediction", 100*(1-sm.MistakeRate), sm.MacroF1, sm.Labeled, unanswered); !strings.Contains(b.String(), want) || !strings.Contains(b.String(), "(none)") {
		t.Errorf("the table does not say %q:\n%s", want, b.String())
	}
}
