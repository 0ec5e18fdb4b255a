package model

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/prequential"
	"github.com/streamlearner/streamlearner/learners/rng"
	"github.com/streamlearner/streamlearner/learners/selection"
)

// crafted is a binary stream of n records whose labels are −1 before
// record flip (1-based) and +1 from it on. Feature 1 is 1 on every record,
// feature 2 is distinct per record, so that:
//   - a linear perceptron predicts −1 (sign 0) until its first mistake, the
//     first +1 record, and +1 (margin ≈ 1) on every record after it;
//   - a perceptron with an RBF kernel of γ = 1e9 sees no two records alike
//     (k = exp(−γ·‖xi−xj‖²) underflows to 0), so its margin stays 0 and it
//     predicts −1 on every record: right before flip, wrong from it on.
func crafted(n, flip int) [][]byte {
	var out [][]byte
	for i := 1; i <= n; i++ {
		y := "-1"
		if i >= flip {
			y = "+1"
		}
		out = append(out, []byte(fmt.Sprintf("%s 1:1 2:%g", y, float64(i)*1e-3)))
	}
	return out
}

// TestSelectionByHand plays the crafted stream with candidate 0 the
// always −1 learner and challengers that learn the +1 concept at their
// first mistake: the champion rule worked out record by record.
func TestSelectionByHand(t *testing.T) {
	never := kernel(t, "rbf:gamma=1e9")
	linear := kernel(t, "linear")
	poly := kernel(t, "poly:degree=1,coef0=1") // the same predictions as linear here
	cases := []struct {
		name   string
		flip   int
		window int
		margin float64
		chall  []Candidate
		// switchAt is the record after which the champion becomes to.
		switchAt, to int
	}{
		// Window 10, margin 0.25: from record 21 candidate 0 errs on every
		// record, the challenger only on record 21. After record 23 the
		// window holds 3 against 1 mistakes (0.2 ≤ 0.25), after record 24
		// 4 against 1 (0.3 > 0.25): the challenger takes over for record 25.
		{"margin 0.25", 21, 10, 0.25, []Candidate{{Learner: "perceptron", Kernel: linear}}, 24, 1},
		// Hysteresis: with margin 0.35, 0.3 is not enough; record 25 makes
		// it 5 against 1 (0.4).
		{"margin 0.35", 21, 10, 0.35, []Candidate{{Learner: "perceptron", Kernel: linear}}, 25, 1},
		// The challenger is better from record 3 on, but nothing switches
		// before the window is full (record 10: 8 against 1).
		{"window not full", 3, 10, 0.25, []Candidate{{Learner: "perceptron", Kernel: linear}}, 10, 1},
		// Two challengers with equal mistakes: the first listed wins.
		{"tie to the first listed", 21, 10, 0.25, []Candidate{{Learner: "perceptron", Kernel: linear}, {Learner: "perceptron", Kernel: poly}}, 24, 1},
		{"tie, other order", 21, 10, 0.25, []Candidate{{Learner: "perceptron", Kernel: poly}, {Learner: "perceptron", Kernel: linear}}, 24, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := build(t, Config{Learner: "perceptron", Kernel: never, Challengers: c.chall,
				Select: selection.Config{Window: c.window, Margin: c.margin}})
			solo := []*Model{build(t, Config{Learner: "perceptron", Kernel: never})}
			for _, ch := range c.chall {
				solo = append(solo, build(t, Config{Learner: ch.Learner, Kernel: ch.Kernel}))
			}
			for i, b := range crafted(40, c.flip) {
				rec := i + 1
				r, err := m.Step(b)
				if err != nil {
					t.Fatal(err)
				}
				champ := 0
				if rec > c.switchAt {
					champ = c.to
				}
				var want uint64
				var emitted Result
				for k, s := range solo {
					rs, _ := s.Step(b)
					if rs.Mistake {
						want |= 1 << k
					}
					if k == champ {
						emitted = rs
					}
				}
				if r.Candidate != champ || r.Learner != m.CandidateName(champ) || r.Mistakes != want ||
					math.Float64bits(r.Margin) != math.Float64bits(emitted.Margin) || r.Mistake != emitted.Mistake {
					t.Fatalf("record %d: %+v; want candidate %d (margin %v), mistakes %b", rec, r, champ, emitted.Margin, want)
				}
				if sw := rec == c.switchAt; r.Switched != sw || (sw && (r.From != 0 || r.To != c.to)) || (!sw && r.To != r.Candidate) {
					t.Fatalf("record %d: switched %v from %d to %d", rec, r.Switched, r.From, r.To)
				}
			}
			if m.Selector().Switches() != 1 || m.Champion() != c.to {
				t.Fatalf("%d switches, champion %d", m.Selector().Switches(), m.Champion())
			}
			// Candidate 0 errs on the 20 records from 21 (or 38 from 3).
			if got, want := m.CandidateEval(0).Mistakes, uint64(41-c.flip); got != want {
				t.Fatalf("candidate 0: %d mistakes, want %d", got, want)
			}
			if m.CandidateEval(1).Mistakes != 1 {
				t.Fatalf("challenger: %d mistakes, want 1", m.CandidateEval(1).Mistakes)
			}
			// The emitted predictions: candidate 0's until the switch, then
			// the challenger's (right from then on).
			if got, want := m.Eval().Mistakes, uint64(c.switchAt-c.flip+1); got != want {
				t.Fatalf("emitted: %d mistakes, want %d", got, want)
			}
		})
	}
}

