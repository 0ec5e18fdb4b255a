package codec

import (
	"bytes"
	"math"
	"slices"

	"github.com/streamlearner/streamlearner/learners/sparse"
)

func isSep(c byte) bool { return c == ' ' || c == '\t' }

// decodeLIBSVM decodes a LIBSVM message, its message-level checks
// (precheck) and its values' (checkValues) included; lim has its defaults.
func decodeLIBSVM(b []byte, lim Limits, s *scratch) (Example, *Error) {
	if firstNonBlank(b) == len(b) || len(b) > lim.MaxBytes {
		return Example{}, precheck(b, lim)
	}
	end := len(b)
	for end > 0 && (b[end-1] == '\n' || b[end-1] == '\r') {
		end--
	}
	line := b[:end]
	// The common line is read before any search: parseSimple takes only
	// ASCII, and no line break or '#', so that a line it takes is valid
	// UTF-8, one line, without a comment, and what it makes of it stands.
	if ex, err, ok := parseSimple(line, lim, s); ok {
		return ex, err
	}
	if err := precheck(b, lim); err != nil {
		return Example{}, err
	}
	// One message is one record: a line break inside it most likely means
	// a producer batched lines, and reading only the first would lose data
	// silently.
	if k := lineBreak(line); k >= 0 {
		return Example{}, errorf(ReasonInvalidLIBSVM, "offset %d: line break inside the record; a message holds one line", k)
	}
	if k := bytes.IndexByte(line, '#'); k >= 0 {
		line = line[:k]
		if ex, err, ok := parseSimple(line, lim, s); ok {
			return ex, err
		}
	}
	ex, err := parseLIBSVM(line, lim, s)
	if err == nil {
		err = checkValues(ex, lim)
	}
	if err != nil {
		return Example{}, err
	}
	return ex, nil
}

// lineBreak returns the offset of the first '\r' or '\n' in b, or −1: two
// vectorized byte searches, several times faster than bytes.IndexAny's
// byte-by-byte set lookup on a typical record.
func lineBreak(b []byte) int {
	k := bytes.IndexByte(b, '\n')
	if k < 0 {
		return bytes.IndexByte(b, '\r')
	}
	if r := bytes.IndexByte(b[:k], '\r'); r >= 0 {
		return r
	}
	return k
}

// parseSimple reads the common line — an optional numeric label, then
// idx:val tokens whose values fastDecimal converts — in one pass over its
// bytes, where parseLIBSVM cuts each token out, then reads its index, then
// its value, and gathers the entries before copying them into the vector.
// ok is false for any other line, and for one breaking a limit:
// parseLIBSVM then reads it again from the start, so that every line it
// accepts reads the same and every error is parseLIBSVM's.
func parseSimple(line []byte, lim Limits, s *scratch) (ex Example, err *Error, ok bool) {
	i := 0
	if ex.Label, i, ok = simpleLabel(line); !ok {
		return ex, nil, false
	}
	// The entries go where the vector will be: past the vectors already
	// cut from a Decoder's arena, or in the scratch, to be copied out.
	// Tokens take 3 bytes and a separator at least, so the rest of the
	// line holds at most room of them; a line with more than MaxNonZeros
	// is parseLIBSVM's, which says so.
	room := min((len(line)-i+1)/4+1, lim.MaxNonZeros)
	var idxs []uint32
	var vals []float64
	if s.arena != nil {
		idxs, vals = s.arena.room(room)
	} else {
		s.idx, s.val = slices.Grow(s.idx[:0], room)[:room], slices.Grow(s.val[:0], room)[:room]
		idxs, vals = s.idx, s.val
	}
	vals = vals[:len(idxs)]
	n, sorted, odd, ok := simpleEntries(line, i, idxs, vals, uint64(lim.MaxIndex), lim.MaxAbsValue)
	if !ok {
		return Example{}, nil, false
	}
	ex.LabelOnly = lim.LabelOnly && n == 0
	// The common line's vector is cut here, outside simpleVector: the
	// call costs an a9a line 2.6 % more instructions (BenchmarkDecoder).
	switch {
	case odd || !sorted || n == 0:
		if ex.X, err = simpleVector(idxs[:n], vals[:n], sorted, odd, lim, s); err != nil {
			return Example{}, err, true
		}
	case s.arena != nil:
		ex.X = s.arena.vector(n) // the entries just written
	default:
		ex.X = sparse.Vector{Idx: make([]uint32, n), Val: make([]float64, n)}
		copy(ex.X.Idx, idxs[:n])
		copy(ex.X.Val, vals[:n])
	}
	return ex, nil, true
}

