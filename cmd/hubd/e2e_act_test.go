package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

// hubdIn runs the hubd binary with stdin and returns its exit code and
// output.
func hubdIn(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runBinary(t, hubdBinary(t), stdin, args...)
}

// appendArgs is a command line: args, then the flags of hub.
func appendArgs(hub []string, args ...string) []string {
	return append(args, hub...)
}

// mustHubd runs hubd, which must exit 0, and returns its stdout.
func mustHubd(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	code, out, errs := hubdIn(t, stdin, args...)
	if code != 0 || errs != "" {
		t.Fatalf("hubd %v: exit %d\n%s%s", args, code, out, errs)
	}
	return out
}

// texts returns the words of a session's turns, in order, read as who.
func texts(t *testing.T, c *agentsdk.Client, id string) []string {
	t.Helper()
	es, err := c.ReadLog(context.Background(), id, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if agentsdk.IsTurn(e) {
			out = append(out, e.GetFrom()+": "+agentsdk.TextOf(e))
		}
	}
	return out
}

// TestE2EWorkflowFromCLI opens a workflow with a graph file from the
// command line, takes its turns with sessions send (an argument, stdin,
// and a finishing packet) and sees it close as the graph and the packet
// say.
func TestE2EWorkflowFromCLI(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	hub := []string{"--hub", d.addr}
	id := strings.TrimSpace(mustHubd(t, "", appendArgs(hub, "sessions", "open", "--as", "researcher", "--participants", "writer,editor",
		"--auto-accept", "--graph", "../../examples/graphs/pipeline.json", "--label", "run=cli")...))
	s, err := dialAs(t, d.addr, "researcher").GetSession(context.Background(), id)
	if err != nil {
		t.Fatalf("sessions open printed %q: %v", id, err)
	}
	if s.GetMeta().GetType() != agentsdk.TypeWorkflow || s.GetState() != agentsdk.StateOpen || s.GetMeta().GetLabels()["run"] != "cli" ||
		strings.Join(s.GetExpected(), ",") != "researcher" {
		t.Fatalf("opened %v", s.SessionInfo)
	}
	if out := mustHubd(t, "", appendArgs(hub, "sessions", "send", id, "findings", "--as", "researcher")...); out != "sent "+id+" at seq 3\n" {
		t.Errorf("send: %q", out)
	}
	code, _, errs := hubd(t, appendArgs(hub, "sessions", "send", id, "me first", "--as", "editor")...)
	if code != 1 || !strings.HasPrefix(errs, "hubd: sessions send: ") || !strings.HasSuffix(errs, " (OUT_OF_TURN)\n") {
		t.Errorf("send out of turn: exit %d, %q", code, errs)
	}
	mustHubd(t, "a draft\nin two lines\n", appendArgs(hub, "sessions", "send", id, "--as", "writer")...)
	out := mustHubd(t, `{"body":"edited","routing":{"kind":"finish","reason":"approved"}}`,
		appendArgs(hub, "sessions", "send", id, "-", "--packet", "--as", "editor")...)
	if out != "sent "+id+" at seq 5; the session closed: approved\n" {
		t.Errorf("the finishing packet: %q", out)
	}
	want := "researcher: findings|writer: a draft\nin two lines|editor: edited"
	if got := strings.Join(texts(t, dialAs(t, d.addr, "researcher"), id), "|"); got != want {
		t.Errorf("turns %q, want %q", got, want)
	}
}

// TestE2EConversationFromCLI opens a conversation without timers, takes
// turns, and closes it as an operator, as a session left behind by an
// interrupted run would be closed.
func TestE2EConversationFromCLI(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	hub := []string{"--hub", d.addr}
	out := mustHubd(t, "", appendArgs(hub, "sessions", "open", "--as", "alice", "--type", "conversation", "--participants", "bob",
		"--auto-accept", "--expect", "none", "--knob", `context={"topic":"deploy"}`, "--json")...)
	info := &hubpb.SessionInfo{}
	if err := hubpb.UnmarshalJSON([]byte(out), info); err != nil {
		t.Fatalf("sessions open --json: %v\n%s", err, out)
	}
	id := info.GetMeta().GetSessionId()
	if info.GetMeta().GetType() != agentsdk.TypeConversation || len(info.GetMeta().GetExpectations()) != 0 ||
		info.GetContext()["topic"].GetStringValue() != "deploy" || info.GetState() != agentsdk.StateOpen {
		t.Fatalf("opened %v", info)
	}
	mustHubd(t, "", appendArgs(hub, "sessions", "send", id, "deploy now?", "--as", "alice")...)
	mustHubd(t, "not yet\n", appendArgs(hub, "sessions", "send", id, "--as", "bob")...)
	code, _, errs := hubd(t, appendArgs(hub, "sessions", "close", id, "--as", "bob")...)
	if code != 1 || !strings.HasSuffix(errs, "(PERMISSION_DENIED)\n") {
		t.Errorf("close by a participant not its creator: exit %d, %q", code, errs)
	}
	if out := mustHubd(t, "", appendArgs(hub, "sessions", "close", id, "--reason", "abandoned")...); out != "closed "+id+" at seq 5: abandoned\n" {
		t.Errorf("close as the operator: %q", out)
	}
	code, _, errs = hubd(t, appendArgs(hub, "sessions", "close", id)...)
	if code != 1 || !strings.HasSuffix(errs, "(SESSION_CLOSED)\n") {
		t.Errorf("close of a closed session: exit %d, %q", code, errs)
	}
	if got := strings.Join(texts(t, dialAs(t, d.addr, "alice"), id), "|"); got != "alice: deploy now?|bob: not yet" {
		t.Errorf("turns %q", got)
	}
	s, err := dialAs(t, d.addr, "alice").GetSession(context.Background(), id)
	if err != nil || s.GetState() != agentsdk.StateClosed || s.GetCloseReason() != "abandoned" {
		t.Errorf("after the close: %v %v", s, err)
	}
}

