package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/wiretest"
)

// TestE2EFrontDoor runs the binary as a newcomer would: help, version,
// flags after arguments, and an error that keeps the hub's reason.
func TestE2EFrontDoor(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	for _, args := range [][]string{{"--help"}, {"help"}, {"sessions", "--help"}, {"graph", "--help"}, {"log", "--help"}, {"tasks", "--help"}, {"completion", "--help"}} {
		code, out, errs := hubd(t, args...)
		if code != 0 || errs != "" || !strings.Contains(out, "hubd "+strings.TrimSuffix(args[0], "--help")) || !strings.Contains(out, "usage") {
			t.Errorf("hubd %v: exit %d\n%s%s", args, code, out, errs)
		}
	}
	code, out, _ := hubd(t, "version")
	if code != 0 || !regexp.MustCompile(`^module:  github.com/hubd/hubd \S+\ncommit:  ([0-9a-f]{40} .*|unknown)\ngo:      go1\.\S+ \S+/\S+\n$`).MatchString(out) {
		t.Errorf("hubd version: exit %d\n%s", code, out)
	}
	id := wiretest.Pipeline(t, devClient(t, d.addr, "alice"))
	code, out, errs := hubd(t, "sessions", "show", id, "--hub", d.addr, "--as", "bob", "--json")
	info := &hubpb.SessionInfo{}
	if err := hubpb.UnmarshalJSON([]byte(out), info); code != 0 || err != nil || info.GetMeta().GetSessionId() != id {
		t.Errorf("sessions show ID --hub ADDR: exit %d, %v\n%s%s", code, err, out, errs)
	}
	const unknown = "0190d1a0-0000-7000-8000-000000000000"
	code, _, errs = hubd(t, "sessions", "show", unknown, "--hub", d.addr)
	if want := "hubd: sessions show: no session " + unknown + " (UNKNOWN_SESSION)\n"; code != 1 || errs != want {
		t.Errorf("unknown session: exit %d, stderr %q; want exit 1, %q", code, errs, want)
	}
	code, _, errs = hubd(t, "graph", "validate", "examples/graphs/nope.json")
	if code != 2 || !strings.HasPrefix(errs, "hubd: open examples/graphs/nope.json:") {
		t.Errorf("missing graph: exit %d, stderr %q", code, errs)
	}
}

// TestE2EVersionVCS builds hubd with -buildvcs=false (the commit is
// "unknown"), in a git checkout with -buildvcs=true (the commit is
// HEAD's), and as a release build stamps it (scripts/release.sh, the
// Dockerfile): the version and commit given to the linker, which win
// over what the toolchain recorded.
func TestE2EVersionVCS(t *testing.T) {
	hubdBinary(t)
	head, err := exec.Command("git", "-C", "../..", "rev-parse", "HEAD").Output()
	const sha = "0123456789abcdef0123456789abcdef01234567"
	stamp := "-ldflags=-X " + buildinfoPkg + ".version=v9.8.7 -X " + buildinfoPkg + ".commit=" + sha + "-dirty"
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"-buildvcs=false"}, "\ncommit:  unknown\n"},
		{[]string{"-buildvcs=true"}, "\ncommit:  " + strings.TrimSpace(string(head)) + " "},
		{[]string{"-buildvcs=false", stamp}, "module:  github.com/hubd/hubd v9.8.7\ncommit:  " + sha + " (modified)\n"},
	} {
		if tc.flags[0] == "-buildvcs=true" {
			if err != nil {
				t.Logf("not a git checkout (%v): the commit of a VCS build is not checked", err)
				continue
			}
			if fi, err := os.Stat("../../.git"); err == nil && !fi.IsDir() {
				t.Logf("a git worktree (.git is a file): the go command records no VCS information there, the commit of a VCS build is not checked")
				continue
			}
		}
		bin := filepath.Join(t.TempDir(), "hubd")
		if err := goBuild(bin, "./cmd/hubd", tc.flags...); err != nil {
			t.Fatal(err)
		}
		code, out, _ := runBinary(t, bin, "", "version")
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("version built with %q: exit %d\n%s\nwant it to contain\n%s", tc.flags, code, out, tc.want)
		}
	}
}

