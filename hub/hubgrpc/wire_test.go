package hubgrpc_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/fakeclock"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// sent returns one envelope of every type an agent sends with Send, each
// with every header field an agent may set.
func sent() []*hubpb.Envelope {
	envs := []*hubpb.Envelope{
		{Type: "text", Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "hi <there> ünïcode"}}},
		{Type: "packet", Payload: &hubpb.Envelope_Packet{Packet: &hubpb.Packet{Body: "b",
			Routing:        &hubpb.Routing{Kind: "text", Tool: "t", Reason: "r", Summary: "s"},
			ContextUpdates: &hubpb.ContextUpdate{Set: map[string]*structpb.Value{"k": session.MustValue(map[string]any{"a": []any{1, 2.5}})}, Delete: []string{"x"}},
			Usage:          &hubpb.Usage{InputTokens: 1, OutputTokens: 2, CostUsd: 0.5}}}},
		{Type: "context_set", Payload: &hubpb.Envelope_ContextSet{ContextSet: &hubpb.ContextUpdate{
			Set: map[string]*structpb.Value{"k": structpb.NewBoolValue(true), "n": structpb.NewNullValue()}, Delete: []string{"y"}}}},
		{Type: "question", Payload: &hubpb.Envelope_Question{Question: &hubpb.Question{QuestionId: "q", Text: "?", Answerer: "bob",
			Options: []*hubpb.Option{{Id: "y", Label: "yes"}, {Id: "n", Label: "no"}}}}},
		{Type: "answer", Payload: &hubpb.Envelope_Answer{Answer: &hubpb.Answer{QuestionId: "q", OptionIds: []string{"y"}, Text: "sure"}}},
		{Type: "task_progress", Payload: &hubpb.Envelope_TaskProgress{TaskProgress: &hubpb.TaskProgress{Task: "t", Percent: 50, Detail: "half"}}},
		{Type: "app.custom", Payload: &hubpb.Envelope_Custom{Custom: []byte{0, 1, 2, 0xff}}},
		{Type: "app.bare"},
	}
	for i, e := range envs {
		e.Audience = &hubpb.Audience{Names: []string{"bob"}}
		if e.GetType() == session.EventAnswer {
			e.Audience.Names = []string{"alice"} // bob answers alice
		}
		if i%2 == 1 {
			e.Audience = nil // every participant but the sender
		}
		e.CausationId = "0194d1a0-0000-7000-8000-0000000000bb"
		e.ClientMsgId = "m-" + e.GetType()
		e.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	}
	return envs
}

// hubFields clears what the hub sets on an envelope and returns a copy.
func hubFields(e *hubpb.Envelope) *hubpb.Envelope {
	c := proto.CloneOf(e)
	c.SessionId, c.Seq, c.Id, c.From, c.AcceptedAt, c.Rule, c.Call = "", 0, "", "", nil, "", nil
	return c
}

// sender is who sends e in TestWireRoundTrip: the answer comes from the
// question's answerer, everything else from alice.
func sender(e *hubpb.Envelope) string {
	if e.GetType() == session.EventAnswer {
		return "bob"
	}
	return "alice"
}

// openConversation opens a conversation of alice and bob (auto-accepting)
// without timers and returns its id.
func openConversation(t testing.TB, alice hubsvc.HubClient) string {
	t.Helper()
	o, err := alice.Open(context.Background(), &hubpb.OpenRequest{Type: "conversation@1",
		Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}}, Expectations: &hubpb.Expectations{}})
	if err != nil {
		t.Fatal(err)
	}
	return o.GetSession().GetMeta().GetSessionId()
}

// TestWireRoundTrip sends one envelope of every type an agent may send
// over gRPC and reads each back with ReadLog and Watch: what the hub did
// not set arrives as sent (proto.Equal), and what it set is the
// acknowledgement's.
func TestWireRoundTrip(t *testing.T) {
	f := start(t, "")
	ctx := context.Background()
	alice := f.agent("alice")
	agents := map[string]hubsvc.HubClient{"alice": alice, "bob": f.agent("bob")}
	id := openConversation(t, alice)
	watch, err := alice.Watch(ctx, &hubpb.WatchRequest{SessionId: id, FromSeq: 3})
	if err != nil {
		t.Fatal(err)
	}
	var acks []*hubpb.SendResponse
	for _, e := range sent() {
		a, err := agents[sender(e)].Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: e})
		if err != nil {
			t.Fatalf("%s: %v", e.GetType(), err)
		}
		acks = append(acks, a)
	}
	got, err := alice.ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: id, FromSeq: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range sent() {
		if i >= len(got.GetEnvelopes()) {
			t.Fatalf("the log holds %d of %d envelopes", len(got.GetEnvelopes()), len(sent()))
		}
		e, a := got.GetEnvelopes()[i], acks[i]
		if !proto.Equal(hubFields(e), want) {
			t.Errorf("%s changed on the wire:\nsent %v\ngot  %v", want.GetType(), want, e)
		}
		if e.GetSessionId() != id || e.GetFrom() != sender(want) || e.GetSeq() != a.GetSeq() || e.GetId() != a.GetId() ||
			e.GetCall().GetId() != id || e.GetCall().GetRoot() != id ||
			!proto.Equal(e.GetAcceptedAt(), a.GetAcceptedAt()) || a.GetAcceptedAt() == nil {
			t.Errorf("%s: hub fields %v do not match the acknowledgement %v", want.GetType(), e, a)
		}
		d, err := watch.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(d.GetEnvelope(), e) {
			t.Errorf("watch and log differ:\nwatch %v\nlog   %v", d.GetEnvelope(), e)
		}
	}
}

