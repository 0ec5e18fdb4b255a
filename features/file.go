package features

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
)

// maxLine bounds one line of a data file.
const maxLine = 16 << 20

// ScanLines calls fn with each non-blank line of the file at path
// (gunzipped when it starts with the gzip magic bytes) and its 1-based line
// number, until fn returns false or an error, or ctx ends. The line's bytes
// are valid only during the call.
func ScanLines(ctx context.Context, path string, fn func(line int, b []byte) (more bool, err error)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return scanLines(ctx, f, fn)
}

func scanLines(ctx context.Context, r io.Reader, fn func(line int, b []byte) (bool, error)) error {
	br := bufio.NewReaderSize(r, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<16)
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 1<<16), maxLine)
	for line := 1; sc.Scan(); line++ {
		if line%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		more, err := fn(line, b)
		if err != nil || !more {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	return nil
}
