package learners

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestGramFollowsInsertionsAndRemovals(t *testing.T) {
	// Entry (i, j) holds 100·id_i + id_j for the ids of the rows present.
	g := newGram(40)
	var ids []int
	add := func(id int) {
		row := make([]float64, len(ids))
		for j, o := range ids {
			row[j] = float64(100*id + o)
		}
		g.appendSym(row, float64(101*id))
		ids = append(ids, id)
	}
	check := func() {
		t.Helper()
		for i, a := range ids {
			for j, b := range ids {
				lo, hi := min(a, b), max(a, b)
				want := float64(100*hi + lo)
				if i == j {
					want = float64(101 * a)
				}
				if g.at(i, j) != want {
					t.Fatalf("ids %v: (%d,%d) = %v, want %v", ids, i, j, g.at(i, j), want)
				}
			}
		}
	}
	for id := range 30 { // past the first growth at 16
		add(id)
	}
	check()
	for _, r := range []int{0, 5, 27, 10} {
		g.remove(r)
		ids = append(ids[:r:r], ids[r+1:]...)
		check()
	}
	add(77)
	check()
	if len(g.row(3)) != len(ids) {
		t.Fatalf("row length %d, want %d", len(g.row(3)), len(ids))
	}
}

// TestMulColsSumsInOrder: mulCols gives, bit for bit, each column's plain
// running sum in increasing row order, for every size around its blocks of
// 32, 8 and 6 columns, on the vector-lane path (where this build and CPU
// have it) and on the scalar path alike. Rows are padded by 0, 3 or 8
// entries, so the last columns go to a partly used 8-lane block when the
// padding holds its extra lanes, and to scalar code when it does not.
// Entries span nine decades, so a reordered sum or a fused multiply-add
// would show.
func TestMulColsSumsInOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	t.Logf("vector lanes: %v", useLanes)
	for n := 0; n <= 75; n++ {
		for _, pad := range []int{0, 3, 8} {
			ld := n + pad
			m := make([]float64, n*ld)
			for i := range m {
				m[i] = r.NormFloat64() * math.Pow(10, float64(r.IntN(9)-4))
			}
			v := make([]float64, n)
			for j := range v {
				v[j] = r.NormFloat64()
			}
			out, scalar := make([]float64, n), make([]float64, n)
			mulCols(m, ld, v, out)
			mulColsScalar(m, ld, v, scalar, 0)
			for i := range n {
				s := 0.0
				for j := range n {
					s += m[j*ld+i] * v[j]
				}
				if !sameBits(out[i], s) || !sameBits(scalar[i], s) {
					t.Fatalf("n=%d ld=%d column %d: %v (scalar %v), running sum %v", n, ld, i, out[i], scalar[i], s)
				}
			}
		}
	}
}

// TestMulRowsSumsInOrder: mulRows gives, bit for bit, each row's plain
// running sum in increasing column order, for every size around its
// blocking of six and four rows.
func TestMulRowsSumsInOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for n := 0; n <= 23; n++ {
		g := newGram(0)
		for i := range n {
			row := make([]float64, i)
			for j := range row {
				row[j] = r.NormFloat64() * math.Pow(10, float64(r.IntN(9)-4))
			}
			g.appendSym(row, 1+r.Float64())
		}
		v := make([]float64, n)
		for j := range v {
			v[j] = r.NormFloat64()
		}
		out := make([]float64, n)
		mulRows(&g, v, out)
		for i := range n {
			s := 0.0
			for j := range n {
				s += g.at(i, j) * v[j]
			}
			if !sameBits(out[i], s) {
				t.Fatalf("n=%d row %d: %v, running sum %v", n, i, out[i], s)
			}
		}
	}
}
