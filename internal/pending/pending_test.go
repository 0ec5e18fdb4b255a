package pending

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

func entry(i int) Entry {
	return Entry{X: sparse.Vector{Idx: []uint32{uint32(i % 7), 100}, Val: []float64{float64(i), 1}}, Time: int64(1000 * i), Offset: int64(i), Predicted: 1 - 2*(i%2), Margin: float64(i) / 10}
}

// scored is entry(i) with a score per learner, as a model with
// challengers keeps it.
func scored(i int) Entry {
	e := entry(i)
	e.Scores = []Score{{Predicted: e.Predicted, Margin: e.Margin}, {Predicted: i % 3, Margin: -float64(i)}}
	e.Champion = i % 2
	return e
}

func TestPutTakeReplace(t *testing.T) {
	s, _ := New(Config{MaxRecords: 10})
	s.Put("a", entry(1))
	s.Put("b", entry(2))
	s.Put("a", entry(3)) // the newer record wins
	if s.Len() != 2 || s.Replaced != 1 {
		t.Fatalf("len %d, replaced %d", s.Len(), s.Replaced)
	}
	if e, ok := s.Take("a"); !ok || e.Offset != 3 {
		t.Fatalf("take a: %+v %v", e, ok)
	}
	if _, ok := s.Take("a"); ok {
		t.Fatal("taken twice")
	}
	if _, ok := s.Take("zzz"); ok {
		t.Fatal("an unknown key was found")
	}
	if e, ok := s.Take("b"); !ok || e.Margin != 0.2 || s.Len() != 0 {
		t.Fatalf("take b: %+v %v, len %d", e, ok, s.Len())
	}
}

// The bound holds whatever arrives: a flood of records that never get
// labels keeps MaxRecords, the oldest going first.
func TestEvictionKeepsTheNewest(t *testing.T) {
	s, _ := New(Config{MaxRecords: 100})
	for i := range 10_000 {
		s.Put(fmt.Sprint("k", i), entry(i))
		if s.Len() > 100 {
			t.Fatalf("%d records held, bound 100", s.Len())
		}
	}
	if s.Evicted != 9_900 {
		t.Fatalf("evicted %d, want 9900", s.Evicted)
	}
	if _, ok := s.Take("k9899"); ok {
		t.Fatal("an evicted record is still there")
	}
	if e, ok := s.Take("k9900"); !ok || e.Offset != 9900 {
		t.Fatal("the oldest kept record is gone")
	}
	if len(s.q.slots) > 400 {
		t.Fatalf("%d slots for %d records: holes are not compacted", len(s.q.slots), s.Len())
	}
}

func TestExpiryByRecordTime(t *testing.T) {
	s, _ := New(Config{MaxRecords: 100, MaxAge: 5000})
	for i := range 10 {
		s.Put(fmt.Sprint(i), entry(i)) // times 0, 1000, …, 9000
	}
	if n := s.Expire(9000); n != 4 || s.Expired != 4 || s.Len() != 6 {
		t.Fatalf("expired %d (%d), left %d; want 4 (times 0–3000 older than 5 s at 9 s)", n, s.Expired, s.Len())
	}
	if _, ok := s.Take("3"); ok {
		t.Fatal("an expired record is still there")
	}
	if _, ok := s.Take("4"); !ok {
		t.Fatal("a record exactly MaxAge old expired")
	}
	none, _ := New(Config{})
	none.Put("x", entry(0))
	if none.Expire(1<<62) != 0 {
		t.Fatal("expiry without a MaxAge")
	}
}

