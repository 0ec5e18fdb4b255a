package codec

import "bytes"

func isSep(c byte) bool { return c == ' ' || c == '\t' }

func decodeLIBSVM(b []byte, lim Limits) (Example, *Error) {
	end := len(b)
	for end > 0 && (b[end-1] == '\n' || b[end-1] == '\r') {
		end--
	}
	line := b[:end]
	// One message is one record: a line break inside it most likely means
	// a producer batched lines, and reading only the first would lose data
	// silently.
	if k := lineBreak(line); k >= 0 {
		return Example{}, errorf(ReasonInvalidLIBSVM, "offset %d: line break inside the record; a message holds one line", k)
	}
	if k := bytes.IndexByte(line, '#'); k >= 0 {
		line = line[:k]
	}

	s := getScratch()
	ex, err := parseLIBSVM(line, lim, s)
	putScratch(s)
	return ex, err
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
	x, err := finish(ents, sorted, lim)
	if err != nil {
		return Example{}, err
	}
	ex.X = x
	return ex, nil
}
