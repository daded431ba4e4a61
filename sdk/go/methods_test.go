package sdkgo_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
	"github.com/hubd/hubd/hubpb"
)

// jsAll is the JSON form of a list of messages.
func jsAll[M proto.Message](t *testing.T, ms []M) string {
	t.Helper()
	var parts []string
	for _, m := range ms {
		parts = append(parts, js(t, m))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TestOpenOptions sends every open option and reads them back.
func TestOpenOptions(t *testing.T) {
	h := hubtest.New(t)
	ctx := testCtx(t)
	alice, bob := dial(t, h.Addr(), "alice"), dial(t, h.Addr(), "bob")
	parent := openPipeline(t, ctx, alice)
	opts := agentsdk.OpenOptions{
		Type: agentsdk.TypeWorkflow,
		Participants: []*hubpb.Participant{{Name: "bob", Role: "reviewer"},
			{Name: "carol", Role: "human", AutoAccept: true}},
		Graph:          agentsdk.RoundRobin([]string{"alice", "bob", "carol"}, 5),
		Knobs:          map[string]any{"max_handoffs": 3, "context": map[string]any{"topic": "wal"}},
		Labels:         map[string]string{"team": "storage"},
		TTL:            time.Hour,
		InviteTimeout:  time.Minute,
		Expectations:   []*hubpb.Expectation{agentsdk.Expect("turn_within", 90*time.Second, "warn")},
		Parent:         parent.ID(),
		IdempotencyKey: "review-1",
	}
	s, err := alice.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	m := s.GetMeta()
	if s.GetState() != agentsdk.StatePending || s.Existing || m.GetCreator() != "alice" || m.GetType() != "workflow@1" || s.Ended() {
		t.Errorf("opened %s existing %v", js(t, s.SessionInfo), s.Existing)
	}
	want := `[{"name":"alice","role":"creator"},{"name":"bob","role":"reviewer"},{"name":"carol","role":"human","auto_accept":true}]`
	if got := jsAll(t, m.GetParticipants()); got != want {
		t.Errorf("participants %s, want %s", got, want)
	}
	if m.GetTtl().AsDuration() != time.Hour || m.GetInviteTimeout().AsDuration() != time.Minute || m.GetLabels()["team"] != "storage" ||
		m.GetParentSessionId() != parent.ID() || m.GetRootSessionId() != parent.ID() || m.GetDepth() != 1 {
		t.Errorf("meta %s", js(t, m))
	}
	if got, want := jsAll(t, m.GetExpectations()), `[{"name":"turn_within","action":"warn","within":"90s"}]`; got != want {
		t.Errorf("expectations %s, want %s", got, want)
	}
	var maxHandoffs int
	if err := agentsdk.Decode(m.GetKnobs()["max_handoffs"], &maxHandoffs); err != nil || maxHandoffs != 3 {
		t.Errorf("knob max_handoffs %d %v (knobs %s)", maxHandoffs, err, js(t, m))
	}
	var topic string
	if ok, err := s.Var("topic", &topic); !ok || err != nil || topic != "wal" {
		t.Errorf("context var topic: %q %v %v (%s)", topic, ok, err, js(t, s.SessionInfo))
	}
	if ok, _ := s.Var("nope", &topic); ok {
		t.Error("a missing var is set")
	}
	again, err := alice.Open(ctx, opts)
	if err != nil || !again.Existing || again.ID() != s.ID() {
		t.Errorf("idempotent open: %v %v", again, err)
	}

	// Bob acks; the session opens and alice is expected.
	ack, err := bob.AckInvite(ctx, s.ID())
	if err != nil || ack.GetSeq() != 2 {
		t.Fatalf("ack %v %v", ack.SendResponse, err)
	}
	got, err := bob.GetSession(ctx, s.ID())
	if err != nil || got.GetState() != agentsdk.StateOpen || !slices.Equal(got.GetExpected(), []string{"alice"}) || got.GetSeq() != 3 {
		t.Fatalf("after ack %v %v", got, err)
	}

	// No expectations at all.
	none, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob"),
		Expectations: []*hubpb.Expectation{}})
	if err != nil || len(none.GetMeta().GetExpectations()) != 0 {
		t.Errorf("no expectations: %v %v", none, err)
	}
}

