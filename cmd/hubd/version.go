package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/hubd/hubd/internal/exitcode"
)

// runVersion is "hubd version": the module version, the commit and the Go
// version the binary was built with.
func runVersion(args []string, stdout io.Writer) error {
	c := lookup("version")
	fs := newCommand(c.name, c.args, c.summary, stdout)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return exitcode.Usage("version: unexpected argument %q", fs.Arg(0))
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{GoVersion: runtime.Version()}
	}
	_, err := fmt.Fprint(stdout, versionText(bi))
	return err
}

// versionText describes a build: module path and version, commit (with
// its time and whether the tree had changes; "unknown" when the build
// recorded none, as with -buildvcs=false or go run), Go version and
// platform.
func versionText(bi *debug.BuildInfo) string {
	mod, ver := bi.Main.Path, bi.Main.Version
	if mod == "" {
		mod = "github.com/hubd/hubd"
	}
	if ver == "" {
		ver = "(devel)"
	}
	s := map[string]string{}
	for _, kv := range bi.Settings {
		s[kv.Key] = kv.Value
	}
	commit := "unknown"
	if rev := s["vcs.revision"]; rev != "" {
		commit = rev
		if t := s["vcs.time"]; t != "" {
			commit += " " + t
		}
		if s["vcs.modified"] == "true" {
			commit += " (modified)"
		}
	}
	platform := ""
	if s["GOOS"] != "" {
		platform = " " + s["GOOS"] + "/" + s["GOARCH"]
	}
	return fmt.Sprintf("module:  %s %s\ncommit:  %s\ngo:      %s%s\n", mod, ver, commit, bi.GoVersion, platform)
}
