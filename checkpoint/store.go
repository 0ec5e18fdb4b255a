package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
	f, err := os.CreateTemp(dir, ".tmp-*")
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

func (s DirStore) List(_ context.Context, prefix string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(s.Dir, func(path string, d os.DirEntry, err error) error {
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
