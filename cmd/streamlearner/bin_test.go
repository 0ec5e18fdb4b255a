package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binOut  []byte
)

// testBinary builds the command once per test process, for the tests that
// run it as users do: as a process, killed, signalled, restarted.
func testBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "streamlearner-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "streamlearner")
		binOut, binErr = exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
	})
	if binErr != nil {
		t.Fatalf("build: %v\n%s", binErr, binOut)
	}
	return binPath
}
