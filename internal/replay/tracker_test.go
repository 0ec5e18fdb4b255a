package replay

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/rng"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

func one(offset int64, y int) Record {
	return Record{Offset: offset, X: sparse.Vector{Idx: []uint32{1}, Val: []float64{1}}, Y: y, Segment: -1}
}

// flipStream is x = 1 with y = +1 for ten records, then y = −1 for ten.
// The linear Perceptron updates at rounds 0 (f = 0), 10 (f = 1) and 11
// (f = 0 after the update), and nowhere else; by the reporting rule
// (sign(0) = −1) rounds 0 and 10 are mistakes, round 11 is not: its
// label is −1.
func flipStream() []Record {
	var recs []Record
	for i := range 20 {
		y := 1
		if i >= 10 {
			y = -1
		}
		recs = append(recs, one(int64(100+i), y))
	}
	return recs
}

func linear(t *testing.T) learners.Kernel {
	k, err := learners.ParseKernel("linear")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestStreamNumbersByHand(t *testing.T) {
	cfg := Config{Learners: []string{"perceptron"}, Kernel: linear(t), Window: 5, RecoveryWindow: 3,
		Tolerance: 0.05, Detectors: []string{}, TracePoints: 4, ShiftOffsets: []int64{110}}
	s, err := NewStream(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Play(flipStream())
	rep := s.Report()
	if rep.Rounds != 20 || rep.FirstOffset != 100 || rep.LastOffset != 119 {
		t.Fatalf("rounds %d offsets %d..%d", rep.Rounds, rep.FirstOffset, rep.LastOffset)
	}
	if want := []Shift{{Round: 10, Offset: 110, Segment: -1}}; !reflect.DeepEqual(rep.Shifts, want) {
		t.Fatalf("shifts %+v, want %+v", rep.Shifts, want)
	}
	l := rep.Learners[0]
	if l.Mistakes != 2 || l.Labeled != 20 || l.MistakeRate != 2.0/20 || l.Updates != 3 {
		t.Fatalf("mistakes %d of %d (%v), updates %d, want 2 of 20 and 3 updates", l.Mistakes, l.Labeled, l.MistakeRate, l.Updates)
	}
	// Baseline: −1 at round 0 (nothing seen), then +1 while the +1 labels
	// lead: wrong at round 0 and on the −1 rounds 10..18; at round 19 the
	// tally is 10 to 9, still +1, wrong again: 11.
	if baselineByHand(flipStream()) != 11 {
		t.Fatal("hand tally")
	}
	if l.BaselineMistakes != baselineByHand(flipStream()) {
		t.Fatalf("baseline mistakes %d, want %d", l.BaselineMistakes, baselineByHand(flipStream()))
	}
	if want := [][]uint64{{9, 1}, {1, 9}}; !reflect.DeepEqual(l.Confusion, want) {
		t.Fatalf("confusion %v, want %v", l.Confusion, want)
	}
	// The last five labeled rounds (15..19) hold no mistake.
	if l.WindowRate != 0 {
		t.Fatalf("window rate %v, want 0", l.WindowRate)
	}
	want := []SegmentStats{
		{StartRound: 0, StartOffset: 100, Segment: -1, Rounds: 10, Labeled: 10, Mistakes: 1, MistakeRate: 0.1},
		{StartRound: 10, StartOffset: 110, Segment: -1, Rounds: 10, Labeled: 10, Mistakes: 1, MistakeRate: 0.1},
	}
	if !reflect.DeepEqual(l.Segments, want) {
		t.Fatalf("segments\n%+v\nwant\n%+v", l.Segments, want)
	}
	// Pre-shift level: rounds 5..9, no mistake, 0. Post-shift windows of
	// three: 10–12 (1/3), 11–13 (0) — recovered at round 13, four records
	// counting the shift's.
	if len(l.Recovery) != 1 || l.Recovery[0].PreRate != 0 || l.Recovery[0].Records == nil || *l.Recovery[0].Records != 4 {
		t.Fatalf("recovery %+v", l.Recovery)
	}
	// Four trace points at most: the stride doubles at rounds 4, 8 and 16,
	// leaving rounds 0, 8 and 16.
	var rounds []int64
	for _, p := range l.Trace {
		rounds = append(rounds, p.Round)
	}
	if !reflect.DeepEqual(rounds, []int64{0, 8, 16}) {
		t.Fatalf("trace rounds %v, want [0 8 16]", rounds)
	}
	if p := l.Trace[0]; p.WindowRate != 1 || p.MistakeRate != 1 || p.Support != 1 {
		t.Fatalf("first trace point %+v: one round, one mistake, one support vector", p)
	}
}

func TestStreamNoRecoveryBeforeTheNextShift(t *testing.T) {
	// With a recovery window of 3 the first watch cannot decide before
	// round 12; a second shift there closes it unrecovered.
	cfg := Config{Learners: []string{"perceptron"}, Kernel: linear(t), Window: 5, RecoveryWindow: 3,
		Detectors: []string{}, ShiftOffsets: []int64{110, 112}}
	s, err := NewStream(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Play(flipStream())
	rec := s.Report().Learners[0].Recovery
	if len(rec) != 2 || rec[0].Records != nil {
		t.Fatalf("recovery %+v: the first shift must stay unrecovered", rec)
	}
	// Second shift at round 12: pre-shift window 7..11 holds 1 mistake of 5.
	if rec[1].PreRate != 1.0/5 || rec[1].Records == nil || *rec[1].Records != 3 {
		t.Fatalf("second recovery %+v, want pre 0.2 and 3 records", rec[1])
	}
}

func TestStreamSegmentsFromHeadersBadAndUnlabeledRecords(t *testing.T) {
	cfg := Config{Learners: []string{"perceptron"}, Kernel: linear(t), Detectors: []string{}, ShiftsFromSegments: true}
	s, err := NewStream(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	recs := flipStream()
	for i := range recs {
		recs[i].Segment = 4 + i/10
	}
	recs[3].Y = 0                                                                                 // unlabeled: a round, not learned
	recs = append(recs[:5], append([]Record{{Offset: 999, Bad: "invalid_json"}}, recs[5:]...)...) // not a round
	s.Play(recs[:7])
	s.Play(recs[7:])
	rep := s.Report()
	if rep.Rounds != 20 || rep.Bad["invalid_json"] != 1 {
		t.Fatalf("rounds %d bad %v", rep.Rounds, rep.Bad)
	}
	if want := []Shift{{Round: 10, Offset: 110, Segment: 5}}; !reflect.DeepEqual(rep.Shifts, want) {
		t.Fatalf("shifts %+v want %+v", rep.Shifts, want)
	}
	l := rep.Learners[0]
	if l.Labeled != 19 || l.Rounds != 20 || l.Seed != 1+3 {
		t.Fatalf("labeled %d rounds %d seed %d", l.Labeled, l.Rounds, l.Seed)
	}
	if l.Segments[0].Segment != 4 || l.Segments[1].Segment != 5 || l.Segments[0].Labeled != 9 || l.Segments[1].Rounds != 10 {
		t.Fatalf("segments %+v", l.Segments)
	}
}

func TestBatchingDoesNotChangeTheReport(t *testing.T) {
	// Learners run in parallel over each batch; one record at a time or
	// all at once, the numbers are the same.
	k, _ := learners.ParseKernel("rbf:gamma=0.5")
	cfg := Config{Learners: []string{"rbp:budget=5", "forgetron:budget=5", "perceptron"}, Kernel: k,
		Detectors: []string{}, Window: 7, RecoveryWindow: 4, ShiftOffsets: []int64{130}}
	var recs []Record
	for i := range 60 {
		x := float64(i%7) - 3
		y := 1
		if (x > 0) != (i >= 30) {
			y = -1
		}
		recs = append(recs, Record{Offset: int64(100 + i), X: sparse.Vector{Idx: []uint32{1, 2}, Val: []float64{x, 1}}, Y: y, Segment: -1})
	}
	whole, _ := NewStream(cfg, 0)
	whole.Play(recs)
	single, _ := NewStream(cfg, 0)
	for i := range recs {
		single.Play(recs[i : i+1])
	}
	a, b := whole.Report(), single.Report()
	for i := range a.Learners {
		a.Learners[i].ExamplesPerSecond, b.Learners[i].ExamplesPerSecond = 0, 0
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("batch of 60:\n%s\nbatches of 1:\n%s", ja, jb)
	}
}

func TestRecoveryJSONRoundTripsAnUndefinedPreRateAsNull(t *testing.T) {
	n := int64(7)
	b, err := json.Marshal([]Recovery{{ShiftRound: 3, PreRate: math.NaN()}, {ShiftRound: 9, PreRate: 0.25, Records: &n}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `[{"shift_round":3,"records":null,"pre_rate":null},{"shift_round":9,"records":7,"pre_rate":0.25}]`; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	var back []Recovery
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || !math.IsNaN(back[0].PreRate) || back[1].PreRate != 0.25 || *back[1].Records != 7 || back[1].ShiftRound != 9 {
		t.Fatalf("read back %+v", back)
	}
}

func TestConfigValidate(t *testing.T) {
	k := linear(t)
	for name, c := range map[string]Config{
		"no learner":     {Kernel: k},
		"bad learner":    {Learners: []string{"nope"}, Kernel: k},
		"both shifts":    {Learners: []string{"perceptron"}, Kernel: k, ShiftOffsets: []int64{3}, ShiftsFromSegments: true},
		"unsorted":       {Learners: []string{"perceptron"}, Kernel: k, ShiftOffsets: []int64{5, 3}},
		"negative toler": {Learners: []string{"perceptron"}, Kernel: k, Tolerance: -1},
	} {
		if err := c.withDefaults().Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestDetectorsFindTheShiftOfAFrozenModel(t *testing.T) {
	// A Stoptron with budget 1 keeps its first support vector (+1) for
	// ever: 10 % mistakes (the label noise) before the shift at round
	// 3000, 90 % after. Every detector must see it.
	src := rng.New(7, 1)
	var recs []Record
	for i := range 6000 {
		y := 1
		if i >= 3000 {
			y = -1
		}
		if i > 0 && src.Float64() < 0.1 {
			y = -y
		}
		recs = append(recs, one(int64(i), y))
	}
	cfg := Config{Learners: []string{"stoptron:budget=1"}, Kernel: linear(t), ShiftOffsets: []int64{3000}}
	s, err := NewStream(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Play(recs)
	l := s.Report().Learners[0]
	if len(l.Detectors) != 3 {
		t.Fatalf("%d detectors, want the three defaults", len(l.Detectors))
	}
	for _, d := range l.Detectors {
		if d.Missed != 0 || len(d.Delays) != 1 || d.Delays[0] < 0 || d.Delays[0] > 300 {
			t.Errorf("%s: missed %d, delays %v (detections %v)", d.Name, d.Missed, d.Delays, d.Detected)
		}
	}
	if r := l.Recovery[0]; r.Records != nil {
		t.Errorf("a frozen model recovered after %d records", *r.Records)
	}
	if seg := l.Segments; seg[0].MistakeRate > 0.13 || seg[1].MistakeRate < 0.87 {
		t.Errorf("segment rates %v and %v, want about 0.1 and 0.9", seg[0].MistakeRate, seg[1].MistakeRate)
	}
}

func TestReportWritesEmptyListsNotNulls(t *testing.T) {
	s, err := NewStream(Config{Learners: []string{"perceptron"}, Kernel: linear(t), Detectors: []string{"ddm"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Play(flipStream()[:5])
	b, err := json.Marshal(s.Report())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"shifts":[]`, `"recovery":[]`, `"known":[]`, `"detected":[]`, `"delays":[]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report lacks %s: %s", want, b)
		}
	}
}

// baselineByHand plays the majority-class baseline over records' labels:
// answer the label seen most so far (ties and the start: −1).
func baselineByHand(recs []Record) uint64 {
	var pos, neg int
	var wrong uint64
	for _, r := range recs {
		answer := -1
		if pos > neg {
			answer = 1
		}
		if r.Y != answer {
			wrong++
		}
		if r.Y == 1 {
			pos++
		} else {
			neg++
		}
	}
	return wrong
}

func TestEmptyPartitionSaysNoRecords(t *testing.T) {
	cfg := Config{Learners: []string{"perceptron"}, Kernel: linear(t), Detectors: []string{}}
	s, err := NewStream(cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	rep := Assemble("t", cfg, []PartitionReport{s.Report()})
	var text strings.Builder
	if err := rep.WriteTable(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "no records") || strings.Contains(text.String(), "0.00") {
		t.Fatalf("empty partition reported as:\n%s", text.String())
	}
	var js strings.Builder
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Partitions []struct {
			Learners []map[string]any `json:"learners"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(js.String()), &back); err != nil {
		t.Fatal(err)
	}
	l := back.Partitions[0].Learners[0]
	if l["status"] != "no records" {
		t.Fatalf("empty partition in JSON: %v", l)
	}
	for _, k := range []string{"mistake_rate", "baseline_rate", "kappa", "accuracy", "macro_f1"} {
		if v, ok := l[k]; !ok || v != nil {
			t.Fatalf("empty partition in JSON: %s %v (present %v), want null", k, v, ok)
		}
	}
}
