package main

import (
	"runtime"
	"runtime/debug"
)

// version and revision are set at build time by make build and the
// Dockerfile (-ldflags "-X main.version=... -X main.revision=...").
var version, revision = "dev", ""

// buildInfo describes the binary: its version, source revision and Go
// version.
type buildInfo struct {
	Version, Revision, GoVersion string
}

// currentBuild prefers what the linker was told; without that (go build,
// go install) it reads what the Go toolchain recorded: the module version
// of `go install ...@vX` and the VCS revision of a build in a checkout.
func currentBuild() buildInfo {
	b := buildInfo{Version: version, Revision: revision, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b.withUnknown()
	}
	if b.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	if b.Revision == "" {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				b.Revision = s.Value
			}
		}
	}
	return b.withUnknown()
}

func (b buildInfo) withUnknown() buildInfo {
	if b.Revision == "" {
		b.Revision = "unknown"
	}
	return b
}
