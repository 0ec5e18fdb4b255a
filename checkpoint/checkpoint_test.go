package checkpoint

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/internal/model"
	"github.com/streamlearner/streamlearner/learners"
	"github.com/streamlearner/streamlearner/learners/prequential"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

func testSnapshot(t *testing.T) *Snapshot {
	k, _ := learners.ParseKernel("rbf:gamma=0.5")
	l, _ := learners.New("rbp:budget=5", k, 3)
	for i := range 20 {
		l.Round(sparse.Vector{Idx: []uint32{uint32(1 + i%4)}, Val: []float64{float64(i)}}, 1-2*(i%2))
	}
	model, _ := l.MarshalBinary()
	return &Snapshot{Topic: "in", Partition: 3, Generation: 7, Seq: 12, Learner: l.Spec(), Kernel: k.String(),
		NextOffset: 20, Created: time.Unix(1700000000, 5), Model: model, Eval: []byte{1, 2, 3}}
}

func TestSnapshotEncoding(t *testing.T) {
	s := testSnapshot(t)
	b := s.Encode()
	back, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.Name() != "in/3/0000000007/00000000000000000012" || back.NextOffset != 20 || !back.Created.Equal(s.Created) ||
		string(back.Model) != string(s.Model) || back.Learner != s.Learner {
		t.Fatalf("decoded %+v", back)
	}
	for i := range b {
		bad := slices.Clone(b)
		bad[i] ^= 0x10
		if _, err := Decode(bad); !errors.Is(err, ErrChecksum) {
			t.Fatalf("flipped byte %d: %v", i, err)
		}
	}
	for _, n := range []int{0, 3, len(b) / 2, len(b) - 1} {
		if _, err := Decode(b[:n]); !errors.Is(err, ErrChecksum) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	topic, p, g, seq, err := ParseName(s.Name())
	if err != nil || topic != "in" || p != 3 || g != 7 || seq != 12 {
		t.Fatalf("ParseName: %v %v %v %v %v", topic, p, g, seq, err)
	}
}

func TestDirStore(t *testing.T) {
	ctx := context.Background()
	st := DirStore{Dir: t.TempDir()}
	names := []string{Name("in", 1, 2, 5), Name("in", 1, 2, 3), Name("in", 1, 10, 1), Name("in", 11, 1, 1), Name("out", 1, 1, 1)}
	for _, n := range names {
		if err := st.Save(ctx, n, []byte(n)); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := st.List(ctx, "in/1/")
	want := []string{Name("in", 1, 2, 3), Name("in", 1, 2, 5), Name("in", 1, 10, 1)}
	if !slices.Equal(got, want) {
		t.Fatalf("List = %v, want %v (a later generation is newer)", got, want)
	}
	b, err := st.Load(ctx, names[0])
	if err != nil || string(b) != names[0] {
		t.Fatalf("Load: %q %v", b, err)
	}
	if err := st.Delete(ctx, names[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Load(ctx, names[0]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if err := st.Delete(ctx, names[0]); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
	filepath.WalkDir(st.Dir, func(p string, d os.DirEntry, _ error) error {
		if strings.Contains(p, ".tmp") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
	if err := st.Save(ctx, "../etc/1/1/1", nil); err == nil {
		t.Fatal("a topic with a path separator was accepted")
	}
}

func newProtocol(t *testing.T, spec string) (*Protocol, learners.Kernel) {
	k, _ := learners.ParseKernel("rbf:gamma=0.5")
	return &Protocol{Store: DirStore{Dir: t.TempDir()}, Model: modelOf(spec, k, 1), Log: zerolog.New(zerolog.NewTestWriter(t))}, k
}

// modelOf is the Protocol.Model of a binary record model with spec, as
// the service configures it: partition p seeded with seed + p.
func modelOf(spec string, k learners.Kernel, seed uint64) func(int) model.Config {
	return func(p int) model.Config { return model.Config{Learner: spec, Kernel: k, Seed: seed + uint64(p)} }
}

// state plays n rounds on partition p's learner.
func state(t *testing.T, p *Protocol, part Partition, n int) *State {
	m, err := model.New(p.Model(part.ID))
	if err != nil {
		t.Fatal(err)
	}
	st := &State{Model: m}
	for i := range n {
		x := sparse.Vector{Idx: []uint32{uint32(1 + i%7), 9}, Val: []float64{float64(i % 5), 1}}
		if _, err := m.StepVector(x, []byte(fmt.Sprint(1-2*(i%3%2)))); err != nil {
			t.Fatal(err)
		}
	}
	st.NextOffset = int64(n)
	return st
}

func TestProtocolSaveRestoreCollect(t *testing.T) {
	ctx := context.Background()
	p, _ := newProtocol(t, "rbp:budget=4")
	part := Partition{Topic: "in", ID: 2}
	var names []string
	for i := range 4 {
		name, size, err := p.Save(ctx, part, 3, state(t, p, part, 10*(i+1)))
		if err != nil {
			t.Fatal(err)
		}
		if b, err := p.Store.Load(ctx, name); err != nil || len(b) != size {
			t.Fatalf("Save reported %d bytes, the store holds %d (%v)", size, len(b), err)
		}
		names = append(names, name)
		p.Committed(ctx, part, name)
	}
	left, _ := p.Store.List(ctx, "in/2/")
	if !slices.Equal(left, names[2:]) {
		t.Fatalf("after collection %v, want the last two %v", left, names[2:])
	}
	st, err := p.Restore(ctx, part, 40, names[3])
	if err != nil {
		t.Fatal(err)
	}
	want := state(t, p, part, 40)
	a, _ := st.Model.MarshalBinary()
	b, _ := want.Model.MarshalBinary()
	if string(a) != string(b) || st.NextOffset != 40 {
		t.Fatal("restored state differs from the saved one")
	}
	// A new owner saves with a higher sequence number.
	next, _, _ := p.Save(ctx, part, 4, st)
	if !nameLess(names[3], next) {
		t.Fatalf("%s does not sort after %s", next, names[3])
	}
}

// A commit may name a snapshot taken before its offset (snapshots rarer
// than commits): the restore returns that snapshot's state, at its own
// offset, naming it and its size, for the worker to replay the records
// in between and to name it in its next commits.
func TestRestoreOfAnEarlierSnapshotSaysWhichAndWhere(t *testing.T) {
	ctx := context.Background()
	p, _ := newProtocol(t, "rbp:budget=4")
	part := Partition{Topic: "in", ID: 1}
	name, size, err := p.Save(ctx, part, 3, state(t, p, part, 10))
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Restore(ctx, part, 25, name)
	if err != nil {
		t.Fatal(err)
	}
	if st.NextOffset != 10 || st.Snapshot != name || st.SnapshotBytes <= 0 || st.SnapshotBytes > size {
		t.Fatalf("restored at %d from %q (%d bytes), want offset 10 from %q (at most %d bytes)", st.NextOffset, st.Snapshot, st.SnapshotBytes, name, size)
	}
}

func TestProtocolCorruptionAndMismatch(t *testing.T) {
	ctx := context.Background()
	p, _ := newProtocol(t, "forgetron:budget=4")
	part := Partition{Topic: "in", ID: 0}
	old, _, _ := p.Save(ctx, part, 1, state(t, p, part, 15))
	newest, _, _ := p.Save(ctx, part, 1, state(t, p, part, 30))
	dir := p.Store.(DirStore).Dir

	// A flipped byte in the newest: restored from the previous one, which
	// replays from offset 15.
	path, _ := p.Store.(DirStore).path(newest)
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 1
	os.WriteFile(path, b, 0o600)
	st, err := p.Restore(ctx, part, 30, newest)
	if err != nil || st.NextOffset != 15 {
		t.Fatalf("fallback: %+v %v", st, err)
	}
	// Truncated and no older snapshot intact: an error, not an empty model.
	opath, _ := p.Store.(DirStore).path(old)
	ob, _ := os.ReadFile(opath)
	os.WriteFile(opath, ob[:len(ob)/3], 0o600)
	if st, err := p.Restore(ctx, part, 30, newest); err == nil || st != nil || !strings.Contains(err.Error(), "not serving") ||
		!errors.Is(err, ErrNeedsOperator) {
		t.Fatalf("nothing intact: %+v %v", st, err)
	}
	// ... unless told to reset: then a new model, loudly (counted).
	var resets []string
	p.ResetModel = true
	p.OnReset = func(pp Partition, reason string) { resets = append(resets, fmt.Sprint(pp.ID, reason)) }
	if st, err := p.Restore(ctx, part, 30, newest); err != nil || st != nil || fmt.Sprint(resets) != "[0unreadable]" {
		t.Fatalf("nothing intact, reset: %+v %v, resets %v", st, err, resets)
	}
	// The numbering goes on after the discarded snapshot's.
	next, _, _ := p.Save(ctx, part, 3, state(t, p, part, 31))
	if !nameLess(newest, next) {
		t.Fatalf("after a reset %s does not sort after %s", next, newest)
	}
	p.Store.Delete(ctx, next)
	p.ResetModel, p.OnReset = false, nil
	// A snapshot of another learner is refused, unless reset.
	q := &Protocol{Store: DirStore{Dir: dir}, Model: modelOf("lbp:budget=4", p.Model(0).Kernel, 1), Log: p.Log}
	good, _, _ := p.Save(ctx, part, 2, state(t, p, part, 8))
	if _, err := q.Restore(ctx, part, 8, good); !errors.Is(err, ErrMismatch) || !errors.Is(err, ErrNeedsOperator) ||
		!strings.Contains(err.Error(), "--reset-model") ||
		!strings.Contains(err.Error(), "the snapshot has forgetron:budget=4; the configuration has lbp:budget=4") {
		t.Fatalf("other learner: %v", err)
	}
	// Other input settings, same learner and kernel: the message names them.
	events := &Protocol{Store: DirStore{Dir: dir}, Log: p.Log, Model: func(i int) model.Config {
		c := p.Model(i)
		c.Events = true
		return c
	}}
	if _, err := events.Restore(ctx, part, 8, good); !errors.Is(err, ErrMismatch) ||
		!strings.Contains(err.Error(), "the snapshot has nothing more; the configuration has events hash-bits=18 scale=none") {
		t.Fatalf("other input: %v", err)
	}
	q.ResetModel = true
	if st, err := q.Restore(ctx, part, 8, good); err != nil || st != nil {
		t.Fatalf("reset: %+v %v", st, err)
	}
	// A missing snapshot named by the commit falls back like a damaged one.
	if st, err := p.Restore(ctx, part, 8, Name("in", 0, 9, 99)); err != nil || st.NextOffset != 8 {
		t.Fatalf("missing snapshot: %+v %v", st, err)
	}
}

// silentStore is a DirStore whose Load and List fail, as a store that
// does not answer does, while silent is set (List: after its first call,
// the one Restore begins with).
type silentStore struct {
	DirStore
	silent      bool
	loads, list int
}

var errNoAnswer = errors.New("broker not available")

func (s *silentStore) Load(ctx context.Context, name string) ([]byte, error) {
	s.loads++
	if s.silent {
		return nil, errNoAnswer
	}
	return s.DirStore.Load(ctx, name)
}

func (s *silentStore) List(ctx context.Context, prefix string) ([]string, error) {
	s.list++
	if s.silent && s.list > 1 {
		return nil, errNoAnswer
	}
	return s.DirStore.List(ctx, prefix)
}

// loadOnce lets its store's first Load through and silences it after.
type loadOnce struct{ *silentStore }

func (s *loadOnce) Load(ctx context.Context, name string) ([]byte, error) {
	b, err := s.silentStore.Load(ctx, name)
	s.silent = true
	return b, err
}

// TestStoreThatDoesNotAnswerConcludesNothing: a store that fails to
// answer says nothing about the committed snapshot. The restore fails,
// to be tried again, without looking for an older snapshot (whose replay
// would cost the records since) and, under --reset-model, without
// discarding the model; once the store answers, the committed snapshot
// restores. A broker restarting under the service did this: the member
// gave up the partition, and with --reset-model would have started it
// over.
func TestStoreThatDoesNotAnswerConcludesNothing(t *testing.T) {
	ctx := context.Background()
	p, _ := newProtocol(t, "forgetron:budget=4")
	store := &silentStore{DirStore: p.Store.(DirStore)}
	p.Store = store
	part := Partition{Topic: "in", ID: 0}
	p.Save(ctx, part, 1, state(t, p, part, 15))
	newest, _, _ := p.Save(ctx, part, 1, state(t, p, part, 30))
	var resets []string
	p.ResetModel = true
	p.OnReset = func(pp Partition, reason string) { resets = append(resets, reason) }
	store.silent = true
	st, err := p.Restore(ctx, part, 30, newest)
	if err == nil || st != nil || !errors.Is(err, errNoAnswer) || errors.Is(err, ErrNeedsOperator) || len(resets) != 0 {
		t.Fatalf("store silent: %+v %v, resets %v", st, err, resets)
	}
	if store.loads != 1 || store.list != 1 {
		t.Fatalf("%d loads and %d lists after the store failed to answer, want the committed snapshot's only", store.loads, store.list)
	}
	// Damage in the committed snapshot, then silence while looking for an
	// older one: still nothing concluded.
	path, _ := store.path(newest)
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 1
	os.WriteFile(path, b, 0o600)
	store.silent, store.list = false, 0
	p.Store = &loadOnce{silentStore: store}
	st, err = p.Restore(ctx, part, 30, newest)
	if err == nil || st != nil || !errors.Is(err, errNoAnswer) || errors.Is(err, ErrNeedsOperator) || len(resets) != 0 {
		t.Fatalf("older snapshots unlisted: %+v %v, resets %v", st, err, resets)
	}
	b[len(b)/2] ^= 1
	os.WriteFile(path, b, 0o600)
	p.Store = store
	store.silent = false
	st, err = p.Restore(ctx, part, 30, newest)
	if err != nil || st == nil || st.NextOffset != 30 || st.Snapshot != newest || len(resets) != 0 {
		t.Fatalf("store answering again: %+v %v, resets %v", st, err, resets)
	}
}

// A snapshot of format 1 (a lone learner and its evaluator, before the
// partition model) still restores, as the binary record model it was,
// and continues exactly; a format this build does not know is refused
// naming its version.
func TestFormatOneSnapshotsStillRestore(t *testing.T) {
	ctx := context.Background()
	p, k := newProtocol(t, "rbp:budget=4")
	part := Partition{Topic: "in", ID: 1}
	l, _ := learners.New("rbp:budget=4", k, 2)
	var ev prequential.Evaluator
	straight, _ := model.New(p.Model(1))
	xs := func(i int) sparse.Vector {
		return sparse.Vector{Idx: []uint32{uint32(1 + i%7), 9}, Val: []float64{float64(i % 5), 1}}
	}
	for i := range 30 {
		y := 1 - 2*(i%3%2)
		o := l.Round(xs(i), y)
		ev.Binary(o.Margin, y, o.Updated, l.Size())
		straight.StepVector(xs(i), []byte(fmt.Sprint(y)))
	}
	lb, _ := l.MarshalBinary()
	eb, _ := ev.MarshalBinary()
	old := &Snapshot{Version: 1, Topic: "in", Partition: 1, Generation: 1, Seq: 1, Learner: l.Spec(), Kernel: k.String(), NextOffset: 30, Model: lb, Eval: eb}
	if err := p.Store.Save(ctx, old.Name(), old.Encode()); err != nil {
		t.Fatal(err)
	}
	st, err := p.Restore(ctx, part, 30, old.Name())
	if err != nil || st == nil || st.NextOffset != 30 {
		t.Fatalf("format 1: %+v %v", st, err)
	}
	for i := 30; i < 60; i++ {
		a, _ := straight.StepVector(xs(i), []byte("1"))
		b, _ := st.Model.StepVector(xs(i), []byte("1"))
		if a.Margin != b.Margin {
			t.Fatalf("round %d: margin %v after restoring format 1, %v uninterrupted", i, b.Margin, a.Margin)
		}
	}
	enc := old.Encode()
	enc[len(magic)] = 9 // the version byte
	body := enc[:len(enc)-4]
	enc = binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, castagnoli))
	if _, err := Decode(enc); err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Fatalf("format 9: %v", err)
	}
}

// TestSaveRefusesASnapshotThatWouldNotRestore: a model whose encoding its
// decoder refuses is not written, so that nothing can commit it.
func TestSaveRefusesASnapshotThatWouldNotRestore(t *testing.T) {
	ctx := context.Background()
	p, _ := newProtocol(t, "rbp:budget=4")
	part := Partition{Topic: "in", ID: 1}
	defer func(v func([]byte) error) { verifyState = v }(verifyState)
	verifyState = func([]byte) error { return errors.New("bad scaler entry for index 4387") }
	if name, _, err := p.Save(ctx, part, 1, state(t, p, part, 10)); err == nil || !strings.Contains(err.Error(), "would not restore") {
		t.Fatalf("saved %q: %v", name, err)
	}
	if names, _ := p.Store.List(ctx, "in/1/"); len(names) != 0 {
		t.Fatalf("the store holds %v", names)
	}
}

// TestUndecodableModelFallsBack: a snapshot whose bytes are intact but
// whose model its decoder refuses is treated as damaged: the previous
// snapshot serves, and with none, the error says what to do.
func TestUndecodableModelFallsBack(t *testing.T) {
	ctx := context.Background()
	p, _ := newProtocol(t, "rbp:budget=4")
	part := Partition{Topic: "in", ID: 0}
	good, _, err := p.Save(ctx, part, 1, state(t, p, part, 12))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.Store.Load(ctx, good)
	snap, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	snap.Seq++
	snap.NextOffset = 20
	snap.Model = append(snap.Model[:len(snap.Model)/2:len(snap.Model)/2], "not a model"...)
	if err := p.Store.Save(ctx, snap.Name(), snap.Encode()); err != nil {
		t.Fatal(err)
	}
	st, err := p.Restore(ctx, part, 20, snap.Name())
	if err != nil || st == nil || st.NextOffset != 12 {
		t.Fatalf("restored %+v, %v; want the previous snapshot at offset 12", st, err)
	}
	p.Store.Delete(ctx, good)
	if _, err := p.Restore(ctx, part, 20, snap.Name()); err == nil || !strings.Contains(err.Error(), "checkpoint list") || !strings.Contains(err.Error(), "--reset-model") {
		t.Fatalf("no intact snapshot: %v", err)
	}
}

// TestRestoredModelReadsTheConfiguredFormat: a snapshot does not carry how
// records are written (the features of a record are the same in every
// format); a model restored for a service reading Avro must read Avro, as
// the one it replaces did. (It read JSON before: after a crash every
// record of an Avro topic was a dead letter.)
func TestRestoredModelReadsTheConfiguredFormat(t *testing.T) {
	ctx := context.Background()
	k, _ := learners.ParseKernel("rbf:gamma=0.5")
	s, err := codec.CompileSchema(7, codec.SchemaAvro, `{"type":"record","name":"R","fields":[{"name":"a","type":"double"},{"name":"label","type":"int"}]}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &Protocol{Store: DirStore{Dir: t.TempDir()}, Log: zerolog.New(zerolog.NewTestWriter(t)), Model: func(i int) model.Config {
		return model.Config{Learner: "rbp:budget=4", Kernel: k, Seed: 1, Events: true, Format: codec.FormatAvro, Schemas: codec.StaticSchemas{7: s}}
	}}
	part := Partition{Topic: "in", ID: 0}
	m, err := model.New(p.Model(0))
	if err != nil {
		t.Fatal(err)
	}
	rec := func(i int) []byte {
		b, err := s.AppendEncoded(nil, map[string]any{"a": float64(i%3 + 1), "label": 1 - 2*(i%2)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for i := range 5 {
		if _, err := m.Step(rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	name, _, err := p.Save(ctx, part, 1, &State{Model: m, NextOffset: 5})
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Restore(ctx, part, 5, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Model.Step(rec(5)); err != nil {
		t.Fatalf("the restored model cannot read the Avro record: %v", err)
	}
	if f := st.Model.Config().Format; f != codec.FormatAvro {
		t.Fatalf("restored model's format %s", f)
	}
}

// TestSaveHoldsOneEncoding: a save allocates the snapshot once, and the
// decoded copy that checks it, no more: not the model's encoding beside
// the snapshot's copy of it, nor each learner's buffer, nor the garbage of
// growing them by appending (which came to about three times the snapshot
// for a full rbp:budget=2000). What a save allocates is what the memory
// estimate counts for it (pipeline.Config.ModelMemory).
func TestSaveHoldsOneEncoding(t *testing.T) {
	// auto: a search of its own, each candidate's learner encoded in its
	// snapshot (before, each candidate's buffer was copied into one grown
	// by appending: 3.9 times the snapshot for ten classes).
	for _, c := range []struct {
		spec    string
		support int
	}{{"rbp:budget=2000", 2000}, {"auto:width=16,rung=50,budget=400", 0}} {
		t.Run(c.spec, func(t *testing.T) {
			ctx := context.Background()
			p, _ := newProtocol(t, c.spec)
			part := Partition{Topic: "in", ID: 0}
			m, err := model.New(p.Model(part.ID))
			if err != nil {
				t.Fatal(err)
			}
			// 14 of 112 features a record, about as a9a has, and random
			// labels: a mistake every other record fills the budget.
			r := rand.New(rand.NewPCG(1, 2))
			for range 5000 {
				var x sparse.Vector
				for j := range uint32(14) {
					x.Idx = append(x.Idx, 1+j*8+r.Uint32N(8))
					x.Val = append(x.Val, 1)
				}
				if _, err := m.StepVector(x, []byte(fmt.Sprint(1-2*r.IntN(2)))); err != nil {
					t.Fatal(err)
				}
			}
			st := &State{Model: m, NextOffset: 5000}
			if c.support > 0 && m.Support() != c.support {
				t.Fatalf("%d support vectors, want the budget's %d", m.Support(), c.support)
			}
			// The first save sizes the buffer of the next ones.
			if _, _, err := p.Save(ctx, part, 1, st); err != nil {
				t.Fatal(err)
			}
			enc, _ := m.MarshalBinary()
			decoded := allocated(func() {
				if _, err := model.Unmarshal(enc); err != nil {
					t.Fatal(err)
				}
			})
			var size int
			saved := allocated(func() {
				if _, size, err = p.Save(ctx, part, 1, st); err != nil {
					t.Fatal(err)
				}
			})
			// The buffer: the last snapshot's size and an eighth; the rest
			// is the store's and the snapshot's header.
			if limit := uint64(size)*9/8 + decoded + 64<<10; saved > limit {
				t.Fatalf("a save of a %d-byte snapshot allocated %d bytes, more than the snapshot, an eighth and the decoded copy (%d): %d",
					size, saved, decoded, limit)
			}
			t.Logf("snapshot %d bytes; a save allocated %d bytes, of which decoding %d", size, saved, decoded)
		})
	}
}

// allocated is the heap bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A snapshot saved by a build whose learner had fewer parameters (auto
// before cost= and drift=) names its spec as that build wrote it. It
// restores under the configuration it decodes to, the same learner with
// the new parameters at their defaults; a snapshot whose learner truly
// differs is still refused.
func TestSnapshotOfAnOlderSpecRestores(t *testing.T) {
	ctx := context.Background()
	p, _ := newProtocol(t, "auto:rung=50,width=4")
	part := Partition{Topic: "in", ID: 0}
	name, _, err := p.Save(ctx, part, 1, state(t, p, part, 40))
	if err != nil {
		t.Fatal(err)
	}
	path, _ := p.Store.(DirStore).path(name)
	rewrite := func(f func(spec string) string) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		snap, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		snap.Learner = f(snap.Learner)
		if err := os.WriteFile(path, snap.Encode(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(func(spec string) string {
		old := strings.NewReplacer("cost=10,", "", "drift=adwin,", "").Replace(spec)
		if old == spec {
			t.Fatalf("spec %s names neither cost= nor drift=", spec)
		}
		return old
	})
	st, err := p.Restore(ctx, part, 40, name)
	if err != nil || st == nil || st.NextOffset != 40 {
		t.Fatalf("a snapshot without the later parameters: %+v %v", st, err)
	}
	rewrite(func(spec string) string { return strings.Replace(spec, "width=4,", "width=5,", 1) })
	if _, err := p.Restore(ctx, part, 40, name); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "width=5") {
		t.Fatalf("another search space: %v", err)
	}
}