// simpleLabel reads the label at the start of line, and returns where the
// entries start: at the first token when it is a feature (no label). ok
// is false for a line of a comment only, or a label that is not a number.
func simpleLabel(line []byte) (label string, i int, ok bool) {
	for i < len(line) && isSep(line[i]) {
		i++
	}
	at := i
	for i < len(line) && !isSep(line[i]) && line[i] != ':' {
		i++
	}
	switch {
	case i == at:
		return "", 0, false // only a comment, or a token starting with ':'
	case i == len(line) || line[i] != ':':
		label, ok = numericLabel(line[at:i])
		return label, i, ok
	}
	return "", at, true // no label: the first token is a feature
}

// simpleEntries reads the idx:val tokens of line from i into idxs and
// vals, n of them. sorted says whether their indices increase; odd that
// a value is zero or over maxAbs (both rare, sorted out by simpleVector).
// ok is false for a line with more tokens than idxs holds, a token
// simpleEntry does not take, or an index over maxIndex.
func simpleEntries(line []byte, i int, idxs []uint32, vals []float64, maxIndex uint64, maxAbs float64) (n int, sorted, odd, ok bool) {
	sorted = true
	last := int64(-1)
	for i < len(line) {
		if isSep(line[i]) {
			i++
			continue
		}
		if n == len(idxs) {
			return 0, false, false, false
		}
		idx, v, end, ok := simpleEntry(line, i)
		if !ok || idx > maxIndex {
			return 0, false, false, false
		}
		i = end
		idxs[n], vals[n] = uint32(idx), v
		n++
		if int64(idx) <= last {
			sorted = false
		}
		last = int64(idx)
		if v == 0 || math.Abs(v) > maxAbs {
			odd = true
		}
	}
	return n, sorted, odd, true
}

// simpleVector makes the vector of the entries idxs and vals of a line
// parseSimple does not finish itself (indices out of order, a value zero
// or over the limit, no entry), in a Decoder's arena or the scratch.
func simpleVector(idxs []uint32, vals []float64, sorted, odd bool, lim Limits, s *scratch) (x sparse.Vector, err *Error) {
	n := len(idxs)
	zero, big := false, false
	if odd {
		for _, v := range vals {
			zero = zero || v == 0
			big = big || math.Abs(v) > lim.MaxAbsValue
		}
	}
	switch {
	case !sorted || zero || n == 0:
		// finish sorts, rejects duplicates, drops zeros, says whether an
		// empty vector is allowed.
		ents := s.ents[:0]
		for k := range n {
			ents = append(ents, entry{idxs[k], vals[k]})
		}
		s.ents = ents
		if x, err = finishIn(ents, sorted, lim, s.arena); err != nil {
			return sparse.Vector{}, err
		}
	case s.arena != nil:
		x = s.arena.vector(n) // the entries just written
	default:
		x = sparse.Vector{Idx: make([]uint32, n), Val: make([]float64, n)}
		copy(x.Idx, idxs)
		copy(x.Val, vals)
	}
	// checkValues names the first value over the limit in the vector.
	if big {
		if err := checkValues(Example{X: x}, lim); err != nil {
			return sparse.Vector{}, err
		}
	}
	return x, nil
}