// candidateCases are models with challengers differing in learner and
// kernel, binary records and many-class events.
func candidateCases(t testing.TB) []struct {
	name string
	cfg  Config
	data string
} {
	return []struct {
		name string
		cfg  Config
		data string
	}{
		{"binary records", Config{Learner: "rbp:budget=25", Kernel: kernel(t, "rbf:gamma=0.05"), Seed: 4,
			Challengers: []Candidate{{Learner: "forgetron:budget=25"}, {Learner: "rbp:budget=25", Kernel: kernel(t, "rbf:gamma=0.5")}, {Learner: "perceptron", Kernel: kernel(t, "linear")}},
			Select:      selection.Config{Window: 50, Margin: 0.02}}, "../../testdata/a9a.gz"},
		{"auto classes, adwin", Config{Learner: "rbp:budget=15", Kernel: kernel(t, "rbf:gamma=0.5"), Seed: 5, Events: true, Classes: []string{Auto},
			Event: codec.EventConfig{LabelField: "Cover_Type", KeyField: "id"}, Features: features.Config{Scale: features.ScaleOnline, HashBits: 12},
			Challengers: []Candidate{{Learner: "lbp:budget=15"}, {Learner: "rbp:budget=15", Kernel: kernel(t, "rbf:gamma=2")}},
			Select:      selection.Config{Window: 60, Margin: 0.01, Detector: "adwin"}}, "../../testdata/covtype.2000.jsonl.gz"},
	}
}

