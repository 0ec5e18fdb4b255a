package learners

// gram is a square matrix indexed like the active set (row i is support
// vector i, oldest first) that follows its insertions and removals: the
// kernel matrix, or an inverse maintained alongside it. Storage grows with
// the active set, never to a budget's size up front.
type gram struct {
	limit  int       // the most rows it will ever need (budget + 1); 0: no limit
	n      int       // rows in use
	stride int       // row length of data
	data   []float64 // data[i*stride+j]
}

func newGram(limit int) gram { return gram{limit: limit} }

func (g *gram) at(i, j int) float64     { return g.data[i*g.stride+j] }
func (g *gram) set(i, j int, v float64) { g.data[i*g.stride+j] = v }

// row returns row i's first n entries (aliasing the storage).
func (g *gram) row(i int) []float64 { return g.data[i*g.stride : i*g.stride+g.n] }

// grow makes room for one more row and column and returns its index; the
// new entries are whatever the caller sets.
func (g *gram) grow() int {
	if g.n >= g.stride {
		s := max(2*g.stride, 16)
		if g.limit > 0 {
			s = min(s, g.limit)
		}
		if s <= g.n {
			panic("learners: gram matrix past its limit")
		}
		d := make([]float64, s*s)
		for i := range g.n {
			copy(d[i*s:i*s+g.n], g.data[i*g.stride:i*g.stride+g.n])
		}
		g.data, g.stride = d, s
	}
	g.n++
	return g.n - 1
}

// reserve makes room for n rows at once in an empty gram about to be
// filled, as a decode fills it: grown by doubling from 16 it would
// allocate about twice the matrix's final size on every restore (and the
// check of every save) and keep up to four times its rows' need. A set
// one row short of the limit gets the limit, so that the next insertion
// does not grow it again.
func (g *gram) reserve(n int) {
	if g.n != 0 || n <= g.stride {
		return
	}
	s := n
	if g.limit > 0 && n+1 >= g.limit {
		s = g.limit
	}
	g.data, g.stride = make([]float64, s*s), s
}

// appendSym adds a row and column holding row (length n, the entries
// against the existing rows) and diag, keeping the matrix symmetric.
func (g *gram) appendSym(row []float64, diag float64) {
	n := g.grow()
	for j := range n {
		g.set(n, j, row[j])
		g.set(j, n, row[j])
	}
	g.set(n, n, diag)
}

// remove deletes row and column r.
func (g *gram) remove(r int) {
	n, s := g.n, g.stride
	for i := range n {
		row := g.data[i*s : i*s+n]
		copy(row[r:], row[r+1:])
	}
	for i := r; i < n-1; i++ {
		copy(g.data[i*s:i*s+n-1], g.data[(i+1)*s:(i+1)*s+n-1])
	}
	g.n--
}

// rebuild fills an empty gram with the kernel matrix of the active set,
// computed by the same code that filled it incrementally (kernel rows of
// the vectors as they were added), so a decoded learner gets it back bit
// for bit.
func (g *gram) rebuild(sv *supportSet) {
	g.reserve(sv.len())
	var row []float64
	for i := range sv.len() {
		row = sv.rowOf(i, row)
		g.appendSym(row[:i], row[i])
	}
}
