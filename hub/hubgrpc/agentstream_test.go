package hubgrpc_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/internal/wiretest"
	"github.com/hubd/hubd/session"
)

// agentStream is an agent stream of a test.
type agentStream struct {
	t testing.TB
	s grpc.BidiStreamingClient[hubpb.AgentFrame, hubpb.HubFrame]
}

// connect opens an agent stream, subscribed with sub unless nil, and
// reads its ready frame, which must name agent.
func connect(t testing.TB, c hubsvc.HubClient, agent string, sub *hubpb.SubscribeRequest) *agentStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := c.AgentStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Recv()
	if err != nil {
		t.Fatalf("connect as %s: %v", agent, err)
	}
	if got := f.GetReady().GetAgent(); got != agent || f.GetReady().GetMaxInFlight() == 0 || !f.GetReady().GetOpens() {
		t.Fatalf("the first frame is %v, want ready for %s, taking opens", f, agent)
	}
	a := &agentStream{t: t, s: s}
	if sub != nil {
		a.frame(&hubpb.AgentFrame{Frame: &hubpb.AgentFrame_Subscribe{Subscribe: sub}})
	}
	return a
}

func (a *agentStream) frame(f *hubpb.AgentFrame) {
	a.t.Helper()
	if err := a.s.Send(f); err != nil {
		a.t.Fatal(err)
	}
}

// send sends a text envelope with ref and client message id key.
func (a *agentStream) send(ref uint64, id, key string, env *hubpb.Envelope) {
	a.t.Helper()
	if env == nil {
		env = &hubpb.Envelope{Type: "text", Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "hi"}}}
	}
	env.ClientMsgId = key
	a.frame(&hubpb.AgentFrame{Frame: &hubpb.AgentFrame_Send{Send: &hubpb.StreamSend{Ref: ref, SessionId: id, Envelope: env}}})
}

// next reads the next frame.
func (a *agentStream) next() *hubpb.HubFrame {
	a.t.Helper()
	f, err := a.s.Recv()
	if err != nil {
		a.t.Fatal(err)
	}
	return f
}

// ack reads the next frame, which must be an ack.
func (a *agentStream) ack() *hubpb.StreamAck {
	a.t.Helper()
	f := a.next()
	if f.GetAck() == nil {
		a.t.Fatalf("want an ack, got %v", f)
	}
	return f.GetAck()
}

// delivery reads the next frame, which must be a delivery.
func (a *agentStream) delivery() *hubpb.Delivery {
	a.t.Helper()
	f := a.next()
	if f.GetDelivery() == nil {
		a.t.Fatalf("want a delivery, got %v", f)
	}
	return f.GetDelivery()
}

