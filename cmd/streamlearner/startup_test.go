package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// TestVersionLeavesTheJSONSchemaMetaschemasAlone: the JSON Schema
// library's metaschemas are compiled on the first compiler, not in the
// package's init, so a command that validates nothing does not pay for
// them (upstream's init allocates 1.7 MB, 3.8 ms of every start-up).
func TestVersionLeavesTheJSONSchemaMetaschemasAlone(t *testing.T) {
	cmd := exec.Command(testBinary(t), "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`init github.com/santhosh-tekuri/jsonschema/v6 @\S+ ms, \S+ ms clock, (\d+) bytes`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no init line of the JSON Schema library in:\n%s", out)
	}
	if n, _ := strconv.Atoi(string(m[1])); n > 100<<10 {
		t.Errorf("the JSON Schema library's init allocates %d bytes: its metaschemas are compiled at start-up", n)
	}
}
