package learners

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// memData is a stream of points shaped like d (nnz random features out of
// dim, standard normal values) with random labels, so that about half the
// rounds are mistakes and every learner fills its budget quickly.
func memData(d Data, n int, seed uint64) ([]sparse.Vector, []int) {
	r := rand.New(rand.NewPCG(seed, 11))
	xs, ys := make([]sparse.Vector, n), make([]int, n)
	for t := range n {
		dense := make([]float64, d.Dim)
		for _, i := range r.Perm(d.Dim)[:d.NNZ] {
			dense[i] = r.NormFloat64()
		}
		xs[t] = sparse.FromDense(dense)
		ys[t] = 2*r.IntN(2) - 1
	}
	return xs, ys
}

// heldBytes builds a learner, plays rounds until it is full (bounded) or
// for the whole stream (unbounded), and returns the live heap it holds
// (HeapAlloc after a collection, the learner kept alive) and the learner.
func heldBytes(t *testing.T, spec string, k Kernel, xs []sparse.Vector, ys []int) (int64, Learner) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l := mustNew(t, spec, k, 1)
	full := -1 // the round at which the active set reached its bound
	for i := range xs {
		l.Round(xs[i], ys[i])
		if b := l.Budget(); b > 0 && full < 0 && l.Size() == b {
			full = i
		}
		// Past the bound, as many rounds again: removals happen, and the
		// arrays that hold budget+1 rows reach that size.
		if full >= 0 && i >= 2*full+50 {
			break
		}
	}
	if l.Budget() > 0 && full < 0 {
		t.Fatalf("%s: %d support vectors after %d rounds, budget %d not reached", spec, l.Size(), len(xs), l.Budget())
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(l)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc), l
}

// The band within which an estimate must fall of the heap it describes.
// Below 1: what the estimate omits (small structs, the runtime's rounding
// of small allocations to size classes), 3 % at most in these tests.
// Above 1: the projectron's K⁻¹ is counted at the most its doubling can
// reach (1.58 at max=400 on sparse data); elsewhere the estimate is within
// 16 % of the heap (the sixteenth of room the pools keep, and the scatter
// array on sparse data).
const memLow, memHigh = 0.85, 1.6

// memSpecs is every learner, its budget or cap left to fill in.
var memSpecs = []string{
	"perceptron:max=%d", "stoptron:budget=%d", "rbp:budget=%d", "lbp:budget=%d",
	"forgetron:budget=%d", "cks:budget=%d", "spa:lambda=0.5,max=%d", "pa1:max=%d",
	"projectron:eta=0,max=%d", "projectron++:eta=0,max=%d,u=1",
	"tighter0:budget=%d", "tighter:budget=%d", "tighter:budget=%d,validation=50", "tightest:budget=%d",
	"sop:max=%d", "rbsop:budget=%d", "lbsop:budget=%d",
}

// TestEstimateMemoryMatchesHeap fills each learner to its budget on sparse
// and on dense data and checks the estimate of Held against the heap it
// really holds; at two budgets, which pins both the linear and the
// quadratic terms.
func TestEstimateMemoryMatchesHeap(t *testing.T) {
	k := mustKernel(t, "rbf:gamma=0.02")
	shapes := []struct {
		name string
		d    Data
	}{{"sparse", Data{NNZ: 20, Dim: 1000}}, {"dense", Data{NNZ: 40, Dim: 40}}}
	covered := map[string]bool{}
	for _, sh := range shapes {
		xs, ys := memData(sh.d, 3000, 1)
		for _, form := range memSpecs {
			var measured [2]int64
			var est [2]Memory
			for i, b := range []int{100, 400} {
				spec := fmt.Sprintf(form, b)
				m, err := EstimateMemory(spec, k, sh.d)
				if err != nil {
					t.Fatal(err)
				}
				got, l := heldBytes(t, spec, k, xs, ys)
				covered[strings.SplitN(spec, ":", 2)[0]] = true
				if m.Vectors != l.Budget() {
					t.Errorf("%s: estimate for %d vectors, budget %d", spec, m.Vectors, l.Budget())
				}
				r := float64(m.Held) / float64(got)
				t.Logf("%-6s %-34s held %9d estimate %9d (%.2f) peak %9d", sh.name, spec, got, m.Held, r, m.Peak)
				if r < memLow || r > memHigh {
					t.Errorf("%s on %s data: estimate %d bytes, the model holds %d: ratio %.2f outside [%.2f, %.2f]",
						spec, sh.name, m.Held, got, r, memLow, memHigh)
				}
				if m.Peak < m.Held {
					t.Errorf("%s: peak %d below held %d", spec, m.Peak, m.Held)
				}
				measured[i], est[i] = got, m
			}
			// Four times the budget: a quadratic term makes the held heap
			// grow by well over 4×, a linear one by at most about 4×.
			growth := float64(measured[1]) / float64(measured[0])
			if q := est[0].Quadratic; q != (growth > 6) {
				t.Errorf("%s on %s data: quadratic=%v, but the heap grew %.1f× from budget 100 to 400", form, sh.name, q, growth)
			}
		}
	}
	for _, info := range Available() {
		if !covered[info.Name] {
			t.Errorf("learner %s: no memory test", info.Name)
		}
	}
}

