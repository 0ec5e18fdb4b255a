package codec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// CanonicalLabel returns the canonical form of a label token. A token that
// is a finite number (strconv.ParseFloat syntax, without "_" separators)
// becomes strconv.FormatFloat(v, 'g', -1, 64), with -0 written "0": "+1",
// "1.0" and "1e0" all become "1". Any other token, "true" and "false"
// included, is a class name and stays as it is. The empty token is an error
// (bad_label), since "" means "no label".
func CanonicalLabel(tok string) (string, error) {
	if tok == "" {
		return "", &Error{Reason: ReasonBadLabel, Detail: "label is empty"}
	}
	if c, ok := numericLabel(tok); ok {
		return c, nil
	}
	return tok, nil
}

// LabelMap turns label tokens into the +1/-1 targets of a binary learner.
// Its lists hold canonical tokens (see CanonicalLabel and ParseLabelList),
// and Map expects one, as Example.Label is.
//
// With no Positive list the data must be binary already: "1" and "true" are
// positive, "-1", "0" and "false" negative, and any other label an error;
// Negative is then not looked at. With a Positive list, its labels are
// positive; the others are negative when Negative is empty, and otherwise
// only those in Negative are, the rest being dropped (one-vs-some).
type LabelMap struct {
	Positive, Negative []string
}

// Map returns the target of label. keep is false when the record should be
// dropped because its label is in neither list. The empty label (an
// unlabeled record, to be predicted but not learned from) gives (0, true,
// nil). The error, for a label that binary data cannot hold, is an *Error
// with reason bad_label.
func (m LabelMap) Map(label string) (y int, keep bool, err error) {
	if label == "" {
		return 0, true, nil
	}
	if len(m.Positive) == 0 {
		switch label {
		case "1", "true":
			return 1, true, nil
		case "-1", "0", "false":
			return -1, true, nil
		}
		return 0, false, &Error{
			Reason: ReasonBadLabel,
			Detail: fmt.Sprintf("label %s is not binary (+1/-1, 1/0, true/false): name the positive class(es) with --positive (and the negative ones with --negative), or learn many classes with --classes", quote([]byte(label))),
		}
	}
	if slices.Contains(m.Positive, label) {
		return 1, true, nil
	}
	if len(m.Negative) == 0 {
		return -1, true, nil
	}
	if slices.Contains(m.Negative, label) {
		return -1, true, nil
	}
	return 0, false, nil
}

// Unlisted is the error for a record whose label is in none of the lists
// a model was given: --positive with --negative (see Map), or a list of
// classes. Its reason is bad_label. Such a record is not part of the
// problem the lists define, and one rule holds everywhere: it is neither
// predicted, learned nor scored; the service dead-letters it (so that
// every input is accounted for) and eval and replay skip it and say how
// many they skipped. detail names the label and the lists.
func Unlisted(detail string) *Error {
	return &Error{Reason: ReasonBadLabel, Detail: detail, unlisted: true}
}

// IsUnlisted reports whether err is an Unlisted error.
func IsUnlisted(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.unlisted
}

// Unlisted is the Unlisted error of label, which Map does not keep.
func (m LabelMap) Unlisted(label string) *Error {
	return Unlisted(fmt.Sprintf("label %s is in neither --positive (%s) nor --negative (%s)",
		quote([]byte(label)), strings.Join(m.Positive, ","), strings.Join(m.Negative, ",")))
}

// ClassNames names the two sides of a binary model read through a
// Positive list, for people reading predictions: the positive labels
// ("fraud", or "3,6,8" for several), and the negative ones, or "not "
// and the positive name when every other label is negative. ok is false
// for data that is binary already (±1, 1/0, true/false need no names).
func (m LabelMap) ClassNames() (pos, neg string, ok bool) {
	if len(m.Positive) == 0 {
		return "", "", false
	}
	pos = strings.Join(m.Positive, ",")
	if len(m.Negative) == 0 {
		return pos, "not " + pos, true
	}
	return pos, strings.Join(m.Negative, ","), true
}

// ParseLabelList parses a comma-separated list of labels, such as a flag
// value "3,6,8", into canonical tokens. Blanks around an item are trimmed.
// An empty item ("3,,8", or a trailing comma) is an error (bad_label); a
// string that is empty or blank as a whole is the empty list (nil), so that
// an unset flag means "no list".
func ParseLabelList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	items := strings.Split(s, ",")
	out := make([]string, 0, len(items))
	for k, item := range items {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, &Error{
				Reason: ReasonBadLabel,
				Detail: fmt.Sprintf("item %d of label list %s is empty", k+1, quote([]byte(s))),
			}
		}
		c, err := CanonicalLabel(item)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