// simpleEntry reads the token idx:val at line[i:] that parseSimple takes:
// an index of nine digits at most (more is parseLIBSVM's: leading zeros,
// or over any limit), and a value that fastDecimal converts, followed by
// a separator or the end. It returns where the token ends. (Apart from
// parseSimple so that its loops keep their few variables in registers.)
func simpleEntry(line []byte, i int) (idx uint64, v float64, end int, ok bool) {
	at := i
	for i < len(line) {
		d := line[i] - '0'
		if d > 9 {
			break
		}
		idx = idx*10 + uint64(d)
		i++
	}
	if i == at || i-at > 9 || i == len(line) || line[i] != ':' {
		return 0, 0, i, false
	}
	i++
	// An integer value (a9a's 1s) converts here, any other in fastDecimal.
	at = i
	var m uint64
	for i < len(line) {
		d := line[i] - '0'
		if d > 9 {
			break
		}
		m = m*10 + uint64(d)
		i++
	}
	if i == at || i-at > 15 || i < len(line) && !isSep(line[i]) {
		if v, i, ok = fastDecimal(line, at); !ok || i < len(line) && !isSep(line[i]) {
			return 0, 0, i, false
		}
		return idx, v, i, true
	}
	return idx, float64(int64(m)), i, true // m < 10¹⁵: a signed conversion is exact, and one instruction
}

// parseLIBSVM reads any line, token by token, and says what is wrong with
// a malformed one.
func parseLIBSVM(line []byte, lim Limits, s *scratch) (Example, *Error) {
	var ex Example
	i := 0
	// next returns the next token, its offset and the offset of its first
	// ':' within it (−1 for none), found in the same pass.
	next := func() (tok []byte, at, colon int) {
		for i < len(line) && isSep(line[i]) {
			i++
		}
		at, colon = i, -1
		for i < len(line) && !isSep(line[i]) {
			if line[i] == ':' && colon < 0 {
				colon = i - at
			}
			i++
		}
		return line[at:i], at, colon
	}

	tok, at, colon := next()
	if len(tok) == 0 {
		return ex, errorf(ReasonEmptyMessage, "line holds only a comment")
	}
	if colon < 0 {
		lab, ok := numericLabel(tok)
		if !ok {
			return ex, errorf(ReasonBadLabel, "offset %d: label %s is not a finite number", at, quote(tok))
		}
		ex.Label = lab
		tok, at, colon = next()
	}

	ents := s.ents[:0]
	defer func() { s.ents = ents }()
	sorted := true
	for ; len(tok) > 0; tok, at, colon = next() {
		if len(ents) >= lim.MaxNonZeros {
			return ex, errorf(ReasonTooManyFeatures, "offset %d: more than %d features", at, lim.MaxNonZeros)
		}
		if colon < 0 {
			return ex, errorf(ReasonInvalidLIBSVM, "offset %d: token %s is not idx:val", at, quote(tok))
		}
		if colon == 0 || colon == len(tok)-1 {
			return ex, errorf(ReasonInvalidLIBSVM, "offset %d: token %s has an empty index or value", at, quote(tok))
		}
		idx, st := parseIndex(tok[:colon], lim.MaxIndex)
		switch st {
		case indexBad:
			return ex, errorf(ReasonBadIndex, "offset %d: index %s is not a decimal integer", at, quote(tok[:colon]))
		case indexTooLarge:
			return ex, errorf(ReasonIndexTooLarge, "offset %d: index %s is above the limit %d", at, quote(tok[:colon]), lim.MaxIndex)
		}
		v, vst := parseLIBSVMValue(tok[colon+1:])
		switch vst {
		case valueSyntax:
			return ex, errorf(ReasonInvalidLIBSVM, "offset %d: feature %d: value %s is not a number", at, idx, quote(tok[colon+1:]))
		case valueNonFinite:
			return ex, errorf(ReasonNonFinite, "offset %d: feature %d: value %s is not finite", at, idx, quote(tok[colon+1:]))
		}
		if len(ents) > 0 && idx <= ents[len(ents)-1].idx {
			sorted = false
		}
		ents = append(ents, entry{idx, v})
	}
	ex.LabelOnly = lim.LabelOnly && len(ents) == 0
	x, err := finishIn(ents, sorted, lim, s.arena)
	if err != nil {
		return Example{}, err
	}
	ex.X = x
	return ex, nil
}