// A store encoded and decoded at any point continues exactly as the one
// that never was: the same takes, evictions and expiries, the same bytes.
func TestStateContinuesExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	type op struct {
		kind int
		key  string
		i    int
	}
	var ops []op
	// A flood of records first (evictions), then a trickle (expiries).
	for i := range 20_000 {
		kind := r.IntN(4)
		switch {
		case i < 10_000 && kind == 3:
			kind = 0 // no expiry while the flood lasts
		case i >= 10_000 && kind == 1:
			kind = 2
		}
		ops = append(ops, op{kind, fmt.Sprint("k", r.IntN(3000)), i})
	}
	play := func(s *Store, o op) string {
		switch o.kind {
		case 0:
			return fmt.Sprint(s.Put(o.key, entry(o.i)))
		case 1:
			return fmt.Sprint(s.Put(o.key, scored(o.i)))
		case 2:
			e, ok := s.Take(o.key)
			why, gone := s.Gone(o.key)
			return fmt.Sprint(e.Offset, e.Scores, e.Champion, ok, why, gone)
		default:
			return fmt.Sprint(s.Expire(int64(1000 * o.i)))
		}
	}
	cfg := Config{MaxRecords: 200, MaxAge: 300_000}
	straight, _ := New(cfg)
	var want []string
	for _, o := range ops {
		want = append(want, play(straight, o))
	}
	s, _ := New(cfg)
	for i, o := range ops {
		if i%1777 == 5 {
			b, err := s.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if s, err = Unmarshal(b); err != nil {
				t.Fatalf("at %d: %v", i, err)
			}
		}
		if got := play(s, o); got != want[i] {
			t.Fatalf("op %d %+v: %s after restores, %s straight", i, o, got, want[i])
		}
	}
	a, _ := s.MarshalBinary()
	b, _ := straight.MarshalBinary()
	if !bytes.Equal(a, b) || s.Counters != straight.Counters {
		t.Fatalf("final state differs: %+v vs %+v", s.Counters, straight.Counters)
	}
	if straight.Evicted == 0 || straight.Expired == 0 || straight.Replaced == 0 {
		t.Fatalf("%+v: the stream exercised too little", straight.Counters)
	}
	for cut := range len(a) {
		if _, err := Unmarshal(a[:cut]); err == nil && cut > 0 {
			t.Fatalf("a state cut to %d of %d bytes was accepted", cut, len(a))
		}
	}
}

// A label names the reason its record is not there: evicted, expired, or
// never held (or already labeled); the store remembers at most MaxRecords
// such keys, and a key put again is held, not gone.
func TestGoneSaysWhy(t *testing.T) {
	s, _ := New(Config{MaxRecords: 3, MaxAge: 10_000})
	for i := range 5 {
		s.Put(fmt.Sprint(i), entry(i)) // 0 and 1 evicted
	}
	s.Expire(13_500) // times 2000 and 3000 are older than 10 s
	if _, ok := s.Gone("0"); ok {
		t.Error("four keys remembered, bound 3")
	}
	for key, want := range map[string]Left{"1": LeftEvicted, "2": LeftExpired, "3": LeftExpired} {
		if got, ok := s.Gone(key); !ok || got != want {
			t.Errorf("Gone(%s) = %v %v, want %v", key, got, ok, want)
		}
	}
	if _, ok := s.Gone("4"); ok {
		t.Error("a held record is gone")
	}
	s.Take("4")
	if _, ok := s.Gone("4"); ok {
		t.Error("a labeled record counts as gone")
	}
	if _, ok := s.Gone("never"); ok {
		t.Error("a key never held is gone")
	}
	s.Put("0", entry(9))
	if _, ok := s.Gone("0"); ok {
		t.Error("a key put again is still gone")
	}
	// 1, 2, 3 are remembered; evicting 0 again forgets the oldest, 1.
	s.Put("a", entry(10))
	s.Put("b", entry(11))
	s.Put("c", entry(12)) // evicts 0 again
	if s.gone.len() > 3 {
		t.Fatalf("%d keys remembered, bound 3", s.gone.len())
	}
	if _, ok := s.Gone("1"); ok {
		t.Error("the oldest remembered key outlived the bound")
	}
	if got, ok := s.Gone("0"); !ok || got != LeftEvicted {
		t.Errorf("Gone(0) = %v %v after its second eviction", got, ok)
	}
}

