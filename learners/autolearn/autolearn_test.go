package autolearn

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/rng"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

// board is a stream of n points uniform in [0, side)², labeled by a
// checkerboard of 4×4 cells, with 5 % of the labels flipped.
func board(n int, seed uint64, side float64) ([]sparse.Vector, []int) {
	src := rng.New(seed, 7)
	xs, ys := make([]sparse.Vector, n), make([]int, n)
	for i := range n {
		u, v := src.Float64()*side, src.Float64()*side
		y := 1
		if (int(u*4/side)+int(v*4/side))%2 == 1 {
			y = -1
		}
		if src.Float64() < 0.05 {
			y = -y
		}
		xs[i], ys[i] = sparse.Vector{Idx: []uint32{1, 2}, Val: []float64{u, v}}, y
	}
	return xs, ys
}

func build(t testing.TB, spec string, seed uint64) *Auto {
	t.Helper()
	l, err := learners.New(spec, learners.Kernel{Kind: learners.RBF, Gamma: 0.1}, seed)
	if err != nil {
		t.Fatal(err)
	}
	return l.(*Auto)
}

// play runs a over the records from..to, returning the margins' bits and
// the champion after each record.
func play(a *Auto, xs []sparse.Vector, ys []int, from, to int) (margins []uint64, champs []string) {
	for i := from; i < to; i++ {
		y := ys[i]
		if i%17 == 0 {
			y = 0 // some unlabeled rounds
		}
		o := a.Round(xs[i], y)
		margins = append(margins, math.Float64bits(o.Margin))
		champs = append(champs, a.Champion())
	}
	return margins, champs
}

// restored stops a and starts it again from its encoding, as a snapshot
// does; the restored search must encode to the same bytes.
func restored(t testing.TB, a *Auto) *Auto {
	t.Helper()
	b, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	l, err := learners.Unmarshal(b)
	if err != nil {
		t.Fatalf("restore after %d labeled records: %v", a.labeled, err)
	}
	r := l.(*Auto)
	if b2, _ := r.MarshalBinary(); !bytes.Equal(b, b2) {
		t.Fatalf("restored after %d labeled records: the search encodes differently", a.labeled)
	}
	return r
}

// A quick search: short rungs and duels, so that a few thousand records go
// through the halving and several duels.
const quick = "auto:rung=50,window=300,width=12,keep=3"

func TestRestoreContinuesBitForBit(t *testing.T) {
	xs, ys := board(5000, 1, 10)
	whole := build(t, quick, 3)
	wantM, wantC := play(whole, xs, ys, 0, len(xs))
	if whole.Switches() < 2 || whole.Halving() {
		t.Fatalf("the stream should take the search past the halving and through switches: switches %d, halving %v", whole.Switches(), whole.Halving())
	}
	for _, cut := range []int{1, 120, 700, 2600, 4100} {
		a := build(t, quick, 3)
		m1, c1 := play(a, xs, ys, 0, cut)
		r := restored(t, a)
		m2, c2 := play(r, xs, ys, cut, len(xs))
		if !slices.Equal(append(m1, m2...), wantM) {
			t.Fatalf("cut %d: margins differ from the run without a stop", cut)
		}
		if !slices.Equal(append(c1, c2...), wantC) {
			t.Fatalf("cut %d: champions differ from the run without a stop", cut)
		}
		if !slices.Equal(r.History(), whole.History()) || !slices.Equal(r.Candidates(), whole.Candidates()) {
			t.Fatalf("cut %d: history or candidates differ", cut)
		}
	}
}

func TestDeterministicGivenTheSeed(t *testing.T) {
	xs, ys := board(3000, 2, 10)
	m1, c1 := play(build(t, quick, 5), xs, ys, 0, len(xs))
	m2, c2 := play(build(t, quick, 5), xs, ys, 0, len(xs))
	if !slices.Equal(m1, m2) || !slices.Equal(c1, c2) {
		t.Fatal("two runs with the same seed differ")
	}
	a, b := build(t, quick, 5), build(t, quick, 6)
	if slices.Equal(a.Candidates(), b.Candidates()) {
		t.Fatal("the seed does not change the draw of the first candidates")
	}
}

func TestCorruptStateIsAnError(t *testing.T) {
	xs, ys := board(800, 3, 10)
	a := build(t, quick, 1)
	play(a, xs, ys, 0, len(xs))
	b, _ := a.MarshalBinary()
	for n := 0; n < len(b); n += 1 + n/50 {
		if _, err := learners.Unmarshal(b[:n]); err == nil {
			t.Fatalf("a state cut at %d of %d bytes decoded", n, len(b))
		} else if n >= len(magic) && !errors.Is(err, learners.ErrCorrupt) {
			t.Fatalf("cut at %d: %v does not wrap ErrCorrupt", n, err)
		}
	}
}