// TestConnectSends: sends on the stream are acknowledged with the seq the
// log holds, a refused send is answered with Send's code and reason and
// leaves the stream usable, and a retry with the same client message id
// (on the same stream or a new one) is a duplicate that writes nothing.
func TestConnectSends(t *testing.T) {
	f := start(t, "")
	ctx := context.Background()
	alice := f.agent("alice")
	id := openConversation(t, alice)
	a := connect(t, alice, "alice", nil)

	a.send(1, id, "k1", nil)
	a.send(2, id, "k2", nil)
	acks := map[uint64]*hubpb.StreamAck{}
	for range 2 {
		k := a.ack()
		acks[k.GetRef()] = k
	}
	if acks[1].GetError() != nil || acks[2].GetError() != nil || acks[1].GetResponse().GetSeq() == acks[2].GetResponse().GetSeq() {
		t.Fatalf("acks %v", acks)
	}
	log, err := alice.ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	found := map[uint64]string{}
	for _, e := range log.GetEnvelopes() {
		found[e.GetSeq()] = e.GetClientMsgId()
	}
	if found[acks[1].GetResponse().GetSeq()] != "k1" || found[acks[2].GetResponse().GetSeq()] != "k2" {
		t.Fatalf("acked %v, the log holds %v", acks, found)
	}

	for _, tc := range []struct {
		name   string
		sid    string
		env    *hubpb.Envelope
		code   codes.Code
		reason string
	}{
		{"impersonation", id, &hubpb.Envelope{Type: "text", From: "bob", Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "x"}}},
			codes.PermissionDenied, "IMPERSONATION"},
		{"bad session id", "nope", nil, codes.InvalidArgument, "MALFORMED"},
		{"unknown session", "0194d1a0-0000-7000-8000-0000000000aa", nil, codes.NotFound, "UNKNOWN_SESSION"},
		{"no envelope type", id, &hubpb.Envelope{}, codes.InvalidArgument, "MALFORMED"},
		{"hub-only event", id, &hubpb.Envelope{Type: "session_closed"}, codes.PermissionDenied, "HUB_ONLY_EVENT"},
	} {
		a.send(10, tc.sid, "bad-"+tc.name, tc.env)
		k := a.ack()
		if k.GetRef() != 10 || k.GetResponse() != nil || codes.Code(k.GetError().GetCode()) != tc.code ||
			k.GetError().GetReason().String() != tc.reason || k.GetError().GetMessage() == "" {
			t.Errorf("%s: got %v, want %v %s", tc.name, k, tc.code, tc.reason)
		}
	}

	a.send(3, id, "k1", nil) // a retry of ref 1
	if k := a.ack(); !k.GetResponse().GetDuplicate() || k.GetResponse().GetSeq() != acks[1].GetResponse().GetSeq() {
		t.Fatalf("a retry: %v, want a duplicate of %v", k, acks[1])
	}
	b := connect(t, f.agent("alice"), "alice", nil)
	b.send(1, id, "k2", nil)
	if k := b.ack(); !k.GetResponse().GetDuplicate() || k.GetResponse().GetSeq() != acks[2].GetResponse().GetSeq() {
		t.Fatalf("a retry on a new stream: %v, want a duplicate of %v", k, acks[2])
	}
	after, err := alice.ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.GetEnvelopes()) != len(log.GetEnvelopes()) {
		t.Fatalf("refused sends and retries wrote: %d envelopes, then %d", len(log.GetEnvelopes()), len(after.GetEnvelopes()))
	}

	// Fields this hub does not know are not stored, in the frame or the
	// envelope.
	unknown := protowire.AppendBytes(protowire.AppendTag(nil, 999, protowire.BytesType), []byte("not validated"))
	e := wiretest.Text("with unknown fields")
	e.ProtoReflect().SetUnknown(unknown)
	e.GetText().ProtoReflect().SetUnknown(unknown)
	e.ClientMsgId = "k-unknown"
	s := &hubpb.StreamSend{Ref: 20, SessionId: id, Envelope: e}
	s.ProtoReflect().SetUnknown(unknown)
	b.frame(&hubpb.AgentFrame{Frame: &hubpb.AgentFrame_Send{Send: s}})
	k := b.ack()
	if k.GetError() != nil {
		t.Fatal(k)
	}
	stored, _, err := f.srv.Feed().ReadLog(ctx, "", true, session.MustParseID(id), k.GetResponse().GetSeq(), 1)
	if err != nil || len(stored) != 1 {
		t.Fatalf("%v %v", stored, err)
	}
	if u, v := stored[0].ProtoReflect().GetUnknown(), stored[0].GetText().ProtoReflect().GetUnknown(); len(u)+len(v) > 0 {
		t.Fatalf("unknown fields were stored: %x / %x", u, v)
	}
}

// open sends an open with ref.
func (a *agentStream) open(ref uint64, req *hubpb.OpenRequest) {
	a.t.Helper()
	a.frame(&hubpb.AgentFrame{Frame: &hubpb.AgentFrame_Open{Open: &hubpb.StreamOpen{Ref: ref, Request: req}}})
}