// TestWireHubWritten reads the envelopes the hub writes (invite, open,
// close, expiry, violation) and the invite answers over gRPC, with ReadLog
// and Watch, and compares them with the hub's own log.
func TestWireHubWritten(t *testing.T) {
	clock := fakeclock.New(epoch)
	f := startWith(t, server.Config{Hub: hub.Config{Clock: clock}})
	ctx := context.Background()
	alice, bob, ops := f.agent("alice"), f.agent("bob"), f.agent("operator")
	open := func(req *hubpb.OpenRequest) string {
		t.Helper()
		req.Type, req.Participants = "conversation@1", []*hubpb.Participant{{Name: "bob"}}
		o, err := alice.Open(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return o.GetSession().GetMeta().GetSessionId()
	}
	acked := open(&hubpb.OpenRequest{Ttl: durationpb.New(time.Minute), Expectations: &hubpb.Expectations{Items: []*hubpb.Expectation{
		session.Expect(session.AcksWithin, 10*time.Second, session.ActionWarn)}}})
	rejected, closed := open(&hubpb.OpenRequest{}), open(&hubpb.OpenRequest{})
	clock.Advance(10 * time.Second) // acks_within warns bob
	mustOK(t, func() error { _, err := bob.AckInvite(ctx, &hubpb.InviteRequest{SessionId: acked}); return err })
	mustOK(t, func() error { _, err := bob.AckInvite(ctx, &hubpb.InviteRequest{SessionId: closed}); return err })
	mustOK(t, func() error {
		_, err := bob.RejectInvite(ctx, &hubpb.InviteRequest{SessionId: rejected, Reason: "busy"})
		return err
	})
	mustOK(t, func() error {
		_, err := alice.Close(ctx, &hubpb.CloseRequest{SessionId: closed, Reason: "done"})
		return err
	})
	clock.Advance(time.Minute) // the TTL expires the acked session
	var types []string
	for _, id := range []string{acked, rejected, closed} {
		for _, e := range compareWithHub(t, f, ops, id) {
			types = append(types, e.GetType())
		}
	}
	for _, want := range []string{"session_invite", "session_invite_ack", "session_invite_reject", "session_opened",
		"session_closed", "session_expired", "expectation_violated"} {
		if !slices.Contains(types, want) {
			t.Errorf("no %s read back (read %v)", want, types)
		}
	}
}

// compareWithHub reads session id's log over gRPC as an operator, with
// ReadLog and Watch, checks both equal the hub's own log, and returns it.
func compareWithHub(t *testing.T, f *fixture, ops hubsvc.HubClient, id string) []*hubpb.Envelope {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	want, _, err := f.srv.Feed().ReadLog(ctx, "", true, session.MustParseID(id), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ops.ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	watch, err := ops.Watch(ctx, &hubpb.WatchRequest{SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.GetEnvelopes()) != len(want) {
		t.Fatalf("ReadLog gave %d envelopes, the hub has %d", len(got.GetEnvelopes()), len(want))
	}
	for i, w := range want {
		if !proto.Equal(got.GetEnvelopes()[i], w) {
			t.Errorf("ReadLog:\n got %v\nwant %v", got.GetEnvelopes()[i], w)
		}
		d, err := watch.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(d.GetEnvelope(), w) {
			t.Errorf("Watch:\n got %v\nwant %v", d.GetEnvelope(), w)
		}
	}
	return want
}

// TestProtocolSpelling: the protocol's spellings of event types ("EV_TEXT")
// are accepted, stored, read and delivered in their stored form ("text").
func TestProtocolSpelling(t *testing.T) {
	f := start(t, "")
	ctx := context.Background()
	alice, bob := f.agent("alice"), f.agent("bob")
	id := openConversation(t, alice)
	stream, err := bob.Subscribe(ctx, &hubpb.SubscribeRequest{Cursors: map[string]uint64{id: 2}})
	if err != nil {
		t.Fatal(err)
	}
	sends := map[string]*hubpb.Envelope{
		"text":        {Type: "EV_TEXT", Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "hi"}}},
		"context_set": {Type: "EV_CONTEXT_SET", Payload: &hubpb.Envelope_ContextSet{ContextSet: &hubpb.ContextUpdate{Delete: []string{"k"}}}},
		"packet":      {Type: "EV_PACKET", Payload: &hubpb.Envelope_Packet{Packet: &hubpb.Packet{Body: "b"}}},
	}
	for _, want := range []string{"text", "context_set", "packet"} {
		a, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: sends[want]})
		if err != nil {
			t.Fatalf("%s: %v", sends[want].GetType(), err)
		}
		log, err := alice.ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: id, FromSeq: a.GetSeq(), Limit: 1})
		if err != nil || len(log.GetEnvelopes()) != 1 {
			t.Fatalf("reading seq %d: %v %v", a.GetSeq(), log, err)
		}
		d, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if got, del := log.GetEnvelopes()[0].GetType(), d.GetEnvelope().GetType(); got != want || del != want {
			t.Errorf("%s is stored as %q and delivered as %q, want %q", sends[want].GetType(), got, del, want)
		}
	}
	info, err := alice.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
	if err != nil || info.GetTurn() != 2 {
		t.Fatalf("EV_TEXT and EV_PACKET are turns: turn %d (%v)", info.GetTurn(), err)
	}
}

