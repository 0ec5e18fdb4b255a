package codec

import (
	"bytes"
	"testing"
)

// TestLineBreakIsIndexAny: lineBreak finds what bytes.IndexAny(b, "\r\n")
// finds, whichever of the two comes first.
func TestLineBreakIsIndexAny(t *testing.T) {
	for _, s := range []string{"", "1 1:1", "\n", "\r", "1 1:1\n", "1 1:1\r\n", "1\n1:1\r", "1\r1:1\n", "\r\r\n\n", "a\rb", "ab\n\r"} {
		if got, want := lineBreak([]byte(s)), bytes.IndexAny([]byte(s), "\r\n"); got != want {
			t.Errorf("lineBreak(%q) = %d, want %d", s, got, want)
		}
	}
}
