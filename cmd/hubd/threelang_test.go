package main

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hubd/hubd/hubpb"
)

// threeLangEnv, set to "require", makes TestE2EThreeLanguages fail instead
// of skipping when Python's or TypeScript's SDK cannot run here
// (sdk/threelang/ci.sh sets it, after installing what they need).
const threeLangEnv = "HUBD_THREELANG"

// threeLangScript runs the three agents, stopping them all at the end or
// on SIGINT or SIGTERM.
const threeLangScript = "../../examples/threelang/run.sh"

// TestE2EThreeLanguages runs the triage session of examples/triage against
// one hubd binary twice: with its three agents in Go, then with the router
// in Python (examples/threelang/router.py), the billing specialist in Go
// (examples/threelang/billing) and the tech specialist in TypeScript
// (examples/threelang/tech.ts), each its own process, started by
// examples/threelang/run.sh. The router's transcript (handoffs, the
// reverts to the router, the finish) must be the all-Go one line for line,
// and the two sessions' logs the same envelope for envelope (types,
// senders, payloads, the rule that decided each turn, who was expected
// next), as must their final state. The script leaves no agent running.
func TestE2EThreeLanguages(t *testing.T) {
	python, _, _ := threeLangTools(t)
	d := startDaemon(t, t.TempDir(), "")

	// All Go, first: its session is labelled with its own run, which the
	// three-language agents do not serve.
	triage := buildBinary(t, "./examples/triage")
	code, goOut, errs := runBinary(t, triage, "", "--hub", d.addr)
	if code != 0 {
		t.Fatalf("examples/triage: exit %d\n%s%s", code, goOut, errs)
	}

	// Three languages: the script starts the specialists, then the router,
	// which opens the session and prints it; then it stops the specialists.
	run := fmt.Sprintf("threelang-test-%d", os.Getpid())
	code, out, errs := runBinary(t, threeLangScript, "", "PYTHON="+python, "--hub", d.addr, "--run", run)
	if code != 0 {
		t.Fatalf("run.sh: exit %d\n%s%s", code, out, errs)
	}
	if left := processesWith(t, "--run "+run); len(left) > 0 {
		t.Errorf("run.sh left agents running:\n%s", strings.Join(left, "\n"))
	}
	if out != goOut {
		t.Errorf("the three-language transcript differs from the all-Go one:\n--- three languages\n%s--- all Go\n%s", out, goOut)
	}
	if !strings.HasSuffix(out, "closed: resolved\n") || strings.Count(out, "\n") != 6 {
		t.Errorf("router.py printed:\n%s", out)
	}

	// The logs, as an operator reads them.
	op := devClient(t, d.addr, "operator")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := op.ListSessions(ctx, &hubpb.ListSessionsRequest{State: "CLOSED"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range list.GetSessions() {
		if s.GetMeta().GetType() == "workflow@1" {
			ids = append(ids, s.GetMeta().GetSessionId())
		}
	}
	if len(ids) != 2 {
		t.Fatalf("closed workflow sessions %v, want the all-Go one and the three-language one", ids)
	}
	var logs, states [2][]string
	for i, id := range ids {
		// Replay gives every envelope with who was expected after it; it
		// must also agree with the live state.
		resp, err := op.Replay(ctx, &hubpb.ReplayRequest{SessionId: id})
		if err != nil {
			t.Fatal(err)
		}
		if !resp.GetEqual() {
			t.Errorf("replay of %s differs from live at seq %d: %s", id, resp.GetFirstDifference(), resp.GetDetail())
		}
		for _, st := range resp.GetSteps() {
			logs[i] = append(logs[i], fmt.Sprintf("%s; then expected=%v turn=%d state=%s",
				normalize(st.GetEnvelope()), st.GetExpected(), st.GetTurn(), st.GetState()))
		}
		info, err := op.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
		if err != nil {
			t.Fatal(err)
		}
		states[i] = stateLines(info)
	}
	if !slices.Equal(logs[0], logs[1]) {
		t.Errorf("the logs differ:\n--- all Go\n%s\n--- three languages\n%s", strings.Join(logs[0], "\n"), strings.Join(logs[1], "\n"))
	}
	if !slices.Equal(states[0], states[1]) {
		t.Errorf("the final states differ:\n--- all Go\n%s\n--- three languages\n%s", strings.Join(states[0], "\n"), strings.Join(states[1], "\n"))
	}
	if len(logs[1]) < 10 {
		t.Errorf("the three-language log is short:\n%s", strings.Join(logs[1], "\n"))
	}
}

// normalize is what must match between the runs of an envelope: all but
// its ids, times and session. The two invite acks may come in either
// order, so their sender is left out.
func normalize(e *hubpb.Envelope) string {
	from := e.GetFrom()
	if e.GetType() == "session_invite_ack" {
		from = "(an invitee)"
	}
	s := fmt.Sprintf("%d %s from=%q rule=%q", e.GetSeq(), e.GetType(), from, e.GetRule())
	switch {
	case e.GetText() != nil:
		s += fmt.Sprintf(" text=%q", e.GetText().GetText())
	case e.GetPacket() != nil:
		p := e.GetPacket()
		r := p.GetRouting()
		s += fmt.Sprintf(" body=%q routing=%s/%s/%s/%s/%s", p.GetBody(), r.GetKind(), r.GetTool(), r.GetTarget(), r.GetReason(), r.GetSummary())
		set := p.GetContextUpdates().GetSet()
		for _, k := range slices.Sorted(maps.Keys(set)) {
			v, _ := hubpb.MarshalJSON(set[k])
			s += fmt.Sprintf(" set %s=%s", k, v)
		}
	case e.GetInvite() != nil:
		s += fmt.Sprintf(" invitees=%v", e.GetInvite().GetInvitees())
	case e.GetEnded() != nil:
		s += fmt.Sprintf(" reason=%q", e.GetEnded().GetReason())
	}
	return s
}

// stateLines is a session's final state, without its id and times.
func stateLines(info *hubpb.SessionInfo) []string {
	out := []string{
		"state " + info.GetState(),
		"close " + info.GetCloseReason(),
		fmt.Sprintf("seq %d turn %d", info.GetSeq(), info.GetTurn()),
		fmt.Sprintf("creator %s participants %v", info.GetMeta().GetCreator(), participants(info)),
	}
	for _, k := range slices.Sorted(maps.Keys(info.GetMeta().GetKnobs())) {
		v, _ := hubpb.MarshalJSON(info.GetMeta().GetKnobs()[k])
		out = append(out, fmt.Sprintf("knob %s=%s", k, v)) // the graph the router's SDK built
	}
	for _, k := range slices.Sorted(maps.Keys(info.GetContext())) {
		v, _ := hubpb.MarshalJSON(info.GetContext()[k])
		out = append(out, fmt.Sprintf("context %s=%s", k, v))
	}
	return out
}

func participants(info *hubpb.SessionInfo) []string {
	var out []string
	for _, p := range info.GetMeta().GetParticipants() {
		out = append(out, p.GetName())
	}
	return out
}

// threeLangTools returns Debian's python3 (with grpcio and protobuf), node,
// and sdk/typescript with its agent built (tsc), or skips the test saying
// what is missing (fails instead with HUBD_THREELANG=require).
func threeLangTools(t *testing.T) (python, node, tsDir string) {
	t.Helper()
	hubdBinary(t) // skips with -short
	missing := func(what string) {
		t.Helper()
		msg := "three languages: " + what + "; sdk/threelang/ci.sh installs it and runs this test"
		if os.Getenv(threeLangEnv) == "require" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import grpc, google.protobuf").CombinedOutput(); err != nil {
		missing(fmt.Sprintf("%s cannot import grpc and google.protobuf (apt-get install python3-grpcio python3-protobuf): %v\n%s", python, err, out))
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed (Node.js 20 or later)")
	}
	tsDir, err = filepath.Abs("../../sdk/typescript")
	if err != nil {
		t.Fatal(err)
	}
	tsc := filepath.Join(tsDir, "node_modules", "typescript", "bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		missing("sdk/typescript/node_modules is missing (npm ci in sdk/typescript)")
	}
	for _, project := range []string{"tsconfig.json", "tsconfig.example.json"} {
		cmd := exec.Command(node, tsc, "-p", project)
		cmd.Dir = tsDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("tsc -p %s: %v\n%s", project, err, out)
		}
	}
	return python, node, tsDir
}

// TestE2EThreeLanguagesStop: SIGTERM to examples/threelang/run.sh while its
// three agents run stops all three at once. They are kept waiting by a
// listener that never answers (each would give up by itself after 10 s).
func TestE2EThreeLanguagesStop(t *testing.T) {
	python, _, _ := threeLangTools(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	run := fmt.Sprintf("threelang-stop-%d", os.Getpid())
	cmd := exec.Command(threeLangScript, "--hub", ln.Addr().String(), "--run", run)
	cmd.Env = append(os.Environ(), "PYTHON="+python)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		for _, line := range processesWith(t, "--run "+run) {
			if pid, err := strconv.Atoi(strings.Fields(line)[0]); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}()

	// The script builds the agents first: wait (polling the real
	// processes) until the three programs run.
	deadline := time.Now().Add(2 * time.Minute)
	running := func() bool {
		var billing, tech, router bool
		for _, line := range processesWith(t, "--run "+run) {
			program := strings.Fields(line)[1]
			billing = billing || strings.HasSuffix(program, "/billing")
			tech = tech || strings.Contains(line, "tech.js")
			router = router || strings.Contains(line, "router.py")
		}
		return billing && tech && router
	}
	for !running() {
		select {
		case err := <-done:
			t.Fatalf("run.sh ended before its agents ran: %v\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the three agents did not start within 2 minutes: %q\n%s", processesWith(t, "--run "+run), out.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("run.sh did not end within 5s of SIGTERM\n%s", out.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 143 {
		t.Errorf("run.sh exit %d after SIGTERM, want 143\n%s", code, out.String())
	}
	if left := processesWith(t, "--run "+run); len(left) > 0 {
		t.Errorf("agents left running after SIGTERM to run.sh:\n%s\n%s", strings.Join(left, "\n"), out.String())
	}
}

// processesWith lists the processes whose command line contains s, as
// "pid command line", from /proc (skipping the test where there is none).
func processesWith(t *testing.T, s string) []string {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil || len(dirs) == 0 {
		t.Skipf("no /proc to list processes: %v", err)
	}
	var out []string
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // ended meanwhile
		}
		line := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		if strings.Contains(line, s) {
			out = append(out, filepath.Base(filepath.Dir(f))+" "+line)
		}
	}
	return out
}
