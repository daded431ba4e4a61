package main

import (
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/hubd/hubd/agentsdk"
)

// TestE2EForkFromCLI forks a workflow with sessions fork on the real
// binary: the fork continues from the chosen seq with its context edits
// and chosen speaker, the source is unchanged, the audit's replay of the
// fork equals its live state, a restart rebuilds it, and the refusals
// name what was expected.
func TestE2EForkFromCLI(t *testing.T) {
	data := t.TempDir()
	d := startDaemon(t, data, "")
	hub := []string{"--hub", d.addr}
	id := strings.TrimSpace(mustHubd(t, "", appendArgs(hub, "sessions", "open", "--as", "researcher", "--participants", "writer,editor",
		"--auto-accept", "--graph", "../../examples/graphs/pipeline.json", "--label", "run=fork")...))
	mustHubd(t, "", appendArgs(hub, "sessions", "send", id, "findings", "--as", "researcher")...)
	mustHubd(t, "", appendArgs(hub, "sessions", "send", id, "a draft", "--as", "writer")...)

	fork := strings.TrimSpace(mustHubd(t, "", appendArgs(hub, "sessions", "fork", id, "--at", "3", "--as", "editor",
		"--set", `tone="formal"`, "--set", "draft=2", "--next", "researcher", "--label", "try=2")...))
	ed := dialAs(t, d.addr, "editor")
	f, err := ed.GetSession(context.Background(), fork)
	if err != nil {
		t.Fatalf("sessions fork printed %q: %v", fork, err)
	}
	labels := f.GetMeta().GetLabels()
	if f.GetState() != agentsdk.StateOpen || labels["forked_from"] != id || labels["run"] != "fork" || labels["try"] != "2" ||
		strings.Join(f.GetExpected(), ",") != "researcher" || f.GetSeq() != 1 || f.GetTurn() != 1 {
		t.Fatalf("the fork: %v", f.SessionInfo)
	}
	var tone string
	var draft int
	if err := agentsdk.Decode(f.GetContext()["tone"], &tone); err != nil || tone != "formal" {
		t.Errorf("tone %q (%v)", tone, err)
	}
	if err := agentsdk.Decode(f.GetContext()["draft"], &draft); err != nil || draft != 2 {
		t.Errorf("draft %d (%v)", draft, err)
	}
	if out := mustHubd(t, "", appendArgs(hub, "sessions", "send", fork, "more findings", "--as", "researcher")...); out != "sent "+fork+" at seq 2\n" {
		t.Errorf("a turn in the fork: %q", out)
	}
	src, err := ed.GetSession(context.Background(), id)
	if err != nil || src.GetSeq() != 4 || strings.Join(src.GetExpected(), ",") != "editor" {
		t.Errorf("the source after the fork: %v %v", src, err)
	}
	if code, out, errs := hubd(t, appendArgs(hub, "sessions", "replay", fork)...); code != 0 || !strings.HasSuffix(out, "the replay equals the live state\n") {
		t.Errorf("sessions replay of the fork: exit %d\n%s%s", code, out, errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sessions", "fork", id, "--at", "9", "--as", "editor"}, "fork at a seq from 1 to 4 (MALFORMED)\n"},
		{[]string{"sessions", "fork", id, "--at", "2", "--as", "mallory"}, "not a participant of session " + id + " and may not fork it (PERMISSION_DENIED)\n"},
		{[]string{"sessions", "fork", id, "--at", "2", "--as", "editor", "--next", "mallory"}, "(MALFORMED)\n"},
	} {
		code, _, errs := hubd(t, appendArgs(hub, c.args...)...)
		if code != 1 || !strings.HasPrefix(errs, "hubd: sessions fork: ") || !strings.HasSuffix(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want ...%q", c.args, code, errs, c.want)
		}
	}
	if code, _, errs := hubd(t, appendArgs(hub, "sessions", "fork", id, "--as", "editor")...); code != 2 || !strings.Contains(errs, "--at SEQ is required") {
		t.Errorf("sessions fork without --at: exit %d, %q", code, errs)
	}

	d.stop(syscall.SIGKILL)
	d = startDaemon(t, data, "")
	again, err := dialAs(t, d.addr, "editor").GetSession(context.Background(), fork)
	if err != nil || again.GetSeq() != 2 || strings.Join(again.GetExpected(), ",") != "writer" || again.GetTurn() != 2 {
		t.Fatalf("the fork after kill -9: %v %v", again, err)
	}
	if code, out, errs := hubd(t, "sessions", "replay", fork, "--hub", d.addr); code != 0 || !strings.HasSuffix(out, "the replay equals the live state\n") {
		t.Errorf("sessions replay of the fork after a restart: exit %d\n%s%s", code, out, errs)
	}
}
