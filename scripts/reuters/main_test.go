package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
)

func TestWords(t *testing.T) {
	got := words("Bahia COCOA review: 1,750 dlrs; a x-ray &amp; U.S.")
	want := []string{"bahia", "cocoa", "review", "dlrs", "ray", "amp"}
	if !slices.Equal(got, want) {
		t.Fatalf("words = %q, want %q", got, want)
	}
}

func TestStoriesInNewIDOrderWithTopicsAndUnitLength(t *testing.T) {
	sgm := `<!DOCTYPE lewis SYSTEM "lewis.dtd">
<REUTERS TOPICS="YES" NEWID="7">
<TOPICS><D>grain</D><D>wheat</D></TOPICS>
<TEXT><TITLE>WHEAT EXPORTS</TITLE><BODY>Wheat exports rose, wheat prices fell.</BODY></TEXT>
</REUTERS>
<REUTERS TOPICS="NO" NEWID="3">
<TOPICS></TOPICS>
<TEXT><TITLE>NO TOPIC</TITLE><BODY>Skipped story.</BODY></TEXT>
</REUTERS>
<REUTERS TOPICS="YES" NEWID="2">
<TOPICS><D>acq</D></TOPICS>
<TEXT><TITLE>ACQUISITION</TITLE><BODY>Shares &lt;ABC&gt; bought; prices rose.</BODY></TEXT>
</REUTERS>
`
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "reut2-000.sgm", Mode: 0o600, Size: int64(len(sgm))})
	tw.Write([]byte(sgm))
	tw.Close()
	zw.Close()
	path := filepath.Join(t.TempDir(), "r.tar.gz")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, log bytes.Buffer
	if err := run(path, &out, &log); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d records, want the 2 stories with topics:\n%s", len(lines), out.String())
	}
	var labels []string
	for _, l := range lines {
		ex, err := codec.DecodeJSON([]byte(l), codec.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		labels = append(labels, ex.Label)
		var n float64
		for _, v := range ex.X.Val {
			n += v * v
		}
		if math.Abs(n-1) > 1e-12 {
			t.Errorf("%s: squared length %v, want 1", ex.Label, n)
		}
	}
	// NEWID order (2 before 7), a story's topics in one label.
	if !slices.Equal(labels, []string{"acq", "grain,wheat"}) {
		t.Fatalf("labels %q", labels)
	}
	if !strings.Contains(log.String(), "2 stories with topics") {
		t.Errorf("summary: %s", log.String())
	}
}