// logLines returns the JSON log lines of a daemon with the given message.
func (d *daemon) logLines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(d.log()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["message"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// TestE2EDaemonLog checks what hubd says: one listening line, durations
// with units, sessions opened and closed at info, and with --log-level
// debug every envelope and every refused send besides.
func TestE2EDaemonLog(t *testing.T) {
	for _, level := range []string{"info", "debug"} {
		t.Run(level, func(t *testing.T) {
			d := startDaemon(t, t.TempDir(), "", "--log-level", level)
			ctx := context.Background()
			id := wiretest.Pipeline(t, devClient(t, d.addr, "alice"))
			bob := devClient(t, d.addr, "bob")
			if _, err := bob.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: wiretest.Text("me first")}); err == nil {
				t.Fatal("bob spoke out of turn")
			}
			if _, err := devClient(t, d.addr, "alice").Close(ctx, &hubpb.CloseRequest{SessionId: id, Reason: "enough"}); err != nil {
				t.Fatal(err)
			}
			d.stop(syscall.SIGTERM)
			if n := len(regexp.MustCompile(`(?m)^.*listen.*$`).FindAllString(d.log(), -1)); n != 1 {
				t.Errorf("%d lines say where hubd listens, want 1:\n%s", n, d.log())
			}
			if took, _ := d.logLines(t, "hydrated")[0]["took"].(string); !regexp.MustCompile(`^[0-9.]+(ns|µs|ms|s)$`).MatchString(took) {
				t.Errorf("hydrated took %q, want a duration with its unit", took)
			}
			want := map[string]int{"session opened": 1, "session closed": 1, "send rejected": 0, "envelope accepted": 0}
			if level == "debug" {
				want["send rejected"], want["envelope accepted"] = 1, 3 // invite, opened, closed
			}
			for msg, n := range want {
				if got := d.logLines(t, msg); len(got) != n {
					t.Errorf("%d %q lines, want %d", len(got), msg, n)
				}
			}
			if closed := d.logLines(t, "session closed"); len(closed) == 1 && (closed[0]["session"] != id || closed[0]["reason"] != "enough") {
				t.Errorf("session closed line %v", closed[0])
			}
			if rej := d.logLines(t, "send rejected"); len(rej) == 1 && (rej[0]["agent"] != "bob" || rej[0]["reason"] != "OUT_OF_TURN" || rej[0]["session"] != id) {
				t.Errorf("send rejected line %v", rej[0])
			}
		})
	}
}

// TestE2ETailLive follows an open session with sessions tail, as a
// timeline and as JSON lines at once: each prints each envelope as it is
// accepted, and exits 0 when the session closes.
func TestE2ETailLive(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	ctx := context.Background()
	alice := devClient(t, d.addr, "alice")
	id := wiretest.Pipeline(t, alice)
	text, jsonl := startTail(t, id, "--hub", d.addr), startTail(t, id, "--hub", d.addr, "--json")
	next := func() *hubpb.Envelope {
		t.Helper()
		e := &hubpb.Envelope{}
		if err := hubpb.UnmarshalJSON([]byte(jsonl.line()), e); err != nil {
			t.Fatalf("tail --json: %v", err)
		}
		return e
	}
	for _, want := range []string{"session_invite", "session_opened"} {
		if e := next(); e.GetType() != want {
			t.Fatalf("tail printed %v, want %s", e, want)
		}
	}
	for _, want := range []string{"[1] invite (all participants auto-accept)", "[2] session opened"} {
		if got := text.line(); got != want {
			t.Fatalf("tail printed %q, want %q", got, want)
		}
	}
	if _, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: wiretest.Text("live")}); err != nil {
		t.Fatal(err)
	}
	if e := next(); e.GetSeq() != 3 || e.GetText().GetText() != "live" {
		t.Fatalf("tail printed %v, want alice's text", e)
	}
	if got := text.line(); got != "[3] alice: live" {
		t.Fatalf("tail printed %q, want alice's text", got)
	}
	if _, err := alice.Close(ctx, &hubpb.CloseRequest{SessionId: id, Reason: "seen"}); err != nil {
		t.Fatal(err)
	}
	if e := next(); e.GetType() != "session_closed" || e.GetEnded().GetReason() != "seen" {
		t.Fatalf("tail printed %v, want the close", e)
	}
	if got := text.line(); got != "[4] session closed: seen" {
		t.Fatalf("tail printed %q, want the close", got)
	}
	text.end()
	jsonl.end()
}

// tailProc is a running hubd sessions tail.
type tailProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	lines *bufio.Scanner
}

// startTail starts hubd sessions tail id with args.
func startTail(t *testing.T, id string, args ...string) *tailProc {
	t.Helper()
	cmd := exec.Command(hubdBinary(t), append([]string{"sessions", "tail", id}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &tailProc{t: t, cmd: cmd, lines: bufio.NewScanner(out)}
}

// line returns the next line the tail prints.
func (p *tailProc) line() string {
	p.t.Helper()
	if !p.lines.Scan() {
		p.t.Fatalf("tail %v ended early: %v", p.cmd.Args, p.lines.Err())
	}
	return p.lines.Text()
}

// end checks the tail prints nothing more and exits 0.
func (p *tailProc) end() {
	p.t.Helper()
	if p.lines.Scan() {
		p.t.Errorf("tail %v printed past the close: %s", p.cmd.Args, p.lines.Text())
	}
	if err := p.cmd.Wait(); err != nil {
		p.t.Errorf("tail %v after the close: %v", p.cmd.Args, err)
	}
}