// TestE2ETasksCancel cancels a background delegation's child from the
// command line: its result reaches the parent; a second cancel says it is
// over; a session that was not delegated and a caller that may not read
// the child are refused.
func TestE2ETasksCancel(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	hub := []string{"--hub", d.addr}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alice := dialAs(t, d.addr, "alice")
	parent, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := alice.Delegate(ctx, parent.ID(), agentsdk.DelegateOptions{Mode: agentsdk.ModeBackground,
		Children: []agentsdk.OpenOptions{{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("carol"), Task: "look into it"}}})
	if err != nil {
		t.Fatal(err)
	}
	child := tasks[0].ID
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"tasks", "cancel", parent.ID(), "--as", "alice"}, "hubd: tasks cancel: session " + parent.ID() + " is not a delegated task (it has no parent): close it with hubd sessions close\n"},
		{[]string{"tasks", "cancel", child, "--as", "bob"}, "(PERMISSION_DENIED)\n"},
		{[]string{"tasks", "cancel", child, "--as", "carol"}, "(PERMISSION_DENIED)\n"},
	} {
		code, out, errs := hubd(t, appendArgs(hub, tc.args...)...)
		if code != 1 || out != "" || !strings.HasSuffix(errs, tc.err) {
			t.Errorf("hubd %v: exit %d, %q %q; want exit 1, stderr ending %q", tc.args, code, out, errs, tc.err)
		}
	}
	if out := mustHubd(t, "", appendArgs(hub, "tasks", "cancel", child, "--as", "alice")...); out != "cancelled "+child+" (its result is in "+parent.ID()+")\n" {
		t.Errorf("tasks cancel: %q", out)
	}
	st, err := tasks[0].Poll(ctx)
	if err != nil || st.State != agentsdk.TaskCancelled || st.Result.GetReason() != agentsdk.CancelReason {
		t.Errorf("after tasks cancel the task is %+v (%v)", st, err)
	}
	if out := mustHubd(t, "", appendArgs(hub, "tasks", "cancel", child)...); out != child+" was over already: CLOSED cancelled\n" {
		t.Errorf("a second tasks cancel: %q", out)
	}
}

