// Package codec turns the bytes of one message into an Example (a feature
// vector and an optional label) and an Example back into bytes.
//
// # Formats
//
// Two formats are understood. Decode looks at the first byte that is not
// blank (space, tab, CR, LF): '{' means JSON, anything else LIBSVM.
//
// A JSON record is one object, {"label": L, "features": F}. L is a number,
// true, false, a non-empty string (a class name), null or absent (the record
// is unlabeled). F is either an object whose keys are decimal feature indices
// ({"3": 0.5, "17": 1}) or an array of numbers whose element i is feature i+1
// ([0.1, 0.2, ...]); null stands for no feature at all. Other top-level keys
// are ignored, whatever they hold; keys are matched exactly (case matters).
// Bytes that are not well-formed JSON (RFC 8259) are rejected, and so are a
// repeated "label" or "features" key, a feature value that is not a number,
// and nesting deeper than 1000 levels.
//
// A LIBSVM record is one line, "<label> <idx>:<val> <idx>:<val> ...", with
// tokens separated by spaces or tabs. A trailing "# comment" and trailing
// CR/LF are ignored; a line that holds only a comment is an empty message.
// The label is optional (the line is unlabeled when its first token holds a
// ':') and must be a finite number. Indices may come in any order. Numbers
// follow strconv.ParseFloat, like C's strtod in the LIBSVM tools (so
// hexadecimal floats such as 0x1p-3 are read), except that Go's "_" digit
// separators are refused, as are NaN and infinities.
//
// # Named-field events
//
// An event is a JSON object whose members are the record's own fields,
// {"id":"adult-000001","age":39,"workclass":"State-gov",...,"income":"<=50K"}:
// one field is the label, one may be a key (a record id carried into
// predictions), and the others become features. EventDecoder reads such an
// object into an Event, a flat list of named fields; package features
// hashes them into a vector. The {"label":…,"features":{…}} records and
// LIBSVM lines are not events: Decode keeps reading them as before.
//
// How a field becomes features is its kind: from EventConfig.Schema when it
// names the field, otherwise inferred from the value:
//
//	number          numeric: one feature, the value
//	string          categorical: one feature "field=value", value 1; but
//	                a JSON number ("2") is numeric, "true"/"false" in any
//	                case a boolean and "" missing (TypeString), in every
//	                format, as a CSV cell is read
//	true, false     numeric 1 and 0
//	array           each element as if it were field "name.i" (i from 0),
//	                except strings, which are a bag of tokens of the field
//	                itself (categorical "name=token", counted)
//	object          flattened: its members are fields "name.member"
//	null, absent    missing: no feature
//
// A schema kind overrides the inference: numeric takes numbers, booleans
// and strings that are numbers or booleans; categorical takes strings,
// numbers (their text as written) and booleans; text takes strings,
// numbers and booleans as their text (tokenized by the featurizer); ignore
// drops the field, as EventConfig.Ignore does. A value that its kind
// cannot take is an error with reason bad_field. Names are matched after flattening
// ("address.city"), exactly (case matters).
//
// The label follows the rules of the record format: a number (canonical
// token), a boolean, a non-empty string, or null/absent for an unlabeled
// event; anything else is bad_label. The key is a string or a number (its
// text as written); null or absent means no key.
//
// A field given twice contributes twice (a bag); a repeated label or key
// field is invalid_json. The message-level checks (empty_message,
// too_large, invalid_utf8) come first, as for records, and NaN or
// infinite numbers cannot be written in JSON; a number that overflows
// float64 is non_finite. At most Limits.MaxNonZeros fields (array elements
// included) are read: too_many_features beyond.
//
// # Vectors and indices
//
// Feature indices are decimal integers from 0 to Limits.MaxIndex ("03" is
// 3); the element i of a dense JSON array is feature i+1, so that the array
// and the LIBSVM line "1:v1 2:v2 ..." describe the same point. The vector of
// a decoded Example follows the rules of package sparse: indices strictly
// increasing, values finite. Zero values are dropped, after duplicates have
// been looked for: an index given twice is an error even when one of the
// values is zero.
//
// # Labels
//
// Labels are kept as canonical tokens (CanonicalLabel): numbers are written
// back by strconv.FormatFloat(v, 'g', -1, 64), so that 1, 1.0 and +1 all
// become "1" and -0 becomes "0"; true and false stay; a JSON string label is
// kept as it is. A LabelMap turns a token into the +1/-1 target of a binary
// learner.
//
// # Limits
//
// Limits bound what one record may cost, so that a bad producer cannot
// exhaust memory: at most MaxBytes bytes (default 1 MiB), feature indices up
// to MaxIndex (default 1<<24) and at most MaxNonZeros features (default
// 1<<16, counted as they are read, zeros included). Decoding stops as soon
// as a limit is passed, so the memory a decode takes grows with the features
// it has read, never past MaxNonZeros of them, and with the label's length.
// A Limits with zero fields takes the defaults for them.
//
// The functions of this package are safe for concurrent use.
//
// # Errors
//
// Nothing in this package panics, whatever the input. Every rejection is an
// *Error whose Reason is one of a fixed set of snake_case values, fit for a
// metric label or a dead-letter header, and whose Detail says what was wrong
// and where. Reasons lists them all:
//
//	empty_message      no byte, or only blanks (or, in LIBSVM, only a comment)
//	too_large          more than MaxBytes bytes (checked before any parsing);
//	                   or, validated against a JSON Schema, more work than
//	                   MaxJSONRecordWork
//	invalid_utf8       the message is not valid UTF-8
//	invalid_json       not well-formed JSON, a repeated key, a top level that
//	                   is not an object, or a feature value that is not a number
//	invalid_libsvm     a token that is not idx:val, or a value that is not a number
//	bad_label          a label that is not allowed (see above), or that a
//	                   LabelMap cannot map
//	non_finite         a feature value that overflows float64, NaN or infinite
//	bad_index          a feature index that is not a decimal integer
//	index_too_large    a feature index above MaxIndex
//	duplicate_index    a feature index given twice
//	too_many_features  more than MaxNonZeros features
//	empty_features     no non-zero feature, unless Limits.AllowEmpty
//	missing_features   a JSON object without a "features" key
//	bad_field          (events) a field value its schema kind cannot take,
//	                   or a key field that is not a string or a number
//	too_many_classes   (events) a label beyond the model's class limit;
//	                   reported by the model, not by a decoder
//	label_unknown      (delayed labels) a label whose key has no record
//	                   awaiting it: never seen, or already labeled
//	label_expired      (delayed labels) a label whose record waited longer
//	                   than the pending store's maximum age
//	label_evicted      (delayed labels) a label whose record was pushed out
//	                   of the full pending store
//	label_without_key  (delayed labels) a label message with no key to
//	                   match its record by
//	key_too_large      (delayed labels) a key longer than the pending
//	                   store takes
//	bad_framing        (wire format) no magic byte, or fewer than 5 bytes
//	unknown_schema     (wire format) a schema id the registry does not
//	                   have
//	bad_schema         (wire format) a schema the registry answered
//	                   whole that cannot be compiled, or whose
//	                   validation could take more work than the service
//	                   gives a record (an empty answer, or an Avro or
//	                   JSON Schema text that is not JSON, is the
//	                   registry's fault: package schemareg waits for a
//	                   usable answer)
//	schema_mismatch    (wire format) a payload that does not follow its
//	                   schema (truncated, bytes left over, a bad union
//	                   branch or enum symbol...), or a schema of a type
//	                   the input does not take
//	schema_too_large   (wire format) a schema larger than the service
//	                   takes from the registry
//
// The message-level checks come first, in this order: empty_message,
// too_large, invalid_utf8. Then the record is read once, from the start,
// and decoding stops at the first problem found; a JSON value is checked for
// well-formedness before its meaning is judged. Checks on the record as a
// whole (duplicate_index, empty_features, missing_features) come last.
package codec
