package replay

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners"
)

// TestManyClassFiguresCountEveryLabeledRecord: with late labels a
// many-class model answers nothing until it has learned a class; those
// records are mistakes, and every figure of the report counts them: the
// accuracy is 1 − the mistake rate, and each class's recall is over all
// its labeled records.
func TestManyClassFiguresCountEveryLabeledRecord(t *testing.T) {
	events := gzLines(t, "../../testdata/covtype.2000.jsonl.gz", 700)
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

// TestRecoveryAtTheFirstWindowIsABound: a recovery decided by the first
// full post-shift window could have happened sooner, so the table shows
// it as at most that many records (≤3 with a window of 3), unlike one
// found later (4), and says what the bound is.
func TestRecoveryAtTheFirstWindowIsABound(t *testing.T) {
	var parts []PartitionReport
	var cfg Config
	for p, shifts := range [][]int64{{110}, {110, 112}} {
		cfg = Config{Learners: []string{"perceptron"}, Kernel: linear(t), Window: 5, RecoveryWindow: 3,
			Detectors: []string{}, ShiftOffsets: shifts}
		s, err := NewStream(cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		s.Play(flipStream())
		parts = append(parts, s.Report())
	}
	if r := parts[0].Learners[0].Recovery; len(r) != 1 || r[0].AtMost {
		t.Fatalf("partition 0 recovery %+v: found after the first window, exact", r)
	}
	if r := parts[1].Learners[0].Recovery; len(r) != 2 || r[0].AtMost || !r[1].AtMost || *r[1].Records != 3 {
		t.Fatalf("partition 1 recovery %+v: the second at most 3 records", r)
	}
	var b strings.Builder
	if err := Assemble("t", cfg, parts).WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	var recs []string
	for i, l := range strings.Split(b.String(), "\n")[1:3] {
		// After partition, learner, four figures and the segments' rates.
		f := strings.Fields(l)
		recs = append(recs, strings.Join(f[6+len(parts[i].Learners[0].Segments):], " "))
	}
	if want := []string{"4", "- ≤3"}; strings.Join(recs, "; ") != strings.Join(want, "; ") || !strings.Contains(b.String(), "recovery ≤N: back within tolerance over the first 3 labeled records after the shift") {
		t.Errorf("recovery columns %q, want %q:\n%s", recs, want, b.String())
	}
}