// Memory follows the bound, not the traffic: a million records that never
// get labels, and a million labels for keys never seen.
func TestMemoryStaysBounded(t *testing.T) {
	s, _ := New(Config{MaxRecords: 1000, MaxAge: 50_000})
	for i := range 1_000_000 {
		s.Put(fmt.Sprint("r", i), Entry{Time: int64(i)})
		if i%3 == 0 {
			s.Expire(int64(i))
		}
		if _, ok := s.Take(fmt.Sprint("label-", i)); ok {
			t.Fatal("a label found a record it was not for")
		}
	}
	if s.Len() > 1000 || s.gone.len() > 1000 || len(s.q.slots) > 4*1000+64 || len(s.gone.slots) > 4*1000+64 {
		t.Fatalf("held %d (%d slots), remembered %d (%d slots); bound 1000", s.Len(), len(s.q.slots), s.gone.len(), len(s.gone.slots))
	}
	if s.Evicted+s.Expired+uint64(s.Len()) != 1_000_000 {
		t.Fatalf("evicted %d + expired %d + held %d ≠ 1,000,000", s.Evicted, s.Expired, s.Len())
	}
}

// BenchmarkMillionPending measures what a million pending records cost:
// bytes per record held (a9a-sized vectors, 14 features, 12-byte keys).
func BenchmarkMillionPending(b *testing.B) {
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s, _ := New(Config{MaxRecords: 1_000_000, MaxBytes: math.MaxInt64})
		for i := range 1_000_000 {
			x := sparse.Vector{Idx: make([]uint32, 14), Val: make([]float64, 14)}
			for k := range x.Idx {
				x.Idx[k], x.Val[k] = uint32(k*9+i%9), 1
			}
			s.Put(fmt.Sprintf("txn-%08d", i), Entry{X: x, Time: int64(i)})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(s.Len()), "bytes/record")
		runtime.KeepAlive(s)
	}
}

// accounted recomputes what the store's entries and remembered keys cost.
func accounted(s *Store) int64 {
	var n int64
	s.q.each(func(k string, e *Entry) { n += Cost(k, e) })
	s.gone.each(func(k string, _ *Left) { n += goneOverhead + int64(len(k)) })
	return n
}

// TestBytesBoundLargeRecords: records of 4,000 features and 50 KB keys
// (about 100 KB each) are held within the byte bound — the count bound
// alone let 1,000 of them take 470 MB — the oldest evicted and counted;
// the accounting stays exact through puts, replacements, takes, expiry
// and a snapshot; and the heap they take is about what is accounted.
func TestBytesBoundLargeRecords(t *testing.T) {
	const bound = 8 << 20
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s, err := New(Config{MaxBytes: bound, MaxKeyBytes: 64 << 10, MaxAge: 500})
	if err != nil {
		t.Fatal(err)
	}
	big := func(i int) (string, Entry) {
		x := sparse.Vector{Idx: make([]uint32, 4000), Val: make([]float64, 4000)}
		for k := range x.Idx {
			x.Idx[k], x.Val[k] = uint32(k), float64(i+k)
		}
		return fmt.Sprintf("%06d", i) + string(bytes.Repeat([]byte{'k'}, 50_000)), Entry{X: x, Time: int64(i)}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		k, e := big(i)
		s.Put(k, e)
		switch r.IntN(10) {
		case 0:
			s.Take(k)
		case 1:
			s.Put(k, e) // replaced
		case 2:
			s.Expire(int64(i))
		}
		if s.Bytes() > bound || s.Bytes() != accounted(s) {
			t.Fatalf("after %d records: %d bytes accounted as %d, bound %d", i+1, accounted(s), s.Bytes(), bound)
		}
	}
	if s.Len() < 40 || s.Len() > 90 || s.Evicted == 0 {
		t.Fatalf("held %d, evicted %d", s.Len(), s.Evicted)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if heap > 3*bound/2 {
		t.Fatalf("the store takes %d bytes of heap for %d accounted (bound %d)", heap, s.Bytes(), bound)
	}
	t.Logf("held %d records, evicted %d, expired %d; %d bytes accounted, %d of heap", s.Len(), s.Evicted, s.Expired, s.Bytes(), heap)
	b, _ := s.MarshalBinary()
	back, err := Unmarshal(b)
	if err != nil || back.Bytes() != s.Bytes() || back.Config() != s.Config() {
		t.Fatalf("restored: %v, %d bytes, %+v; want %d, %+v", err, back.Bytes(), back.Config(), s.Bytes(), s.Config())
	}
	if s.KeyFits(make([]byte, 64<<10+1)) || !s.KeyFits(make([]byte, 64<<10)) {
		t.Fatal("KeyFits")
	}
	runtime.KeepAlive(s)
}