// TestCandidatesAreSoloModels: inside a model with challengers, every
// candidate plays exactly as a model of its learner and kernel alone
// (same seed), its evaluator is that model's, the selector sees their
// mistakes, and the emitted prediction is the champion's.
func TestCandidatesAreSoloModels(t *testing.T) {
	for _, c := range candidateCases(t) {
		recs := lines(t, c.data, 1500)
		m := build(t, c.cfg)
		all := append([]Candidate{{Learner: c.cfg.Learner, Kernel: c.cfg.Kernel}}, c.cfg.Challengers...)
		var solo []*Model
		for _, cd := range all {
			sc := c.cfg
			sc.Learner, sc.Challengers, sc.Select = cd.Learner, nil, selection.Config{}
			if cd.Kernel != (learners.Kernel{}) {
				sc.Kernel = cd.Kernel
			}
			solo = append(solo, build(t, sc))
		}
		sel, _ := selection.New(c.cfg.Select, len(all))
		switches := 0
		for i, b := range recs {
			r, err := m.Step(b)
			if err != nil {
				t.Fatal(err)
			}
			champ := sel.Champion()
			var bits uint64
			for k, s := range solo {
				rs, _ := s.Step(b)
				if rs.Mistake {
					bits |= 1 << k
				}
				if k == champ && (math.Float64bits(rs.Margin) != math.Float64bits(r.Margin) || rs.Predicted != r.Predicted ||
					rs.Class != r.Class || len(rs.Margins) != len(r.Margins)) {
					t.Fatalf("%s record %d: emitted %+v, champion %d alone %+v", c.name, i, r, k, rs)
				}
			}
			if r.Candidate != champ || r.Mistakes != bits {
				t.Fatalf("%s record %d: candidate %d mistakes %b, want %d %b", c.name, i, r.Candidate, r.Mistakes, champ, bits)
			}
			if r.Labeled {
				to, sw := sel.Observe(bits)
				if sw {
					switches++
				}
				if r.To != to || r.Switched != sw {
					t.Fatalf("%s record %d: to %d switched %v, want %d %v", c.name, i, r.To, r.Switched, to, sw)
				}
			}
		}
		for k, s := range solo {
			a, b := m.CandidateEval(k), s.Eval()
			if a.Mistakes != b.Mistakes || a.Labeled != b.Labeled || a.Updates != b.Updates || a.BaselineMistakes != b.BaselineMistakes ||
				a.Support != b.Support || a.WindowRate() != b.WindowRate() {
				t.Fatalf("%s candidate %d: evaluator %+v, alone %+v", c.name, k, *a, *b)
			}
			if m.CandidateSupport(k) != s.Support() {
				t.Fatalf("%s candidate %d: support %d, alone %d", c.name, k, m.CandidateSupport(k), s.Support())
			}
		}
		t.Logf("%s: %d switches; emitted %.3f, candidates %.3f %.3f %.3f", c.name, switches, m.Eval().MistakeRate(),
			m.CandidateEval(0).MistakeRate(), m.CandidateEval(1).MistakeRate(), m.CandidateEval(2).MistakeRate())
		if switches == 0 {
			t.Fatalf("%s: no switch: the test does not exercise selection", c.name)
		}
	}
}

// TestSnapshotWithChallengersContinues cuts at random points: the restored
// model (all candidates, their evaluators, the selector) continues with
// bit-identical outputs and ends in the same state.
func TestSnapshotWithChallengersContinues(t *testing.T) {
	r := rng.New(12, 0)
	for _, c := range candidateCases(t) {
		recs := lines(t, c.data, 900)
		for range 3 {
			cut := int(r.Uint64n(uint64(len(recs))))
			a := build(t, c.cfg)
			for _, b := range recs[:cut] {
				a.Step(b)
			}
			snap := checkRestoreContinues(t, c.name, a, recs, cut)
			if snap[len(snapshotMagic)] != 2 {
				t.Fatalf("format %d", snap[len(snapshotMagic)])
			}
			bad := bytes.Clone(snap)
			bad[len(bad)/3] ^= 4
			if _, err := Unmarshal(bad); err == nil {
				t.Fatal("a damaged snapshot was taken")
			}
		}
	}
}

