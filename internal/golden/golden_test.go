package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that keeps what Check reports instead of
// failing the test that runs it.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Errorf(format string, args ...any) { r.failed = true; r.msg = format }
func (r *recorder) Helper()                           {}

// Check passes on equal bytes and fails on a difference, naming the file.
func TestCheckComparesBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.golden")
	if err := os.WriteFile(path, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	same := &recorder{TB: t}
	Check(same, path, []byte("a\nb\n"))
	other := &recorder{TB: t}
	Check(other, path, []byte("a\nc\n"))
	if same.failed || !other.failed {
		t.Fatalf("equal bytes failed: %v; different bytes failed: %v", same.failed, other.failed)
	}
	if i := firstDiff([]byte("a\nc\n"), []byte("a\nb\n")); i != 1 {
		t.Errorf("first difference at line index %d, want 1", i)
	}
}
