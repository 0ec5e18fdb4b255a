package dataset

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"strconv"
	"strings"
)

// IsCSV says whether a data file is CSV, by its name (.csv, .csv.gz).
func IsCSV(path string) bool {
	return strings.HasSuffix(strings.ToLower(strings.TrimSuffix(path, ".gz")), ".csv")
}

// CSVEvents reads CSV with a header row (RFC 4180, as encoding/csv reads
// it) and yields each row as a JSON event: an object whose keys are the
// header's names, in header order. A cell that is a JSON number literal
// (and finite) becomes a number, written as it is; an empty cell is null
// (a missing value); true and false, in any case (True, FALSE), are JSON
// booleans (0/1 features, as in JSON events); any other cell is a string
// (so "2" is the number 2: declare such fields categorical in the
// consumer's schema). A row whose
// cell count differs from the header's, a repeated or empty header name,
// or a malformed line is an error naming the line.
func CSVEvents(r io.Reader) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for _, row := range csvRows(r) {
			if !yield(row.event, row.err) {
				return
			}
		}
	}
}

// csvRow is one row as a JSON event, with the file line it starts on.
type csvRow struct {
	line  int
	event []byte
	err   error
}

// csvRows is CSVEvents with each row's line.
func csvRows(r io.Reader) iter.Seq2[int, csvRow] {
	return func(yield func(int, csvRow) bool) {
		ret := func(line int, ev []byte, err error) bool { return yield(line, csvRow{line, ev, err}) }
		cr := csv.NewReader(r)
		cr.ReuseRecord = true
		header, err := cr.Read()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("no header row")
			}
			ret(1, nil, fmt.Errorf("csv header: %w", err))
			return
		}
		keys, err := headerKeys(header)
		if err != nil {
			ret(1, nil, err)
			return
		}
		for {
			rec, err := cr.Read()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				ret(0, nil, fmt.Errorf("csv: %w", err))
				return
			}
			line, _ := cr.FieldPos(0)
			out := []byte{'{'}
			for i, cell := range rec {
				if i > 0 {
					out = append(out, ',')
				}
				out = append(append(out, keys[i]...), ':')
				out = appendCell(out, strings.TrimSpace(cell))
			}
			if !ret(line, append(out, '}'), nil) {
				return
			}
		}
	}
}

// headerHelp says what a CSV file's first row must be, for the errors of
// a file without one (numpy's savetxt writes none; pandas' to_csv writes
// its index as a column without a name).
const headerHelp = "a CSV file's first row must name its fields, the label's among them (e.g. x1,x2,label); " +
	"pandas: df.to_csv(path, index=False); numpy: np.savetxt(path, data, delimiter=\",\", header=\"x1,x2,label\", comments=\"\")"

// headerKeys checks the header row and returns its names as JSON keys.
// A row of numbers that are not the column numbers pandas gives unnamed
// columns (0, 1, 2, …) is a data row: the file has no header.
func headerKeys(header []string) ([][]byte, error) {
	numbers, columns := 0, 0
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, err := strconv.ParseFloat(h, 64); err == nil {
			numbers++
			if h == strconv.Itoa(i) {
				columns++
			}
		}
	}
	if numbers == len(header) && columns < len(header) {
		return nil, fmt.Errorf("csv: line 1 (%s) is numbers, not a header row of field names; %s", strings.Join(header[:min(len(header), 4)], ","), headerHelp)
	}
	seen := map[string]int{}
	keys := make([][]byte, len(header))
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if h == "" {
			return nil, fmt.Errorf("csv header: column %d has no name; %s", i+1, headerHelp)
		}
		if j, ok := seen[h]; ok {
			return nil, fmt.Errorf("csv header: column %d is named %q as column %d is; %s", i+1, h, j+1, headerHelp)
		}
		seen[h] = i
		keys[i] = appendString(nil, h)
	}
	return keys, nil
}

// appendCell writes one CSV cell as a JSON value.
func appendCell(b []byte, cell string) []byte {
	switch {
	case cell == "":
		return append(b, "null"...)
	case strings.EqualFold(cell, "true"):
		return append(b, "true"...)
	case strings.EqualFold(cell, "false"):
		return append(b, "false"...)
	}
	if (cell[0] == '-' || ('0' <= cell[0] && cell[0] <= '9')) && json.Valid([]byte(cell)) {
		if v, err := strconv.ParseFloat(cell, 64); err == nil && !math.IsInf(v, 0) {
			return append(b, cell...)
		}
	}
	return appendString(b, cell)
}

// appendString writes s as a JSON string, without encoding/json's HTML
// escapes (a "<=50K" label stays readable).
func appendString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