// heap is the live heap after a collection.
func heap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func TestMemoryStaysUnderItsBound(t *testing.T) {
	// Dense records of 300 features: a budget-100 candidate holds about
	// 300 kB, so the 48 candidates of the space would hold over 10 MB.
	src := rng.New(9, 9)
	const n, dim = 2500, 300
	xs, ys := make([]sparse.Vector, n), make([]int, n)
	for i := range xs {
		v := make([]float64, dim)
		s := 0.0
		for j := range v {
			v[j] = src.Float64()
			s += v[j] - 0.5
		}
		xs[i], ys[i] = sparse.FromDense(v), 1
		if s < 0 {
			ys[i] = -1
		}
	}
	const bound = 2 << 20
	base := heap()
	a := build(t, "auto:memory=2MiB,learners=rbp|forgetron|perceptron,rung=100,window=400", 1)
	for i := range xs {
		a.Round(xs[i], ys[i])
		if m := a.Memory(); m > bound && i > 0 {
			t.Fatalf("record %d: estimated %d bytes, bound %d", i, m, bound)
		}
		if n := len(a.Candidates()); i == 0 && n == 48 {
			t.Fatal("the bound dropped no candidate: the test does not test it")
		}
	}
	if got := heap() - base; got > bound {
		t.Fatalf("the search holds %d bytes, more than its bound %d", got, bound)
	}
	runtime.KeepAlive(a)
}

// disc is a stream of n points uniform in [0, side)², +1 inside the disc
// of radius 0.3·side at the centre, with 10 % of the labels flipped: too
// narrow a kernel learns the noise, too wide a one cannot draw the circle.
func disc(n int, seed uint64, side float64) ([]sparse.Vector, []int) {
	src := rng.New(seed, 7)
	xs, ys := make([]sparse.Vector, n), make([]int, n)
	for i := range n {
		u, v := src.Float64()*side, src.Float64()*side
		y := -1
		if math.Hypot(u-side/2, v-side/2) < side*0.3 {
			y = 1
		}
		if src.Float64() < 0.1 {
			y = -y
		}
		xs[i], ys[i] = sparse.Vector{Idx: []uint32{1, 2}, Val: []float64{u, v}}, y
	}
	return xs, ys
}

