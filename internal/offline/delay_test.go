package offline

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/codec/features"
	"github.com/streamlearner/streamlearner/internal/dev/synth"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/prequential"
	"github.com/streamlearner/streamlearner/learners/selection"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

// delayedByHand plays set in file order with each label revealed delay
// records late, on the learner alone: record i is predicted by the model
// that has learned records 0..i−delay−1 (an unlabeled round, as the
// partition model plays it), and learned when its label comes. It returns
// the margins and the mistakes.
func delayedByHand(t *testing.T, set *dataset.Set, spec string, k learners.Kernel, seed uint64, delay int) ([]float64, int) {
	t.Helper()
	l, err := learners.New(spec, k, seed)
	if err != nil {
		t.Fatal(err)
	}
	margins, mistakes := make([]float64, set.Len()), 0
	learn := func(i int) {
		l.Round(set.X[i], set.Y[i])
	}
	for i := range set.Len() {
		margins[i] = l.Round(set.X[i], 0).Margin
		if prequential.IsMistake(margins[i], set.Y[i]) {
			mistakes++
		}
		if i >= delay {
			learn(i - delay)
		}
	}
	for i := max(set.Len()-delay, 0); i < set.Len(); i++ {
		learn(i)
	}
	return margins, mistakes
}

// With Delay 0 a run is the usual one (each record predicted then learned
// on the learner alone, the output without a word of delays); with Delay
// N every record's margin is the prediction of the learner N labels
// behind, and every record is scored, the last N included.
func TestDelayedRunIsTheLearnerNLabelsBehind(t *testing.T) {
	train := load(t, "../../testdata/a9a.gz", 1200)
	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	specs := []string{"perceptron", "rbp:budget=30", "forgetron:budget=30", "projectron++:budget=30"}
	for _, delay := range []int{0, 1, 57, 2000} {
		var trace bytes.Buffer
		var pts []Point
		cfg := Config{Learners: specs, Kernel: k, KeepOrder: true, Seed: 4, Delay: delay, Trace: &trace,
			Every: 600, Point: func(p Point) { pts = append(pts, p) }}
		res, err := Run(context.Background(), train, nil, cfg)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(trace.String(), "\n"), "\n")
		if len(lines) != train.Len() || len(pts) != 2*len(specs) {
			t.Fatalf("delay %d: %d trace lines, %d points", delay, len(lines), len(pts))
		}
		for c, spec := range specs {
			margins, mistakes := delayedByHand(t, train, spec, k, 4, delay)
			if got, want := res[c].MistakeRate, float64(mistakes)/float64(train.Len()); got != want || res[c].Examples != train.Len() || res[c].Delay != delay {
				t.Fatalf("delay %d %s: %+v, by hand %v", delay, spec, res[c], want)
			}
			for i, line := range lines {
				got, err := strconv.ParseFloat(strings.Split(line, "\t")[c], 64)
				if err != nil || math.Float64bits(got) != math.Float64bits(margins[i]) {
					t.Fatalf("delay %d %s record %d: margin %q, by hand %v", delay, spec, i+1, line, margins[i])
				}
			}
			// Points follow the records; the last one scores every label.
			// (One job: the runs, and so their points, come in order.)
			if p := pts[2*c+1]; p.Seen != train.Len() || p.MistakeRate != res[c].MistakeRate || pts[2*c].Seen != 600 || p.Spec != res[c].Spec {
				t.Fatalf("delay %d %s: points %+v %+v, result %+v", delay, spec, pts[2*c], p, res[c])
			}
		}
		var js, table bytes.Buffer
		if err := WriteJSON(&js, res); err != nil {
			t.Fatal(err)
		}
		if err := WriteTable(&table, res); err != nil {
			t.Fatal(err)
		}
		said := strings.Contains(js.String(), fmt.Sprintf(`"delay": %d`+"\n", delay)) && strings.Contains(table.String(), fmt.Sprintf("label revealed %d record", delay))
		silent := !strings.Contains(js.String(), `"delay"`) && !strings.Contains(table.String(), "delay")
		if (delay > 0 && !said) || (delay == 0 && !silent) {
			t.Fatalf("delay %d: output\n%s\n%s", delay, js.String(), table.String())
		}
	}
	if _, err := Run(context.Background(), train, nil, Config{Learners: specs, Kernel: k, Delay: -1}); err == nil {
		t.Fatal("a negative delay was taken")
	}
}

