package pending

import "slices"

// queue is a set of values by key in insertion order: put at the back,
// take by key or from the front, each in constant time (amortized). Taken
// slots become holes that the front skips and that are compacted once
// they are most of the slice, so memory follows the live count.
type queue[V any] struct {
	slots []slot[V] // insertion order from head on
	head  int       // first slot that may be live
	index map[string]int
	live  int
}

type slot[V any] struct {
	key  string
	v    V
	live bool
}

func newQueue[V any]() queue[V] { return queue[V]{index: map[string]int{}} }

func (q *queue[V]) len() int { return q.live }

// reserve makes room for n more values.
func (q *queue[V]) reserve(n int) {
	q.slots = slices.Grow(q.slots, n)
	if len(q.index) == 0 {
		q.index = make(map[string]int, n)
	}
}

// put adds v under key at the back; the caller has taken any value the
// key had.
func (q *queue[V]) put(key string, v V) {
	q.index[key] = len(q.slots)
	q.slots = append(q.slots, slot[V]{key: key, v: v, live: true})
	q.live++
}

func (q *queue[V]) get(key string) (*V, bool) {
	i, ok := q.index[key]
	if !ok {
		return nil, false
	}
	return &q.slots[i].v, true
}

func (q *queue[V]) take(key string) (V, bool) {
	i, ok := q.index[key]
	if !ok {
		var zero V
		return zero, false
	}
	v := q.slots[i].v
	q.kill(i)
	return v, true
}

// front is the oldest live slot; the queue is not empty.
func (q *queue[V]) front() *slot[V] {
	for !q.slots[q.head].live {
		q.head++
	}
	return &q.slots[q.head]
}

// pop removes the oldest value and returns its key and value.
func (q *queue[V]) pop() (string, V) {
	s := q.front()
	key, v := s.key, s.v
	q.kill(q.head)
	return key, v
}

func (q *queue[V]) kill(i int) {
	s := &q.slots[i]
	delete(q.index, s.key)
	*s = slot[V]{}
	q.live--
	if q.live == 0 {
		q.slots, q.head = q.slots[:0], 0
		return
	}
	if len(q.slots) > 64 && q.live < len(q.slots)/4 {
		j := 0
		for _, s := range q.slots[q.head:] {
			if s.live {
				q.slots[j] = s
				q.index[s.key] = j
				j++
			}
		}
		clear(q.slots[j:])
		q.slots, q.head = q.slots[:j], 0
	}
}

// each calls f on every live value, oldest first.
func (q *queue[V]) each(f func(key string, v *V)) {
	for i := q.head; i < len(q.slots); i++ {
		if s := &q.slots[i]; s.live {
			f(s.key, &s.v)
		}
	}
}
