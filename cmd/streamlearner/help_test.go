package main

import (
	"regexp"
	"testing"
)

// TestProduceHelpNamesOnlyItsOwnFlags: the Schema Registry flags' help,
// shared with run and replay, spoke of an --input that produce does not
// have; every flag produce --help names is one of its own.
func TestProduceHelpNamesOnlyItsOwnFlags(t *testing.T) {
	code, out, errOut := runCLI(t, "produce", "--help")
	if code != 0 {
		t.Fatalf("produce --help: exit %d %s", code, errOut)
	}
	own := map[string]bool{}
	for _, f := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z][a-z0-9-]*)`).FindAllStringSubmatch(out, -1) {
		own[f[1]] = true
	}
	if !own["topic"] || !own["schema-registry"] || !own["format"] {
		t.Fatalf("produce's flags not found in its help: %v\n%s", own, out)
	}
	for _, m := range regexp.MustCompile(`--([a-z][a-z0-9-]*)`).FindAllStringSubmatch(out, -1) {
		if !own[m[1]] {
			t.Errorf("produce --help names --%s, not one of its flags:\n%s", m[1], out)
		}
	}
}
