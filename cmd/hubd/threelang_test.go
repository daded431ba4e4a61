package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// TestE2EThreeLanguages runs the triage session of examples/triage against
// one hubd binary twice: with its three agents in Go, then with the router
// in Python (examples/threelang/router.py), the billing specialist in Go
// (examples/threelang/billing) and the tech specialist in TypeScript
// (examples/threelang/tech.ts), each its own process. The router's
// transcript (handoffs, the reverts to the router, the finish) must be the
// all-Go one line for line, and the two sessions' logs the same envelope for
// envelope (types, senders, payloads, the rule that decided each turn, who
// was expected next), as must their final state.
func TestE2EThreeLanguages(t *testing.T) {
	python, node, tsDir := threeLangTools(t)
	d := startDaemon(t, t.TempDir(), "")

	// All Go, first and alone: its agents have the same names.
	triage := buildBinary(t, "./examples/triage")
	code, goOut, errs := runBinary(t, triage, "", "--hub", d.addr)
	if code != 0 {
		t.Fatalf("examples/triage: exit %d\n%s%s", code, goOut, errs)
	}

	// Three languages: the specialists serve until stopped, the router
	// opens the session and prints it.
	billing := buildBinary(t, "./examples/threelang/billing")
	startAgent(t, "billing (Go)", exec.Command(billing, "--hub", d.addr))
	startAgent(t, "tech (TypeScript)", exec.Command(node, filepath.Join(tsDir, "build", "examples", "threelang", "tech.js"), "--hub", d.addr))
	code, out, errs := runBinary(t, python, "", "../../examples/threelang/router.py", "--hub", d.addr)
	if code != 0 {
		t.Fatalf("router.py: exit %d\n%s%s", code, out, errs)
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

// startAgent starts an agent process that serves until the test ends
// (SIGTERM, then SIGKILL); its output is reported if the test fails.
func startAgent(t *testing.T, name string, cmd *exec.Cmd) {
	t.Helper()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s did not stop cleanly: %v\n%s", name, err, out.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("%s did not stop on SIGTERM\n%s", name, out.String())
		}
		if t.Failed() {
			t.Logf("%s said:\n%s", name, out.String())
		}
	})
}
