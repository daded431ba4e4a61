package main

import (
	"encoding/json"
	"flag"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// buildinfoPkg is the package whose variables a release build stamps
// with -ldflags -X (internal/buildinfo).
const buildinfoPkg = "github.com/hubd/hubd/internal/buildinfo"

// TestReleaseStamps checks that scripts/release.sh and the Dockerfile
// stamp the version and the commit into internal/buildinfo's variables
// (TestE2EVersionVCS shows a binary stamped so prints them): the linker
// ignores a -X that names a variable that does not exist, without a word.
func TestReleaseStamps(t *testing.T) {
	want := map[string]bool{buildinfoPkg + ".version": true, buildinfoPkg + ".commit": true}
	for _, file := range []string{"scripts/release.sh", "Dockerfile"} {
		b, err := os.ReadFile("../../" + file)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, m := range regexp.MustCompile(`-X ([^\s="]+)=`).FindAllStringSubmatch(string(b), -1) {
			got[m[1]] = true
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s stamps %v; want %v", file, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
	}
}

// TestE2EDockerfile runs what the container image would run, without a
// container engine: the real hubd with the Dockerfile's ENTRYPOINT and
// CMD, its paths and addresses made local (a data directory, a tokens
// file, a certificate), and the HEALTHCHECK's probe against it.
func TestE2EDockerfile(t *testing.T) {
	hubdBinary(t)
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	ins := dockerInstructions(string(b))
	entry, cmd := execForm(t, ins, "ENTRYPOINT", ""), execForm(t, ins, "CMD", "")
	probe := execForm(t, ins, "HEALTHCHECK", "CMD ")
	if !slices.Equal(entry, []string{"/usr/local/bin/hubd"}) || len(cmd) == 0 || cmd[0] != "serve" || len(probe) < 2 || probe[0] != entry[0] || probe[1] != "health" {
		t.Fatalf("want ENTRYPOINT [\"/usr/local/bin/hubd\"], a CMD serve and a HEALTHCHECK of hubd health; have %q, %q, %q", entry, cmd, probe)
	}
	if vol := strings.Join(ins["VOLUME"], "|"); vol != "/var/lib/hubd" || !slices.Contains(cmd, vol) {
		t.Errorf("VOLUME %q: want the one --data of CMD, /var/lib/hubd", vol)
	}
	if ports := strings.Join(ins["EXPOSE"], "|"); ports != "7420 7421" || !slices.Contains(cmd, "0.0.0.0:7420") || !slices.Contains(cmd, "0.0.0.0:7421") {
		t.Errorf("EXPOSE %q: want the ports of CMD's --listen and --http, 7420 7421", ports)
	}
	checkServeFlags(t, "the Dockerfile's CMD", cmd[1:])
	d := startDaemon(t, t.TempDir(), "", localize(t, cmd[1:])...)
	code, out, errs := hubd(t, append(probe[1:], "--hub", d.addr)...)
	if code != 0 {
		t.Errorf("the HEALTHCHECK %q against the hub CMD starts: exit %d\n%s%s", probe, code, out, errs)
	}
}

// TestE2ESystemdUnit checks the systemd unit of docs/OPERATIONS.md: its
// ExecStart runs (the real hubd with its flags, paths and addresses made
// local, answering a health probe), and systemd-analyze verify finds
// nothing to say about the unit where it is installed (Debian's systemd;
// it needs no running systemd).
func TestE2ESystemdUnit(t *testing.T) {
	bin := hubdBinary(t)
	b, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := codeBlocks(string(b), "ini")
	if len(blocks) != 1 {
		t.Fatalf("docs/OPERATIONS.md has %d ini blocks; want the one systemd unit", len(blocks))
	}
	unit := blocks[0]
	var execStart []string
	for _, line := range strings.Split(strings.ReplaceAll(unit, "\\\n", " "), "\n") {
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			execStart = strings.Fields(v)
		}
	}
	const path = "/usr/local/bin/hubd"
	if len(execStart) < 2 || execStart[0] != path || execStart[1] != "serve" {
		t.Fatalf("ExecStart %q: want %s serve ...", execStart, path)
	}
	checkServeFlags(t, "the unit's ExecStart", execStart[2:])
	d := startDaemon(t, t.TempDir(), "", localize(t, execStart[2:])...)
	if code, out, errs := hubd(t, "health", "--tls", "--hub", d.addr); code != 0 {
		t.Errorf("the hub ExecStart starts does not answer health: exit %d\n%s%s", code, out, errs)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian: apt-get install systemd): the unit file itself is not verified")
	}
	file := filepath.Join(t.TempDir(), "hubd.service")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(unit, path, bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	// verify exits 0 on unknown keys and bad values too: it prints them,
	// prefixed with the unit's name, and ignores them.
	out, err := exec.Command(analyze, "verify", file).CombinedOutput()
	if err != nil || strings.Contains(string(out), "hubd.service") {
		t.Errorf("systemd-analyze verify of the unit in docs/OPERATIONS.md: %v\n%s", err, out)
	}
}

// checkServeFlags checks a documented command line's serve flags as they
// are written, before localize moves them to loopback: serve knows them,
// and starting with them on those addresses is safe (checkSafety: no
// bearer tokens in cleartext beyond loopback).
func checkServeFlags(t *testing.T, what string, args []string) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f serveFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		t.Fatalf("%s %q: %v, arguments %q", what, args, err, fs.Args())
	}
	if err := f.checkSafety(); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