// TestConnectOpens: an open on the stream is answered with its ref and
// the session Open would return, created by the stream's agent; a retry
// with the same idempotency key answers the same session as existing; a
// refused open is answered with Open's code and reason, writes nothing
// and leaves the stream usable.
func TestConnectOpens(t *testing.T) {
	f := start(t, "")
	ctx := context.Background()
	alice := f.agent("alice")
	a := connect(t, alice, "alice", nil)
	bob := connect(t, f.agent("bob"), "bob", &hubpb.SubscribeRequest{})
	req := func(key string) *hubpb.OpenRequest {
		return &hubpb.OpenRequest{Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}},
			IdempotencyKey: key, Labels: map[string]string{"by": "stream"}}
	}

	a.open(1, req("o1"))
	k := a.ack()
	id := k.GetOpened().GetSession().GetMeta().GetSessionId()
	if k.GetRef() != 1 || k.GetError() != nil || k.GetResponse() != nil || id == "" || k.GetOpened().GetExisting() ||
		k.GetOpened().GetSession().GetMeta().GetCreator() != "alice" {
		t.Fatalf("the open's ack: %v", k)
	}
	if d := bob.delivery(); d.GetEnvelope().GetSessionId() != id {
		t.Fatalf("bob's first delivery: %v, want one of %s", d, id)
	}
	got, err := alice.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
	if err != nil || got.GetMeta().GetLabels()["by"] != "stream" {
		t.Fatalf("GetSession of the session opened on the stream: %v %v", got, err)
	}

	a.open(2, req("o1"))
	if k := a.ack(); k.GetRef() != 2 || !k.GetOpened().GetExisting() || k.GetOpened().GetSession().GetMeta().GetSessionId() != id {
		t.Fatalf("a retry of the open: %v, want session %s, existing", k, id)
	}

	graph, _ := structpb.NewStruct(map[string]any{"initial_speaker": "alice", "transitions": []any{map[string]any{"when": map[string]any{"name": "no_such_condition"}}}})
	for _, tc := range []struct {
		name   string
		req    *hubpb.OpenRequest
		code   codes.Code
		reason string
	}{
		{"no request", nil, codes.InvalidArgument, "MALFORMED"},
		{"unknown type", &hubpb.OpenRequest{Type: "nope@1"}, codes.InvalidArgument, "UNKNOWN_SESSION_TYPE"},
		{"broken graph", &hubpb.OpenRequest{Type: "workflow@1", Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}}, Graph: graph},
			codes.InvalidArgument, "INVALID_GRAPH"},
	} {
		a.open(10, tc.req)
		k := a.ack()
		if k.GetRef() != 10 || k.GetOpened() != nil || codes.Code(k.GetError().GetCode()) != tc.code ||
			k.GetError().GetReason().String() != tc.reason || k.GetError().GetMessage() == "" {
			t.Errorf("%s: got %v, want %v %s", tc.name, k, tc.code, tc.reason)
		}
	}
	list, err := alice.ListSessions(ctx, &hubpb.ListSessionsRequest{})
	if err != nil || len(list.GetSessions()) != 1 {
		t.Fatalf("after refused opens alice has %v (%v), want the one session", list.GetSessions(), err)
	}
	a.send(11, id, "after", nil)
	if k := a.ack(); k.GetRef() != 11 || k.GetError() != nil {
		t.Fatalf("a send after refused opens: %v", k)
	}
}

// TestConnectDeliveries: a subscribed stream delivers what Subscribe
// would, a turn notice carries the view, and a new stream resumed from a
// cursor delivers what follows it, with no gap and no duplicate.
func TestConnectDeliveries(t *testing.T) {
	f := start(t, "")
	alice, bob := f.agent("alice"), f.agent("bob")
	id := wiretest.Pipeline(t, alice) // a workflow of alice, bob (and carol)
	view := &hubpb.GetViewRequest{Name: "full"}
	b := connect(t, bob, "bob", &hubpb.SubscribeRequest{TurnView: view})
	a := connect(t, alice, "alice", &hubpb.SubscribeRequest{TurnView: view})
	for {
		d := a.delivery()
		if d.GetEnvelope().GetSessionId() != id {
			continue
		}
		if d.GetYourTurn() {
			if d.GetView().GetSessionId() != id {
				t.Fatalf("alice's turn notice has no view: %v", d)
			}
			break
		}
	}
	a.send(1, id, "a1", nil)
	if k := a.ack(); k.GetError() != nil {
		t.Fatal(k)
	}
	var told *hubpb.Delivery
	seen := map[uint64]int{}
	for told == nil {
		d := b.delivery()
		seen[d.GetEnvelope().GetSeq()]++
		if d.GetYourTurn() && d.GetEnvelope().GetFrom() == "alice" {
			told = d
		}
	}
	if n := len(told.GetView().GetItems()); n == 0 || told.GetView().GetItems()[n-1].GetSeq() != told.GetEnvelope().GetSeq() {
		t.Fatalf("bob's turn notice's view does not end with alice's send: %v", told.GetView())
	}
	// bob resumes after the envelope before alice's: he gets it again, once,
	// with his turn.
	cur := told.GetEnvelope().GetSeq() - 1
	r := connect(t, f.agent("bob"), "bob", &hubpb.SubscribeRequest{Cursors: map[string]uint64{id: cur}})
	d := r.delivery()
	if d.GetEnvelope().GetSeq() != cur+1 || !d.GetYourTurn() {
		t.Fatalf("resumed after seq %d: got %v", cur, d)
	}
	if seen[told.GetEnvelope().GetSeq()] != 1 {
		t.Fatalf("seq %d delivered %d times", told.GetEnvelope().GetSeq(), seen[told.GetEnvelope().GetSeq()])
	}
}

