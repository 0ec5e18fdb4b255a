package autolearn

import (
	"math"
	"slices"
	"testing"

	"github.com/streamlearner/streamlearner/internal/dev/synth"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

// hyper is the rotating hyperplane at its defaults (10 features, 2
// drifting, 5 % noise): a target that drifts slowly all along.
func hyper(t testing.TB, n int, seed uint64) ([]sparse.Vector, []int) {
	cfg := synth.DefaultHyperplane()
	cfg.N, cfg.Seed = n, seed
	s, err := synth.Hyperplane(cfg)
	if err != nil {
		t.Fatal(err)
	}
	xs, ys := make([]sparse.Vector, n), make([]int, n)
	for i, p := range s.Points {
		xs[i], ys[i] = sparse.FromDense(p.X), p.Y
	}
	return xs, ys
}

// The vote errs less than the champion alone on a drifting target, where
// the duels cannot tell the candidates apart for long.
func TestVoteErrsLessThanTheChampion(t *testing.T) {
	const n = 5000
	var vote, champ int
	for seed := uint64(1); seed <= 4; seed++ {
		xs, ys := hyper(t, n, seed)
		var m [2]int
		for k, e := range []string{"vote", "champion"} {
			a := build(t, "auto:emit="+e, seed)
			for i := range n {
				if a.Round(xs[i], ys[i]).Mistake {
					m[k]++
				}
			}
		}
		if float64(m[0]) > 1.02*float64(m[1]) {
			t.Errorf("seed %d: the vote made %d mistakes, the champion alone %d", seed, m[0], m[1])
		}
		vote, champ = vote+m[0], champ+m[1]
	}
	// Measured: 1,647 against 1,698, and 426 against 422 on the fourth
	// stream (2,740 against 2,836 before the scaler centred the dense
	// features, which took a third off both on these [0, 1] features;
	// 3,136 against 3,578 before the primal linear candidates and C were
	// searched: the champion alone gained most, on a linear target).
	if float64(vote) > 0.98*float64(champ) {
		t.Fatalf("over 4 streams the vote made %d mistakes, the champion alone %d: want 2 %% fewer", vote, champ)
	}
}

// The emitted margin is the candidates' weighted vote, shares as
// Candidates reports them, the champion's margin on a tie; Predict is
// what Round emits; with emit=champion it is the champion's margin.
func TestEmittedMarginIsTheVote(t *testing.T) {
	xs, ys := flipped(3000, 2000, 2)
	for _, e := range []string{"vote", "champion"} {
		a := build(t, quick+",emit="+e, 2)
		ties := 0
		for i := range xs {
			v, sum, champion := 0.0, 0.0, math.NaN()
			xsc := a.scale(xs[i])
			for j, s := range a.Candidates() {
				c := a.cands[j]
				in := xs[i]
				if c.pt.scale {
					in = xsc
				}
				f := c.l.Predict(in)
				if s.Champion {
					champion = f
				}
				sum += s.Vote
				if f > 0 {
					v += s.Vote
				} else if f < 0 {
					v -= s.Vote
				}
			}
			want := v
			switch {
			case e == "champion":
				if sum != 0 {
					t.Fatalf("emit=champion: record %d: vote shares sum to %v", i, sum)
				}
				want = champion
			case math.Abs(sum-1) > 1e-9:
				t.Fatalf("record %d: vote shares sum to %v", i, sum)
			case math.Abs(v) < 1e-12:
				want = champion
				ties++
			}
			p := a.Predict(xs[i])
			o := a.Round(xs[i], ys[i])
			if o.Margin != p || math.Abs(o.Margin-want) > 1e-9 {
				t.Fatalf("emit=%s: record %d: Round emitted %v, Predict %v, want %v", e, i, o.Margin, p, want)
			}
			if o.Mistake != (float64(ys[i])*o.Margin <= 0) {
				t.Fatalf("emit=%s: record %d: margin %v for label %d, mistake %v", e, i, o.Margin, ys[i], o.Mistake)
			}
		}
		// The stream is chosen to hold exact ties (all candidates at
		// equal shares on both sides): without one the rule goes untested.
		if e == "vote" && ties == 0 {
			t.Errorf("no tie in %d records: the tie rule went untested", len(xs))
		}
	}
}

// BenchmarkRound is a record's round after the halving (the champion and
// two challengers on the rotating hyperplane), emitting the vote or the
// champion: what the vote adds to a record.
func BenchmarkRound(b *testing.B) {
	xs, ys := hyper(b, 20000, 1)
	for _, e := range []string{"vote", "champion"} {
		b.Run("emit="+e, func(b *testing.B) {
			a := build(b, "auto:emit="+e, 1)
			for i := range 5000 {
				a.Round(xs[i], ys[i])
			}
			if a.Halving() {
				b.Fatal("still halving after 5,000 records")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				j := 5000 + i%15000
				a.Round(xs[j], ys[j])
			}
		})
	}
}

// A group's vote over the classes is the same asked before the round
// (Predict, as a model predicts a record it learns later) as after it
// (Round); each class's margin is a share of the vote.
func TestGroupVoteAskedOrPlayed(t *testing.T) {
	const k = 4
	xs, ys := blobs(1500, k, 3)
	ls := classes(t, quick, k)
	votes := 0
	for i := range xs {
		asked, played := make([]float64, k), make([]float64, k)
		for c, l := range ls {
			asked[c] = l.Predict(xs[i])
		}
		va := Vote(ls, xs[i], false, asked)
		for c, l := range ls {
			y := -1
			if c == ys[i] {
				y = 1
			}
			played[c] = l.Round(xs[i], y).Margin
		}
		vp := Vote(ls, xs[i], true, played)
		if va != vp || !slices.Equal(asked, played) {
			t.Fatalf("record %d: asked %v (%v), played %v (%v)", i, asked, va, played, vp)
		}
		if vp {
			votes++
			sum := 0.0
			for _, f := range played {
				sum += f
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Fatalf("record %d: the shares %v sum to %v", i, played, sum)
			}
		}
		if err := Settle(ls, k, xs[i], ys[i]); err != nil {
			t.Fatal(err)
		}
		share := func(s Status) float64 { return s.Vote }
		for c, l := range ls[1:] {
			got, want := l.(*Auto).Candidates(), ls[0].(*Auto).Candidates()
			if len(got) != len(want) || !slices.Equal(mapf(got, share), mapf(want, share)) {
				t.Fatalf("record %d: class %d's shares of the vote %v, the lead's %v", i, c+1, mapf(got, share), mapf(want, share))
			}
		}
	}
	if votes < len(xs)/2 {
		t.Fatalf("the group voted on %d of %d records", votes, len(xs))
	}
	// emit=champion: the champion's margins stay.
	ls = classes(t, quick+",emit=champion", k)
	m := []float64{0.5, -1, -2, -3}
	if Vote(ls, xs[0], false, m) || m[0] != 0.5 {
		t.Fatalf("emit=champion voted: %v", m)
	}
}

func mapf[T, U any](s []T, f func(T) U) []U {
	out := make([]U, len(s))
	for i, v := range s {
		out[i] = f(v)
	}
	return out
}
