package agentsdk_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
)

// TestOpenOptions sends every open option and reads them back.
func TestOpenOptions(t *testing.T) {
	srv := startHub(t, server.Config{})
	ctx := testCtx(t)
	alice, bob := dial(t, srv.Addr(), "alice"), dial(t, srv.Addr(), "bob")
	parent := openPipeline(t, ctx, alice)
	opts := agentsdk.OpenOptions{
		Type:           agentsdk.TypeWorkflow,
		Participants:   []agentsdk.Participant{{Name: "bob", Role: "reviewer"}, {Name: "carol", Role: "human", AutoAccept: true}},
		Graph:          agentsdk.RoundRobin([]string{"alice", "bob", "carol"}, 5),
		Knobs:          map[string]any{"max_handoffs": 3, "context": map[string]any{"topic": "wal"}},
		Labels:         map[string]string{"team": "storage"},
		TTL:            time.Hour,
		InviteTimeout:  time.Minute,
		Expectations:   []agentsdk.Expectation{{Name: "turn_within", Within: 90 * time.Second, Action: "warn"}},
		Parent:         parent.ID,
		IdempotencyKey: "review-1",
	}
	info, err := alice.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != agentsdk.StatePending || info.Existing || info.Creator != "alice" || info.Type != "workflow@1" {
		t.Errorf("opened %+v", info)
	}
	wantParts := []agentsdk.Participant{{Name: "alice", Role: "creator"}, {Name: "bob", Role: "reviewer"}, {Name: "carol", Role: "human", AutoAccept: true}}
	if !slices.Equal(info.Participants, wantParts) {
		t.Errorf("participants %+v", info.Participants)
	}
	if info.TTL != time.Hour || info.Labels["team"] != "storage" || info.ParentID != parent.ID || info.RootID != parent.ID || info.Depth != 1 {
		t.Errorf("ttl %v labels %v parent %q root %q depth %d", info.TTL, info.Labels, info.ParentID, info.RootID, info.Depth)
	}
	if len(info.Expectations) != 1 || info.Expectations[0] != (agentsdk.Expectation{Name: "turn_within", Within: 90 * time.Second, Action: "warn"}) {
		t.Errorf("expectations %+v", info.Expectations)
	}
	if string(info.Knobs["max_handoffs"]) != "3" {
		t.Errorf("knobs %v", info.Knobs)
	}
	var topic string
	if ok, err := info.Var("topic", &topic); !ok || err != nil || topic != "wal" {
		t.Errorf("context var topic: %q %v %v (context %v)", topic, ok, err, info.Context)
	}
	if ok, _ := info.Var("nope", &topic); ok {
		t.Error("a missing var is set")
	}
	again, err := alice.Open(ctx, opts)
	if err != nil || !again.Existing || again.ID != info.ID {
		t.Errorf("idempotent open: %+v %v", again, err)
	}

	// Bob acks; the session opens and alice is expected.
	ack, err := bob.AckInvite(ctx, info.ID)
	if err != nil || ack.Seq != 2 {
		t.Fatalf("ack %+v %v", ack, err)
	}
	got, err := bob.GetSession(ctx, info.ID)
	if err != nil || got.State != agentsdk.StateOpen || !slices.Equal(got.Expected, []string{"alice"}) || got.Seq != 3 {
		t.Fatalf("after ack %+v %v", got, err)
	}

	// No expectations at all.
	none, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob"),
		Expectations: []agentsdk.Expectation{}})
	if err != nil || len(none.Expectations) != 0 {
		t.Errorf("no expectations: %+v %v", none, err)
	}
}

// TestListSessions filters and pages.
func TestListSessions(t *testing.T) {
	srv := startHub(t, server.Config{})
	ctx := testCtx(t)
	alice, bob := dial(t, srv.Addr(), "alice"), dial(t, srv.Addr(), "bob")
	var ids []string
	for range 3 {
		ids = append(ids, openPipeline(t, ctx, alice).ID)
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
			all = append(all, s.ID)
		}
		if next == "" {
			break
		}
		token = next
	}
	if want := append(slices.Clone(ids), labelled.ID); !slices.Equal(all, want) {
		t.Errorf("paged %v, want %v", all, want)
	}
	for _, tc := range []struct {
		opts agentsdk.ListOptions
		want []string
	}{
		{agentsdk.ListOptions{State: agentsdk.StateClosed}, []string{ids[1]}},
		{agentsdk.ListOptions{Creator: "bob"}, []string{labelled.ID}},
		{agentsdk.ListOptions{Participant: "carol"}, ids},
		{agentsdk.ListOptions{Labels: map[string]string{"k": "v"}}, []string{labelled.ID}},
	} {
		page, _, err := alice.ListSessions(ctx, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range page {
			got = append(got, s.ID)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.opts, got, tc.want)
		}
	}
}

