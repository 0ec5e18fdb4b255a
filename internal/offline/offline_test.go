package offline

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/prequential"
	"github.com/streamlearner/streamlearner/learners/selection"
)

func load(t testing.TB, path string, limit int) *dataset.Set {
	t.Helper()
	s, err := dataset.Load(context.Background(), path, dataset.Options{Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRunIsReproducibleAndIndependentOfJobs(t *testing.T) {
	train := load(t, "../../testdata/a9a.gz", 2000)
	test := load(t, "../../testdata/a9a.t.gz", 1000)
	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	cfg := Config{Learners: []string{"rbp:budget=40", "forgetron:budget=40", "perceptron"}, Kernel: k, Orders: 4, Seed: 3}
	strip := func(rs []Result) []Result {
		for i := range rs {
			rs[i].ExamplesPerSecond = 0
		}
		return rs
	}
	a, err := Run(context.Background(), train, test, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Jobs = 3
	b, _ := Run(context.Background(), train, test, cfg)
	if !reflect.DeepEqual(strip(a), strip(b)) {
		t.Fatalf("jobs changed results:\n%+v\n%+v", a, b)
	}
	cfg.Seed = 4
	c, _ := Run(context.Background(), train, test, cfg)
	if reflect.DeepEqual(strip(a), strip(c)) {
		t.Fatal("another seed gave identical results")
	}
	for _, r := range a {
		if r.MistakeRateStd == 0 || *r.TestAccuracyStd == 0 {
			t.Fatalf("%s: no spread over 4 orders: %+v", r.Spec, r)
		}
	}
}

func TestRunOrdersAreThePublishedPermutations(t *testing.T) {
	// Order o of eval is Order(seed, o, n) with learner seed OrderSeed(seed, o):
	// replaying that by hand gives the same mistake rate.
	train := load(t, "../../testdata/a9a.gz", 1500)
	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	res, err := Run(context.Background(), train, nil, Config{Learners: []string{"rbp:budget=30"}, Kernel: k, Orders: 1, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := learners.New("rbp:budget=30", k, OrderSeed(9, 0))
	mistakes := 0
	for _, j := range Order(9, 0, train.Len()) {
		if prequential.IsMistake(l.Round(train.X[j], train.Y[j]).Margin, train.Y[j]) {
			mistakes++
		}
	}
	if got := float64(mistakes) / float64(train.Len()); got != res[0].MistakeRate {
		t.Fatalf("replayed rate %v, eval %v", got, res[0].MistakeRate)
	}
	if res[0].TestAccuracy != nil {
		t.Fatal("test accuracy without a test set")
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	train := load(t, "../../testdata/a9a.gz", 5000)
	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, train, nil, Config{Learners: []string{"perceptron"}, Kernel: k})
	if err == nil || len(res) != 0 {
		t.Fatalf("cancelled before the start: %v, %d results", err, len(res))
	}
}

func TestInterruptedRunReportsTheRecordsSoFar(t *testing.T) {
	train := load(t, "../../testdata/a9a.gz", 5000)
	k, _ := learners.ParseKernel("linear")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Stop after the point at 2048 records: the run notices at its next
	// chunk boundary (every 1024 records).
	cfg := Config{Learners: []string{"perceptron", "rbp:budget=10"}, Kernel: k, KeepOrder: true, Every: 2048,
		Point: func(p Point) { cancel() }}
	res, err := Run(ctx, train, nil, cfg)
	if err == nil || len(res) != 1 {
		t.Fatalf("err %v, %d results (want the first learner's, interrupted)", err, len(res))
	}
	r := res[0]
	if !r.Interrupted || r.Examples != 3071 || r.Orders != 1 {
		t.Fatalf("interrupted result %+v", r)
	}
	// The same numbers as a run limited to those records.
	full, err := Run(context.Background(), load(t, "../../testdata/a9a.gz", 3071), nil, Config{Learners: []string{"perceptron"}, Kernel: k, KeepOrder: true})
	if err != nil {
		t.Fatal(err)
	}
	if full[0].MistakeRate != r.MistakeRate || full[0].BaselineRate != r.BaselineRate || full[0].Kappa != r.Kappa {
		t.Fatalf("interrupted %+v, limited run %+v", r, full[0])
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, res); err != nil || !strings.Contains(buf.String(), "3071*") || !strings.Contains(buf.String(), "interrupted") {
		t.Fatalf("table %q (%v)", buf.String(), err)
	}
}

func TestPointsAreTheLearningCurve(t *testing.T) {
	train := load(t, "../../testdata/a9a.gz", 2500)
	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	var pts []Point
	cfg := Config{Learners: []string{"rbp:budget=20"}, Kernel: k, KeepOrder: true, Seed: 5, Every: 1000, Window: 500,
		Point: func(p Point) { pts = append(pts, p) }}
	res, err := Run(context.Background(), train, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 3 || pts[0].Seen != 1000 || pts[1].Seen != 2000 || pts[2].Seen != 2500 {
		t.Fatalf("points %+v", pts)
	}
	// Each point is the statistics of the records so far: recompute them.
	l, _ := learners.New("rbp:budget=20", k, 5)
	ev := prequential.Evaluator{Window: 500}
	for j := range train.Len() {
		o := l.Round(train.X[j], train.Y[j])
		ev.Binary(o.Margin, train.Y[j], o.Updated, l.Size())
		if j+1 == 2000 {
			p := pts[1]
			if p.MistakeRate != ev.MistakeRate() || p.WindowRate != ev.WindowRate() || p.BaselineRate != ev.BaselineRate() ||
				p.Kappa != ev.Scores().Kappa || p.Support != 20 {
				t.Fatalf("point %+v, recomputed %v %v %v %v", p, ev.MistakeRate(), ev.WindowRate(), ev.BaselineRate(), ev.Scores().Kappa)
			}
		}
	}
	if last := pts[2]; last.MistakeRate != res[0].MistakeRate || last.Kappa != res[0].Kappa || last.BaselineRate != res[0].BaselineRate {
		t.Fatalf("last point %+v, result %+v", last, res[0])
	}
	// a9a's first 2500 records: about 24 % positive, so the baseline is
	// near that and a learner that beats it has kappa > 0.
	if r := res[0]; r.BaselineRate < 0.2 || r.BaselineRate > 0.3 || r.Kappa <= 0 {
		t.Fatalf("baseline %v kappa %v", r.BaselineRate, r.Kappa)
	}
	line := string(AppendCurveCSV(nil, pts[0]))
	if !strings.HasPrefix(line, `"rbp:budget=20",0,1000,`) || strings.Count(line, ",") != strings.Count(CurveHeader, ",")+0 {
		t.Fatalf("csv line %q", line)
	}
}

func TestStd(t *testing.T) {
	if got := std([]float64{1, 2, 3, 4}); got*got-5.0/3 > 1e-12 || 5.0/3-got*got > 1e-12 {
		t.Fatalf("sample variance %v, want 5/3", got*got)
	}
	if std([]float64{7}) != 0 {
		t.Fatal("one value has no spread")
	}
}

func TestKeepOrderSeedsLearnersLikeTheService(t *testing.T) {
	// With KeepOrder the learner seed is Seed itself, as the service seeds
	// partition p with seed+p: replaying by hand in file order agrees.
	train := load(t, "../../testdata/a9a.gz", 1500)
	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	res, err := Run(context.Background(), train, nil, Config{Learners: []string{"rbp:budget=30"}, Kernel: k, KeepOrder: true, Seed: 12})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := learners.New("rbp:budget=30", k, 12)
	mistakes := 0
	for j := range train.Len() {
		if prequential.IsMistake(l.Round(train.X[j], train.Y[j]).Margin, train.Y[j]) {
			mistakes++
		}
	}
	if got := float64(mistakes) / float64(train.Len()); got != res[0].MistakeRate {
		t.Fatalf("hand replay with seed 12: %v, eval --keep-order --seed 12: %v", got, res[0].MistakeRate)
	}
}

// TestSelectRowsAreLearnersAloneAndTheSelector: with Select, every
// learner's row is what it scores run alone (same seeds, orders and test
// set), and a last row is the selector's, scored on the model's emitted
// predictions.
func TestSelectRowsAreLearnersAloneAndTheSelector(t *testing.T) {
	train := load(t, "../../testdata/a9a.gz", 2000)
	test := load(t, "../../testdata/a9a.t.gz", 500)
	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	wide, _ := learners.ParseKernel("rbf:gamma=0.5")
	sel := selection.Config{Window: 100, Margin: 0.01}
	for _, keep := range []bool{true, false} {
		cfg := Config{Learners: []string{"rbp:budget=40", "forgetron:budget=40"}, Kernel: k, Orders: 2, Seed: 3, KeepOrder: keep,
			Select: &sel, Challengers: []model.Candidate{{Learner: "rbp:budget=40", Kernel: wide}}}
		got, err := Run(context.Background(), train, test, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 4 || !got[3].Selector || got[3].Spec != "select(rbp:budget=40|forgetron:budget=40|rbp:budget=40@rbf:gamma=0.5)" ||
			got[3].Kernel != "rbf:gamma=0.05|rbf:gamma=0.5" || got[2].Kernel != "rbf:gamma=0.5" {
			t.Fatalf("rows %+v", got)
		}
		alone, _ := Run(context.Background(), train, test, Config{Learners: cfg.Learners, Kernel: k, Orders: 2, Seed: 3, KeepOrder: keep})
		ch, _ := Run(context.Background(), train, test, Config{Learners: []string{"rbp:budget=40"}, Kernel: wide, Orders: 2, Seed: 3, KeepOrder: keep})
		alone = append(alone, ch...)
		for i, a := range alone {
			g := got[i]
			if strings.TrimSuffix(g.Spec, "@rbf:gamma=0.5") != a.Spec || g.MistakeRate != a.MistakeRate || g.MistakeRateStd != a.MistakeRateStd || g.Support != a.Support ||
				g.Kappa != a.Kappa || *g.TestAccuracy != *a.TestAccuracy || g.Selector {
				t.Fatalf("keep %v row %d: %+v, alone %+v", keep, i, g, a)
			}
		}
		s := got[3]
		if s.Switches == 0 || s.Support != got[0].Support+got[1].Support+got[2].Support || s.TestAccuracy == nil {
			t.Fatalf("selector row %+v", s)
		}
		// The selector's rate by hand: the model with challengers, order 0.
		if keep {
			m, _ := model.New(model.Config{Learner: "rbp:budget=40", Kernel: k, Seed: 3, Select: sel,
				Challengers: []model.Candidate{{Learner: "forgetron:budget=40"}, {Learner: "rbp:budget=40", Kernel: wide}}})
			d := FromSet(train)
			for j := range d.Len() {
				m.StepVector(d.X[j], []byte(d.Labels[j]))
			}
			if m.Eval().MistakeRate() != s.MistakeRate || float64(m.Selector().Switches()) != s.Switches {
				t.Fatalf("selector %v with %v switches, by hand %v with %d", s.MistakeRate, s.Switches, m.Eval().MistakeRate(), m.Selector().Switches())
			}
		}
		var buf bytes.Buffer
		WriteTable(&buf, got)
		if !strings.Contains(buf.String(), "best single learner in hindsight") {
			t.Fatalf("table:\n%s", buf.String())
		}
		t.Logf("\n%s", buf.String())
	}
	if _, err := Run(context.Background(), train, nil, Config{Learners: []string{"perceptron"}, Kernel: k, Select: &sel}); err == nil {
		t.Fatal("a selection over one learner was taken")
	}
	if _, err := Run(context.Background(), train, nil, Config{Learners: []string{"perceptron"}, Kernel: k, Challengers: []model.Candidate{{Learner: "lbp:budget=3"}}}); err == nil {
		t.Fatal("challengers without a selection were taken")
	}
}

// An auto learner's row names its kernel "searched": --kernel is not what
// it played, unless it was told kernel=given.
func TestAutoRowsKernelIsSearched(t *testing.T) {
	train := load(t, "../../testdata/a9a.gz", 300)
	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	res, err := Run(context.Background(), train, nil, Config{Learners: []string{"auto:width=4,rung=50", "auto:kernel=given,width=4,rung=50", "rbp:budget=30"}, Kernel: k, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, res); err != nil {
		t.Fatal(err)
	}
	var kernels []string
	for _, line := range strings.Split(buf.String(), "\n")[1:4] {
		kernels = append(kernels, strings.Fields(line)[1])
	}
	if want := []string{"searched", "rbf:gamma=0.05", "rbf:gamma=0.05"}; !reflect.DeepEqual(kernels, want) {
		t.Fatalf("kernel column %q, want %q\n%s", kernels, want, buf.String())
	}
}
