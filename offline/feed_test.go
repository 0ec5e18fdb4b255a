package offline

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamlearner/streamlearner/dataset"
	"github.com/streamlearner/streamlearner/learners"
)

// feedOf fills a Feed with set's records on a goroutine that pauses at
// random points, so that the runs catch up with it and wait, and ends it
// with end.
func feedOf(set *dataset.Set, seed uint64, end error) *Data {
	f := NewFeed()
	go func() {
		r := rand.New(rand.NewPCG(seed, 1))
		for j := range set.Len() {
			if r.IntN(200) == 0 {
				time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
			}
			f.Add(set.X[j], set.Y[j])
		}
		f.End(end)
	}()
	return f.Data()
}

// runTraced is RunData with a trace and learning-curve points, returned
// beside the results with their examples/s zeroed.
func runTraced(t *testing.T, train *Data, cfg Config) ([]Result, string, []Point) {
	t.Helper()
	var trace bytes.Buffer
	var mu sync.Mutex
	var pts []Point
	if cfg.KeepOrder {
		cfg.Trace = &trace
	}
	cfg.Every, cfg.Point = 700, func(p Point) { mu.Lock(); pts = append(pts, p); mu.Unlock() }
	res, err := RunData(context.Background(), train, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range res {
		res[i].ExamplesPerSecond = 0
	}
	return res, trace.String(), pts
}

func TestFeedGivesTheResultsOfTheLoadedSet(t *testing.T) {
	set := load(t, "../testdata/a9a.gz", 3000)
	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	for c, cfg := range []Config{
		// Learned while loaded: one pass in file order, three learners
		// one after another, or at once.
		{Learners: []string{"rbp:budget=40", "projectron++:eta=0.1,max=60", "perceptron"}, Kernel: k, KeepOrder: true, Seed: 2},
		{Learners: []string{"rbp:budget=40", "forgetron:budget=30", "perceptron"}, Kernel: k, KeepOrder: true, Seed: 2, Jobs: 3},
		// Waits for the whole set: random orders, or a delay.
		{Learners: []string{"rbp:budget=40"}, Kernel: k, Orders: 3, Seed: 2},
		{Learners: []string{"rbp:budget=40"}, Kernel: k, KeepOrder: true, Seed: 2, Delay: 25},
	} {
		want, wantTrace, wantPts := runTraced(t, FromSet(set), cfg)
		for seed := range uint64(3) {
			got, gotTrace, gotPts := runTraced(t, feedOf(set, seed, nil), cfg)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("config %d: fed\n%+v\nloaded\n%+v", c, got, want)
			}
			if gotTrace != wantTrace {
				t.Fatalf("config %d: the fed trace differs", c)
			}
			if !sameElements(gotPts, wantPts) {
				t.Fatalf("config %d: fed points %+v\nloaded %+v", c, gotPts, wantPts)
			}
		}
		if want[0].Examples != 3000 || (cfg.KeepOrder && strings.Count(wantTrace, "\n") != 3000) {
			t.Fatalf("config %d: %d examples, trace of %d lines", c, want[0].Examples, strings.Count(wantTrace, "\n"))
		}
	}
}

// sameElements reports whether a and b hold the same points, whatever
// the order in which parallel runs reported them.
func sameElements(a, b []Point) bool {
	if len(a) != len(b) {
		return false
	}
	left := append([]Point(nil), b...)
	for _, p := range a {
		found := false
		for i, q := range left {
			if p == q {
				left, found = append(left[:i], left[i+1:]...), true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func TestFeedLoadingErrorIsReturned(t *testing.T) {
	set := load(t, "../testdata/a9a.gz", 1500)
	k, _ := learners.ParseKernel("linear")
	bad := errors.New("load a9a: line 1501: malformed")
	for _, cfg := range []Config{
		{Learners: []string{"perceptron", "rbp:budget=10"}, Kernel: k, KeepOrder: true},
		{Learners: []string{"perceptron"}, Kernel: k, Orders: 2},
	} {
		res, err := RunData(context.Background(), feedOf(set, 1, bad), nil, cfg)
		if !errors.Is(err, bad) || res != nil {
			t.Fatalf("%v: err %v, results %+v; want the loading error alone", cfg.Learners, err, res)
		}
	}
	f := NewFeed()
	f.End(nil)
	if _, err := RunData(context.Background(), f.Data(), nil, Config{Learners: []string{"perceptron"}, Kernel: k, KeepOrder: true}); err == nil || !strings.Contains(err.Error(), "no training examples") {
		t.Fatalf("empty feed: %v", err)
	}
}

func TestFeedInterruptedWhileWaiting(t *testing.T) {
	// A loader that stalls after 1,000 records: cancelling the run while
	// it waits returns at once with the records learned so far, marked
	// interrupted, and equal to a run over those records.
	set := load(t, "../testdata/a9a.gz", 1000)
	k, _ := learners.ParseKernel("linear")
	f := NewFeed()
	for j := range set.Len() {
		f.Add(set.X[j], set.Y[j])
	}
	f.End(nil) // publishes; a second feed stands for the stalled loader
	stalled := NewFeed()
	for j := range set.Len() {
		stalled.Add(set.X[j], set.Y[j])
	}
	stalled.publish(false, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	cfg := Config{Learners: []string{"perceptron"}, Kernel: k, KeepOrder: true}
	res, err := RunData(ctx, stalled.Data(), nil, cfg)
	if !errors.Is(err, context.Canceled) || len(res) != 1 || !res[0].Interrupted || res[0].Examples != 1000 {
		t.Fatalf("err %v, results %+v", err, res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("returned %v after the cancel", d)
	}
	whole, err := RunData(context.Background(), f.Data(), nil, cfg)
	if err != nil || whole[0].MistakeRate != res[0].MistakeRate || whole[0].Kappa != res[0].Kappa {
		t.Fatalf("interrupted %+v, whole %+v (%v)", res[0], whole, err)
	}
}

// TestProgressCountsWhatWasLearned: while a Feed is still being read the
// progress has no total (it showed the part loaded so far as the whole:
// "50 %" early on); once read, the total is every run's records, and what
// is done never passes it and ends at it.
func TestProgressCountsWhatWasLearned(t *testing.T) {
	set := load(t, "../testdata/a9a.gz", 20000)
	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	var mu sync.Mutex
	var calls [][2]int64
	cfg := Config{Learners: []string{"perceptron:max=50", "rbp:budget=20"}, Kernel: k, KeepOrder: true,
		Progress: func(done, total int64) { mu.Lock(); calls = append(calls, [2]int64{done, total}); mu.Unlock() }}
	f := NewFeed()
	go func() {
		for j := range set.Len() {
			if j%2000 == 0 {
				time.Sleep(2 * time.Millisecond)
			}
			f.Add(set.X[j], set.Y[j])
		}
		f.End(nil)
	}()
	if _, err := RunData(context.Background(), f.Data(), nil, cfg); err != nil {
		t.Fatal(err)
	}
	want := int64(2 * set.Len())
	for _, c := range calls {
		if c[1] != 0 && c[1] != want || c[1] != 0 && c[0] > c[1] {
			t.Fatalf("progress %d of %d; the whole is %d", c[0], c[1], want)
		}
	}
	if last := calls[len(calls)-1]; last != [2]int64{want, want} {
		t.Fatalf("last progress %v, want %d of %d", last, want, want)
	}
}
