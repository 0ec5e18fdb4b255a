package main

import (
	"strings"
	"testing"
)

const elec2 = "../../testdata/elec2.3000.jsonl.gz"

// A label field that no record has left every record unlabeled: eval used
// to report 0.00 % mistakes and succeed. It must fail naming the fields.
func TestEvalMissingLabelFieldFails(t *testing.T) {
	for _, order := range [][]string{nil, {"--keep-order"}} {
		args := append([]string{"eval", "--data", elec2, "--label-field", "klass", "--positive", "UP", "--learner", "perceptron"}, order...)
		out, err := execute(t, args...)
		if err == nil {
			t.Fatalf("%v: no error; printed %s", order, out)
		}
		for _, want := range []string{`label field "klass"`, "nothing to learn", "class (3000)", "nswprice (3000)", "--label-field"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v: error %q does not say %q", order, err, want)
			}
		}
		if strings.Contains(out, "0.00") {
			t.Errorf("%v: printed a table: %s", order, out)
		}
	}
}

// A --positive class that no record has (the labels are UP and DOWN) made
// every record negative: 0.00 % mistakes. And a list that takes every
// label leaves no negative. Both must fail naming the labels seen.
func TestEvalOneSidedPositiveFails(t *testing.T) {
	for _, tc := range []struct{ positive, side string }{{"up", "none is"}, {"UP,DOWN", "every one is"}} {
		_, err := execute(t, "eval", "--data", elec2, "--label-field", "class", "--positive", tc.positive, "--learner", "perceptron")
		if err == nil {
			t.Fatalf("--positive %s: no error", tc.positive)
		}
		for _, want := range []string{tc.side + " in --positive (" + tc.positive + ")", "DOWN (1797), UP (1203)"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("--positive %s: error %q does not say %q", tc.positive, err, want)
			}
		}
	}
	// LIBSVM records: the labels are the first tokens.
	_, err := execute(t, "eval", "--data", "../../testdata/a9a.gz", "--limit", "300", "--positive", "3", "--learner", "perceptron")
	if err == nil || !strings.Contains(err.Error(), "-1 (") || !strings.Contains(err.Error(), ", 1 (") {
		t.Errorf("a9a --positive 3: %v", err)
	}
	// A class that does occur still runs.
	ok := evalJSON(t, "eval", "--data", elec2, "--label-field", "class", "--positive", "UP", "--learner", "perceptron", "--format", "json")
	if r := ok[0]; r.Labeled != 3000 || r.Positives != 1203 {
		t.Errorf("--positive UP: labeled %d, positives %d; want 3000 and 1203", r.Labeled, r.Positives)
	}
}

// Flags only events use did nothing on records: --scale online gave the
// same mistakes with and without it. They are refused.
func TestEvalRefusesEventFlagsOnRecords(t *testing.T) {
	for _, flags := range [][]string{{"--scale", "online"}, {"--key-field", "id"}, {"--normalize-text"}} {
		args := append([]string{"eval", "--data", "../../testdata/a9a.gz", "--limit", "200", "--learner", "perceptron"}, flags...)
		_, err := execute(t, args...)
		if err == nil || !strings.Contains(err.Error(), flags[0]) || !strings.Contains(err.Error(), "indexed records") {
			t.Errorf("%v: %v", flags, err)
		}
	}
	if _, err := execute(t, "eval", "--data", elec2, "--label-field", "class", "--positive", "UP", "--learner", "perceptron", "--scale", "online", "--limit", "300"); err != nil {
		t.Errorf("--scale online on events: %v", err)
	}
}

// The table says which order the rates were measured in.
func TestEvalTableNamesTheOrder(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{nil, "order: 1 random order of the records (--seed 1)"},
		{[]string{"--orders", "2", "--seed", "7"}, "order: 2 random orders of the records (--seed 7)"},
		{[]string{"--keep-order"}, "order: the file's (--keep-order)"},
	} {
		args := append([]string{"eval", "--data", "../../testdata/a9a.gz", "--limit", "200", "--learner", "perceptron"}, tc.flags...)
		out, err := execute(t, args...)
		if err != nil || !strings.Contains(out, tc.want) {
			t.Errorf("%v: %v; output lacks %q:\n%s", tc.flags, err, tc.want, out)
		}
	}
}
