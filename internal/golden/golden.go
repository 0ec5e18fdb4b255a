// Package golden holds a test's output against a file under testdata,
// byte for byte: the pin tests that keep what a function prints or
// decodes unchanged while the code behind it is rewritten. `go test
// -update` rewrites the files after a change meant to alter the output;
// the diff of the files is then the change to review.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Updating reports whether the run was asked to rewrite the golden files.
func Updating() bool { return *update }

// Check compares got with the file testdata/name (a path of its own when
// name has a directory), rewriting it first under -update. A difference
// is reported with the first line that differs.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := name
	if filepath.Dir(name) == "." {
		path = filepath.Join("testdata", name)
	}
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s changed (%d bytes, want %d), first at line %d:\n got: %q\nwant: %q\n(go test -run %s -update rewrites it)",
			path, len(got), len(want), firstDiff(got, want)+1, line(got, firstDiff(got, want)), line(want, firstDiff(got, want)), t.Name())
	}
}

// firstDiff is the index of the first line where a and b differ.
func firstDiff(a, b []byte) int {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return i
		}
	}
	return min(len(la), len(lb))
}

// line is line i of b, or "" past its end.
func line(b []byte, i int) string {
	ls := bytes.Split(b, []byte("\n"))
	if i < len(ls) {
		return string(ls[i])
	}
	return ""
}
