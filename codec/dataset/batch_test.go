package dataset

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/streamlearner/streamlearner/codec"
	"github.com/streamlearner/streamlearner/learners/sparse"
)

// record is one record as a reading gave it, its vector copied.
type record struct {
	line  int
	x     sparse.Vector
	y     int
	label string
}

// batchFile writes manyLines(n) with the oddities a reading must get
// through — JSON records, malformed lines, labels outside a map — and
// returns its path.
func batchFile(t *testing.T, n int) string {
	t.Helper()
	lines := strings.Split(manyLines(n), "\n")
	for k := 7; k < len(lines); k += 613 {
		switch k % 3 {
		case 0:
			lines[k] = "+1 3:x"
		case 1:
			lines[k] = `{"label": "7", "features": {"2": 4, "9": 0.25}}`
		default:
			lines[k] = "3 1:1 5:-2"
		}
	}
	path := filepath.Join(t.TempDir(), "many.libsvm")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestEachBatchIsEachUntil: a reading a batch at a time gives the records
// EachUntil gives, in order, with the same lines, labels, skips and drops,
// under a label map, a skip budget and a limit; its batches are runs of
// at most batchLines.
func TestEachBatchIsEachUntil(t *testing.T) {
	path := batchFile(t, 9000)
	pos, _ := codec.ParseLabelList("1,7")
	neg, _ := codec.ParseLabelList("-1")
	for _, opts := range []Options{
		{Labels: codec.LabelMap{Positive: pos, Negative: neg}, MaxBad: 100},
		{Labels: codec.LabelMap{Positive: pos}, MaxBad: 100, Limit: 4321},
		{Labels: codec.LabelMap{Positive: pos}, MaxBad: 3},
	} {
		var want, got []record
		var wantBad, gotBad []int
		opts.Bad = func(line int, err error) { wantBad = append(wantBad, line) }
		wantDropped, wantErr := EachUntil(context.Background(), path, opts, func(line int, x sparse.Vector, y int) error {
			want = append(want, record{line: line, x: x.Clone(), y: y})
			return nil
		})
		opts.Bad = func(line int, err error) { gotBad = append(gotBad, line) }
		batches := 0
		gotDropped, gotErr := EachBatch(context.Background(), path, opts, func(b *Batch) error {
			if b.Len() == 0 || b.Len() > batchLines || len(b.Y) != b.Len() || len(b.Lines) != b.Len() || len(b.Labels) != 0 {
				t.Fatalf("batch of %d records, %d labels, %d lines, %d tokens", b.Len(), len(b.Y), len(b.Lines), len(b.Labels))
			}
			batches++
			for k := range b.Len() {
				got = append(got, record{line: b.Lines[k], x: b.X[k].Clone(), y: b.Y[k]})
			}
			return nil
		})
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("%+v: EachBatch failed with %v, EachUntil with %v", opts, gotErr, wantErr)
		}
		if gotDropped != wantDropped || !slices.Equal(gotBad, wantBad) || !sameRecords(got, want) {
			t.Fatalf("%+v: EachBatch gave %d records (%d dropped, skipped %v), EachUntil %d (%d dropped, skipped %v)",
				opts, len(got), gotDropped, gotBad, len(want), wantDropped, wantBad)
		}
		if len(want) > 0 && batches < 2 {
			t.Fatalf("%+v: %d records in %d batches", opts, len(got), batches)
		}
	}
}

// TestEachRawBatchIsEachRaw: the same for the raw reading, labels as
// their tokens.
func TestEachRawBatchIsEachRaw(t *testing.T) {
	path := batchFile(t, 3000)
	opts := Options{MaxBad: 100, Limit: 2500}
	var want, got []record
	if err := EachRaw(context.Background(), path, opts, func(line int, x sparse.Vector, label string) error {
		want = append(want, record{line: line, x: x.Clone(), label: label})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := EachRawBatch(context.Background(), path, opts, func(b *Batch) error {
		for k := range b.Len() {
			got = append(got, record{line: b.Lines[k], x: b.X[k].Clone(), label: b.Labels[k]})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !sameRecords(got, want) || len(got) != 2500 {
		t.Fatalf("EachRawBatch gave %d records, EachRaw %d", len(got), len(want))
	}
}

func sameRecords(a, b []record) bool {
	return slices.EqualFunc(a, b, func(a, b record) bool {
		return a.line == b.line && a.y == b.y && a.label == b.label && slices.Equal(a.x.Idx, b.x.Idx) && slices.Equal(a.x.Val, b.x.Val)
	})
}

// TestEachBatchReusesItsStorage: the batches' vectors are cut from storage
// the reading reuses, so that a long file takes a few allocations per
// batch, not one per record; the vectors of a batch a callee kept are
// overwritten by the later ones (which is why Batch says to copy them).
func TestEachBatchReusesItsStorage(t *testing.T) {
	const n = 40000
	path := filepath.Join(t.TempDir(), "long.libsvm")
	if err := os.WriteFile(path, []byte(manyLines(n)), 0o600); err != nil {
		t.Fatal(err)
	}
	read := func() (records int, storage map[*uint32]bool, mallocs uint64) {
		storage = map[*uint32]bool{}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := EachBatch(context.Background(), path, Options{}, func(b *Batch) error {
			records += b.Len()
			storage[unsafe.SliceData(b.X[0].Idx)] = true
			return nil
		})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		return records, storage, after.Mallocs - before.Mallocs
	}
	read() // the first reading's goroutines and buffers
	records, storage, mallocs := read()
	if records != n {
		t.Fatalf("%d records, want %d", records, n)
	}
	batches := (n + batchLines - 1) / batchLines
	t.Logf("%d batches, %d places, %d allocations", batches, len(storage), mallocs)
	if len(storage) >= batches {
		t.Errorf("the %d batches' first vectors sit in %d places: no storage was reused", batches, len(storage))
	}
	if mallocs > n/20 {
		t.Errorf("%d allocations reading %d records: more than one per 20 records", mallocs, n)
	}
}

// TestEachBatchStopsWithTheCalleesError: an error of fn ends the reading
// and comes back as it is, not wrapped.
func TestEachBatchStopsWithTheCalleesError(t *testing.T) {
	path := batchFile(t, 3000)
	stop := errors.New("enough")
	calls := 0
	_, err := EachBatch(context.Background(), path, Options{MaxBad: 100, Labels: codec.LabelMap{Positive: []string{"1"}}}, func(b *Batch) error {
		if calls++; calls == 2 {
			return stop
		}
		return nil
	})
	if err != stop || calls != 2 {
		t.Fatalf("got %v after %d calls, want %v after 2", err, calls, stop)
	}
	err = EachRawBatch(context.Background(), path, Options{MaxBad: 100}, func(b *Batch) error { return fmt.Errorf("wrapped: %w", stop) })
	if !errors.Is(err, stop) || strings.Contains(err.Error(), "load") {
		t.Fatalf("got %v", err)
	}
}
