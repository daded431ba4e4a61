package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func settings(kv ...string) []debug.BuildSetting {
	var s []debug.BuildSetting
	for i := 0; i < len(kv); i += 2 {
		s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
	}
	return s
}

func TestFrom(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	devel := debug.Module{Path: Module, Version: "(devel)"}
	for _, tc := range []struct {
		name            string
		bi              debug.BuildInfo
		version, commit string // stamped
		want            string
	}{
		{"go install at a version", debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: Module, Version: "v0.3.0"},
			Settings: settings("GOOS", "linux", "GOARCH", "amd64", "vcs.revision", "abc123", "vcs.time", "2026-01-02T03:04:05Z", "vcs.modified", "false")}, "", "",
			"module:  github.com/hubd/hubd v0.3.0\ncommit:  abc123 2026-01-02T03:04:05Z\ngo:      go1.26.0 linux/amd64\n"},
		{"a build of a changed tree", debug.BuildInfo{GoVersion: "go1.26.0", Main: devel,
			Settings: settings("vcs.revision", "abc123", "vcs.modified", "true")}, "", "",
			"module:  github.com/hubd/hubd (devel)\ncommit:  abc123 (modified)\ngo:      go1.26.0\n"},
		{"-buildvcs=false", debug.BuildInfo{GoVersion: "go1.26.0", Main: devel}, "", "",
			"module:  github.com/hubd/hubd (devel)\ncommit:  unknown\ngo:      go1.26.0\n"},
		{"no build info", debug.BuildInfo{GoVersion: "go1.26.0"}, "", "",
			"module:  github.com/hubd/hubd (devel)\ncommit:  unknown\ngo:      go1.26.0\n"},
		{"a release build, -buildvcs=false", debug.BuildInfo{GoVersion: "go1.26.0", Main: devel, Settings: settings("GOOS", "windows", "GOARCH", "amd64")},
			"v1.2.3", sha, "module:  github.com/hubd/hubd v1.2.3\ncommit:  " + sha + "\ngo:      go1.26.0 windows/amd64\n"},
		{"a release build of a changed tree", debug.BuildInfo{GoVersion: "go1.26.0", Main: devel}, "v1.2.3-rc.1", sha + "-dirty",
			"module:  github.com/hubd/hubd v1.2.3-rc.1\ncommit:  " + sha + " (modified)\ngo:      go1.26.0\n"},
		{"the stamp wins over what git recorded", debug.BuildInfo{GoVersion: "go1.26.0", Main: devel,
			Settings: settings("vcs.revision", "abc123", "vcs.time", "2026-01-02T03:04:05Z")}, "v1.2.3", sha,
			"module:  github.com/hubd/hubd v1.2.3\ncommit:  " + sha + "\ngo:      go1.26.0\n"},
		{"a version stamped alone", debug.BuildInfo{GoVersion: "go1.26.0", Main: devel,
			Settings: settings("vcs.revision", "abc123")}, "v1.2.3", "",
			"module:  github.com/hubd/hubd v1.2.3\ncommit:  abc123\ngo:      go1.26.0\n"},
	} {
		if got := From(&tc.bi, tc.version, tc.commit).String(); got != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

// TestRead checks the test binary describes itself: not stamped, so the
// module's (devel) version or the toolchain's.
func TestRead(t *testing.T) {
	got := Read()
	if got.Module == "" || got.Version == "" || got.Commit == "" || !strings.HasPrefix(got.GoVersion, "go1.") {
		t.Errorf("Read() = %+v", got)
	}
}
