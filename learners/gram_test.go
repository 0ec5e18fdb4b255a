package learners

import "testing"

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
