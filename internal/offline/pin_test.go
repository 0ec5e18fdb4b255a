package offline

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/internal/golden"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/selection"
)

// TestRunDataPinned pins what RunData returns and reports, for every
// path of a run: random orders with a test set, the file order of a
// loaded set and of a stream with a trace and predictions, a selection
// with a challenger, a delay, skipped bad records, and each refused
// configuration. Examples/s is left out: it is a time.
func TestRunDataPinned(t *testing.T) {
	train := load(t, "../../testdata/a9a.gz", 1500)
	test := load(t, "../../testdata/a9a.t.gz", 300)
	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	wide, _ := learners.ParseKernel("rbf:gamma=0.5")
	sel := selection.Config{Window: 100, Margin: 0.01}
	specs := []string{"rbp:budget=30", "perceptron"}
	cases := []struct {
		name  string
		train *Data
		test  *Data
		cfg   Config
	}{
		{"orders", FromSet(train), FromSet(test), Config{Learners: specs, Kernel: k, Orders: 3, Seed: 5, Jobs: 2}},
		{"keep-order", FromSet(train), nil, Config{Learners: specs, Kernel: k, Seed: 5, KeepOrder: true}},
		{"stream", streamOf(train, 2, nil), nil, Config{Learners: specs, Kernel: k, Seed: 5, KeepOrder: true}},
		{"select", FromSet(train), FromSet(test), Config{Learners: specs, Kernel: k, Orders: 2, Seed: 5, Select: &sel,
			Challengers: []model.Candidate{{Learner: "rbp:budget=30", Kernel: wide}}}},
		{"delay", FromSet(train), FromSet(test), Config{Learners: specs, Kernel: k, Seed: 5, KeepOrder: true, Delay: 50}},
		{"max-bad", relabeled(train, 97, "banana"), nil, Config{Learners: specs[:1], Kernel: k, Seed: 5, KeepOrder: true, MaxBad: 1 << 20}},
		{"too-bad", relabeled(train, 97, "banana"), nil, Config{Learners: specs[:1], Kernel: k, Seed: 5, KeepOrder: true, MaxBad: 3}},
		{"unlisted", relabeled(train, 50, "7"), relabeled(test, 20, "7"), Config{Learners: specs[:1], Kernel: k, Seed: 5, Orders: 2,
			Model: model.Config{Labels: codec.LabelMap{Positive: []string{"1"}, Negative: []string{"-1"}}}}},
		{"no-learner", FromSet(train), nil, Config{Kernel: k}},
		{"stream-orders", streamOf(train, 2, nil), nil, Config{Learners: specs, Kernel: k}},
		{"no-examples", &Data{}, nil, Config{Learners: specs, Kernel: k}},
		{"trace-orders", FromSet(train), nil, Config{Learners: specs, Kernel: k, Trace: &bytes.Buffer{}}},
		{"lone-challengers", FromSet(train), nil, Config{Learners: specs, Kernel: k, Challengers: []model.Candidate{{Learner: "perceptron"}}}},
		{"select-one", FromSet(train), nil, Config{Learners: specs[:1], Kernel: k, Select: &sel}},
		{"select-trace", FromSet(train), nil, Config{Learners: specs, Kernel: k, Select: &sel, KeepOrder: true, Trace: &bytes.Buffer{}}},
		{"negative-delay", FromSet(train), nil, Config{Learners: specs, Kernel: k, Delay: -1}},
		{"bad-spec", FromSet(train), nil, Config{Learners: []string{"nosuch"}, Kernel: k}},
		{"empty-test", FromSet(train), &Data{}, Config{Learners: specs[:1], Kernel: k, KeepOrder: true}},
	}
	var out bytes.Buffer
	for _, c := range cases {
		var (
			mu          sync.Mutex
			pts         []Point
			trace       bytes.Buffer
			preds, bads int
			predSum     = sha256.New()
		)
		cfg := c.cfg
		if cfg.Trace == nil && cfg.KeepOrder && cfg.Select == nil {
			cfg.Trace = &trace
		}
		// 1500 records: a last point off the steps, and (300) on one.
		cfg.Every = 400
		if c.name == "keep-order" || c.name == "delay" {
			cfg.Every = 300
		}
		cfg.Point = func(p Point) { mu.Lock(); pts = append(pts, p); mu.Unlock() }
		cfg.Prediction = func(p Prediction) { preds++; fmt.Fprintf(predSum, "%+v\n", p) }
		cfg.Bad = func(error) { bads++ }
		var done, total int64
		cfg.Progress = func(d, n int64) { mu.Lock(); done, total = max(done, d), n; mu.Unlock() }
		res, err := RunData(context.Background(), c.train, c.test, cfg)
		for i := range res {
			res[i].ExamplesPerSecond = 0
		}
		// With Jobs > 1 the runs' points interleave.
		slices.SortFunc(pts, func(a, b Point) int {
			return cmp.Or(cmp.Compare(a.Order, b.Order), cmp.Compare(a.Seen, b.Seen), cmp.Compare(a.Spec, b.Spec))
		})
		fmt.Fprintf(&out, "== %s\nerr: %v\n", c.name, err)
		j, _ := json.Marshal(res)
		fmt.Fprintf(&out, "results: %s\n", j)
		j, _ = json.Marshal(pts)
		fmt.Fprintf(&out, "points: %s\n", j)
		fmt.Fprintf(&out, "progress: %d of %d\n", done, total)
		fmt.Fprintf(&out, "predictions: %d %x\nbad: %d\ntrace: %d bytes %x\n", preds, predSum.Sum(nil), bads, trace.Len(), sha256.Sum256(trace.Bytes()))
	}
	golden.Check(t, "rundata.golden", out.Bytes())
}

// relabeled is s as unmapped tokens, with label bad in place of every
// every-th record's.
func relabeled(s *dataset.Set, every int, bad string) *Data {
	d := FromSet(s)
	d.mapped = false
	d.Labels = slices.Clone(d.Labels)
	for i := every - 1; i < len(d.Labels); i += every {
		d.Labels[i] = bad
	}
	return d
}