// localize returns the serve flags of a documented command line with its
// addresses on loopback ports of the system's choosing and its files in
// a temporary directory: a tokens file and a self-signed certificate for
// 127.0.0.1. A path or address it does not know fails the test.
func localize(t *testing.T, args []string) []string {
	t.Helper()
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("operator 0123456789abcdef0123 operator\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	local := map[string]string{
		"0.0.0.0:7420": "127.0.0.1:0", "0.0.0.0:7421": "127.0.0.1:0",
		"/var/lib/hubd": filepath.Join(dir, "data"), "/etc/hubd/tokens": tokens,
		"/etc/hubd/tls/cert.pem": cert, "/etc/hubd/tls/key.pem": key,
	}
	out := slices.Clone(args)
	for i, a := range out {
		if l, ok := local[a]; ok {
			out[i] = l
		} else if strings.HasPrefix(a, "/") || strings.Contains(a, ":") {
			t.Fatalf("the documented command line has %q, which this test cannot make local: add it to localize", a)
		}
	}
	return out
}

// dockerInstructions returns a Dockerfile's instructions by name, each
// one's arguments with its continuation lines joined and its comments
// dropped, in order.
func dockerInstructions(df string) map[string][]string {
	ins := map[string][]string{}
	var cur string
	for _, line := range strings.Split(df, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur == "") {
			continue
		}
		cont := strings.HasSuffix(trimmed, "\\")
		cur += strings.TrimSuffix(trimmed, "\\") + " "
		if cont {
			continue
		}
		if name, args, ok := strings.Cut(strings.TrimSpace(cur), " "); ok {
			ins[name] = append(ins[name], strings.TrimSpace(args))
		}
		cur = ""
	}
	return ins
}

// execForm returns the JSON array of the one instruction name, after
// prefix (the HEALTHCHECK's "CMD ", past its options).
func execForm(t *testing.T, ins map[string][]string, name, prefix string) []string {
	t.Helper()
	if len(ins[name]) != 1 {
		t.Fatalf("the Dockerfile has %d %s instructions; want one", len(ins[name]), name)
	}
	s := ins[name][0]
	if prefix != "" {
		_, s, _ = strings.Cut(s, prefix)
	}
	var args []string
	if err := json.Unmarshal([]byte(s), &args); err != nil {
		t.Fatalf("%s %s: want the exec form (a JSON array): %v", name, s, err)
	}
	return args
}
