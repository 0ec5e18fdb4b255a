package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDirStoreCleanRemovesOnlyStaleTempFiles: the leftovers of saves
// killed midway go; a save that may still be running on another member,
// the snapshots, and files that are not the store's stay.
func TestDirStoreCleanRemovesOnlyStaleTempFiles(t *testing.T) {
	ctx := context.Background()
	st := DirStore{Dir: t.TempDir()}
	snap := testSnapshot(t)
	if err := st.Save(ctx, snap.Name(), snap.Encode()); err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(st.Dir, "in", "3")
	old := time.Now().Add(-TempMaxAge - time.Second)
	write := func(path string, mtime time.Time) string {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("partial snapshot"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return path
	}
	stale := []string{
		write(filepath.Join(part, ".tmp-111"), old),
		write(filepath.Join(st.Dir, "other", "0", ".tmp-222"), old.Add(-time.Hour)),
	}
	kept := []string{
		write(filepath.Join(part, ".tmp-333"), time.Now()), // a save in progress
		write(filepath.Join(part, ".tmp-444"), time.Now().Add(-TempMaxAge+5*time.Second)),
		write(filepath.Join(part, "notes.txt"), old),             // not the store's
		write(filepath.Join(st.Dir, ".tmp-555"), old),            // not in a partition directory
		write(filepath.Join(st.Dir, "in", "x", ".tmp-666"), old), // nor here
	}
	removed, err := st.Clean(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	slices.Sort(stale)
	if !slices.Equal(removed, stale) {
		t.Fatalf("removed %v, want %v", removed, stale)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s: still there (%v)", p, err)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	names, err := st.List(ctx, "")
	if err != nil || len(names) != 1 || names[0] != snap.Name() {
		t.Fatalf("after Clean: %v, %v", names, err)
	}
	if _, err := st.Load(ctx, snap.Name()); err != nil {
		t.Fatal(err)
	}

	// Nothing left to do the second time; a store never written is clean.
	if removed, err := st.Clean(ctx); err != nil || len(removed) != 0 {
		t.Fatalf("second Clean: %v, %v", removed, err)
	}
	if removed, err := (DirStore{Dir: filepath.Join(st.Dir, "missing")}).Clean(ctx); err != nil || len(removed) != 0 {
		t.Fatalf("Clean of a missing directory: %v, %v", removed, err)
	}
}

// TestDirStoreListsThePrefixOnly: a partition's prefix lists its own
// snapshots and no other partition's (in/1/ is not in/10/), a topic's
// all of its partitions', "" everything, and a prefix that climbs out
// of the directory nothing outside it.
func TestDirStoreListsThePrefixOnly(t *testing.T) {
	ctx := context.Background()
	st := DirStore{Dir: t.TempDir()}
	var all []string
	for _, topic := range []string{"in", "in.x"} {
		for _, p := range []int{1, 10, 11} {
			for seq := int64(1); seq <= 2; seq++ {
				name := fmt.Sprintf("%s/%d/%010d/%020d", topic, p, 3, seq)
				if err := st.Save(ctx, name, []byte(name)); err != nil {
					t.Fatal(err)
				}
				all = append(all, name)
			}
		}
	}
	sortNames(all)
	for _, c := range []struct {
		prefix string
		want   func(string) bool
	}{
		{"in/1/", func(n string) bool { return strings.HasPrefix(n, "in/1/") }},
		{"in/", func(n string) bool { return strings.HasPrefix(n, "in/") }},
		{"in", func(n string) bool { return true }},
		{"", func(n string) bool { return true }},
		{"in/2/", func(n string) bool { return false }},
		{"../in/1/", func(n string) bool { return false }},
	} {
		got, err := st.List(ctx, c.prefix)
		if err != nil {
			t.Fatalf("%q: %v", c.prefix, err)
		}
		want := []string{}
		for _, n := range all {
			if c.want(n) {
				want = append(want, n)
			}
		}
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("List(%q) = %v, want %v", c.prefix, got, want)
		}
	}
}

// BenchmarkDirStoreList: one partition's snapshots among 1,024
// partitions' (a restore's List): it reads that partition's directory,
// not all of them.
func BenchmarkDirStoreList(b *testing.B) {
	ctx := context.Background()
	st := DirStore{Dir: b.TempDir()}
	for p := range 1024 {
		for seq := int64(1); seq <= 2; seq++ {
			if err := st.Save(ctx, fmt.Sprintf("in/%d/%010d/%020d", p, 1, seq), []byte("x")); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for i := range b.N {
		names, err := st.List(ctx, fmt.Sprintf("in/%d/", i%1024))
		if err != nil || len(names) != 2 {
			b.Fatalf("%v, %v", names, err)
		}
	}
}
