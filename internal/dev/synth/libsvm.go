package synth

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
)

// WriteLIBSVM writes pts to w in LIBSVM text format, one point per line:
// the label "+1" or "-1", then "index:value" for every feature, 1-based,
// zeros included so that every line has the same features. Values are
// written in the shortest form that parses back to the same float64, so
// the file reproduces the points exactly.
//
// All points are checked before anything is written: a label other than
// +1 or -1, or a NaN or infinite feature (which LIBSVM readers reject), is
// an error and leaves w untouched.
func WriteLIBSVM(w io.Writer, pts []Point) error {
	for i, p := range pts {
		if p.Y != 1 && p.Y != -1 {
			return fmt.Errorf("synth: write LIBSVM: point %d: label %d is not +1 or -1", i, p.Y)
		}
		for j, v := range p.X {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("synth: write LIBSVM: point %d: feature %d is %v", i, j+1, v)
			}
		}
	}

	bw := bufio.NewWriter(w)
	var line []byte
	for i, p := range pts {
		line = line[:0]
		if p.Y == 1 {
			line = append(line, "+1"...)
		} else {
			line = append(line, "-1"...)
		}
		for j, v := range p.X {
			line = append(line, ' ')
			line = strconv.AppendInt(line, int64(j+1), 10)
			line = append(line, ':')
			line = strconv.AppendFloat(line, v, 'g', -1, 64)
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return fmt.Errorf("synth: write LIBSVM: writing line %d: %w", i+1, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("synth: write LIBSVM: flush: %w", err)
	}
	return nil
}
