package main

import (
	"context"
	"flag"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
	"github.com/hubd/hubd/internal/exitcode"
)

// TestHelp checks every way of asking for help: exit 0, the text on
// stdout, naming the commands and flags asked about.
func TestHelp(t *testing.T) {
	top := []string{"usage:", "hubd sessions show ID", "hubd sessions open [--type T]", "hubd sessions send ID [TEXT] [--packet]",
		"hubd sessions close ID [--reason R]", "hubd tasks cancel ID ...", "hubd completion bash|zsh|fish",
		"hubd graph simulate --graph FILE", "hubd log verify", "hubd version", "[$HUBD_HUB]", "[$HUBD_MAX_DEPTH]",
		"client flags", "-hub address", "serve flags:", "-listen address", "-log-level level", "before or after the arguments"}
	sessions := []string{"usage: hubd sessions COMMAND", "hubd sessions list [--state S]", "hubd sessions tail ID [--from N]", "-tls-ca file", "-token token"}
	graph := []string{"usage: hubd graph COMMAND", "hubd graph validate [--participants a,b,c] FILE", "hubd graph render FILE", "hubd graph simulate"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, top},
		{[]string{"-h"}, top},
		{[]string{"-help"}, top},
		{[]string{"help"}, top},
		{[]string{"sessions", "--help"}, sessions},
		{[]string{"sessions", "help"}, sessions},
		{[]string{"help", "sessions"}, sessions},
		{[]string{"graph", "--help"}, graph},
		{[]string{"help", "graph"}, graph},
		{[]string{"log", "--help"}, []string{"usage: hubd log COMMAND", "hubd log verify [--data DIR]", "hubd log migrate"}},
		{[]string{"help", "log"}, []string{"hubd log verify"}},
		{[]string{"sessions", "show", "--help"}, []string{"usage: hubd sessions show ID\n", "in words", "-output format", "-json", "-hub address", "-as name"}},
		{[]string{"sessions", "list", "-h"}, []string{"-state state", "-label k=v"}},
		{[]string{"help", "sessions", "tail"}, []string{"usage: hubd sessions tail ID [--from N]", "-from seq", "-timestamps", "-output format"}},
		{[]string{"graph", "simulate", "--help"}, []string{"usage: hubd graph simulate --graph FILE", "-max-handoffs"}},
		{[]string{"help", "graph", "validate"}, []string{"-participants"}},
		{[]string{"serve", "--help"}, []string{"usage: hubd serve [flags]", "-data directory", "-tokens file"}},
		{[]string{"help", "serve"}, []string{"-listen address"}},
		{[]string{"--listen", "127.0.0.1:0", "--help"}, []string{"usage: hubd serve"}},
		{[]string{"version", "--help"}, []string{"usage: hubd version", "Go version"}},
		{[]string{"help", "version"}, []string{"usage: hubd version"}},
		{[]string{"tasks", "--help"}, []string{"usage: hubd tasks COMMAND", "hubd tasks cancel ID ...", "-hub address"}},
		{[]string{"help", "tasks", "cancel"}, []string{"usage: hubd tasks cancel ID ...", "-json", "[$HUBD_TOKEN]"}},
		{[]string{"sessions", "open", "--help"}, []string{"usage: hubd sessions open", "-graph file", "-expect NAME=DURATION:ACTION",
			"-knob k=VALUE", "-participants names", "-auto-accept", "-label k=v", "-type type", "-json"}},
		{[]string{"help", "sessions", "send"}, []string{"usage: hubd sessions send ID [TEXT] [--packet]", "-packet", "-client-msg-id key"}},
		{[]string{"sessions", "close", "-h"}, []string{"usage: hubd sessions close ID [--reason R]", "-reason string"}},
		{[]string{"completion", "--help"}, []string{"usage: hubd completion bash|zsh|fish", "source <(hubd completion bash)", "completions/hubd.fish"}},
		{[]string{"help", "completion"}, []string{"usage: hubd completion"}},
	} {
		code, out, errs := runCmd(t, "", tc.args...)
		if code != 0 || errs != "" {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errs)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: help lacks %q:\n%s", tc.args, w, out)
			}
		}
	}
}

// TestHelpMistakes checks a group without a command, an unknown command,
// a bad flag and a wrong argument count: exit 2 and a message that says
// where to look.
func TestHelpMistakes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  []string
	}{
		{[]string{"sessions"}, []string{"usage: hubd sessions COMMAND", "hubd: sessions: want a command\n"}},
		{[]string{"graph"}, []string{"hubd graph render FILE", "hubd: graph: want a command\n"}},
		{[]string{"tasks"}, []string{"usage: hubd tasks COMMAND", "hubd: tasks: want a command\n"}},
		{[]string{"sessions", "frob"}, []string{`hubd: sessions: unknown command "frob" (want list, show, tail, export, tree, replay, open, send, close, fork, steer, purge, erase, import; see hubd sessions --help)`}},
		{[]string{"help", "frob"}, []string{`hubd: unknown command "frob" (see hubd --help)`}},
		{[]string{"help", "graph", "frob"}, []string{`unknown command "frob"`}},
		{[]string{"sessions", "show"}, []string{"hubd: sessions show: want ID, got 0 arguments (see hubd sessions show --help)"}},
		{[]string{"sessions", "show", "a", "b"}, []string{"want ID, got 2 arguments"}},
		{[]string{"sessions", "list", "x"}, []string{`hubd: sessions list: unexpected argument "x" (see hubd sessions list --help)`}},
		{[]string{"sessions", "list", "--nope"}, []string{"hubd: sessions list: flag provided but not defined: -nope (see hubd sessions list --help)\n"}},
		{[]string{"sessions", "list", "--label", "nokey"}, []string{"want k=v"}},
		{[]string{"sessions", "list", "--as", ""}, []string{"want --as NAME or --token TOKEN"}},
		{[]string{"version", "extra"}, []string{`version: unexpected argument "extra"`}},
	} {
		code, out, errs := runCmd(t, "", tc.args...)
		if code != 2 || out != "" {
			t.Errorf("%v: exit %d, stdout %q; want exit 2, nothing on stdout", tc.args, code, out)
		}
		for _, w := range tc.err {
			if !strings.Contains(errs, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, errs)
			}
		}
	}
}