// alone is the mistakes of rbp (B = 100) at γ alone over the stream.
func alone(t *testing.T, xs []sparse.Vector, ys []int, g float64) int {
	l, err := learners.New("rbp:budget=100", learners.Kernel{Kind: learners.RBF, Gamma: g}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m := 0
	for i := range xs {
		if l.Round(xs[i], ys[i]).Mistake {
			m++
		}
	}
	return m
}

func TestFindsTheBestGamma(t *testing.T) {
	// Scaling the records by 10 scales the best γ by 1/100 exactly (the
	// kernel values are the same), so the same disc drawn on a side of 10
	// and of 100 has best γs 100 times apart. On each, the γ chosen must
	// do, alone, within 2 % of the records of the grid's best in
	// hindsight. The first candidate, the grid's middle γ, is 10 times too
	// narrow.
	var chosen []float64
	for _, side := range []float64{10, 100} {
		xs, ys := disc(8000, 4, side)
		lo := 1e-4 * 100 / (side * side)
		best := len(xs)
		for _, g := range gammas(lo, lo*1e9) {
			best = min(best, alone(t, xs, ys, g))
		}
		a := build(t, fmt.Sprintf("auto:learners=rbp,kernels=rbf,gamma=%g..%g,budget=100,scale=off,rung=100,window=1000", lo, lo*1e9), 1)
		for i := range xs {
			a.Round(xs[i], ys[i])
		}
		g := a.cands[a.champion].pt.kernel.Gamma
		got := alone(t, xs, ys, g)
		t.Logf("side %g: chose γ = %g (%d mistakes alone), the grid's best %d; history %v", side, g, got, best, a.History())
		if got > best+len(xs)/50 {
			t.Fatalf("side %g: chose γ = %g, %d mistakes alone, the grid's best made %d", side, g, got, best)
		}
		chosen = append(chosen, g)
	}
	if r := chosen[0] / chosen[1]; r < 100/3.01 || r > 100*3.01 {
		t.Fatalf("γ chosen on sides 10 and 100: %v, want them 100 times apart", chosen)
	}
}

func TestSpecIsCanonical(t *testing.T) {
	a := build(t, "auto:learners=rbp|projectron++,budget=100..400,memory=64MiB", 1)
	b := build(t, a.Spec(), 1)
	if a.Spec() != b.Spec() {
		t.Fatalf("%s reads back as %s", a.Spec(), b.Spec())
	}
	for _, bad := range []string{"auto:budget=0..4", "auto:learners=nope", "auto:learners=auto", "auto:scale=maybe", "auto:width=2,keep=3", "auto:gamma=-1", "auto:foo=1", "auto:memory=1x", "auto:emit=maybe"} {
		if _, err := learners.New(bad, learners.Kernel{Kind: learners.Linear}, 1); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// The memory estimate of a spec is its memory= bound, and a limit below it
// says to lower it.
func TestEstimateMemoryIsTheBound(t *testing.T) {
	m, err := learners.EstimateMemory("auto:memory=8MiB", learners.Kernel{Kind: learners.Linear}, learners.Data{NNZ: 14})
	if err != nil {
		t.Fatal(err)
	}
	if m.Peak != 8<<20 || m.Held != 8<<20 {
		t.Fatalf("peak %d, held %d, want the bound %d", m.Peak, m.Held, 8<<20)
	}
	err = m.Check(1<<20, "--max-model-bytes", "partition")
	if err == nil || !strings.Contains(err.Error(), "lower auto's memory=") {
		t.Fatalf("check under the bound: %v", err)
	}
}

// blobs is a stream of n points in the plane in k classes: class c's
// points are uniform in a square of side 2 around the c-th of k points on
// a circle of radius 2, so that neighbouring classes overlap.
func blobs(n, k int, seed uint64) ([]sparse.Vector, []int) {
	src := rng.New(seed, 11)
	xs, ys := make([]sparse.Vector, n), make([]int, n)
	for i := range n {
		c := src.Intn(k)
		a := 2 * math.Pi * float64(c) / float64(k)
		u, v := 2*math.Cos(a)+2*src.Float64()-1, 2*math.Sin(a)+2*src.Float64()-1
		xs[i], ys[i] = sparse.Vector{Idx: []uint32{1, 2}, Val: []float64{u, v}}, c
	}
	return xs, ys
}

// classes builds k auto learners of spec grouped into one search, as a
// many-class model with k classes holds them.
func classes(t testing.TB, spec string, k int) []learners.Learner {
	t.Helper()
	ls := make([]learners.Learner, k)
	for c := range ls {
		ls[c] = build(t, spec, uint64(c+1))
	}
	if err := Group(ls); err != nil {
		t.Fatal(err)
	}
	return ls
}

// playClasses plays records from..to as a many-class model does: each
// class's learner a round on its one-vs-rest label, then Settle; after
// each record it calls after with the record's index.
func playClasses(t testing.TB, ls []learners.Learner, xs []sparse.Vector, ys []int, from, to int, after func(i int)) {
	t.Helper()
	for i := from; i < to; i++ {
		for c, l := range ls {
			y := -1
			if c == ys[i] {
				y = 1
			}
			l.Round(xs[i], y)
		}
		if err := Settle(ls, len(ls), xs[i], ys[i]); err != nil {
			t.Fatal(err)
		}
		after(i)
	}
}

// In many-class mode the champion along a rung is the rung's leader so
// far, not the last rung's best nor, at the first rung, the first
// candidate drawn; a restore continues with the same champions.
func TestChampionIsTheRungsLeader(t *testing.T) {
	t.Run("binary", func(t *testing.T) {
		xs, ys := board(2000, 6, 10)
		a := build(t, quick, 4)
		changes := 0
		for i := range xs {
			prev := a.Champion()
			a.Round(xs[i], ys[i])
			if !a.halving {
				continue
			}
			if a.Champion() != prev {
				changes++
			}
			if best := slices.MinFunc(a.cands, a.rank); best.rung < a.cands[a.champion].rung {
				t.Fatalf("record %d: champion %s made %d mistakes in the rung, the leader %s %d", i, a.Champion(), a.cands[a.champion].rung, best.name, best.rung)
			}
		}
		if changes == 0 {
			t.Fatal("the champion never changed along a rung: the test does not test the leader")
		}
	})
	const k, spec = 8, "auto:width=8,keep=2,rung=60,window=100"
	xs, ys := blobs(600, k, 1)
	ls := classes(t, spec, k)
	lead := ls[0].(*Auto)
	var champs []string
	prev, changes := lead.Champion(), 0
	playClasses(t, ls, xs, ys, 0, len(xs), func(i int) {
		if lead.halving {
			if best := slices.MinFunc(lead.cands, lead.rank); best.rung < lead.cands[lead.champion].rung {
				t.Fatalf("record %d: champion %s made %d mistakes in the rung, the leader %s %d", i, lead.Champion(), lead.cands[lead.champion].rung, best.name, best.rung)
			}
			if i+1 < 60 && lead.Champion() != prev {
				changes++
			}
		}
		prev = lead.Champion()
		champs = append(champs, prev)
	})
	if changes == 0 {
		t.Fatal("the champion never changed along the first rung: the test does not test the leader")
	}
	if lead.halving {
		t.Fatal("the stream should take the search past the halving")
	}

	cut := 30
	ls = classes(t, spec, k)
	playClasses(t, ls, xs, ys, 0, cut, func(int) {})
	restored := make([]learners.Learner, k)
	for c, l := range ls {
		b, err := l.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if restored[c], err = learners.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := Group(restored); err != nil {
		t.Fatal(err)
	}
	playClasses(t, restored, xs, ys, cut, len(xs), func(i int) {
		if got := restored[0].(*Auto).Champion(); got != champs[i] {
			t.Fatalf("record %d after a restore at %d: champion %s, want %s", i, cut, got, champs[i])
		}
	})
}
