package hub_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

const killModeEnv = "HUBD_KILL_MODE"

// TestKill9Delegation kills a hub between a child's close and its parent's
// result, and at random moments under a load of delegations and questions,
// and checks after each restart: every child has at most one result in its
// parent, exactly one once it has ended (the result is written with the
// end, never without it), every acknowledged end is there, every held turn
// is resolvable (an open child finished after the restart answers its
// parent once, and the delegator gets its turn), and every question asked
// before the kill is answerable after it.
//
// Modes: "before" crashes at the append that would write a child's end and
// its result (nothing of it is written); "after" crashes right after that
// append returns, before anyone is told (all of it is written); "random"
// is SIGKILL at a random moment under concurrent load, three rounds on one
// data directory.
func TestKill9Delegation(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 rounds take a few seconds")
	}
	for _, mode := range []string{"before", "after", "random"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			rounds := 1
			if mode == "random" {
				rounds = 3
			}
			for round := 1; round <= rounds; round++ {
				lines := runCallsUntilKilled(t, dir, mode, round, 100+rand.IntN(300))
				n := verifyCallsAfterKill(t, dir, lines)
				t.Logf("%s round %d: %d acknowledged steps verified, %s", mode, round, len(lines), n)
			}
		})
	}
}

// callAck is one line the child process printed after an acknowledged
// step: "deleg PARENT CHILD", "done CHILD PARENT", "asked SESSION QID",
// "answered SESSION QID".
type callAck struct {
	kind string
	a, b string
}