// TestParseFlagsInterleaved checks flags before, between and after the
// positional arguments, and "--".
func TestParseFlagsInterleaved(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		hub, pos string
		n        uint64
	}{
		{[]string{"ID"}, "", "ID", 0},
		{[]string{"ID", "--hub", "h:1"}, "h:1", "ID", 0},
		{[]string{"--hub", "h:1", "ID"}, "h:1", "ID", 0},
		{[]string{"--hub=h:1", "a", "--from", "3", "b"}, "h:1", "a b", 3},
		{[]string{"a", "-from=4", "b", "--hub", "h:2", "c"}, "h:2", "a b c", 4},
		{[]string{"a", "--", "--hub", "x"}, "", "a --hub x", 0},
		{[]string{"--", "-a"}, "", "-a", 0},
		{[]string{"-", "--from", "1"}, "", "-", 1},
		{nil, "", "", 0},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		hub := fs.String("hub", "", "")
		from := fs.Uint64("from", 0, "")
		if err := parseFlags(fs, tc.args); err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if *hub != tc.hub || *from != tc.n || strings.Join(fs.Args(), " ") != tc.pos {
			t.Errorf("%q: hub %q from %d args %q; want %q %d %q", tc.args, *hub, *from, fs.Args(), tc.hub, tc.n, tc.pos)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := parseFlags(fs, []string{"a", "--nope"}); err == nil || !strings.Contains(err.Error(), "-nope") {
		t.Errorf("an unknown flag after an argument: %v", err)
	}
}

// TestVersionCommand checks "hubd version" prints the build's description
// (its forms: internal/buildinfo's tests).
func TestVersionCommand(t *testing.T) {
	code, out, _ := runCmd(t, "", "version")
	if code != 0 || !strings.HasPrefix(out, "module:  ") || !strings.Contains(out, "\ngo:      go1.") {
		t.Errorf("hubd version: exit %d\n%s", code, out)
	}
}

// TestClientErrors checks that a refused call prints the command, the
// hub's message and its stable reason, and exits 1; a hub that cannot be
// reached exits 3.
func TestClientErrors(t *testing.T) {
	h := hubtest.New(t)
	ctx := context.Background()
	alice, err := agentsdk.Dial(ctx, h.Addr(), agentsdk.Options{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	const unknown = "0190d1a0-0000-7000-8000-000000000000"
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"sessions", "show", unknown}, "hubd: sessions show: no session " + unknown + " (UNKNOWN_SESSION)\n"},
		{[]string{"sessions", "tail", unknown, "--from", "2"}, "hubd: sessions tail: no session " + unknown + " (UNKNOWN_SESSION)\n"},
		{[]string{"sessions", "export", unknown}, "hubd: sessions export: no session " + unknown + " (UNKNOWN_SESSION)\n"},
		{[]string{"sessions", "show", "nope"}, "(MALFORMED)\n"},
		{[]string{"sessions", "show", s.ID(), "--as", "mallory"}, "hubd: sessions show: \"mallory\" is not a participant of session " + s.ID() + " and may not read it (PERMISSION_DENIED)\n"},
		{[]string{"sessions", "list", "--state", "DONE"}, "(MALFORMED)\n"},
	} {
		code, out, errs := runCmd(t, "", append(tc.args, "--hub", h.Addr())...)
		if code != 1 || out != "" || !strings.HasSuffix(errs, tc.err) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1, stderr ending %q", tc.args, code, out, errs, tc.err)
		}
	}
	code, _, errs := runCmd(t, "", "sessions", "list", "--hub", "127.0.0.1:1", "--connect-timeout", "200ms")
	if code != 3 || errs != "hubd: sessions list: cannot reach hubd at 127.0.0.1:1: connection refused (is `hubd serve` running?)\n" {
		t.Errorf("no hub: exit %d, stderr %q", code, errs)
	}
}

// TestCallErrorCodes checks the exit code of a failed call: a refusal
// with the hub's stable reason exits 1 (DRAINING too: the hub answered),
// a hub gRPC could not reach during the call (Unavailable, no reason)
// exits 3.
func TestCallErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		err  *agentsdk.Error
		code int
		out  string
	}{
		{&agentsdk.Error{Op: "list", Code: codes.Unavailable, Message: "connection refused"}, 3, "hubd: sessions list: connection refused (Unavailable)\n"},
		{&agentsdk.Error{Op: "list", Code: codes.Unavailable, Reason: "DRAINING", Message: "the hub is stopping"}, 1, "hubd: sessions list: the hub is stopping (DRAINING)\n"},
		{&agentsdk.Error{Op: "get", Code: codes.NotFound, Reason: "UNKNOWN_SESSION", Message: "no session x"}, 1, "hubd: sessions list: no session x (UNKNOWN_SESSION)\n"},
	} {
		var b strings.Builder
		if code := exitcode.Report("hubd", wrapCall("sessions list", tc.err), &b); code != tc.code || b.String() != tc.out {
			t.Errorf("%v: exit %d, %q; want %d, %q", tc.err, code, b.String(), tc.code, tc.out)
		}
	}
}
