// Package buildinfo says what a binary of this module is: its version and
// commit as a release build stamps them at link time, else as the Go
// toolchain recorded them (go install at a version, a build in a git
// checkout), and the Go version and platform it was built with. hubd
// version and hubload --version print it.
//
// A release build stamps both with the linker:
//
//	go build -ldflags "-X github.com/hubd/hubd/internal/buildinfo.version=v1.2.3 \
//	    -X github.com/hubd/hubd/internal/buildinfo.commit=$(git rev-parse HEAD)" ./cmd/hubd
//
// A commit ending in "-dirty" was built from a tree with uncommitted
// changes.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// The linker sets these (-ldflags -X); nothing assigns them at run time.
var (
	version string // "v1.2.3"
	commit  string // a full commit hash, "-dirty" when the tree had changes
)

// Module is the path of the module the binaries belong to.
const Module = "github.com/hubd/hubd"

// dirty ends a stamped commit built from a tree with uncommitted changes
// (as git describe --dirty marks one).
const dirty = "-dirty"

// Info describes a build.
type Info struct {
	Module    string // "github.com/hubd/hubd"
	Version   string // "v1.2.3", or "(devel)" when neither stamped nor recorded
	Commit    string // "abc… 2026-01-02T03:04:05Z (modified)", or "unknown"
	GoVersion string // "go1.26.0"
	Platform  string // "linux/amd64", or "" when the build recorded none
}

// Read describes the running binary.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{GoVersion: runtime.Version()}
	}
	return From(bi, version, commit)
}

// From describes a build from what the toolchain recorded (bi) and what
// the linker stamped (stampedVersion, stampedCommit; "" when not
// stamped), which wins.
func From(bi *debug.BuildInfo, stampedVersion, stampedCommit string) Info {
	s := map[string]string{}
	for _, kv := range bi.Settings {
		s[kv.Key] = kv.Value
	}
	info := Info{Module: bi.Main.Path, Version: bi.Main.Version, Commit: "unknown", GoVersion: bi.GoVersion}
	if info.Module == "" {
		info.Module = Module
	}
	if info.Version == "" {
		info.Version = "(devel)"
	}
	if stampedVersion != "" {
		info.Version = stampedVersion
	}
	switch {
	case stampedCommit != "":
		info.Commit = stampedCommit
		if c, ok := strings.CutSuffix(stampedCommit, dirty); ok {
			info.Commit = c + " (modified)"
		}
	case s["vcs.revision"] != "":
		info.Commit = s["vcs.revision"]
		if t := s["vcs.time"]; t != "" {
			info.Commit += " " + t
		}
		if s["vcs.modified"] == "true" {
			info.Commit += " (modified)"
		}
	}
	if s["GOOS"] != "" {
		info.Platform = s["GOOS"] + "/" + s["GOARCH"]
	}
	return info
}

// String is the text hubd version prints: module and version, commit, Go
// version and platform, one per line.
func (i Info) String() string {
	goLine := i.GoVersion
	if i.Platform != "" {
		goLine += " " + i.Platform
	}
	return fmt.Sprintf("module:  %s %s\ncommit:  %s\ngo:      %s\n", i.Module, i.Version, i.Commit, goLine)
}