// A delayed run over events and a selection (and over many classes) is
// the partition model driven by hand with Hold and Resolve: every row's
// statistics, the selector's switches, and all records labeled.
func TestDelayedEventsAndSelectionAreTheModelByHand(t *testing.T) {
	k, _ := learners.ParseKernel("rbf:gamma=1")
	sel := selection.Config{Window: 200, Margin: 0.01}
	const delay = 100
	for _, c := range []struct {
		file     string
		mc       model.Config
		switches bool // the selection changes champion on this stream
	}{
		{"../../testdata/elec2.3000.jsonl.gz", model.Config{Events: true, Event: codec.EventConfig{LabelField: "class", KeyField: "id", Ignore: []string{"date"}},
			Labels: codec.LabelMap{Positive: []string{"UP"}}}, true},
		{"../../testdata/covtype.2000.jsonl.gz", model.Config{Events: true, Event: codec.EventConfig{LabelField: "Cover_Type", KeyField: "id"},
			Classes: []string{model.Auto}, MaxClasses: 10, Features: features.Config{Scale: features.ScaleOnline}}, false},
	} {
		var events [][]byte
		err := dataset.LinesOf(context.Background(), c.file, func(_ int, b []byte) (bool, error) {
			events = append(events, bytes.Clone(b))
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Learners: []string{"forgetron:budget=40", "lbp:budget=40"}, Kernel: k, KeepOrder: true, Seed: 2, Delay: delay,
			Model: c.mc, Select: &sel, Challengers: []model.Candidate{{Learner: "perceptron"}}}
		res, err := RunData(context.Background(), &Data{Events: events}, nil, cfg)
		if err != nil {
			t.Fatal(err)
		}
		mc := c.mc
		mc.Learner, mc.Kernel, mc.Seed, mc.Delayed = "forgetron:budget=40", k, 2, model.DelayConfig(delay)
		mc.Select, mc.Challengers = sel, []model.Candidate{{Learner: "lbp:budget=40"}, {Learner: "perceptron"}}
		m, err := model.New(mc)
		if err != nil {
			t.Fatal(err)
		}
		var labels [][]byte
		key := func(i int) []byte { return []byte(fmt.Sprint("r", i)) }
		resolve := func(i int) {
			if _, err := m.Resolve(key(i), labels[i], model.At{}); err != nil {
				t.Fatal(err)
			}
		}
		for i, ev := range events {
			r, label, err := m.Hold(ev, key(i), model.At{})
			if err != nil || !r.Held {
				t.Fatalf("record %d: %+v %v", i+1, r, err)
			}
			labels = append(labels, label)
			if i >= delay {
				resolve(i - delay)
			}
		}
		for i := len(events) - delay; i < len(events); i++ {
			resolve(i)
		}
		if len(res) != 4 || c.switches && m.Selector().Switches() == 0 || float64(m.Selector().Switches()) != res[3].Switches {
			t.Fatalf("%s: rows %+v, by hand %d switches", c.file, res, m.Selector().Switches())
		}
		for row, r := range res {
			ev := m.Eval()
			if row < 3 {
				ev = m.CandidateEval(row)
			}
			if ev.Labeled != uint64(len(events)) || r.MistakeRate != ev.MistakeRate() || r.Kappa != ev.Scores().Kappa || r.Accuracy != ev.Scores().Accuracy {
				t.Fatalf("%s row %d: %+v, by hand %d labeled, rate %v", c.file, row, r, ev.Labeled, ev.MistakeRate())
			}
			// One order: its summary is the evaluator's, binary runs' too.
			classes := prequential.BinaryClasses
			if m.Multi() {
				classes = m.Classes()
			}
			if want := ev.Summary(classes); !reflect.DeepEqual(r.Summary, want) {
				t.Fatalf("%s row %d: summary %+v, by hand %+v", c.file, row, r.Summary, want)
			}
		}
		// The table shows classes and a confusion matrix for many classes
		// only, though every result has them.
		var table bytes.Buffer
		if err := WriteTable(&table, res); err != nil || strings.Contains(table.String(), "prequential accuracy") != m.Multi() {
			t.Fatalf("%s: many classes %v, table (%v):\n%s", c.file, m.Multi(), err, table.String())
		}
	}
}

// stream is a synth stream as records.
func stream(pts []synth.Point) *Data {
	d := &Data{}
	for _, p := range pts {
		d.X = append(d.X, sparse.FromDense(p.X))
		d.Labels = append(d.Labels, strconv.Itoa(p.Y))
	}
	return d
}

// On a stream whose concept turns abruptly, a model that learns later
// keeps predicting the old concept for longer: the mistake rate grows
// with the delay. (On a stationary stream a delay costs little, so only
// drift is asserted.)
func TestDelayCostsAccuracyOnADriftingStream(t *testing.T) {
	s, err := synth.GaussDrift(synth.GaussDriftConfig{N: 8000, Shifts: 3, Angle: 90, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	data := stream(s.Points)
	k, _ := learners.ParseKernel("rbf:gamma=1")
	specs := []string{"perceptron", "rbp:budget=100", "lbp:budget=100", "forgetron:budget=100", "projectron++:budget=100"}
	rates := map[int][]float64{}
	for _, delay := range []int{0, 100, 1000} {
		res, err := RunData(context.Background(), data, nil, Config{Learners: specs, Kernel: k, KeepOrder: true, Seed: 1, Delay: delay, Jobs: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			rates[delay] = append(rates[delay], r.MistakeRate)
		}
	}
	for i, spec := range specs {
		r0, r100, r1000 := rates[0][i], rates[100][i], rates[1000][i]
		t.Logf("%s: %.2f %% at delay 0, %.2f %% at 100, %.2f %% at 1000", spec, 100*r0, 100*r100, 100*r1000)
		// Three turns of 90°, each costing about the delay's records of
		// stale predictions (3 × 100 of 8000 records: about 4 points; 3 ×
		// 1000: about 30).
		if !(r0 < r100-0.01 && r100 < r1000-0.1) {
			t.Errorf("%s: %.4f at delay 0, %.4f at 100, %.4f at 1000", spec, r0, r100, r1000)
		}
	}
}

// A delayed run stopped early reveals the labels in flight before it
// reports: the same statistics as a run over just the records it saw.
func TestInterruptedDelayedRunScoresTheRecordsSoFar(t *testing.T) {
	train := load(t, "../../testdata/a9a.gz", 5000)
	k, _ := learners.ParseKernel("linear")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := Config{Learners: []string{"perceptron"}, Kernel: k, KeepOrder: true, Delay: 500, Every: 2048, Point: func(Point) { cancel() }}
	res, err := Run(ctx, train, nil, cfg)
	if err == nil || len(res) != 1 || !res[0].Interrupted || res[0].Examples != 3071 {
		t.Fatalf("err %v, results %+v", err, res)
	}
	full, err := Run(context.Background(), load(t, "../../testdata/a9a.gz", 3071), nil, Config{Learners: []string{"perceptron"}, Kernel: k, KeepOrder: true, Delay: 500})
	if err != nil {
		t.Fatal(err)
	}
	if full[0].MistakeRate != res[0].MistakeRate || full[0].Kappa != res[0].Kappa || full[0].BaselineRate != res[0].BaselineRate {
		t.Fatalf("interrupted %+v, limited run %+v", res[0], full[0])
	}
}
