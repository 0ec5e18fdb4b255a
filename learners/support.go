package learners

import (
	"math"
	"slices"
	"sync"
	"unsafe"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

// scatterLimit bounds the dense scratch array that speeds up dot products
// (8 bytes per feature index). A point with a larger index falls back to a
// merge of the two index lists, which gives the same bits, only slower.
const scatterLimit = 1 << 22

// The dense mirror (see supportSet) is built when the stored vectors fill
// at least 1/denseOn of the columns up to their largest index, and dropped
// below 1/denseOff: the gap keeps a set near the threshold from rebuilding
// on every insertion. Below a third, the scatter path reads fewer bytes.
const (
	denseOn    = 3
	denseOff   = 5
	denseMinSV = 8 // a handful of vectors is not worth a matrix
)

// supportSet is the active set: support vectors in insertion order (index 0
// is the oldest), stored column-wise so that a margin is one pass over
// contiguous weights. It owns copies of its vectors.
//
// The vectors' entries live in two pooled arrays, idx and val, one vector
// after the other in insertion order, so that a kernel row streams through
// memory. vec(j) is a view of vector j's entries, with its capacity
// clipped; it stays valid only until the set next changes. The views are
// made when asked for, not kept: kept, at 48 bytes a vector, they were a
// quarter of a budget-100 a9a model (9 of 39 MB at 1,024 partitions).
//
// When the vectors are dense (see denseOn), a mirror keeps each of them as a
// row of a row-major matrix with stride columns, in a slot that removal
// frees and the next insertion reuses, so the kernel row is a plain
// dense dot product per vector.
type supportSet struct {
	kern  Kernel
	off   []int     // vector j's entries are idx[off[j]:off[j+1]] (the last's run to len(idx))
	norm  []float64 // ‖x_j‖²
	self  []float64 // unnormalized k(x_j, x_j)
	alpha []float64 // signed weight of x_j in f = Σ alpha_j k(x_j, ·)
	label []int8    // y_j; kept apart from alpha, whose sign a shrinking learner can round away
	born  []uint64  // round in which x_j entered (its age)

	idx []uint32  // pooled indices of every stored vector
	val []float64 // pooled values, parallel to idx

	maxIdx uint32 // the largest index ever stored, far vectors excluded
	far    int    // vectors with an index ≥ scatterLimit: they force the branchy paths
	// nonUnit counts the vectors with a value other than 1: with none
	// (binary features, one-hot categories) the sparse path adds the
	// query's entries without multiplying them by 1.
	nonUnit int
	// valued says val holds the vectors' values. Until a vector with a
	// value other than 1 (or more than unitMax entries) comes, the set
	// stores none and vec reads them from unitValues: on a9a's binary
	// records the values were two thirds of the pools, 11 MB at 1,024
	// partitions of budget 100. Once set it stays set.
	valued bool

	// work counts what the set and its learner spent, as Outcome.Work
	// reports it: WorkEval + WorkEntry·nnz(q) per kernel evaluation, plus
	// one per multiply-add the learner spends on its matrices. It depends
	// only on the state and
	// the records (never on the dense mirror, which a decoded set may build
	// at another moment), so that a search that reads it decides the same
	// after a restore. Not encoded: only differences within a round count.
	work uint64

	// The dense mirror, in use when dense is set: vector j is
	// rows[slot[j]*stride:][:stride]; free lists unused slots.
	dense  bool
	stride int
	rows   []float64
	slot   []int
	free   []int

	scatter []float64 // dense copy of the query, all zero between uses

	// expSkip counts the rows left without the exponential memo
	// (expMemos): a row in which fewer than a quarter of the
	// exponentials repeat turns it off for the next expMemoRest rows.
	expSkip int

	// restoring defers the choice of layout while a snapshot's vectors
	// are added, to one choice once they all are: a mirror built row by
	// row, and rebuilt each time a wider index arrives, allocated about
	// twice what it ends up holding.
	restoring bool

	// room is the most vectors the set is to hold at once (its learner's
	// budget and one more, for those that add before they remove); 0:
	// unbounded. Its arrays grow towards it, not past it by their growth
	// factor: at 1,024 partitions of budget 100 on a9a, growth slack was
	// 13 of the 30 MB of pools. Past it, or once vectors come larger than
	// those before, they grow as any array does.
	room int
}

const (
	expMemoBits = 8
	expMemoRest = 64
)

// expMemo is a direct-mapped table of exp(a): key is ^bits(a), so that
// the zero entry matches no argument but a NaN, which never hits.
//
// It remembers recent RBF exponentials by the exact bits of their
// argument: on data with few distinct distances (binary features) most
// of a row's exponentials repeat. It only returns what math.Exp returned
// for the same argument, so it changes no bit, whichever sets filled it:
// the sets share the memos (expMemos) rather than keep 4 KB each, 4 MB at
// 1,024 partitions.

type expMemo [1 << expMemoBits]struct {
	key uint64
	val float64
}

var expMemos = sync.Pool{New: func() any { return new(expMemo) }}

func (s *supportSet) len() int { return len(s.off) }

// vec returns a view of vector j's entries in the pool. Its values are
// not to be written: they may be unitValues.
func (s *supportSet) vec(j int) sparse.Vector {
	a, e := s.end(j)
	if !s.valued {
		return sparse.Vector{Idx: s.idx[a:e:e], Val: unitValues[: e-a : e-a]}
	}
	return sparse.Vector{Idx: s.idx[a:e:e], Val: s.val[a:e:e]}
}

// unitMax is the most entries a vector may have for its values to be
// read from unitValues.
const unitMax = 1 << 12

// unitValues are the values of every vector of a set that stores none
// (valued unset): all 1. Read only.
var unitValues = func() *[unitMax]float64 {
	var a [unitMax]float64
	for i := range a {
		a[i] = 1
	}
	return &a
}()

// storeValues makes the set store its vectors' values, all 1 so far.
func (s *supportSet) storeValues() {
	s.val = make([]float64, len(s.idx), cap(s.idx))
	for i := range s.val {
		s.val[i] = 1
	}
	s.valued = true
}

// end returns where vector j's entries begin and end in the pool.
func (s *supportSet) end(j int) (int, int) {
	if j+1 < len(s.off) {
		return s.off[j], s.off[j+1]
	}
	return s.off[j], len(s.idx)
}

// query holds what the kernel needs of a point outside the set.
type query struct {
	x          sparse.Vector
	norm, self float64
}

func (s *supportSet) newQuery(x sparse.Vector) query { return s.queryNorm(x, x.SqNorm()) }

// queryNorm is newQuery for x of squared norm n.
func (s *supportSet) queryNorm(x sparse.Vector, n float64) query {
	return query{x: x, norm: n, self: s.kern.self(n)}
}

// diag returns k(q, q) as the kernel defines it.
func (s *supportSet) diag(q query) float64 { return s.kern.diag(q.norm, q.self) }

// row fills out[j] = k(q, x_j) for every support vector and returns out.
// It costs O(nnz(q) + Σ_j nnz(x_j)), or O(n·stride) with the dense mirror.
func (s *supportSet) row(q query, out []float64) []float64 {
	s.work += uint64(s.len()) * (WorkEval + WorkEntry*uint64(len(q.x.Idx)))
	out = s.dotRow(q, out)
	k := &s.kern
	switch {
	case k.Normalize:
	case k.Kind == RBF:
		s.rbfValues(q, out)
		return out
	case k.Kind == Poly:
		// Kernel.raw for these kernels, without its call and switch per
		// vector (a sixth of the rows' time in auto on a9a): the same
		// operations, so the same bits.
		for j, dot := range out {
			out[j] = powi(k.Scale*dot+k.Coef0, k.Degree)
		}
		return out
	case k.Kind == Linear && k.Coef0 == 0:
		return out // the dot products are the values
	case k.Kind == Linear:
		for j, dot := range out {
			out[j] = dot + k.Coef0
		}
		return out
	}
	for j, dot := range out {
		out[j] = s.kern.value(dot, q.norm, s.norm[j], q.self, s.self[j])
	}
	return out
}

// rbfValues turns the dot products in out into RBF kernel values:
// Kernel.value for this kernel, spelled out so that the loop has no call
// and no switch, the same operations in the same order, so the same bits.
func (s *supportSet) rbfValues(q query, out []float64) {
	gamma := s.kern.Gamma
	if s.expSkip > 0 {
		s.expSkip--
		for j, dot := range out {
			d := q.norm + s.norm[j] - 2*dot
			if d < 0 {
				d = 0
			}
			out[j] = math.Exp(-gamma * d)
		}
		return
	}
	exps := expMemos.Get().(*expMemo)
	hits := 0
	for j, dot := range out {
		d := q.norm + s.norm[j] - 2*dot
		if d < 0 {
			d = 0
		}
		a := -gamma * d
		e := &exps[(math.Float64bits(a)*0x9e3779b97f4a7c15)>>(64-expMemoBits)]
		if e.key == ^math.Float64bits(a) && a == a {
			out[j] = e.val
			hits++
			continue
		}
		e.key, e.val = ^math.Float64bits(a), math.Exp(a)
		out[j] = e.val
	}
	expMemos.Put(exps)
	if hits < len(out)/4 {
		s.expSkip = expMemoRest
	}
}

// dotRow fills out[j] = q·x_j for every support vector: q is scattered
// into a dense array once, and each support vector's entries index it (or,
// with the dense mirror, each row is multiplied with it). row() is this
// followed by the kernel, so dot products and kernel values always come
// from the same arithmetic.
//
// Every dot product is one running sum in increasing index order, the
// order of sparse.Vector.Dot, so every path gives Dot's bits: the entries
// the paths add beyond Dot's common indices are products with a zero,
// which leave a sum that starts at +0 unchanged. The loops work on several
// support vectors at once with one accumulator each, which lets the
// additions overlap without reordering any sum.
func (s *supportSet) dotRow(q query, out []float64) []float64 {
	n := s.len()
	out = resizeRoom(out, n, s.room)
	if n == 0 {
		return out
	}
	qmax := q.x.MaxIndex()
	if qmax >= scatterLimit {
		for j := range n {
			out[j] = q.x.Dot(s.vec(j))
		}
		return out
	}
	need := int(max(qmax, s.maxIdx)) + 1
	if s.far > 0 {
		need = int(qmax) + 1
	}
	if s.dense {
		need = max(need, s.stride)
	}
	if need > len(s.scatter) {
		s.scatter = make([]float64, min(need+need/2, scatterLimit))
	}
	w := s.scatter
	for i, idx := range q.x.Idx {
		w[idx] = q.x.Val[i]
	}
	switch {
	case s.far > 0:
		s.dotsChecked(w, out)
	case s.dense:
		s.dotsDense(w[:s.stride], out)
	case s.nonUnit == 0:
		s.dotsUnit(w, out)
	default:
		s.dotsSparse(w, out)
	}
	for _, idx := range q.x.Idx {
		w[idx] = 0
	}
	return out
}

// dotsChecked is the scatter path when some vector has indices beyond the
// scatter array: those entries meet a zero of the query and are skipped.
func (s *supportSet) dotsChecked(w, out []float64) {
	lim := uint32(len(w))
	for j := range s.len() {
		v := s.vec(j)
		dot := 0.0
		for i, idx := range v.Idx {
			if idx < lim {
				dot += w[idx] * v.Val[i]
			}
		}
		out[j] = dot
	}
}

// dotsSparse is the scatter path when w covers every stored index: two
// vectors at a time, each with its own running sum.
func (s *supportSet) dotsSparse(w, out []float64) {
	n := s.len()
	j := 0
	for ; j+1 < n; j += 2 {
		a0, e0 := s.end(j)
		a1, e1 := s.end(j + 1)
		i0, v0 := s.idx[a0:e0], s.val[a0:e0]
		i1, v1 := s.idx[a1:e1], s.val[a1:e1]
		v0 = v0[:len(i0)]
		v1 = v1[:len(i1)]
		m := min(len(i0), len(i1))
		d0, d1 := 0.0, 0.0
		for k := 0; k < m; k++ {
			d0 += w[i0[k]] * v0[k]
			d1 += w[i1[k]] * v1[k]
		}
		for k := m; k < len(i0); k++ {
			d0 += w[i0[k]] * v0[k]
		}
		for k := m; k < len(i1); k++ {
			d1 += w[i1[k]] * v1[k]
		}
		out[j], out[j+1] = d0, d1
	}
	if j < n {
		a0, e0 := s.end(j)
		i0, v0 := s.idx[a0:e0], s.val[a0:e0]
		v0 = v0[:len(i0)]
		d0 := 0.0
		for k, idx := range i0 {
			d0 += w[idx] * v0[k]
		}
		out[j] = d0
	}
}

// dotsUnit is dotsSparse when every stored value is 1: each product
// w[i]·1 is w[i] exactly, so adding w[i] gives the same sums, without
// reading the values (on a9a's binary records, about a quarter less
// time).
func (s *supportSet) dotsUnit(w, out []float64) {
	n := s.len()
	j := 0
	for ; j+1 < n; j += 2 {
		a0, e0 := s.end(j)
		a1, e1 := s.end(j + 1)
		i0, i1 := s.idx[a0:e0], s.idx[a1:e1]
		m := min(len(i0), len(i1))
		d0, d1 := 0.0, 0.0
		for k := 0; k < m; k++ {
			d0 += w[i0[k]]
			d1 += w[i1[k]]
		}
		for _, idx := range i0[m:] {
			d0 += w[idx]
		}
		for _, idx := range i1[m:] {
			d1 += w[idx]
		}
		out[j], out[j+1] = d0, d1
	}
	if j < n {
		a0, e0 := s.end(j)
		d0 := 0.0
		for _, idx := range s.idx[a0:e0] {
			d0 += w[idx]
		}
		out[j] = d0
	}
}

// dotsDense multiplies the dense query q (stride entries) with every row
// of the mirror, six rows at a time (then four, then one), each with its
// own running sum: six additions in flight, and still no register spills.
func (s *supportSet) dotsDense(q, out []float64) {
	n, d := s.len(), s.stride
	j := 0
	for ; j+5 < n; j += 6 {
		r0 := s.rows[s.slot[j]*d:][:len(q)]
		r1 := s.rows[s.slot[j+1]*d:][:len(q)]
		r2 := s.rows[s.slot[j+2]*d:][:len(q)]
		r3 := s.rows[s.slot[j+3]*d:][:len(q)]
		r4 := s.rows[s.slot[j+4]*d:][:len(q)]
		r5 := s.rows[s.slot[j+5]*d:][:len(q)]
		var d0, d1, d2, d3, d4, d5 float64
		for c, qc := range q {
			d0 += qc * r0[c]
			d1 += qc * r1[c]
			d2 += qc * r2[c]
			d3 += qc * r3[c]
			d4 += qc * r4[c]
			d5 += qc * r5[c]
		}
		out[j], out[j+1], out[j+2], out[j+3], out[j+4], out[j+5] = d0, d1, d2, d3, d4, d5
	}
	for ; j+3 < n; j += 4 {
		r0 := s.rows[s.slot[j]*d:][:len(q)]
		r1 := s.rows[s.slot[j+1]*d:][:len(q)]
		r2 := s.rows[s.slot[j+2]*d:][:len(q)]
		r3 := s.rows[s.slot[j+3]*d:][:len(q)]
		var d0, d1, d2, d3 float64
		for c, qc := range q {
			d0 += qc * r0[c]
			d1 += qc * r1[c]
			d2 += qc * r2[c]
			d3 += qc * r3[c]
		}
		out[j], out[j+1], out[j+2], out[j+3] = d0, d1, d2, d3
	}
	for ; j < n; j++ {
		r := s.rows[s.slot[j]*d:][:len(q)]
		d0 := 0.0
		for c, qc := range q {
			d0 += qc * r[c]
		}
		out[j] = d0
	}
}

// rowOf fills out with the kernel row of support vector i.
func (s *supportSet) rowOf(i int, out []float64) []float64 {
	return s.row(query{x: s.vec(i), norm: s.norm[i], self: s.self[i]}, out)
}

// margin returns Σ_j alpha_j row_j, summed oldest first.
func (s *supportSet) margin(row []float64) float64 {
	f := 0.0
	for j, a := range s.alpha {
		f += a * row[j]
	}
	return f
}

// add appends a copy of q's vector with label y and weight alpha.
func (s *supportSet) add(q query, y int, alpha float64, born uint64) {
	s.off = appendRoom(s.off, len(s.idx), s.room)
	s.put(s.len()-1, q.x)
	s.norm = appendRoom(s.norm, q.norm, s.room)
	s.self = appendRoom(s.self, q.self, s.room)
	s.alpha = appendRoom(s.alpha, alpha, s.room)
	s.label = appendRoom(s.label, int8(y), s.room)
	s.born = appendRoom(s.born, born, s.room)
	if !s.restoring && !s.chooseLayout() && s.dense {
		s.slot = appendRoom(s.slot, s.takeSlot(), s.room)
		s.fillRow(s.len() - 1)
	}
}

// reserve makes room for n more vectors with entries entries in all, so
// that a set rebuilt from a snapshot (at every restore, and at every save,
// which decodes its snapshot to check it) does not grow its arrays one
// vector at a time: the garbage of growing them came to more than they
// hold.
func (s *supportSet) reserve(n, entries int) {
	s.off = slices.Grow(s.off, n)
	s.norm = slices.Grow(s.norm, n)
	s.self = slices.Grow(s.self, n)
	s.alpha = slices.Grow(s.alpha, n)
	s.label = slices.Grow(s.label, n)
	s.born = slices.Grow(s.born, n)
	s.idx = slices.Grow(s.idx, entries)
	if s.valued {
		s.val = slices.Grow(s.val, entries)
	}
}

// set replaces support vector i's point by q's, keeping its place, weight
// and the rest of its record.
func (s *supportSet) set(i int, q query) {
	s.put(i, q.x)
	s.norm[i], s.self[i] = q.norm, q.self
	if !s.chooseLayout() && s.dense {
		s.fillRow(i)
	}
}

// remove deletes support vector i, keeping the others in insertion order.
func (s *supportSet) remove(i int) {
	s.put(i, sparse.Vector{})
	if s.dense {
		s.free = append(s.free, s.slot[i])
		s.slot = del(s.slot, i)
	}
	s.off = del(s.off, i)
	s.norm = del(s.norm, i)
	s.self = del(s.self, i)
	s.alpha = del(s.alpha, i)
	s.label = del(s.label, i)
	s.born = del(s.born, i)
}

// put makes v the entries of vector i in the pool: the entries of the
// vectors after i move to make room or close the gap.
// v may be a view into the pool itself (rowOf's query is one).
func (s *supportSet) put(i int, v sparse.Vector) {
	old := s.vec(i)
	if far(old) {
		s.far--
	}
	if far(v) {
		s.far++
	} else {
		s.maxIdx = max(s.maxIdx, v.MaxIndex())
	}
	if !unit(old) {
		s.nonUnit--
	}
	if !unit(v) {
		s.nonUnit++
		if !s.valued {
			s.storeValues()
		}
	} else if !s.valued && len(v.Idx) > unitMax {
		s.storeValues()
	}
	if len(v.Idx) > 0 && len(s.idx) > 0 {
		// The move below may overwrite a view into the pool: copy it out.
		p := uintptr(unsafe.Pointer(&v.Idx[0]))
		lo := uintptr(unsafe.Pointer(&s.idx[0]))
		if p >= lo && p < lo+uintptr(len(s.idx))*unsafe.Sizeof(s.idx[0]) {
			v = v.Clone()
		}
	}
	a, b, nb := s.off[i], s.off[i]+len(old.Idx), s.off[i]+len(v.Idx)
	tail := len(s.idx) - b
	room := s.poolRoom(nb + tail)
	s.idx = resizeRoom(s.idx, nb+tail, room)
	// Slicing up to the capacity reaches the tail when the pool shrank.
	copy(s.idx[nb:], s.idx[b:b+tail])
	copy(s.idx[a:], v.Idx)
	if s.valued {
		s.val = resizeRoom(s.val, nb+tail, room)
		copy(s.val[nb:], s.val[b:b+tail])
		copy(s.val[a:], v.Val)
	}
	for j := i + 1; j < len(s.off); j++ {
		s.off[j] += nb - b
	}
}

// poolRoom is the capacity the pools of entries grow towards when they
// are to hold n entries: the entries of room vectors as large as those
// stored on average, and a sixteenth more for vectors that come larger
// than those they replace. 0 when the set has no room.
func (s *supportSet) poolRoom(n int) int {
	v := s.len()
	if s.room == 0 || v == 0 {
		return 0
	}
	want := (n*s.room + v - 1) / v
	return want + want/16 + 1
}

// far reports whether v has an index beyond the scatter array's reach.
func far(v sparse.Vector) bool { return v.MaxIndex() >= scatterLimit }

// unit reports whether every value of v is 1.
func unit(v sparse.Vector) bool {
	for _, x := range v.Val {
		if x != 1 {
			return false
		}
	}
	return true
}

// chooseLayout builds or drops the dense mirror as the stored vectors'
// density crosses denseOn or denseOff, and widens it (by a quarter at
// least, so that a slowly growing index rebuilds O(log d) times) when a
// vector brings a larger index. A rebuild costs O(n·stride). It reports
// whether it rebuilt the mirror, which then holds every vector; otherwise
// the caller mirrors the vector it just stored.
func (s *supportSet) chooseLayout() bool {
	n, cols := s.len(), int(s.maxIdx)+1
	want := s.far == 0 && n >= denseMinSV && len(s.idx)*denseOn >= n*cols
	if s.dense && s.far == 0 && len(s.idx)*denseOff >= n*cols {
		want = true
	}
	if !want {
		s.dense = false
		s.rows, s.slot, s.free = s.rows[:0], s.slot[:0], s.free[:0]
		return false
	}
	if s.dense && cols <= s.stride {
		return false
	}
	if s.dense {
		cols = max(cols, s.stride+s.stride/4)
	}
	s.dense, s.stride = true, cols
	s.rows, s.slot, s.free = slices.Grow(s.rows[:0], n*cols), slices.Grow(s.slot[:0], n), s.free[:0]
	for j := range n {
		s.slot = append(s.slot, s.takeSlot())
		s.fillRow(j)
	}
	return true
}

// takeSlot returns an unused row of the mirror, growing it if none is free.
func (s *supportSet) takeSlot() int {
	if k := len(s.free); k > 0 {
		r := s.free[k-1]
		s.free = s.free[:k-1]
		return r
	}
	r := len(s.rows) / s.stride
	s.rows = resizeRoom(s.rows, len(s.rows)+s.stride, s.room*s.stride)
	return r
}

// fillRow writes vector j into its row of the mirror.
func (s *supportSet) fillRow(j int) {
	r := s.rows[s.slot[j]*s.stride:][:s.stride]
	clear(r)
	v := s.vec(j)
	for k, idx := range v.Idx {
		r[idx] = v.Val[k]
	}
}

// scale multiplies every weight by c.
func (s *supportSet) scale(c float64) {
	for j := range s.alpha {
		s.alpha[j] *= c
	}
}

// del removes element i in place, keeping order; the freed tail slot is
// cleared so that it holds no reference.
func del[T any](xs []T, i int) []T {
	copy(xs[i:], xs[i+1:])
	var zero T
	xs[len(xs)-1] = zero
	return xs[:len(xs)-1]
}

// resize returns s with length n, reusing its storage when it can.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/2+1)
	}
	return s[:n]
}

