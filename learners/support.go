package learners

import (
	"github.com/streamlearner/streamlearner/sparse"
)

// scatterLimit bounds the dense scratch array that speeds up dot products
// (8 bytes per feature index). A point with a larger index falls back to a
// merge of the two index lists, which gives the same bits, only slower.
const scatterLimit = 1 << 22

// supportSet is the active set: support vectors in insertion order (index 0
// is the oldest), stored column-wise so that a margin is one pass over
// contiguous weights. It owns copies of its vectors.
type supportSet struct {
	kern  Kernel
	x     []sparse.Vector
	norm  []float64 // ‖x_j‖²
	self  []float64 // unnormalized k(x_j, x_j)
	alpha []float64 // signed weight of x_j in f = Σ alpha_j k(x_j, ·)
	label []int8    // y_j; kept apart from alpha, whose sign a shrinking learner can round away
	born  []uint64  // round in which x_j entered (its age)

	// recycled holds the storage of removed vectors, reused by the next
	// insertion so that a full budget learner allocates nothing per round.
	recycled []sparse.Vector

	scatter []float64 // dense copy of the query, all zero between uses
}

func (s *supportSet) len() int { return len(s.x) }

// query holds what the kernel needs of a point outside the set.
type query struct {
	x          sparse.Vector
	norm, self float64
}

func (s *supportSet) newQuery(x sparse.Vector) query {
	n := x.SqNorm()
	return query{x: x, norm: n, self: s.kern.self(n)}
}

// diag returns k(q, q) as the kernel defines it.
func (s *supportSet) diag(q query) float64 { return s.kern.diag(q.norm, q.self) }

// row fills out[j] = k(q, x_j) for every support vector and returns out.
// It costs O(nnz(q) + Σ_j nnz(x_j)).
func (s *supportSet) row(q query, out []float64) []float64 {
	out = s.dotRow(q, out)
	for j, dot := range out {
		out[j] = s.kern.value(dot, q.norm, s.norm[j], q.self, s.self[j])
	}
	return out
}

// dotRow fills out[j] = q·x_j for every support vector: q is scattered
// into a dense array once, and each support vector's entries index it.
// row() is this followed by the kernel, so dot products and kernel values
// always come from the same arithmetic.
func (s *supportSet) dotRow(q query, out []float64) []float64 {
	n := len(s.x)
	out = resize(out, n)
	if n == 0 {
		return out
	}
	if m := q.x.MaxIndex(); m < scatterLimit {
		if int(m) >= len(s.scatter) {
			s.scatter = make([]float64, min(int(m)+1+int(m)/2, scatterLimit))
		}
		w := s.scatter
		for i, idx := range q.x.Idx {
			w[idx] = q.x.Val[i]
		}
		lim := uint32(len(w))
		for j, v := range s.x {
			dot := 0.0
			for i, idx := range v.Idx {
				if idx < lim {
					dot += w[idx] * v.Val[i]
				}
			}
			out[j] = dot
		}
		for _, idx := range q.x.Idx {
			w[idx] = 0
		}
		return out
	}
	for j, v := range s.x {
		out[j] = q.x.Dot(v)
	}
	return out
}

// rowOf fills out with the kernel row of support vector i.
func (s *supportSet) rowOf(i int, out []float64) []float64 {
	return s.row(query{x: s.x[i], norm: s.norm[i], self: s.self[i]}, out)
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
	var v sparse.Vector
	if k := len(s.recycled); k > 0 {
		v = s.recycled[k-1]
		s.recycled = s.recycled[:k-1]
	}
	s.x = append(s.x, q.x.CopyInto(v))
	s.norm = append(s.norm, q.norm)
	s.self = append(s.self, q.self)
	s.alpha = append(s.alpha, alpha)
	s.label = append(s.label, int8(y))
	s.born = append(s.born, born)
}

// remove deletes support vector i, keeping the others in insertion order.
func (s *supportSet) remove(i int) {
	s.recycled = append(s.recycled, s.x[i])
	s.x = del(s.x, i)
	s.norm = del(s.norm, i)
	s.self = del(s.self, i)
	s.alpha = del(s.alpha, i)
	s.label = del(s.label, i)
	s.born = del(s.born, i)
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
