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

	"github.com/streamlearner/streamlearner/codec/dataset"
	"github.com/streamlearner/streamlearner/learners"
)

// streamOf is a Stream of set's records in batches of random sizes, each
// reading pausing at random points; after the records it returns end.
// The batches are copies that the stream overwrites afterwards, as a
// reader reusing its buffers would.
func streamOf(set *dataset.Set, seed uint64, end error) *Data {
	all := FromSet(set)
	return FromStream(func(ctx context.Context, first bool, fn func(*Data) error) error {
		r := rand.New(rand.NewPCG(seed, 1))
		b := &Data{}
		for at := 0; at < all.Len(); {
			if r.IntN(20) == 0 {
				time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
			}
			to := min(all.Len(), at+1+r.IntN(600))
			b.X = append(b.X[:0], all.X[at:to]...)
			b.Labels = append(b.Labels[:0], all.Labels[at:to]...)
			b.Lines = append(b.Lines[:0], all.Lines[at:to]...)
			if err := fn(b); err != nil {
				return err
			}
			clear(b.X)
			clear(b.Labels)
			at = to
		}
		return end
	}, true)
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

func TestStreamGivesTheResultsOfTheLoadedSet(t *testing.T) {
	set := load(t, "../../testdata/a9a.gz", 3000)
	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	for c, cfg := range []Config{
		// One pass in file order, three learners one after another
		// (each reading the stream again), or at once.
		{Learners: []string{"rbp:budget=40", "projectron++:eta=0.1,max=60", "perceptron"}, Kernel: k, KeepOrder: true, Seed: 2},
		{Learners: []string{"rbp:budget=40", "forgetron:budget=30", "perceptron"}, Kernel: k, KeepOrder: true, Seed: 2, Jobs: 3},
	} {
		want, wantTrace, wantPts := runTraced(t, FromSet(set), cfg)
		for seed := range uint64(3) {
			got, gotTrace, gotPts := runTraced(t, streamOf(set, seed, nil), cfg)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("config %d: streamed\n%+v\nloaded\n%+v", c, got, want)
			}
			if gotTrace != wantTrace {
				t.Fatalf("config %d: the streamed trace differs", c)
			}
			if !sameElements(gotPts, wantPts) {
				t.Fatalf("config %d: streamed points %+v\nloaded %+v", c, gotPts, wantPts)
			}
		}
		if want[0].Examples != 3000 || strings.Count(wantTrace, "\n") != 3000 {
			t.Fatalf("config %d: %d examples, trace of %d lines", c, want[0].Examples, strings.Count(wantTrace, "\n"))
		}
	}
	// Random orders and a delay need the data whole: refused, not read.
	for _, cfg := range []Config{
		{Learners: []string{"rbp:budget=40"}, Kernel: k, Orders: 3, Seed: 2},
		{Learners: []string{"rbp:budget=40"}, Kernel: k, KeepOrder: true, Seed: 2, Delay: 25},
	} {
		if _, err := RunData(context.Background(), streamOf(set, 0, nil), nil, cfg); err == nil || !strings.Contains(err.Error(), "file order without a delay") {
			t.Fatalf("orders %d delay %d: %v", cfg.Orders, cfg.Delay, err)
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

func TestStreamReadingErrorIsReturned(t *testing.T) {
	set := load(t, "../../testdata/a9a.gz", 1500)
	k, _ := learners.ParseKernel("linear")
	bad := errors.New("load a9a: line 1501: malformed")
	cfg := Config{Learners: []string{"perceptron", "rbp:budget=10"}, Kernel: k, KeepOrder: true}
	res, err := RunData(context.Background(), streamOf(set, 1, bad), nil, cfg)
	if !errors.Is(err, bad) || res != nil {
		t.Fatalf("err %v, results %+v; want the reading error alone", err, res)
	}
	empty := FromStream(func(context.Context, bool, func(*Data) error) error { return nil }, true)
	if _, err := RunData(context.Background(), empty, nil, cfg); err == nil || !strings.Contains(err.Error(), "no training examples") {
		t.Fatalf("empty stream: %v", err)
	}
}

func TestStreamInterruptedWhileWaiting(t *testing.T) {
	// A reader that stalls after 1,000 records: cancelling the run while
	// it waits returns at once with the records learned so far, marked
	// interrupted, and equal to a run over those records.
	set := load(t, "../../testdata/a9a.gz", 1000)
	k, _ := learners.ParseKernel("linear")
	stalled := FromStream(func(ctx context.Context, _ bool, fn func(*Data) error) error {
		if err := fn(FromSet(set)); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}, true)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	cfg := Config{Learners: []string{"perceptron"}, Kernel: k, KeepOrder: true}
	res, err := RunData(ctx, stalled, nil, cfg)
	if !errors.Is(err, context.Canceled) || len(res) != 1 || !res[0].Interrupted || res[0].Examples != 1000 {
		t.Fatalf("err %v, results %+v", err, res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("returned %v after the cancel", d)
	}
	whole, err := RunData(context.Background(), FromSet(set), nil, cfg)
	if err != nil || whole[0].MistakeRate != res[0].MistakeRate || whole[0].Kappa != res[0].Kappa {
		t.Fatalf("interrupted %+v, whole %+v (%v)", res[0], whole, err)
	}
}

// TestProgressCountsWhatWasLearned: until a stream has been read to its
// end once the progress has no total (it showed the part loaded so far as
// the whole: "50 %" early on); then the total is every run's records, and
// what is done never passes it and ends at it.
func TestProgressCountsWhatWasLearned(t *testing.T) {
	set := load(t, "../../testdata/a9a.gz", 20000)
	k, _ := learners.ParseKernel("rbf:gamma=0.05")
	var mu sync.Mutex
	var calls [][2]int64
	cfg := Config{Learners: []string{"perceptron:max=50", "rbp:budget=20"}, Kernel: k, KeepOrder: true,
		Progress: func(done, total int64) { mu.Lock(); calls = append(calls, [2]int64{done, total}); mu.Unlock() }}
	if _, err := RunData(context.Background(), streamOf(set, 4, nil), nil, cfg); err != nil {
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