// resizeRoom is resizeKeep for a slice that is to hold at most room
// elements (0: no bound): it grows to room rather than past it.
func resizeRoom[T any](s []T, n, room int) []T {
	if cap(s) >= n || room < n {
		return resizeKeep(s, n)
	}
	t := make([]T, n, min(n+n/2+1, room))
	copy(t, s)
	return t
}

// appendRoom is append for a slice that is to hold at most room elements
// (0: no bound): where append would grow it past room, it grows to room.
func appendRoom[T any](s []T, v T, room int) []T {
	if n := len(s); n == cap(s) && room > n && nextCap(n) > room {
		t := make([]T, n, room)
		copy(t, s)
		s = t
	}
	return append(s, v)
}

// nextCap is the capacity append grows a full slice of capacity c to, as
// the runtime's growth rule gives it (runtime.nextslicecap, before its
// rounding to size classes): double below 256 elements, then about 1.25×.
func nextCap(c int) int {
	switch {
	case c == 0:
		return 1
	case c < 256:
		return 2 * c
	}
	return c + (c+3*256)>>2
}

// resizeKeep is resize that keeps the first min(len(s), n) elements.
func resizeKeep[T any](s []T, n int) []T {
	if cap(s) < n {
		t := make([]T, n, n+n/2+1)
		copy(t, s)
		return t
	}
	return s[:n]
}