// TestEstimateSnapshotMatchesEncoding: Snapshot, what a checkpoint
// encodes of a full learner, against the bytes MarshalBinary writes, for
// every learner on sparse and dense data. It errs high (a birth round is
// taken as 5 bytes, an index's distance from the last as long as the
// largest index needs), by 13 % at most.
func TestEstimateSnapshotMatchesEncoding(t *testing.T) {
	k := mustKernel(t, "rbf:gamma=0.02")
	for _, d := range []Data{{NNZ: 20, Dim: 1000}, {NNZ: 40, Dim: 40}} {
		xs, ys := memData(d, 3000, 1)
		for _, form := range memSpecs {
			for _, b := range []int{100, 300} {
				spec := fmt.Sprintf(form, b)
				m, err := EstimateMemory(spec, k, d)
				if err != nil {
					t.Fatal(err)
				}
				_, l := heldBytes(t, spec, k, xs, ys)
				enc, err := l.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				r := float64(m.Snapshot) / float64(len(enc))
				t.Logf("%-34s nnz %d: snapshot %8d, estimate %8d (%.2f)", spec, d.NNZ, len(enc), m.Snapshot, r)
				if r < 1 || r > 1.2 {
					t.Errorf("%s, %d of %d features: snapshot estimated at %d bytes, encoded in %d (%.2f, want 1 to 1.2)", spec, d.NNZ, d.Dim, m.Snapshot, len(enc), r)
				}
			}
		}
	}
}

// TestEstimateMemoryUnbounded: a learner without a bound reports none and
// At follows its heap as the active set grows.
func TestEstimateMemoryUnbounded(t *testing.T) {
	k := mustKernel(t, "rbf:gamma=0.02")
	d := Data{NNZ: 20, Dim: 1000}
	xs, ys := memData(d, 1200, 2)
	for _, spec := range []string{"perceptron", "spa", "pa1", "sop", "projectron:eta=0.3", "projectron++:eta=0.3"} {
		m, err := EstimateMemory(spec, k, d)
		if err != nil {
			t.Fatal(err)
		}
		if m.Vectors != 0 || m.Held != 0 || m.Peak != 0 {
			t.Errorf("%s: unbounded, but estimate %+v", spec, m)
		}
		if err := m.Check(1, "--limit", ""); err != nil {
			t.Errorf("%s: an unbounded learner failed Check: %v", spec, err)
		}
		if !strings.Contains(m.String(), "no bound") || !strings.Contains(m.String(), "max=") {
			t.Errorf("%s: %q does not say it is unbounded and how to bound it", spec, m)
		}
		got, l := heldBytes(t, spec, k, xs, ys)
		est := m.At(l.Size())
		r := float64(est) / float64(got)
		t.Logf("%-22s %4d vectors: held %8d estimate %8d (%.2f)", spec, l.Size(), got, est, r)
		if r < memLow || r > memHigh {
			t.Errorf("%s with %d support vectors: estimate %d bytes, the model holds %d: ratio %.2f outside [%.2f, %.2f]",
				spec, l.Size(), est, got, r, memLow, memHigh)
		}
	}
}

func TestEstimateMemoryErrors(t *testing.T) {
	k := mustKernel(t, "linear")
	for _, spec := range []string{"", "nosuch:budget=5", "rbp:budget=0", "rbp:buget=5", "tighter0:budget=x"} {
		if _, err := EstimateMemory(spec, k, Data{NNZ: 10}); err == nil {
			t.Errorf("%q: no error", spec)
		}
	}
	if _, err := EstimateMemory("rbp", Kernel{}, Data{}); err == nil {
		t.Error("invalid kernel: no error")
	}
}

// TestMemoryCheck: a model over the limit is refused with a message that
// names the spec, the limit and what to lower.
func TestMemoryCheck(t *testing.T) {
	k := mustKernel(t, "rbf:gamma=0.1")
	d := Data{NNZ: 14, Dim: 123}
	m, err := EstimateMemory("tighter0:budget=2000", k, d)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Quadratic || m.Peak < 32_000_000 {
		t.Fatalf("tighter0:budget=2000 is a 2001² matrix of float64 (32 MB): estimate %+v", m)
	}
	if err := m.Check(m.Peak, "--max-model-bytes", "partition"); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	if err := m.Check(0, "--max-model-bytes", "partition"); err != nil {
		t.Errorf("no limit: %v", err)
	}
	err = m.Check(m.Peak-1, "--max-model-bytes", "partition")
	if err == nil {
		t.Fatal("over the limit: no error")
	}
	for _, want := range []string{"tighter0:budget=2000 needs about 41 MB per partition", "O(B²)", "lower budget", "raise --max-model-bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	small, err := EstimateMemory("tighter:budget=500,validation=5000", k, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := small.Check(1000, "--max-model-bytes", "partition"); err == nil || !strings.Contains(err.Error(), "validation") {
		t.Errorf("tighter over the limit: %v, want a hint at validation", err)
	}
}

