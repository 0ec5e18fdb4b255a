package offline

import (
	"context"
	"reflect"
	"testing"

	"github.com/streamlearner/streamlearner/dataset"
	"github.com/streamlearner/streamlearner/learners"
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
	train := load(t, "../testdata/a9a.gz", 2000)
	test := load(t, "../testdata/a9a.t.gz", 1000)
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
	train := load(t, "../testdata/a9a.gz", 1500)
	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	res, err := Run(context.Background(), train, nil, Config{Learners: []string{"rbp:budget=30"}, Kernel: k, Orders: 1, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := learners.New("rbp:budget=30", k, OrderSeed(9, 0))
	mistakes := 0
	for _, j := range Order(9, 0, train.Len()) {
		if l.Round(train.X[j], train.Y[j]).Mistake {
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
	train := load(t, "../testdata/a9a.gz", 5000)
	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, train, nil, Config{Learners: []string{"perceptron"}, Kernel: k}); err == nil {
		t.Fatal("cancelled run returned results")
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
	train := load(t, "../testdata/a9a.gz", 1500)
	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	res, err := Run(context.Background(), train, nil, Config{Learners: []string{"rbp:budget=30"}, Kernel: k, KeepOrder: true, Seed: 12})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := learners.New("rbp:budget=30", k, 12)
	mistakes := 0
	for j := range train.Len() {
		if l.Round(train.X[j], train.Y[j]).Mistake {
			mistakes++
		}
	}
	if got := float64(mistakes) / float64(train.Len()); got != res[0].MistakeRate {
		t.Fatalf("hand replay with seed 12: %v, eval --keep-order --seed 12: %v", got, res[0].MistakeRate)
	}
}