// TestUnknownFieldsDropped: fields this hub does not know (a newer
// client's, or forged ones) are not stored: they were never validated.
func TestUnknownFieldsDropped(t *testing.T) {
	f := start(t, "")
	ctx := context.Background()
	alice := f.agent("alice")
	id := openConversation(t, alice)
	e := sent()[0]
	unknown := protowire.AppendTag(nil, 999, protowire.BytesType)
	unknown = protowire.AppendBytes(unknown, []byte("not validated"))
	e.ProtoReflect().SetUnknown(unknown)
	e.GetText().ProtoReflect().SetUnknown(unknown)
	a, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: e})
	if err != nil {
		t.Fatal(err)
	}
	stored, _, err := f.srv.Feed().ReadLog(ctx, "", true, session.MustParseID(id), a.GetSeq(), 1)
	if err != nil || len(stored) != 1 {
		t.Fatalf("%v %v", stored, err)
	}
	if u, v := stored[0].ProtoReflect().GetUnknown(), stored[0].GetText().ProtoReflect().GetUnknown(); len(u)+len(v) > 0 {
		t.Fatalf("unknown fields were stored: %x / %x", u, v)
	}
	bob := &hubpb.Participant{Name: "bob", AutoAccept: true}
	bob.ProtoReflect().SetUnknown(unknown)
	o, err := alice.Open(ctx, &hubpb.OpenRequest{Type: "conversation@1", Participants: []*hubpb.Participant{bob}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := f.srv.Feed().Get(ctx, "", true, session.MustParseID(o.GetSession().GetMeta().GetSessionId()))
	if err != nil {
		t.Fatal(err)
	}
	if u := info.GetMeta().GetParticipants()[1].ProtoReflect().GetUnknown(); len(u) > 0 {
		t.Fatalf("unknown fields were stored in the metadata: %x", u)
	}
}

func mustOK(t *testing.T, f func() error) {
	t.Helper()
	if err := f(); err != nil {
		t.Fatal(err)
	}
}

// TestHubFieldsIgnored: the fields the hub sets (seq, id, time) are the
// hub's whatever a caller puts there, even values that would not check.
func TestHubFieldsIgnored(t *testing.T) {
	f := start(t, "")
	ctx := context.Background()
	alice := f.agent("alice")
	id := openConversation(t, alice)
	e := sent()[0]
	e.SessionId, e.Seq, e.Id, e.From = id, 99, "not-an-id", "alice"
	e.AcceptedAt = &timestamppb.Timestamp{Seconds: -1 << 62, Nanos: -1} // invalid
	a, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: e})
	if err != nil {
		t.Fatal(err)
	}
	got, err := alice.ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: id, FromSeq: a.GetSeq(), Limit: 1})
	if err != nil || len(got.GetEnvelopes()) != 1 {
		t.Fatalf("%v %v", got, err)
	}
	if s := got.GetEnvelopes()[0]; s.GetSeq() != 3 || s.GetId() != a.GetId() || !proto.Equal(s.GetAcceptedAt(), a.GetAcceptedAt()) ||
		s.GetAcceptedAt().CheckValid() != nil {
		t.Fatalf("stored %v for the acknowledgement %v", s, a)
	}
}
