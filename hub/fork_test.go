package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/fakeclock"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
)

// triageGraph routes a router's transfer_to_ tool to a specialist, whose
// answer reverts to the router; anything else ends the session.
const triageGraph = `{"initial_speaker":"router","transitions":[` +
	`{"when":{"name":"tool_called","args":{"tool_name":"transfer_to_billing"}},"then":{"name":"agent","args":{"agent_id":"billing"}}},` +
	`{"when":{"name":"tool_called","args":{"tool_name":"transfer_to_tech"}},"then":{"name":"agent","args":{"agent_id":"tech"}}},` +
	`{"when":{"name":"any_of","args":{"conditions":[{"name":"from_speaker","args":{"agent_id":"billing"}},{"name":"from_speaker","args":{"agent_id":"tech"}}]}},"then":{"name":"revert_to_initiator"}}],` +
	`"default_target":{"name":"terminate","args":{"reason":"triage_done"}}}`

func packetEnv(t *testing.T, js string) *hubpb.Envelope {
	t.Helper()
	e := &hubpb.Envelope{}
	if err := hubpb.UnmarshalJSON([]byte(js), e); err != nil {
		t.Fatal(err)
	}
	return e
}

// openTriage runs a triage session to its end: seq 1 invite, 2 opened, 3
// the router's handoff, 4 billing's answer (with a context update), 5 the
// router's finish, 6 the close.
func openTriage(t *testing.T, h *served) session.ID {
	t.Helper()
	ctx := context.Background()
	g := &structpb.Struct{}
	if err := hubpb.UnmarshalJSON([]byte(triageGraph), g); err != nil {
		t.Fatal(err)
	}
	o, err := h.Open(ctx, "router", &hubpb.OpenRequest{Type: "workflow@1", Graph: g, Labels: map[string]string{"app": "triage"},
		Participants: []*hubpb.Participant{{Name: "billing", AutoAccept: true}, {Name: "tech", AutoAccept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	id := session.MustParseID(o.GetSession().GetMeta().GetSessionId())
	for _, s := range []struct{ from, env string }{
		{"router", `{"type":"packet","packet":{"body":"charged twice","routing":{"kind":"handoff","tool":"transfer_to_billing"}}}`},
		{"billing", `{"type":"packet","packet":{"body":"refunded","context_updates":{"set":{"refund":42.0}},"usage":{"input_tokens":10,"output_tokens":3}}}`},
		{"router", `{"type":"packet","packet":{"body":"done","routing":{"kind":"finish","reason":"resolved"}}}`},
	} {
		if _, err := h.Send(ctx, s.from, id, packetEnv(t, s.env)); err != nil {
			t.Fatalf("%s: %v", s.from, err)
		}
	}
	if got := h.LastSeqOf(t, id); got != 6 {
		t.Fatalf("triage ends at seq %d, want 6", got)
	}
	return id
}

// LastSeqOf returns a session's last seq.
func (s *served) LastSeqOf(t *testing.T, id session.ID) uint64 {
	t.Helper()
	info, err := s.Get(context.Background(), "", true, id)
	if err != nil {
		t.Fatal(err)
	}
	return info.GetSeq()
}

// machineAt folds session id's log up to seq into a fresh machine, as the
// definition of its state at seq, and returns the machine's JSON fields.
func machineAt(t *testing.T, e *env, id session.ID, seq uint64) map[string]json.RawMessage {
	t.Helper()
	ctx := context.Background()
	raw, err := e.log.Meta(ctx, id)
	if err != nil || raw == nil {
		t.Fatalf("meta of %v: %v", id, err)
	}
	meta, err := session.UnmarshalMeta(raw)
	if err != nil {
		t.Fatal(err)
	}
	typ, _ := session.ParseType(meta.GetType())
	a, err := server.Adapters(nil).Lookup(typ)
	if err != nil {
		t.Fatal(err)
	}
	m, err := adapters.NewMachine(a, meta)
	if err != nil {
		t.Fatal(err)
	}
	err = e.log.Scan(ctx, id, 1, func(s uint64, data []byte) error {
		if s > seq {
			return nil
		}
		env, err := session.UnmarshalEnvelope(data)
		if err != nil {
			return err
		}
		m.Fold(env)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fields(t, m)
}

func fields(t *testing.T, v any) map[string]json.RawMessage {
	t.Helper()
	b, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func snapshot(t *testing.T, h *served, id session.ID) map[string]json.RawMessage {
	t.Helper()
	b, err := h.Snapshot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return fields(t, b)
}

func fork(t *testing.T, h *served, caller string, req *hubpb.ForkRequest) session.ID {
	t.Helper()
	resp, err := h.Fork(context.Background(), caller, false, req)
	if err != nil {
		t.Fatalf("fork of %s at %d: %v", req.GetSessionId(), req.GetAtSeq(), err)
	}
	return session.MustParseID(resp.GetSession().GetMeta().GetSessionId())
}

// resumed is a workflow state (JSON) as a fork resumes it: an end the
// fold had decided is forgotten and, with nobody expected, the active
// agent speaks (the initial speaker, router, before any handoff).
func resumed(t *testing.T, state json.RawMessage) string {
	t.Helper()
	m := fields(t, state)
	if _, closing := m["closing"]; closing {
		delete(m, "closing")
		if string(m["expected"]) == "" || string(m["expected"]) == `""` {
			m["expected"] = json.RawMessage(`"router"`)
			if a, ok := m["active"]; ok {
				m["expected"] = a
			}
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func canonical(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestForkEverySeq forks a triage session at each of its seqs: the fork's
// state right after the fork is the source's at that seq (resumed), it is
// open, labelled, and takes a turn from its expected speaker; the source
// is untouched; a hub hydrated from the same log rebuilds every fork
// exactly, and the audit's replay of each agrees with the live one.
func TestForkEverySeq(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	src := openTriage(t, e.hub)
	before := canonical(t, mustSnapshot(t, e.hub, src))
	var forks []session.ID
	for at := uint64(1); at <= 6; at++ {
		want := machineAt(t, e, src, at)
		f := fork(t, e.hub, "billing", &hubpb.ForkRequest{SessionId: src.String(), AtSeq: at})
		forks = append(forks, f)
		got := snapshot(t, e.hub, f)
		if g, w := canonical(t, got["state"]), resumed(t, want["state"]); g != w {
			t.Errorf("fork at seq %d: state\n got  %s\n want %s", at, g, w)
		}
		if g := string(got["seq"]); g != "1" {
			t.Errorf("fork at seq %d: seq %s, want 1", at, g)
		}
		info, err := e.hub.Get(ctx, "billing", false, f)
		if err != nil {
			t.Fatal(err)
		}
		if info.GetState() != "OPEN" || info.GetMeta().GetLabels()[hub.LabelForkedFrom] != src.String() || info.GetMeta().GetLabels()["app"] != "triage" {
			t.Errorf("fork at seq %d: state %s, labels %v", at, info.GetState(), info.GetMeta().GetLabels())
		}
		if o := info.GetMeta().GetForkedFrom(); o.GetSessionId() != src.String() || o.GetAtSeq() != at {
			t.Errorf("fork at seq %d: forked_from %v", at, o)
		}
		next := info.GetExpected()
		if len(next) != 1 {
			t.Fatalf("fork at seq %d expects %v", at, next)
		}
		if _, err := e.hub.Send(ctx, next[0], f, textEnv("from the fork")); err != nil {
			t.Errorf("fork at seq %d: a turn of %s: %v", at, next[0], err)
		}
	}
	if after := canonical(t, mustSnapshot(t, e.hub, src)); after != before {
		t.Errorf("the source changed:\nbefore %s\nafter  %s", before, after)
	}
	assertReplayed(t, e, append(forks, src))
	for _, f := range forks {
		r, err := e.hub.Replay(ctx, f)
		if err != nil || !r.GetEqual() {
			t.Errorf("audit replay of fork %v: %v %s", f, err, r.GetDetail())
		}
	}
}

func mustSnapshot(t *testing.T, h *served, id session.ID) json.RawMessage {
	t.Helper()
	b, err := h.Snapshot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// assertReplayed hydrates a second hub from e's log and compares the
// sessions' whole folded state with the live hub's; then restarts e and
// compares again.
func assertReplayed(t *testing.T, e *env, ids []session.ID) {
	t.Helper()
	ctx := context.Background()
	cfg := e.cfg
	cfg.Log = e.log.Log
	cfg.Clock = fakeclock.New(e.clock.Now())
	fresh, err := openServed(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if q := fresh.Quarantined(); len(q) > 0 {
		t.Errorf("replay quarantined %v", q)
	}
	for _, id := range ids {
		live, again := mustSnapshot(t, e.hub, id), mustSnapshot(t, fresh.served(), id)
		if string(live) != string(again) {
			t.Errorf("replay of %v differs:\nlive:   %s\nreplay: %s", id, live, again)
		}
	}
}

func (s *served) served() *served { return s }

// TestForkOfFork forks a fork after a turn of its own: the second fork's
// state is the first's at that seq, and both replay exactly.
func TestForkOfFork(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	src := openTriage(t, e.hub)
	f1 := fork(t, e.hub, "router", &hubpb.ForkRequest{SessionId: src.String(), AtSeq: 3,
		Context: &hubpb.ContextUpdate{Set: map[string]*structpb.Value{"tier": structpb.NewStringValue("gold")}}})
	if _, err := e.hub.Send(ctx, "billing", f1, packetEnv(t, `{"type":"packet","packet":{"body":"gold refund","context_updates":{"set":{"refund":7}}}}`)); err != nil {
		t.Fatal(err)
	}
	live1 := snapshot(t, e.hub, f1) // f1 at its seq 2
	f2 := fork(t, e.hub, "tech", &hubpb.ForkRequest{SessionId: f1.String(), AtSeq: 2, NextSpeaker: "tech",
		Context: &hubpb.ContextUpdate{Delete: []string{"tier"}}})
	// f2's state is f1's at seq 2, with tech chosen and tier deleted.
	want := fields(t, live1["state"])
	want["expected"] = json.RawMessage(`"tech"`)
	wantCtx := fields(t, want["context"])
	if string(wantCtx["refund"]) != "7" || string(wantCtx["tier"]) != `"gold"` {
		t.Errorf("the fork's context is %s, want refund 7 and tier gold", want["context"])
	}
	delete(wantCtx, "tier")
	want["context"] = mustJSON(t, wantCtx)
	if g, w := canonical(t, snapshot(t, e.hub, f2)["state"]), canonical(t, mustJSON(t, want)); g != w {
		t.Errorf("fork of a fork: state\n got  %s\n want %s", g, w)
	}
	turns, err := e.hub.PendingTurns(ctx, "tech")
	if err != nil {
		t.Fatal(err)
	}
	told := false
	for _, d := range turns {
		if d.GetEnvelope().GetSessionId() == f2.String() && d.GetEnvelope().GetType() == session.EventForked {
			told = true
		}
	}
	if !told {
		t.Errorf("tech's pending turns do not hold the fork's record: %v", turns)
	}
	if _, err := e.hub.Send(ctx, "tech", f2, textEnv("tech takes over")); err != nil {
		t.Fatal(err)
	}
	assertReplayed(t, e, []session.ID{src, f1, f2})
	before := map[session.ID]string{}
	for _, id := range []session.ID{f1, f2} {
		before[id] = string(mustSnapshot(t, e.hub, id))
	}
	e.restart()
	for _, id := range []session.ID{f1, f2} {
		if after := string(mustSnapshot(t, e.hub, id)); after != before[id] {
			t.Errorf("after a restart, %v:\n%s\nwas\n%s", id, after, before[id])
		}
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestForkRefusals: each refusal names what was expected and writes
// nothing.
func TestForkRefusals(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	src := openTriage(t, e.hub)
	resident := len(e.hub.ResidentIDs())
	for _, c := range []struct {
		name, caller string
		req          *hubpb.ForkRequest
		reason       hubpb.Reason
		says         string
	}{
		{"unknown", "router", &hubpb.ForkRequest{SessionId: session.ID(e.newID()).String(), AtSeq: 1}, hubpb.Reason_UNKNOWN_SESSION, "no session"},
		{"bad id", "router", &hubpb.ForkRequest{SessionId: "nope", AtSeq: 1}, hubpb.Reason_MALFORMED, "session_id"},
		{"seq 0", "router", &hubpb.ForkRequest{SessionId: src.String()}, hubpb.Reason_MALFORMED, "from 1 to 6"},
		{"past the end", "router", &hubpb.ForkRequest{SessionId: src.String(), AtSeq: 7}, hubpb.Reason_MALFORMED, "from 1 to 6"},
		{"outsider", "mallory", &hubpb.ForkRequest{SessionId: src.String(), AtSeq: 3}, hubpb.Reason_PERMISSION_DENIED, "not a participant"},
		{"stranger next", "router", &hubpb.ForkRequest{SessionId: src.String(), AtSeq: 3, NextSpeaker: "mallory"}, hubpb.Reason_MALFORMED, "billing, tech"},
		{"bad context", "router", &hubpb.ForkRequest{SessionId: src.String(), AtSeq: 3, Context: &hubpb.ContextUpdate{Delete: []string{""}}}, hubpb.Reason_MALFORMED, "fork.context.delete"},
	} {
		_, err := e.hub.Fork(ctx, c.caller, false, c.req)
		r, _ := session.ReasonOf(err)
		if r != c.reason || !strings.Contains(fmt.Sprint(err), c.says) {
			t.Errorf("%s: %v (%v), want %v saying %q", c.name, err, r, c.reason, c.says)
		}
	}
	if n := len(e.hub.ResidentIDs()); n != resident {
		t.Errorf("refused forks left %d sessions in memory, want %d", n, resident)
	}
	if got := e.hub.LastSeqOf(t, src); got != 6 {
		t.Errorf("the source moved to seq %d", got)
	}
	// Agents cannot write a fork record themselves.
	forged := &hubpb.Envelope{Type: session.EventForked, Payload: &hubpb.Envelope_Fork{Fork: &hubpb.Fork{
		Origin: &hubpb.ForkOrigin{SessionId: src.String(), AtSeq: 1}}}}
	other := openConversation(t, e.hub, "router", "billing")
	if _, err := e.hub.Send(ctx, "router", other, forged); !errors.Is(err, session.ErrHubOnly) {
		t.Errorf("an agent's session_forked: %v, want HUB_ONLY_EVENT", err)
	}
	// An operator who takes no part may fork.
	if _, err := e.hub.Fork(ctx, "ops", true, &hubpb.ForkRequest{SessionId: src.String(), AtSeq: 4}); err != nil {
		t.Errorf("an operator's fork: %v", err)
	}
}

// TestForkDropsHolds forks a conversation whose turn a question holds:
// the fork holds nothing, the question stays the source's.
func TestForkDropsHolds(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	src := openConversation(t, e.hub, "alice", "bob")
	q := &hubpb.Envelope{Type: session.EventQuestion, Payload: &hubpb.Envelope_Question{Question: &hubpb.Question{
		QuestionId: "q1", Answerer: "bob", Text: "refund?"}}}
	ack, err := e.hub.Send(ctx, "alice", src, q)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.hub.Send(ctx, "alice", src, textEnv("held")); err == nil {
		t.Fatal("the source's held turn took a text")
	}
	f := fork(t, e.hub, "bob", &hubpb.ForkRequest{SessionId: src.String(), AtSeq: ack.GetSeq()})
	info, err := e.hub.Get(ctx, "alice", false, f)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.GetHolds()) != 0 {
		t.Errorf("the fork holds %v", info.GetHolds())
	}
	if _, err := e.hub.Send(ctx, "alice", f, textEnv("free again")); err != nil {
		t.Errorf("alice's turn in the fork: %v", err)
	}
	srcInfo, err := e.hub.Get(ctx, "alice", false, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(srcInfo.GetHolds()) != 1 {
		t.Errorf("the source's holds are %v, want the question", srcInfo.GetHolds())
	}
	assertReplayed(t, e, []session.ID{src, f})
}

// TestForkNeedsAcceptedInvites: a fork opens at once, so a seq where an
// invite still awaited its answer, or where the session ended without
// opening, is refused; once everyone accepted, the seq may be forked.
func TestForkNeedsAcceptedInvites(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	open := func() session.ID {
		o, err := e.hub.Open(ctx, "alice", &hubpb.OpenRequest{Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "bob"}}})
		if err != nil {
			t.Fatal(err)
		}
		return session.MustParseID(o.GetSession().GetMeta().GetSessionId())
	}
	refused := func(id session.ID, at uint64, says string) {
		t.Helper()
		_, err := e.hub.Fork(ctx, "alice", false, &hubpb.ForkRequest{SessionId: id.String(), AtSeq: at})
		if r, _ := session.ReasonOf(err); r != hubpb.Reason_BAD_LIFECYCLE_TRANSITION || !strings.Contains(fmt.Sprint(err), says) {
			t.Errorf("fork at %d: %v, want BAD_LIFECYCLE_TRANSITION saying %q", at, err, says)
		}
	}
	accepted := open()
	refused(accepted, 1, "awaited invite acks from bob")
	if _, err := e.hub.AckInvite(ctx, "bob", accepted); err != nil {
		t.Fatal(err)
	}
	for _, at := range []uint64{2, 3} { // the ack, the open
		fork(t, e.hub, "alice", &hubpb.ForkRequest{SessionId: accepted.String(), AtSeq: at})
	}
	rejected := open()
	if _, err := e.hub.RejectInvite(ctx, "bob", rejected, "busy"); err != nil {
		t.Fatal(err)
	}
	refused(rejected, 2, "awaited invite acks from bob")
	refused(rejected, 3, "ended (invite_rejected) without opening")
}

// TestForkRefusedByClusterNode: a partitioned hub says it does not fork.
func TestForkRefusedByClusterNode(t *testing.T) {
	e := newEnv(t, nil)
	src := openTriage(t, e.hub)
	e.hub.Close() // the log stays open for the node's hub
	cfg := e.cfg
	cfg.Log, cfg.Partitioned = e.log, true
	b, err := openServed(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.Fork(context.Background(), "router", false, &hubpb.ForkRequest{SessionId: src.String(), AtSeq: 3})
	if r, _ := session.ReasonOf(err); r != hubpb.Reason_BAD_LIFECYCLE_TRANSITION || !strings.Contains(fmt.Sprint(err), "cluster node does not fork") {
		t.Errorf("a cluster node's fork: %v", err)
	}
}

// TestForkDropsChildren forks a conversation whose turn a blocking
// delegation holds: the fork has no children and no hold; the child
// stays the source's, and its end reports to the source alone.
func TestForkDropsChildren(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	src := openConversation(t, e.hub, "alice", "bob")
	r, err := e.hub.Delegate(ctx, "alice", &hubpb.DelegateRequest{SessionId: src.String(),
		Children: []*hubpb.OpenRequest{{Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "carol", AutoAccept: true}}}}})
	if err != nil {
		t.Fatal(err)
	}
	child := session.MustParseID(r.GetChildren()[0].GetMeta().GetSessionId())
	at := e.hub.LastSeqOf(t, src)
	if held, err := e.hub.Get(ctx, "alice", false, src); err != nil || len(held.GetHolds()) != 1 || len(held.GetOpenChildren()) != 1 {
		t.Fatalf("the source before the fork: %v %v", held, err)
	}
	f := fork(t, e.hub, "alice", &hubpb.ForkRequest{SessionId: src.String(), AtSeq: at})
	info, err := e.hub.Get(ctx, "alice", false, f)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.GetHolds()) != 0 || len(info.GetOpenChildren()) != 0 {
		t.Errorf("the fork holds %v, children %v", info.GetHolds(), info.GetOpenChildren())
	}
	if _, err := e.hub.Send(ctx, "alice", f, textEnv("on my own")); err != nil {
		t.Errorf("alice's turn in the fork: %v", err)
	}
	if _, err := e.hub.CloseSession(ctx, "alice", false, child, "done"); err != nil {
		t.Fatal(err)
	}
	srcInfo, err := e.hub.Get(ctx, "alice", false, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(srcInfo.GetHolds()) != 0 || srcInfo.GetSeq() <= at {
		t.Errorf("the source after its child ended: seq %d, holds %v", srcInfo.GetSeq(), srcInfo.GetHolds())
	}
	if got := e.hub.LastSeqOf(t, f); got != 2 {
		t.Errorf("the fork moved to seq %d: the child's result went there", got)
	}
	assertReplayed(t, e, []session.ID{src, f, child})
}