// TestE2EActMistakes checks the new commands' mistakes on the command
// line and in their input: exit 2, before any hub is dialed (the hub
// given is down), and a hub that is down for a right command: exit 3.
func TestE2EActMistakes(t *testing.T) {
	hubdBinary(t)
	down := closedPort(t)
	const id = "0190d1a0-0000-7000-8000-000000000000"
	for _, tc := range []struct {
		stdin string
		args  []string
		code  int
		err   string
	}{
		{"", []string{"sessions", "send"}, 2, "hubd: sessions send: want ID [TEXT] [--packet], got 0 arguments"},
		{"", []string{"sessions", "send", id, "a", "b"}, 2, "hubd: sessions send: want ID [TEXT], got 3 arguments (quote the text"},
		{"", []string{"sessions", "send", id}, 2, "hubd: sessions send: the text is empty"},
		{"\n", []string{"sessions", "send", id}, 2, "hubd: sessions send: the text is empty"},
		{"", []string{"sessions", "send", id, "{bad", "--packet"}, 2, "hubd: sessions send: --packet: not a packet"},
		{"", []string{"sessions", "send", id, `{"bogus":1}`, "--packet"}, 2, "hubd: sessions send: --packet: not a packet"},
		{"", []string{"sessions", "close"}, 2, "hubd: sessions close: want ID [--reason R], got 0 arguments"},
		{"", []string{"sessions", "close", id, "extra"}, 2, "want ID [--reason R], got 2 arguments"},
		{"", []string{"tasks", "cancel"}, 2, "hubd: tasks cancel: want ID ..., got 0 arguments"},
		{"", []string{"tasks", "frob"}, 2, `hubd: tasks: unknown command "frob" (want cancel; see hubd tasks --help)`},
		{"", []string{"sessions", "open", "x"}, 2, `hubd: sessions open: unexpected argument "x"`},
		{"", []string{"sessions", "open", "--expect", "turn_within=5m"}, 2, "want NAME=DURATION:ACTION"},
		{"", []string{"sessions", "open", "--expect", "soon=5m:warn"}, 2, `unknown expectation "soon"`},
		{"", []string{"sessions", "open", "--expect", "turn_within=5m:shout"}, 2, `unknown action "shout"`},
		{"", []string{"sessions", "open", "--expect", "turn_within=later:warn"}, 2, `"later" is not a duration`},
		{"", []string{"sessions", "open", "--knob", "nokey"}, 2, "want k=VALUE"},
		{"", []string{"sessions", "open", "--knob", "a=1", "--knob", "a=2"}, 2, `knob "a" given twice`},
		{"", []string{"sessions", "open", "--graph", "../../examples/graphs/nope.json"}, 2, "hubd: sessions open: --graph open ../../examples/graphs/nope.json: no such file"},
		{"", []string{"sessions", "open", "--graph", "../../examples/graphs/pipeline.jsonl"}, 2, "hubd: sessions open: --graph ../../examples/graphs/pipeline.jsonl: "},
		{"", []string{"sessions", "open", "--graph", "../../examples/graphs/pipeline.json", "--knob", "graph={}"}, 2, "give the graph twice"},
		{"", []string{"sessions", "open", "--participants", "bob"}, 3, "hubd: sessions open: cannot reach hubd at " + down + ": connection refused"},
		{"hi", []string{"sessions", "send", id}, 3, "hubd: sessions send: cannot reach hubd at " + down},
		{"", []string{"sessions", "close", id}, 3, "hubd: sessions close: cannot reach hubd at " + down},
		{"", []string{"tasks", "cancel", id}, 3, "hubd: tasks cancel: cannot reach hubd at " + down},
	} {
		code, out, errs := hubdIn(t, tc.stdin, append(tc.args, "--hub", down)...)
		if code != tc.code || out != "" || !strings.HasPrefix(errs, "hubd: ") || !strings.Contains(errs, tc.err) {
			t.Errorf("hubd %v: exit %d, stdout %q, stderr %q; want exit %d, stderr with %q", tc.args, code, out, errs, tc.code, tc.err)
		}
	}
}

// TestE2EActRefusals checks refusals by the hub of the new commands: exit
// 1 with the hub's stable reason.
func TestE2EActRefusals(t *testing.T) {
	d := startDaemon(t, t.TempDir(), "")
	const unknown = "0190d1a0-0000-7000-8000-000000000000"
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"sessions", "open", "--type", "chat", "--participants", "bob"}, "(UNKNOWN_SESSION_TYPE)\n"},
		{[]string{"sessions", "open", "--type", "conversation"}, "(MALFORMED)\n"},
		{[]string{"sessions", "open", "--graph", "../../examples/graphs/pipeline.json", "--participants", "writer"}, `initial_speaker: "researcher" is not a participant (participants: operator, writer) (INVALID_GRAPH)` + "\n"},
		{[]string{"sessions", "open", "--participants", "bob", "--parent", unknown}, "(UNKNOWN_SESSION)\n"},
		{[]string{"sessions", "send", unknown, "hi"}, "hubd: sessions send: no session " + unknown + " (UNKNOWN_SESSION)\n"},
		{[]string{"sessions", "send", "nope", "hi"}, "(MALFORMED)\n"},
		{[]string{"sessions", "close", unknown}, "hubd: sessions close: no session " + unknown + " (UNKNOWN_SESSION)\n"},
		{[]string{"tasks", "cancel", unknown}, "hubd: tasks cancel: no session " + unknown + " (UNKNOWN_SESSION)\n"},
	} {
		code, out, errs := hubd(t, append(tc.args, "--hub", d.addr)...)
		if code != 1 || out != "" || !strings.HasSuffix(errs, tc.err) || strings.Count(errs, "\n") != 1 {
			t.Errorf("hubd %v: exit %d, stdout %q, stderr %q; want exit 1, stderr ending %q", tc.args, code, out, errs, tc.err)
		}
	}
}

// TestE2ESendTerminal: sessions send without TEXT does not wait for a
// person at a terminal to type: stdin is a terminal (a pseudo-terminal,
// made by Python's pty module), so it is a mistake, exit 2.
func TestE2ESendTerminal(t *testing.T) {
	bin := hubdBinary(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 makes the pseudo-terminal: not installed")
	}
	prog := `import pty, subprocess, sys
m, s = pty.openpty()
p = subprocess.run(sys.argv[1:], stdin=s, capture_output=True, text=True, timeout=60)
sys.stdout.write("%d %s" % (p.returncode, p.stderr))`
	out, err := exec.Command(py, "-c", prog, bin, "sessions", "send", "0190d1a0-0000-7000-8000-000000000000", "--hub", closedPort(t)).CombinedOutput()
	if want := "2 hubd: sessions send: want TEXT, or the text on stdin (see hubd sessions send --help)\n"; err != nil || string(out) != want {
		t.Errorf("send with a terminal on stdin: %v, %q; want %q", err, out, want)
	}
}
