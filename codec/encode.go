package codec

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends ex as a JSON record, {"label":1,"features":{"3":0.5}},
// to dst and returns the result. The label is written as a JSON number or
// boolean when DecodeJSON would read that back as the same token, as a
// string otherwise, and left out when it is "". Values are written in the
// shortest form that reads back bit for bit. The output is valid JSON
// whatever ex holds, but decodes only if ex is valid: a NaN or infinite value
// is written as null.
func AppendJSON(dst []byte, ex Example) []byte {
	dst = append(dst, '{')
	if ex.Label != "" {
		dst = append(dst, `"label":`...)
		if ex.Label == "true" || ex.Label == "false" || isCanonicalNumber(ex.Label) {
			dst = append(dst, ex.Label...)
		} else {
			dst = appendJSONString(dst, ex.Label)
		}
		dst = append(dst, ',')
	}
	dst = append(dst, `"features":{`...)
	n := min(len(ex.X.Idx), len(ex.X.Val))
	for k := 0; k < n; k++ {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = strconv.AppendUint(dst, uint64(ex.X.Idx[k]), 10)
		dst = append(dst, '"', ':')
		if v := ex.X.Val[k]; math.IsNaN(v) || math.IsInf(v, 0) {
			dst = append(dst, "null"...)
		} else {
			dst = strconv.AppendFloat(dst, v, 'g', -1, 64)
		}
	}
	return append(dst, '}', '}')
}

// AppendLIBSVM appends ex as a LIBSVM line, "1 3:0.5 17:1", without a line
// break, to dst and returns the result. The label is written as it is, and
// left out when it is "": only numeric labels read back, since a LIBSVM
// label is a number. Values are written in the shortest form that reads
// back bit for bit.
func AppendLIBSVM(dst []byte, ex Example) []byte {
	dst = append(dst, ex.Label...)
	n := min(len(ex.X.Idx), len(ex.X.Val))
	for k := 0; k < n; k++ {
		if k > 0 || ex.Label != "" {
			dst = append(dst, ' ')
		}
		dst = strconv.AppendUint(dst, uint64(ex.X.Idx[k]), 10)
		dst = append(dst, ':')
		dst = strconv.AppendFloat(dst, ex.X.Val[k], 'g', -1, 64)
	}
	return dst
}

// isCanonicalNumber reports whether s is the canonical token of a finite
// number. Such a token is always a valid JSON number: FormatFloat's 'g'
// output has no leading '+', no bare '.', and no NaN or Inf.
func isCanonicalNumber(s string) bool {
	c, ok := numericLabel(s)
	return ok && c == s
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Bytes that are not UTF-8
// become U+FFFD, as encoding/json writes them, so the output stays valid.
func appendJSONString(dst []byte, s string) []byte { return appendString(dst, s, false) }

// appendString appends s as a JSON string; with asEncodingJSON it also
// escapes <, >, & and U+2028, U+2029 the way encoding/json does by
// default, so that its output is json.Marshal's byte for byte.
func appendString(dst []byte, s string, asEncodingJSON bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf && !(asEncodingJSON && (c == '<' || c == '>' || c == '&')) {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if asEncodingJSON && (r == '\u2028' || r == '\u2029') {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