func runCallsUntilKilled(t *testing.T, dir, mode string, round, after int) []callAck {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKillCallsHelper$", "-test.v=false")
	cmd.Env = append(os.Environ(), killDirEnv+"="+dir, killModeEnv+"="+mode, "HUBD_KILL_ROUND="+strconv.Itoa(round))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acks []callAck
	sc := bufio.NewScanner(out)
	for sc.Scan() && (mode != "random" || len(acks) < after) {
		if f := strings.Fields(sc.Text()); len(f) == 3 {
			acks = append(acks, callAck{f[0], f[1], f[2]})
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if mode == "random" && len(acks) < after {
		t.Fatalf("round %d: the child stopped after %d acknowledged steps", round, len(acks))
	}
	if mode != "random" && !slices.ContainsFunc(acks, func(a callAck) bool { return a.kind == "asked" }) {
		t.Fatalf("the child crashed before its first question: %v", acks)
	}
	return acks
}

// verifyCallsAfterKill opens the hub on dir and checks the acknowledged
// steps, then resolves everything pending; it returns what it resolved.
func verifyCallsAfterKill(t *testing.T, dir string, acks []callAck) string {
	t.Helper()
	ctx := context.Background()
	l, err := wal.Open(wal.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	h, err := openServed(ctx, hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if q := h.Quarantined(); len(q) != 0 {
		t.Fatalf("quarantined after kill: %v", q)
	}
	parentOf := map[string]string{}
	for _, a := range acks {
		switch a.kind {
		case "deleg":
			parentOf[a.b] = a.a
		case "done":
			if st := state(t, h, a.a); !st.Ended() {
				t.Errorf("child %s acknowledged finished is %v after the kill", a.a, st)
			}
		}
	}
	// Every child of every root the log holds, not only the acknowledged
	// ones: a delegation written but not acknowledged is a child too.
	var infos []*hubpb.SessionInfo
	for f := (feed.Filter{Limit: 1000}); ; {
		page, next, err := h.List(context.Background(), "", true, f)
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, page...)
		if next.IsZero() {
			break
		}
		f.After = next
	}
	var open []string
	for _, info := range infos {
		m := info.GetMeta()
		if m.GetParentSessionId() == "" {
			continue
		}
		id, parent := m.GetSessionId(), m.GetParentSessionId()
		n := results(t, h, parent, id)
		ended := state(t, h, id).Ended()
		switch {
		case n > 1:
			t.Errorf("child %s has %d results in %s", id, n, parent)
		case ended && n != 1:
			t.Errorf("child %s ended with %d results in %s, want 1", id, n, parent)
		case !ended && n != 0:
			t.Errorf("open child %s has a result in %s", id, parent)
		case !ended:
			open = append(open, id)
		}
	}
	// Resolve what is pending: finish the open children, answer the
	// questions; each delegator and asker gets its turn.
	for _, id := range open {
		parent := parentOf[id]
		if parent == "" {
			s, err := h.Get(ctx, "", true, session.MustParseID(id))
			if err != nil {
				t.Fatal(err)
			}
			parent = s.GetMeta().GetParentSessionId()
		}
		if _, err := h.Send(ctx, "c", session.MustParseID(id), finishEnv("late")); err != nil {
			t.Fatalf("finishing child %s after the kill: %v", id, err)
		}
		if n := results(t, h, parent, id); n != 1 {
			t.Errorf("child %s finished after the kill has %d results", id, n)
		}
	}
	qs, err := h.ListQuestions(ctx, "", true, "", session.ID{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		id := session.MustParseID(q.GetSessionId())
		_, err := h.Answer(ctx, "p", false, &hubpb.AnswerRequest{SessionId: q.GetSessionId(),
			Answer: &hubpb.Answer{QuestionId: q.GetEnvelope().GetQuestion().GetQuestionId(), OptionIds: []string{"y"}}})
		if err != nil {
			t.Fatalf("answering %s in %s after the kill: %v", q.GetEnvelope().GetQuestion().GetQuestionId(), id, err)
		}
	}
	for _, info := range infos {
		id := session.MustParseID(info.GetMeta().GetSessionId())
		s, err := h.Get(ctx, "", true, id)
		if err != nil {
			t.Fatal(err)
		}
		if st, _ := session.ParseState(s.GetState()); st == session.StateOpen && len(s.GetHolds()) > 0 {
			t.Errorf("session %v still holds %v after everything pending was resolved", id, s.GetHolds())
		}
	}
	return fmt.Sprintf("%d open children finished and %d questions answered after the restart", len(open), len(qs))
}

// state returns a session's lifecycle state.
func state(t *testing.T, h *served, id string) session.State {
	t.Helper()
	s, err := h.Get(context.Background(), "", true, session.MustParseID(id))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := session.ParseState(s.GetState())
	return st
}

// results counts the delegation results of child in parent's log.
func results(t *testing.T, h *served, parent, child string) int {
	t.Helper()
	es, _, err := h.ReadLog(context.Background(), "", true, session.MustParseID(parent), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.GetDelegationResult().GetChildSessionId() == child {
			n++
		}
	}
	return n
}

func finishEnv(summary string) *hubpb.Envelope {
	return &hubpb.Envelope{Type: session.EventPacket, Payload: &hubpb.Envelope_Packet{Packet: &hubpb.Packet{Body: summary,
		Routing: &hubpb.Routing{Kind: session.RouteFinish, Summary: summary}, Usage: &hubpb.Usage{InputTokens: 3}}}}
}

// crashLog crashes the process at the chosen append that writes a
// delegation result: before it, or right after it.
type crashLog struct {
	hub.Log
	mode string
}

func (c crashLog) Append(ctx context.Context, writes ...hub.LogWrite) error {
	if c.mode == "random" || !writesResult(writes) {
		return c.Log.Append(ctx, writes...)
	}
	if c.mode == "after" {
		if err := c.Log.Append(ctx, writes...); err != nil {
			return err
		}
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}

func writesResult(writes []hub.LogWrite) bool {
	for _, w := range writes {
		for _, r := range w.Records {
			if e, err := session.UnmarshalEnvelope(r.Data); err == nil && e.GetType() == session.EventDelegationResult {
				return true
			}
		}
	}
	return false
}

// TestKillCallsHelper is the child process of TestKill9Delegation.
func TestKillCallsHelper(t *testing.T) {
	dir, mode := os.Getenv(killDirEnv), os.Getenv(killModeEnv)
	if dir == "" || mode == "" {
		t.Skip("only run as TestKill9Delegation's child")
	}
	l, err := wal.Open(wal.Options{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	h, err := openServed(context.Background(), hub.Config{Log: crashLog{server.WALLog(l), mode}, Adapters: server.Adapters(nil)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	report := func(kind, a, b string) {
		mu.Lock()
		fmt.Fprintf(w, "%s %s %s\n", kind, a, b)
		w.Flush()
		mu.Unlock()
	}
	workers := 4
	if mode != "random" {
		workers = 1 // one deterministic script: a question left pending, then a delegation
	}
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			callsLoad(h, os.Getenv("HUBD_KILL_ROUND"), g, mode != "random", report)
		}()
	}
	wg.Wait()
	select {} // the deterministic script ends at its crash
}

// callsLoad runs conversations of a and b in which a delegates blocking
// to c, asks p questions, and answers itself; with pending, the first
// question is left unanswered. It runs until the process is killed.
func callsLoad(h *served, round string, g int, pending bool, report func(kind, a, b string)) {
	ctx := context.Background()
	die := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(2)
	}
	open := func() string {
		o, err := h.Open(ctx, "a", &hubpb.OpenRequest{Type: "conversation@1",
			Participants: []*hubpb.Participant{{Name: "b", AutoAccept: true}}, Expectations: &hubpb.Expectations{}})
		if err != nil {
			die("open", err)
		}
		return o.GetSession().GetMeta().GetSessionId()
	}
	ask := func(root, qid string) {
		q := &hubpb.Envelope{Type: session.EventQuestion, ClientMsgId: "ask-" + qid, Payload: &hubpb.Envelope_Question{Question: &hubpb.Question{
			QuestionId: qid, Text: "ok?", Answerer: "p", Options: []*hubpb.Option{{Id: "y", Label: "yes"}, {Id: "n", Label: "no"}}}}}
		if _, err := h.Send(ctx, "a", session.MustParseID(root), q); err != nil {
			die("ask", err)
		}
		report("asked", root, qid)
	}
	if pending {
		ask(open(), "q-pending")
	}
	for n := 0; ; n++ {
		root := open()
		for i := range 1 + rand.IntN(4) {
			key := fmt.Sprintf("r%s-g%d-s%d-%d", round, g, n, i)
			resp, err := h.Delegate(ctx, "a", &hubpb.DelegateRequest{SessionId: root, ClientMsgId: key, Children: []*hubpb.OpenRequest{{
				Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "c", AutoAccept: true}}, Task: "work " + key}}})
			if err != nil {
				die("delegate", err)
			}
			child := resp.GetChildren()[0].GetMeta().GetSessionId()
			report("deleg", root, child)
			if _, err := h.Send(ctx, "c", session.MustParseID(child), finishEnv("did "+key)); err != nil {
				die("finish", err)
			}
			report("done", child, root)
			if rand.IntN(3) == 0 {
				qid := "q-" + key
				ask(root, qid)
				_, err := h.Answer(ctx, "p", false, &hubpb.AnswerRequest{SessionId: root, ClientMsgId: "ans-" + qid,
					Answer: &hubpb.Answer{QuestionId: qid, OptionIds: []string{"n"}}})
				if err != nil {
					die("answer", err)
				}
				report("answered", root, qid)
			}
			if _, err := h.Send(ctx, "a", session.MustParseID(root), textEnv("noted "+key)); err != nil {
				die("reply", err)
			}
		}
	}
}
