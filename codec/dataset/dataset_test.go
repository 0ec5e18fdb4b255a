package dataset

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
)

const sample = `# a comment
+1 1:0.5 3:2
-1 2:1

0 1:1 2:2 3:3
{"label": true, "features": [1, 0, -1]}
{"features": {"2": 4}}
`

func TestReadMixedFormats(t *testing.T) {
	s, err := Read(context.Background(), strings.NewReader(sample), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Y, []int{1, -1, -1, 1, 0}; !slices.Equal(got, want) {
		t.Fatalf("labels %v, want %v", got, want)
	}
	if s.Dim != 3 || s.Len() != 5 {
		t.Fatalf("dim %d len %d", s.Dim, s.Len())
	}
	if x := s.X[3]; len(x.Idx) != 2 || x.Idx[1] != 3 || x.Val[1] != -1 {
		t.Fatalf("dense JSON record decoded as %+v", x)
	}
}

func TestReadGzipAndLimit(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(sample))
	zw.Close()
	path := filepath.Join(t.TempDir(), "data.libsvm") // the name does not say gzip
	os.WriteFile(path, buf.Bytes(), 0o600)
	s, err := Load(context.Background(), path, Options{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 2 || s.Path != path {
		t.Fatalf("len %d path %q", s.Len(), s.Path)
	}
}

func TestLabelMapping(t *testing.T) {
	data := "3 1:1\n8 1:2\n5 1:3\n3 1:4\n"
	pos, _ := codec.ParseLabelList("3")
	neg, _ := codec.ParseLabelList("8")
	s, err := Read(context.Background(), strings.NewReader(data), Options{Labels: codec.LabelMap{Positive: pos, Negative: neg}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Y, []int{1, -1, 1}) || s.Dropped != 1 {
		t.Fatalf("labels %v dropped %d", s.Y, s.Dropped)
	}
	s, err = Read(context.Background(), strings.NewReader(data), Options{Labels: codec.LabelMap{Positive: pos}})
	if err != nil || !slices.Equal(s.Y, []int{1, -1, -1, 1}) {
		t.Fatalf("one-vs-rest: %v %v", s.Y, err)
	}
	// Without a map, multi-class labels are an error naming the line.
	_, err = Read(context.Background(), strings.NewReader(data), Options{})
	var ce *codec.Error
	if !errors.As(err, &ce) || ce.Reason != codec.ReasonBadLabel || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("multi-class without a map: %v", err)
	}
}

func TestMalformedLineNamesItsLine(t *testing.T) {
	_, err := Read(context.Background(), strings.NewReader("+1 1:1\n+1 2:nan\n"), Options{})
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("got %v", err)
	}
}

func TestStandardize(t *testing.T) {
	s, err := Read(context.Background(), strings.NewReader("+1 1:1 2:5\n-1 1:3 2:5\n+1 1:5 2:5\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := ComputeStats(s)
	if st.Mean[0] != 3 || math.Abs(st.Std[0]-math.Sqrt(8.0/3)) > 1e-15 || st.Std[1] != 0 {
		t.Fatalf("stats %+v", st)
	}
	test, _ := Read(context.Background(), strings.NewReader("+1 1:3 4:9\n"), Options{})
	st.Standardize(s)
	st.Standardize(test)
	sd := math.Sqrt(8.0 / 3)
	if x := s.X[0]; len(x.Idx) != 1 || x.Idx[0] != 1 || math.Abs(x.Val[0]+2/sd) > 1e-15 {
		t.Fatalf("standardized %+v", x)
	}
	if x := test.X[0]; x.Len() != 0 {
		// feature 1 sits at the mean; feature 4 is unknown to the stats.
		t.Fatalf("test point %+v, want the zero vector", x)
	}
	// Mean zero, unit spread after standardizing.
	again := ComputeStats(s)
	if math.Abs(again.Mean[0]) > 1e-15 || math.Abs(again.Std[0]-1) > 1e-15 {
		t.Fatalf("after: %+v", again)
	}
}

func TestStatsCountAbsentEntriesAsZero(t *testing.T) {
	s, _ := Read(context.Background(), strings.NewReader("+1 1:2\n-1 2:1\n"), Options{})
	st := ComputeStats(s)
	if st.Mean[0] != 1 || st.Std[0] != 1 {
		t.Fatalf("stats %+v, want mean 1 std 1 for values {2, 0}", st)
	}
}

func TestLoadRawKeepsClassLabels(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte("3 1:0.5\n# comment\n10 2:1 7:2\n3.0 1:1\n{\"label\": \"A\", \"features\": {\"4\": 1}}\n{\"features\": {\"2\": 4}}\n2 1:9\n"))
	zw.Close()
	path := filepath.Join(t.TempDir(), "multi.gz")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadRaw(context.Background(), path, Options{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	// Labels are canonical tokens, "" for the unlabeled record; the limit
	// counts records whatever their label.
	if want := []string{"3", "10", "3", "A", ""}; !slices.Equal(s.Labels, want) {
		t.Fatalf("labels %q, want %q", s.Labels, want)
	}
	if s.Len() != 5 || s.Dim != 7 || s.Path != path || s.X[1].Idx[1] != 7 || s.X[1].Val[1] != 2 {
		t.Fatalf("%+v", s)
	}
	// The same file through Load with the default map fails: not binary.
	if _, err := Load(context.Background(), path, Options{}); err == nil {
		t.Fatal("multi-class labels accepted as binary")
	}
	if _, err := LoadRaw(context.Background(), filepath.Join(t.TempDir(), "none"), Options{}); err == nil {
		t.Fatal("missing file accepted")
	}
}

// manyLines is n LIBSVM records, record i with label ±1 and features i%7+1
// and 8 valued i, with a blank line and a comment every 100 lines.
func manyLines(n int) string {
	var sb strings.Builder
	for i := range n {
		if i%100 == 50 {
			sb.WriteString("\n# note\n")
		}
		fmt.Fprintf(&sb, "%d %d:%d 8:%d.5\n", 1-2*(i%2), i%7+1, i+1, i)
	}
	return sb.String()
}

// TestReadManyBatchesInOrder: records spread over many batches, decoded in
// parallel, come back in file order, each as codec.Decode decodes its line.
func TestReadManyBatchesInOrder(t *testing.T) {
	const n = 5000
	data := manyLines(n)
	s, err := Read(context.Background(), strings.NewReader(data), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != n {
		t.Fatalf("%d records, want %d", s.Len(), n)
	}
	k := 0
	for _, line := range strings.Split(data, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		ex, err := codec.Decode([]byte(line), codec.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ex.X.Idx, s.X[k].Idx) || !slices.Equal(ex.X.Val, s.X[k].Val) || s.Y[k] != 1-2*(k%2) {
			t.Fatalf("record %d: %+v, want %+v", k, s.X[k], ex.X)
		}
		k++
	}
}

// TestReadReportsTheFirstErrorInFileOrder: with two malformed lines in
// different batches, the error names the first, and a limit reached
// before it ends the read without error.
func TestReadReportsTheFirstErrorInFileOrder(t *testing.T) {
	lines := strings.Split(manyLines(3000), "\n")
	// Line numbers are 1-based and count blank and comment lines.
	lines[1999] = "+1 3:x"
	lines[2899] = "+1 4:y"
	data := strings.Join(lines, "\n")
	_, err := Read(context.Background(), strings.NewReader(data), Options{})
	if err == nil || !strings.Contains(err.Error(), "line 2000:") {
		t.Fatalf("got %v, want the error of line 2000", err)
	}
	s, err := Read(context.Background(), strings.NewReader(data), Options{Limit: 1000})
	if err != nil || s.Len() != 1000 {
		t.Fatalf("limit before the bad line: %d records, %v", s.Len(), err)
	}
}

func TestReadStopsOnACancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Read(ctx, strings.NewReader(manyLines(10000)), Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

func TestReadReportsALineTooLong(t *testing.T) {
	data := "+1 1:1\n+1 " + strings.Repeat("1:1 ", maxLine/4+1) + "\n"
	if _, err := Read(context.Background(), strings.NewReader(data), Options{}); err == nil || !strings.Contains(err.Error(), "read:") {
		t.Fatalf("got %v", err)
	}
}
