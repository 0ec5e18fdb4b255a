package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Store keeps encoded snapshots by name.
type Store interface {
	// Save stores data under name, durably, before it returns.
	Save(ctx context.Context, name string, data []byte) error
	// Load returns the bytes saved under name, or an error wrapping
	// ErrNotFound.
	Load(ctx context.Context, name string) ([]byte, error)
	// List returns the names stored for prefix ("topic/partition/" or
	// ""), sorted (oldest first within a partition).
	List(ctx context.Context, prefix string) ([]string, error)
	// Delete removes name; deleting a missing name is not an error.
	Delete(ctx context.Context, name string) error
}

// ErrNotFound is wrapped by Load when a name is not stored.
var ErrNotFound = errors.New("snapshot not found")

// tempPrefix starts the name of a snapshot being written.
const tempPrefix = ".tmp-"

// DirStore keeps each snapshot as a file: dir/<topic>/<partition>/<generation>-<seq>.snap.
// A save writes a temporary file, syncs it, renames it into place and
// syncs the directory, so a crash leaves either the whole snapshot or
// none.
type DirStore struct{ Dir string }

func (s DirStore) path(name string) (string, error) {
	topic, p, g, seq, err := ParseName(name)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(topic, `/\`) || topic == "." || topic == ".." {
		return "", fmt.Errorf("snapshot topic %q", topic)
	}
	return filepath.Join(s.Dir, topic, fmt.Sprint(p), fmt.Sprintf("%010d-%020d.snap", g, seq)), nil
}

func (s DirStore) Save(_ context.Context, name string, data []byte) error {
	path, err := s.path(name)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	f, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("save snapshot %s: %w", name, werr)
	}
	if d, err := os.Open(dir); err == nil {
		werr = d.Sync()
		d.Close()
	}
	if werr != nil {
		return fmt.Errorf("save snapshot %s: sync directory: %w", name, werr)
	}
	return nil
}

func (s DirStore) Load(_ context.Context, name string) ([]byte, error) {
	path, err := s.path(name)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	if err != nil {
		return nil, fmt.Errorf("load snapshot: %w", err)
	}
	return b, nil
}

// List walks only the directory the prefix names whole ("topic/7/":
// dir/topic/7): a restore lists its own partition's snapshots, and a walk
// of every partition's made a generation's restores read partitions²
// directory entries, 6–8 s of the 10–13 s a member took to serve 1,024
// partitions again after a rebalance.
func (s DirStore) List(_ context.Context, prefix string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(s.listRoot(prefix), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return filepath.SkipAll
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".snap") {
			return nil
		}
		rel, _ := filepath.Rel(s.Dir, path)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 3 {
			return nil
		}
		gs := strings.TrimSuffix(parts[2], ".snap")
		g, seq, ok := strings.Cut(gs, "-")
		if !ok {
			return nil
		}
		name := parts[0] + "/" + parts[1] + "/" + g + "/" + seq
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	sortNames(names)
	return names, nil
}

// listRoot is the directory under which every snapshot named with prefix
// lies: the deepest one the prefix spells out to its last "/", if it
// stays inside s.Dir.
func (s DirStore) listRoot(prefix string) string {
	i := strings.LastIndex(prefix, "/")
	if i <= 0 {
		return s.Dir
	}
	root := filepath.Join(s.Dir, filepath.FromSlash(prefix[:i]))
	if rel, err := filepath.Rel(s.Dir, root); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return s.Dir
	}
	return root
}

func (s DirStore) Delete(_ context.Context, name string) error {
	path, err := s.path(name)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete snapshot: %w", err)
	}
	return nil
}

// TempMaxAge is how long a snapshot's temporary file may go unwritten
// before Clean takes it for the leftover of a killed save. A save in
// progress rewrites its file as it goes, and its last write is followed
// only by an fsync and a rename, so a live file is never this stale;
// while another member sharing the directory (a shared disk) may be in
// the middle of a save at any moment, so "every temporary file" would be
// wrong.
const TempMaxAge = time.Minute

// Clean removes temporary files that saves killed midway left in the
// partition directories, those unwritten for TempMaxAge or longer, and
// returns their paths. A service calls it at start: a process killed
// while saving leaves one such file per kill, each as large as a
// snapshot, and nothing else ever removes them. Other files under Dir are
// left alone.
func (s DirStore) Clean(ctx context.Context) ([]string, error) {
	var removed []string
	topics, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clean snapshot directory: %w", err)
	}
	now := time.Now()
	for _, topic := range topics {
		if !topic.IsDir() {
			continue
		}
		parts, err := os.ReadDir(filepath.Join(s.Dir, topic.Name()))
		if err != nil {
			return removed, fmt.Errorf("clean snapshot directory: %w", err)
		}
		for _, part := range parts {
			if _, err := strconv.ParseUint(part.Name(), 10, 31); err != nil || !part.IsDir() {
				continue
			}
			dir := filepath.Join(s.Dir, topic.Name(), part.Name())
			files, err := os.ReadDir(dir)
			if err != nil {
				return removed, fmt.Errorf("clean snapshot directory: %w", err)
			}
			for _, f := range files {
				if err := ctx.Err(); err != nil {
					return removed, err
				}
				if !strings.HasPrefix(f.Name(), tempPrefix) || !f.Type().IsRegular() {
					continue
				}
				info, err := f.Info()
				if errors.Is(err, os.ErrNotExist) {
					continue // renamed into place or removed meanwhile
				}
				if err != nil {
					return removed, fmt.Errorf("clean snapshot directory: %w", err)
				}
				if now.Sub(info.ModTime()) < TempMaxAge {
					continue
				}
				path := filepath.Join(dir, f.Name())
				if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
					return removed, fmt.Errorf("clean snapshot directory: %w", err)
				}
				removed = append(removed, path)
			}
		}
	}
	return removed, nil
}

// sortNames orders names by topic, partition, generation, then seq: a
// later generation's snapshots are newer than any of an earlier one.
func sortNames(names []string) {
	sort.Slice(names, func(i, j int) bool { return nameLess(names[i], names[j]) })
}

func nameLess(a, b string) bool {
	ta, pa, ga, sa, _ := ParseName(a)
	tb, pb, gb, sb, _ := ParseName(b)
	switch {
	case ta != tb:
		return ta < tb
	case pa != pb:
		return pa < pb
	case ga != gb:
		return ga < gb
	}
	return sa < sb
}