// TestConnectRefused: a stream without credentials, a second subscribe on
// one stream, and streams past the per-connection and per-agent limits are
// refused with their reasons.
func TestConnectRefused(t *testing.T) {
	streamErr := func(t *testing.T, c hubsvc.HubClient, frames ...*hubpb.AgentFrame) (codes.Code, string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		s, err := c.AgentStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range frames {
			if err := s.Send(f); err != nil {
				break
			}
		}
		for {
			if _, err := s.Recv(); err != nil {
				return wiretest.ReasonOf(err)
			}
		}
	}
	sub := &hubpb.AgentFrame{Frame: &hubpb.AgentFrame_Subscribe{Subscribe: &hubpb.SubscribeRequest{}}}

	t.Run("no credentials", func(t *testing.T) {
		f := start(t, "alice alice-token-0123456789\n")
		if code, reason := streamErr(t, f.client()); code != codes.Unauthenticated || reason != "UNAUTHENTICATED" {
			t.Fatalf("got %v %s", code, reason)
		}
		if code, reason := streamErr(t, f.client("authorization", "Bearer wrong-token-0123456789")); code != codes.Unauthenticated || reason != "UNAUTHENTICATED" {
			t.Fatalf("a wrong token: got %v %s", code, reason)
		}
		connect(t, f.client("authorization", "Bearer alice-token-0123456789"), "alice", nil)
	})
	t.Run("subscribed twice", func(t *testing.T) {
		f := start(t, "")
		if code, reason := streamErr(t, f.agent("alice"), sub, sub); code != codes.InvalidArgument || reason != "MALFORMED" {
			t.Fatalf("got %v %s", code, reason)
		}
	})
	t.Run("an empty frame", func(t *testing.T) {
		f := start(t, "")
		if code, reason := streamErr(t, f.agent("alice"), &hubpb.AgentFrame{}); code != codes.InvalidArgument || reason != "MALFORMED" {
			t.Fatalf("got %v %s", code, reason)
		}
	})
	t.Run("per connection", func(t *testing.T) {
		f := startWith(t, server.Config{MaxStreamsPerConn: 1})
		alice := f.agent("alice")
		connect(t, alice, "alice", nil)
		if code, reason := streamErr(t, alice); code != codes.ResourceExhausted || reason != "LIMIT_REACHED" {
			t.Fatalf("got %v %s", code, reason)
		}
		connect(t, f.agent("alice"), "alice", nil) // another connection
	})
	t.Run("per agent", func(t *testing.T) {
		cfg := server.Config{}
		cfg.Feed.MaxStreamsPerAgent = 2
		f := startWith(t, cfg)
		openConversation(t, f.agent("alice"))
		// A subscribed stream takes one place: its subscription rides on it.
		connect(t, f.agent("alice"), "alice", &hubpb.SubscribeRequest{}).delivery()
		// A stream that only sends takes one too, on another connection.
		connect(t, f.agent("alice"), "alice", nil)
		for _, frames := range [][]*hubpb.AgentFrame{{sub}, nil} {
			if code, reason := streamErr(t, f.agent("alice"), frames...); code != codes.ResourceExhausted || reason != "LIMIT_REACHED" {
				t.Fatalf("a third stream of alice's (frames %v): got %v %s", frames, code, reason)
			}
		}
		connect(t, f.agent("bob"), "bob", nil) // another agent's
	})
}