// TestInvites: a reject closes the session with invite_rejected.
func TestInvites(t *testing.T) {
	srv := startHub(t, server.Config{})
	ctx := testCtx(t)
	alice, bob := dial(t, srv.Addr(), "alice"), dial(t, srv.Addr(), "bob")
	info, err := alice.OpenWorkflow(ctx, agentsdk.Sequence("alice", "bob"), "bob")
	if err != nil {
		t.Fatal(err)
	}
	ack, err := bob.RejectInvite(ctx, info.ID, "busy")
	if err != nil || !ack.Closed || ack.CloseReason != "invite_rejected" {
		t.Fatalf("reject %+v %v", ack, err)
	}
	log, err := bob.ReadLog(ctx, info.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range log {
		got = append(got, e.Type+":"+e.Reason)
	}
	want := []string{"session_invite:", "session_invite_reject:busy", "session_closed:invite_rejected"}
	if !slices.Equal(got, want) {
		t.Errorf("log %v, want %v", got, want)
	}
}

// TestSendAndRead takes turns with every kind of send, then reads them
// back through the log, the view, pending turns, subscribe and watch.
func TestSendAndRead(t *testing.T) {
	srv := startHub(t, server.Config{})
	ctx := testCtx(t)
	alice, bob, carol := dial(t, srv.Addr(), "alice"), dial(t, srv.Addr(), "bob"), dial(t, srv.Addr(), "carol")
	info := openPipeline(t, ctx, alice) // seq 1 invite, 2 opened

	turns, err := alice.PendingTurns(ctx)
	if err != nil || len(turns) != 1 || !turns[0].YourTurn || turns[0].Envelope.Type != agentsdk.EventOpened || turns[0].Envelope.Seq != 2 {
		t.Fatalf("pending %+v %v", turns, err)
	}
	ack, err := bob.SetContext(ctx, info.ID, map[string]any{"topic": "wal", "n": 1}) // seq 3, not a turn
	if err != nil || ack.Seq != 3 || ack.ClientMsgID == "" {
		t.Fatalf("set context %+v %v", ack, err)
	}
	ack, err = alice.SendText(ctx, info.ID, "findings", agentsdk.WithClientMsgID("r1"), agentsdk.WithTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")) // seq 4
	if err != nil || ack.Seq != 4 || ack.Duplicate || ack.ClientMsgID != "r1" || ack.ID == "" || ack.AcceptedAt.IsZero() {
		t.Fatalf("text %+v %v", ack, err)
	}
	dup, err := alice.SendText(ctx, info.ID, "findings again", agentsdk.WithClientMsgID("r1"))
	if err != nil || !dup.Duplicate || dup.Seq != 4 || dup.ID != ack.ID {
		t.Fatalf("duplicate %+v %v", dup, err)
	}
	p := agentsdk.NewPacket("draft").Set("approved", false).Set("score", 0.5).Delete("n").
		WithUsage(agentsdk.Usage{InputTokens: 10, OutputTokens: 3, CostUSD: 0.01})
	if ack, err = bob.SendPacket(ctx, info.ID, p, agentsdk.WithCausation(ack.ID)); err != nil || ack.Seq != 5 { // seq 5
		t.Fatalf("packet %+v %v", ack, err)
	}
	if ack, err = carol.SendEvent(ctx, info.ID, "note", []byte("psst"), agentsdk.WithAudience("alice")); err != nil || ack.Seq != 6 { // seq 6
		t.Fatalf("event %+v %v", ack, err)
	}
	if ack, err = carol.UpdateContext(ctx, info.ID, agentsdk.ContextUpdate{Delete: []string{"topic"}}); err != nil || ack.Seq != 7 { // seq 7
		t.Fatalf("update context %+v %v", ack, err)
	}
	ack, err = carol.SendPacket(ctx, info.ID, agentsdk.NewPacket("edited").Finish("", "all good")) // seq 8, closes at 9
	if err != nil || ack.Seq != 8 || !ack.Closed || ack.CloseReason != "finished" {
		t.Fatalf("finish %+v %v", ack, err)
	}

	s, err := alice.GetSession(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != agentsdk.StateClosed || s.CloseReason != "finished" || s.Turn != 3 || s.Seq != 9 ||
		s.Usage != (agentsdk.Usage{InputTokens: 10, OutputTokens: 3, CostUSD: 0.01}) {
		t.Errorf("session %+v", s)
	}
	if string(s.Context["approved"]) != "false" || string(s.Context["score"]) != "0.5" || s.Context["n"] != nil || s.Context["topic"] != nil {
		t.Errorf("context %v", s.Context)
	}

	// The log, as alice may see it: bob's packet with its context updates,
	// carol's note addressed to her.
	log, err := alice.ReadLog(ctx, info.ID, 4, 3)
	if err != nil || len(log) != 3 {
		t.Fatalf("log %v %v", log, err)
	}
	text, packet, note := log[0], log[1], log[2]
	if text.Text != "findings" || text.From != "alice" || text.ClientMsgID != "r1" || text.TraceParent == "" || !text.IsTurn() {
		t.Errorf("text %+v", text)
	}
	if packet.Packet == nil || packet.Text != "draft" || packet.CausationID != text.ID || packet.Packet.Usage.InputTokens != 10 ||
		!slices.Equal(packet.Packet.Context.Delete, []string{"n"}) || string(packet.Packet.Context.Set["approved"].(json.RawMessage)) != "false" {
		t.Errorf("packet %+v %+v", packet, packet.Packet)
	}
	if note.Type != "note" || string(note.Data) != "psst" || !slices.Equal(note.To, []string{"alice"}) || note.IsTurn() {
		t.Errorf("note %+v", note)
	}
	// Bob may not see carol's note to alice.
	blog, err := bob.ReadLog(ctx, info.ID, 6, 1)
	if err != nil || len(blog) != 1 || blog[0].Seq != 7 || blog[0].Context == nil || !slices.Equal(blog[0].Context.Delete, []string{"topic"}) {
		t.Errorf("bob's log from 6: %+v %v", blog, err)
	}

	v, err := bob.View(ctx, info.ID, agentsdk.ViewOptions{Name: agentsdk.ViewWindowed, Window: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Items) != 1 || v.Items[0].Text != "edited" || v.OlderTotal != 2 || len(v.Older) != 2 || v.Name != "windowed" {
		t.Errorf("view %+v", v)
	}

	// Subscribe from a cursor, with ended sessions: bob gets 7..9 less his
	// own, in order.
	sub, err := bob.Subscribe(ctx, agentsdk.SubscribeOptions{Cursors: map[string]uint64{info.ID: 6}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var seqs []uint64
	for d, err := range sub.All() {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, d.Envelope.Seq)
		if d.Envelope.Ends() {
			break
		}
	}
	if !slices.Equal(seqs, []uint64{7, 8, 9}) {
		t.Errorf("subscribe from 6: %v", seqs)
	}

	// Watch shows what bob may read from a seq: not carol's note to alice
	// (seq 6).
	w, err := bob.Watch(ctx, info.ID, 5)
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
		seqs = append(seqs, d.Envelope.Seq)
		if d.Envelope.Ends() {
			if d.Envelope.Reason != "finished" || d.YourTurn {
				t.Errorf("close %+v", d)
			}
			break
		}
	}
	if !slices.Equal(seqs, []uint64{5, 7, 8, 9}) {
		t.Errorf("watch from 5: %v", seqs)
	}
}

// TestSendRawEnvelope: Send takes any envelope (here a question) and
// leaves the caller's envelope alone.
func TestSendRawEnvelope(t *testing.T) {
	srv := startHub(t, server.Config{})
	ctx := testCtx(t)
	alice := dial(t, srv.Addr(), "alice")
	info, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	env := &hubpb.Envelope{Type: agentsdk.EventTaskProgress, Payload: &hubpb.Envelope_TaskProgress{TaskProgress: &hubpb.TaskProgress{Task: "index", Percent: 50}}}
	ack, err := alice.Send(ctx, info.ID, env, agentsdk.WithClientMsgID("p1"))
	if err != nil {
		t.Fatal(err)
	}
	if env.GetClientMsgId() != "" {
		t.Error("Send modified the caller's envelope")
	}
	log, err := alice.ReadLog(ctx, info.ID, ack.Seq, 1)
	if err != nil || len(log) != 1 || log[0].Proto.GetTaskProgress().GetPercent() != 50 {
		t.Fatalf("%v %v", log, err)
	}
	// A context value that cannot be JSON fails before the call.
	_, err = alice.SetContext(ctx, info.ID, map[string]any{"f": func() {}})
	var e *agentsdk.Error
	if err == nil || errors.As(err, &e) {
		t.Errorf("bad context value: %v", err)
	}
}

// TestEscalateAndCustomNodes: an escalation hands the turn to the
// session's supervisor (its creator); a custom condition the hub does not
// know is refused at open, naming the node.
func TestEscalateAndCustomNodes(t *testing.T) {
	srv := startHub(t, server.Config{})
	ctx := testCtx(t)
	alice, bob := dial(t, srv.Addr(), "alice"), dial(t, srv.Addr(), "bob")
	info := openPipeline(t, ctx, alice)
	if _, err := alice.SendText(ctx, info.ID, "go"); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.SendPacket(ctx, info.ID, agentsdk.NewPacket("stuck").Escalate("need a decision")); err != nil {
		t.Fatal(err)
	}
	s, err := bob.GetSession(ctx, info.ID)
	if err != nil || !slices.Equal(s.Expected, []string{"alice"}) || s.State.Ended() {
		t.Errorf("after escalate: %+v %v", s, err)
	}

	g := agentsdk.NewGraph("alice").
		On(agentsdk.CustomCondition("sentiment_below", map[string]any{"threshold": 0.2}), agentsdk.CustomTarget("human_queue", nil))
	_, err = alice.Open(ctx, agentsdk.OpenOptions{Graph: g, Participants: agentsdk.AutoAccepted("bob")})
	if !errors.Is(err, agentsdk.ErrInvalidGraph) || !strings.Contains(err.Error(), "sentiment_below") {
		t.Errorf("unknown custom condition: %v", err)
	}
}