func TestFormatBytes(t *testing.T) {
	for b, want := range map[int64]string{
		0: "0 B", 999: "999 B", 1000: "1 kB", 1499: "1.5 kB", 999_499: "999 kB", 9_949_999: "9.9 MB", 9_950_000: "10 MB", 1_049_000: "1 MB", 999_500: "1 MB",
		2_270_000_000: "2.3 GB", 5e14: "500 TB", 5e15: "5000 TB",
	} {
		if got := FormatBytes(b); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", b, got, want)
		}
	}
}

// Tighter⁰ with a budget of 10,000 on a9a-like data (14 non-zeros of 123
// features): its kernel matrix alone is 10,001² float64s.
func ExampleMemory_String() {
	k, _ := ParseKernel("rbf:gamma=0.05")
	m, _ := EstimateMemory("tighter0:budget=10000", k, Data{NNZ: 14, Dim: 123})
	fmt.Println(m)
	fmt.Println(m.Describe("partition"))
	fmt.Println(m.Check(1<<30, "--max-model-bytes", "partition"))
	// Output:
	// tighter0:budget=10000 needs about 1.3 GB (803 MB held, O(B²) in the budget)
	// tighter0:budget=10000 needs about 1.3 GB per partition (803 MB held, O(B²) in the budget)
	// tighter0:budget=10000 needs about 1.3 GB per partition (803 MB held, O(B²) in the budget), more than --max-model-bytes=1.1 GB allows: lower budget or raise --max-model-bytes
}

// TestRestoreAllocatesWhatItHolds: Unmarshal sizes the support set for
// the vectors it reads instead of growing it one vector at a time, and
// decodes each vector into one buffer that the set copies. A restore, and
// the check of every checkpoint that decodes its snapshot, then allocates
// about the restored model's heap (it allocated 3.5 times it, on sparse
// and on dense data alike), which is what the memory estimate counts for
// it.
func TestRestoreAllocatesWhatItHolds(t *testing.T) {
	k := mustKernel(t, "rbf:gamma=0.02")
	for _, d := range []Data{{NNZ: 14, Dim: 123}, {NNZ: 40, Dim: 40}} {
		xs, ys := memData(d, 6000, 1)
		// The learners with a matrix over the active set at a budget that
		// is no power of 2: decoded, the matrix was grown by doubling from
		// 16 rows, and Projectron's (with no limit) kept 512 rows for 300.
		for _, spec := range []string{"rbp:budget=2000", "forgetron:budget=2000", "perceptron:max=2000",
			"projectron++:budget=300", "cks:budget=300", "tightest:budget=300"} {
			l := mustNew(t, spec, k, 1)
			for i := range xs {
				l.Round(xs[i], ys[i])
			}
			enc, err := l.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var before, mid, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			back, err := Unmarshal(enc)
			if err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&mid)
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(back)
			runtime.KeepAlive(enc)
			alloc, held := mid.TotalAlloc-before.TotalAlloc, int64(after.HeapAlloc)-int64(before.HeapAlloc)
			r := float64(alloc) / float64(held)
			t.Logf("%-22s nnz %d: %d support vectors, restore allocated %d bytes, holds %d (%.2f)", spec, d.NNZ, back.Size(), alloc, held, r)
			if r > 1.25 {
				t.Errorf("%s, %d non-zeros: a restore allocated %d bytes for a model that holds %d (%.2f×, want ≤ 1.25)", spec, d.NNZ, alloc, held, r)
			}
		}
	}
}

// TestRestoreHoldsNoMoreThanTheModel: a restored learner, its arrays sized
// for what it reads, holds no more than the learner it was saved from, for
// every learner; sizing its pool after the bytes left to read would have
// counted what the algorithm encodes after the vectors (SOP's matrix,
// tighter's reservoir) as entries.
func TestRestoreHoldsNoMoreThanTheModel(t *testing.T) {
	k := mustKernel(t, "rbf:gamma=0.02")
	for _, d := range []Data{{NNZ: 20, Dim: 1000}, {NNZ: 40, Dim: 40}} {
		xs, ys := memData(d, 3000, 1)
		for _, form := range memSpecs {
			spec := fmt.Sprintf(form, 300)
			live, l := heldBytes(t, spec, k, xs, ys)
			enc, err := l.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			back, err := Unmarshal(enc)
			if err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(back)
			runtime.KeepAlive(enc)
			restored := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			if float64(restored) > 1.05*float64(live) {
				t.Errorf("%s, %d of %d features: restored it holds %d bytes, %.2f times the %d the saved learner held", spec, d.NNZ, d.Dim, restored, float64(restored)/float64(live), live)
			}
		}
	}
}