// TestFormatOneUnchanged: a model without challengers writes the bytes
// the builds before challengers wrote (format 1), and reads theirs back.
func TestFormatOneUnchanged(t *testing.T) {
	for _, c := range []struct {
		file, data string
		cfg        Config
	}{
		{"model-v1-binary-records.snap", "../../testdata/a9a.gz", Config{Learner: "rbp:budget=20", Kernel: kernel(t, "rbf:gamma=0.1"), Seed: 7}},
		{"model-v1-classes-events.snap", "../../testdata/covtype.2000.jsonl.gz", Config{Learner: "forgetron:budget=10", Kernel: kernel(t, "rbf:gamma=0.1"), Seed: 7,
			Events: true, Classes: []string{Auto}, Event: codec.EventConfig{LabelField: "Cover_Type", KeyField: "id"},
			// The featurization rules of the build that wrote it.
			Features: features.Config{Scale: features.ScaleOnline, HashBits: 12, Rules: features.RulesSpelled}}},
	} {
		old, err := os.ReadFile("../../testdata/" + c.file)
		if err != nil {
			t.Fatal(err)
		}
		m := build(t, c.cfg)
		for _, b := range lines(t, c.data, 300) {
			m.Step(b)
		}
		if now, _ := m.MarshalBinary(); !bytes.Equal(now, old) {
			t.Fatalf("%s: the same records give another snapshot (%d bytes, was %d)", c.file, len(now), len(old))
		}
		r, err := Unmarshal(old)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if again, _ := r.MarshalBinary(); !bytes.Equal(again, old) {
			t.Fatalf("%s: read and written back differs", c.file)
		}
		if r.Candidates() != 1 || r.Selector() != nil || r.CandidateEval(0) != r.Eval() {
			t.Fatalf("%s: %d candidates", c.file, r.Candidates())
		}
	}
}

func TestChallengerConfigErrors(t *testing.T) {
	k := kernel(t, "rbf:gamma=0.5")
	many := make([]Candidate, selection.MaxLearners)
	for i := range many {
		many[i] = Candidate{Learner: fmt.Sprintf("rbp:budget=%d", i+2)}
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Learner: "perceptron", Kernel: k, Challengers: []Candidate{{Learner: "perceptron"}}}, "given twice"},
		{Config{Learner: "perceptron", Kernel: k, Challengers: []Candidate{{Learner: "perceptron", Kernel: k}}}, "given twice"},
		{Config{Learner: "perceptron", Kernel: k, Challengers: []Candidate{{Learner: "nosuch"}}}, "challenger \"nosuch\""},
		{Config{Learner: "perceptron", Kernel: k, Challengers: []Candidate{{}}}, "no learner spec"},
		{Config{Learner: "perceptron", Kernel: k, Challengers: many}, "at most 64"},
		{Config{Learner: "perceptron", Kernel: k, Challengers: []Candidate{{Learner: "lbp:budget=5"}}, Select: selection.Config{Margin: -1}}, "margin"},
		{Config{Learner: "perceptron", Kernel: k, Challengers: []Candidate{{Learner: "lbp:budget=5"}}, Select: selection.Config{Detector: "cusum"}}, "detector"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error with %q", c.cfg.Challengers, err, c.want)
		}
	}
	if _, err := FromLearner(Config{Learner: "perceptron", Kernel: k, Challengers: []Candidate{{Learner: "lbp:budget=5"}}}, nil, prequentialZero()); err == nil {
		t.Error("FromLearner took challengers")
	}
}

func TestStepWithChallengersAllocatesNothingAtBudget(t *testing.T) {
	recs := lines(t, "../../testdata/adult.train.3000.jsonl.gz", 1000)
	m := build(t, Config{Learner: "rbp:budget=30", Kernel: kernel(t, "rbf:gamma=0.1"), Events: true, Classes: []string{Auto},
		Event: codec.EventConfig{LabelField: "income", KeyField: "id"}, Features: features.Config{Scale: features.ScaleOnline},
		Challengers: []Candidate{{Learner: "forgetron:budget=30"}, {Learner: "rbp:budget=30", Kernel: kernel(t, "rbf:gamma=1")}},
		Select:      selection.Config{Window: 100, Detector: "adwin"}})
	for _, b := range recs {
		if _, err := m.Step(b); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	if n := testing.AllocsPerRun(200, func() { m.Step(recs[i%len(recs)]); i++ }); n != 0 {
		t.Fatalf("%v allocations per step", n)
	}
}

func prequentialZero() prequential.Evaluator { return prequential.Evaluator{} }
