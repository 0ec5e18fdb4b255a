package dataset

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamlearner/streamlearner/codec"
)

func TestCSVEvents(t *testing.T) {
	in := "\ufeffid,age, workclass ,price,note,day\n" +
		"a-1,39,State-gov,0.056443,\"hello, world\",2\n" +
		"a-2,,Private,-1e3,NaN,01\n"
	var got []string
	for row, err := range CSVEvents(strings.NewReader(in)) {
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(row) {
			t.Fatalf("invalid JSON %s", row)
		}
		got = append(got, string(row))
	}
	want := []string{
		`{"id":"a-1","age":39,"workclass":"State-gov","price":0.056443,"note":"hello, world","day":2}`,
		`{"id":"a-2","age":null,"workclass":"Private","price":-1e3,"note":"NaN","day":"01"}`,
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("rows\n%q\nwant\n%q", got, want)
	}
	// The rows are events the model reads.
	d, _ := codec.NewEventDecoder(codec.EventConfig{KeyField: "id", Schema: map[string]codec.FieldKind{"day": codec.FieldCategorical}})
	var ev codec.Event
	if err := d.Decode([]byte(got[1]), &ev); err != nil || string(ev.Key()) != "a-2" || len(ev.Fields) != 4 {
		t.Fatalf("decode %s: %v, %d fields", got[1], err, len(ev.Fields))
	}
	for _, bad := range []string{"", "a,a\n1,2\n", "a,\n1,2\n", "a,b\n1,2,3\n", "a,b\n\"1,2\n"} {
		var err error
		for _, e := range CSVEvents(strings.NewReader(bad)) {
			if e != nil {
				err = e
			}
		}
		if err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestCSVFilesAreEvents: a CSV file read where files are read gives each
// row as an event with the file line it starts on (the header is not a
// record), True/False as booleans, gzip or not.
func TestCSVFilesAreEvents(t *testing.T) {
	dir := t.TempDir()
	in := "id,amount,online,note,label\nt1,12.5,True,\"two\nlines\",ok\nt2,900,FALSE,,fraud\n"
	path := filepath.Join(dir, "fraud.csv")
	os.WriteFile(path, []byte(in), 0o644)
	var got []string
	var lines []int
	err := LinesOf(context.Background(), path, func(line int, b []byte) (bool, error) {
		got, lines = append(got, string(b)), append(lines, line)
		return true, nil
	})
	want := []string{`{"id":"t1","amount":12.5,"online":true,"note":"two\nlines","label":"ok"}`, `{"id":"t2","amount":900,"online":false,"note":null,"label":"fraud"}`}
	if err != nil || !slices.Equal(got, want) || !slices.Equal(lines, []int{2, 4}) {
		t.Fatalf("%v: %q at lines %v", err, got, lines)
	}
}

// A CSV file without a header row (numpy's savetxt), or with pandas'
// unnamed index column, failed with a message that did not say that the
// first row must name the fields. Pandas' own names for unnamed columns
// (0, 1, 2, …) are a header.
func TestCSVWithoutAHeaderSaysSo(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"5.1,3.5,1.4,0.2,0\n4.9,3.0,1.4,0.2,0\n", "line 1 (5.1,3.5,1.4,0.2) is numbers, not a header row"},
		{"1.0,1.0,0\n2.0,2.0,1\n", "is numbers, not a header row"},
		{",x1,label\n0,1.5,a\n", "column 1 has no name"},
		{"x,label,x\n1,a,2\n", `column 3 is named "x" as column 1 is`},
	} {
		var err error
		for _, e := range CSVEvents(strings.NewReader(tc.in)) {
			if e != nil {
				err = e
			}
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "first row must name its fields") || !strings.Contains(err.Error(), "index=False") {
			t.Errorf("%q: %v, want %q and what the first row must be", tc.in, err, tc.want)
		}
	}
	var rows []string
	for row, err := range CSVEvents(strings.NewReader("0,1,2\n5.1,3.5,1\n")) {
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, string(row))
	}
	if len(rows) != 1 || rows[0] != `{"0":5.1,"1":3.5,"2":1}` {
		t.Errorf("pandas' column numbers as a header: %q", rows)
	}
}