// TestOpenOptionsRefusesBadValues: a knob that does not encode fails
// before the call.
func TestOpenOptionsRefusesBadValues(t *testing.T) {
	_, err := agentsdk.OpenOptions{Knobs: map[string]any{"f": func() {}}}.Proto()
	if err == nil || !strings.Contains(err.Error(), `knob "f"`) {
		t.Errorf("got %v", err)
	}
	req, err := agentsdk.OpenOptions{}.Proto()
	if err != nil || req.GetType() != agentsdk.TypeWorkflow || req.GetExpectations() != nil {
		t.Errorf("defaults: %v %v", req, err)
	}
}

// TestListSessions filters and pages.
func TestListSessions(t *testing.T) {
	h := hubtest.New(t)
	ctx := testCtx(t)
	alice, bob := dial(t, h.Addr(), "alice"), dial(t, h.Addr(), "bob")
	var ids []string
	for range 3 {
		ids = append(ids, openPipeline(t, ctx, alice).ID())
	}
	if _, err := alice.CloseSession(ctx, ids[1], "done_here"); err != nil {
		t.Fatal(err)
	}
	labelled, err := bob.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("alice"),
		Labels: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for token := ""; ; {
		page, next, err := alice.ListSessions(ctx, agentsdk.ListOptions{PageSize: 2, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page {
			all = append(all, s.ID())
		}
		if next == "" {
			break
		}
		token = next
	}
	if want := append(slices.Clone(ids), labelled.ID()); !slices.Equal(all, want) {
		t.Errorf("paged %v, want %v", all, want)
	}
	for _, tc := range []struct {
		opts agentsdk.ListOptions
		want []string
	}{
		{agentsdk.ListOptions{State: agentsdk.StateClosed}, []string{ids[1]}},
		{agentsdk.ListOptions{Creator: "bob"}, []string{labelled.ID()}},
		{agentsdk.ListOptions{Participant: "carol"}, ids},
		{agentsdk.ListOptions{Labels: map[string]string{"k": "v"}}, []string{labelled.ID()}},
	} {
		page, _, err := alice.ListSessions(ctx, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range page {
			got = append(got, s.ID())
			if s.ID() == ids[1] && (!s.Ended() || s.GetCloseReason() != "done_here") {
				t.Errorf("closed session listed as %v", s)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.opts, got, tc.want)
		}
	}
}

// TestInvites: a reject closes the session with invite_rejected.
func TestInvites(t *testing.T) {
	h := hubtest.New(t)
	ctx := testCtx(t)
	alice, bob := dial(t, h.Addr(), "alice"), dial(t, h.Addr(), "bob")
	s, err := alice.OpenWorkflow(ctx, agentsdk.Sequence("alice", "bob"), "bob")
	if err != nil {
		t.Fatal(err)
	}
	ack, err := bob.RejectInvite(ctx, s.ID(), "busy")
	if err != nil || !ack.GetClosed() || ack.GetCloseReason() != "invite_rejected" {
		t.Fatalf("reject %v %v", ack.SendResponse, err)
	}
	log, err := bob.ReadLog(ctx, s.ID(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range log {
		got = append(got, e.GetType()+":"+e.GetEnded().GetReason())
	}
	want := []string{"session_invite:", "session_invite_reject:busy", "session_closed:invite_rejected"}
	if !slices.Equal(got, want) {
		t.Errorf("log %v, want %v", got, want)
	}
}

// TestSendAndRead takes turns with every kind of send, then reads them
// back through the log, the view, pending turns, subscribe and watch.
func TestSendAndRead(t *testing.T) {
	h := hubtest.New(t)
	ctx := testCtx(t)
	alice, bob, carol := dial(t, h.Addr(), "alice"), dial(t, h.Addr(), "bob"), dial(t, h.Addr(), "carol")
	id := openPipeline(t, ctx, alice).ID() // seq 1 invite, 2 opened

	turns, err := alice.PendingTurns(ctx)
	if err != nil || len(turns) != 1 || !turns[0].GetYourTurn() || turns[0].GetEnvelope().GetType() != agentsdk.EventOpened || turns[0].GetEnvelope().GetSeq() != 2 {
		t.Fatalf("pending %v %v", turns, err)
	}
	ack, err := bob.SetContext(ctx, id, map[string]any{"topic": "wal", "n": 1}) // seq 3, not a turn
	if err != nil || ack.GetSeq() != 3 || ack.ClientMsgID == "" {
		t.Fatalf("set context %v %v", ack.SendResponse, err)
	}
	ack, err = alice.SendText(ctx, id, "findings", agentsdk.WithClientMsgID("r1"), agentsdk.WithTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")) // seq 4
	if err != nil || ack.GetSeq() != 4 || ack.GetDuplicate() || ack.ClientMsgID != "r1" || ack.GetId() == "" || ack.GetAcceptedAt().AsTime().IsZero() {
		t.Fatalf("text %v %v", ack.SendResponse, err)
	}
	dup, err := alice.SendText(ctx, id, "findings again", agentsdk.WithClientMsgID("r1"))
	if err != nil || !dup.GetDuplicate() || dup.GetSeq() != 4 || dup.GetId() != ack.GetId() {
		t.Fatalf("duplicate %v %v", dup.SendResponse, err)
	}
	p := agentsdk.NewPacket("draft").Set("approved", false).Set("score", 0.5).Delete("n").
		WithUsage(&hubpb.Usage{InputTokens: 10, OutputTokens: 3, CostUsd: 0.01})
	if ack, err = bob.SendPacket(ctx, id, p, agentsdk.WithCausation(ack.GetId())); err != nil || ack.GetSeq() != 5 { // seq 5
		t.Fatalf("packet %v %v", ack.SendResponse, err)
	}
	if ack, err = carol.SendEvent(ctx, id, "note", []byte("psst"), agentsdk.WithAudience("alice")); err != nil || ack.GetSeq() != 6 { // seq 6
		t.Fatalf("event %v %v", ack.SendResponse, err)
	}
	if ack, err = carol.UpdateContext(ctx, id, agentsdk.ContextUpdate{Delete: []string{"topic"}}); err != nil || ack.GetSeq() != 7 { // seq 7
		t.Fatalf("update context %v %v", ack.SendResponse, err)
	}
	ack, err = carol.SendPacket(ctx, id, agentsdk.NewPacket("edited").Finish("", "all good")) // seq 8, closes at 9
	if err != nil || ack.GetSeq() != 8 || !ack.GetClosed() || ack.GetCloseReason() != "finished" {
		t.Fatalf("finish %v %v", ack.SendResponse, err)
	}

	s, err := alice.GetSession(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.GetState() != agentsdk.StateClosed || !s.Ended() || s.GetCloseReason() != "finished" || s.GetTurn() != 3 || s.GetSeq() != 9 {
		t.Errorf("session %s", js(t, s.SessionInfo))
	}
	if got, want := js(t, s.GetUsage()), `{"input_tokens":"10","output_tokens":"3","cost_usd":0.01}`; got != want {
		t.Errorf("usage %s, want %s", got, want)
	}
	if got, want := js(t, &hubpb.ContextUpdate{Set: s.GetContext()}), `{"set":{"approved":false,"score":0.5}}`; got != want {
		t.Errorf("context %s, want %s", got, want)
	}
	checkLog(t, ctx, alice, bob, id)
	checkView(t, ctx, bob, id)
	checkStreams(t, ctx, bob, id)
}

// checkLog reads TestSendAndRead's log as alice and as bob.
func checkLog(t *testing.T, ctx context.Context, alice, bob *agentsdk.Client, id string) {
	t.Helper()
	// The log, as alice may see it: bob's packet with its context updates,
	// carol's note addressed to her.
	log, err := alice.ReadLog(ctx, id, 4, 3)
	if err != nil || len(log) != 3 {
		t.Fatalf("log %v %v", log, err)
	}
	text, packet, note := log[0], log[1], log[2]
	if agentsdk.TextOf(text) != "findings" || text.GetFrom() != "alice" || text.GetClientMsgId() != "r1" || text.GetTraceparent() == "" || !agentsdk.IsTurn(text) {
		t.Errorf("text %s", js(t, text))
	}
	want := `{"body":"draft","context_updates":{"delete":["n"],"set":{"approved":false,"score":0.5}},"usage":{"input_tokens":"10","output_tokens":"3","cost_usd":0.01}}`
	if agentsdk.TextOf(packet) != "draft" || packet.GetCausationId() != text.GetId() || js(t, packet.GetPacket()) != want {
		t.Errorf("packet %s, want the payload %s", js(t, packet), want)
	}
	if note.GetType() != "note" || string(note.GetCustom()) != "psst" || !slices.Equal(note.GetAudience().GetNames(), []string{"alice"}) || agentsdk.IsTurn(note) {
		t.Errorf("note %s", js(t, note))
	}
	// Bob may not see carol's note to alice.
	blog, err := bob.ReadLog(ctx, id, 6, 1)
	if err != nil || len(blog) != 1 || blog[0].GetSeq() != 7 || !slices.Equal(blog[0].GetContextSet().GetDelete(), []string{"topic"}) {
		t.Errorf("bob's log from 6: %v %v", blog, err)
	}
}

// checkView reads bob's windowed view of TestSendAndRead's session.
func checkView(t *testing.T, ctx context.Context, bob *agentsdk.Client, id string) {
	t.Helper()
	v, err := bob.View(ctx, id, agentsdk.ViewOptions{Name: agentsdk.ViewWindowed, Window: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.GetItems()) != 1 || v.GetItems()[0].GetText() != "edited" || v.GetOlderTotal() != 2 || len(v.GetOlder()) != 2 || v.GetName() != "windowed" {
		t.Errorf("view %s", js(t, v))
	}
}

// checkStreams subscribes and watches TestSendAndRead's session as bob.
func checkStreams(t *testing.T, ctx context.Context, bob *agentsdk.Client, id string) {
	t.Helper()
	// Subscribe from a cursor: bob gets 7..9 less his own, in order.
	sub, err := bob.Subscribe(ctx, agentsdk.SubscribeOptions{Cursors: map[string]uint64{id: 6}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var seqs []uint64
	for d, err := range sub.All() {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, d.GetEnvelope().GetSeq())
		if agentsdk.Ends(d.GetEnvelope()) {
			break
		}
	}
	if !slices.Equal(seqs, []uint64{7, 8, 9}) {
		t.Errorf("subscribe from 6: %v", seqs)
	}

	// Watch shows what bob may read from a seq: not carol's note to alice
	// (seq 6).
	w, err := bob.Watch(ctx, id, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	seqs = nil
	for {
		d, err := w.Recv()
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, d.GetEnvelope().GetSeq())
		if agentsdk.Ends(d.GetEnvelope()) {
			if d.GetEnvelope().GetEnded().GetReason() != "finished" || d.GetYourTurn() {
				t.Errorf("close %s", js(t, d))
			}
			break
		}
	}
	if !slices.Equal(seqs, []uint64{5, 7, 8, 9}) {
		t.Errorf("watch from 5: %v", seqs)
	}
}

// TestSendRawEnvelope: Send takes any envelope (here task progress) and
// leaves the caller's envelope alone.
func TestSendRawEnvelope(t *testing.T) {
	h := hubtest.New(t)
	ctx := testCtx(t)
	alice := dial(t, h.Addr(), "alice")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	env := &hubpb.Envelope{Type: agentsdk.EventTaskProgress, Payload: &hubpb.Envelope_TaskProgress{TaskProgress: &hubpb.TaskProgress{Task: "index", Percent: 50}}}
	ack, err := alice.Send(ctx, s.ID(), env, agentsdk.WithClientMsgID("p1"))
	if err != nil {
		t.Fatal(err)
	}
	if env.GetClientMsgId() != "" {
		t.Error("Send modified the caller's envelope")
	}
	log, err := alice.ReadLog(ctx, s.ID(), ack.GetSeq(), 1)
	if err != nil || len(log) != 1 || log[0].GetTaskProgress().GetPercent() != 50 || log[0].GetClientMsgId() != "p1" {
		t.Fatalf("%v %v", log, err)
	}
	// A context value that cannot be JSON fails before the call.
	_, err = alice.SetContext(ctx, s.ID(), map[string]any{"f": func() {}})
	var e *agentsdk.Error
	if err == nil || errors.As(err, &e) {
		t.Errorf("bad context value: %v", err)
	}
	_, err = alice.SendPacket(ctx, s.ID(), agentsdk.NewPacket("x").Set("f", func() {}))
	if err == nil || errors.As(err, &e) {
		t.Errorf("bad packet value: %v", err)
	}
}

// TestEscalateAndCustomNodes: an escalation hands the turn to the
// session's supervisor (its creator); a custom condition the hub does not
// know is refused at open, naming the node.
func TestEscalateAndCustomNodes(t *testing.T) {
	h := hubtest.New(t)
	ctx := testCtx(t)
	alice, bob := dial(t, h.Addr(), "alice"), dial(t, h.Addr(), "bob")
	id := openPipeline(t, ctx, alice).ID()
	if _, err := alice.SendText(ctx, id, "go"); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.SendPacket(ctx, id, agentsdk.NewPacket("stuck").Escalate("need a decision")); err != nil {
		t.Fatal(err)
	}
	s, err := bob.GetSession(ctx, id)
	if err != nil || !slices.Equal(s.GetExpected(), []string{"alice"}) || s.Ended() {
		t.Errorf("after escalate: %v %v", s, err)
	}

	g := agentsdk.NewGraph("alice").
		On(agentsdk.CustomCondition("sentiment_below", map[string]any{"threshold": 0.2}), agentsdk.CustomTarget("human_queue", nil))
	_, err = alice.Open(ctx, agentsdk.OpenOptions{Graph: g, Participants: agentsdk.AutoAccepted("bob")})
	if !errors.Is(err, agentsdk.ErrInvalidGraph) || !strings.Contains(err.Error(), "sentiment_below") {
		t.Errorf("unknown custom condition: %v", err)
	}
}

// TestPacketProto: the packet builders write the hub's message, and Proto
// leaves the builder reusable.
func TestPacketProto(t *testing.T) {
	for _, tc := range []struct {
		p    *agentsdk.Packet
		want string
	}{
		{agentsdk.NewPacket("hi"), `{"body":"hi"}`},
		{agentsdk.NewPacket("over").Handoff("transfer_to_b", "b", "why"), `{"body":"over","routing":{"kind":"handoff","tool":"transfer_to_b","target":"b","reason":"why"}}`},
		{agentsdk.NewPacket("bye").Finish("", "sum"), `{"body":"bye","routing":{"kind":"finish","reason":"finished","summary":"sum"}}`},
		{agentsdk.NewPacket("help").Escalate("stuck"), `{"body":"help","routing":{"kind":"escalate","reason":"stuck"}}`},
		{agentsdk.NewPacket("").Set("k", map[string]any{"a": []int{1}}).Delete("x", "y"), `{"context_updates":{"delete":["x","y"],"set":{"k":{"a":[1]}}}}`},
	} {
		pb, err := tc.p.Proto()
		if err != nil {
			t.Fatal(err)
		}
		if got := js(t, pb); got != tc.want {
			t.Errorf("got %s, want %s", got, tc.want)
		}
		pb.Body = "changed"
		if again, _ := tc.p.Proto(); js(t, again) != tc.want {
			t.Errorf("Proto shares its message: %s", js(t, again))
		}
	}
}
