package session_test

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// An envelope as an agent sends it, checked, in its one JSON form; its
// stored form gives back the same envelope.
func ExampleCheckEnvelope() {
	e := &hubpb.Envelope{
		Seq:  3,
		From: "alice",
		Type: session.EventPacket,
		Payload: &hubpb.Envelope_Packet{Packet: &hubpb.Packet{
			Body:           "over to you",
			Routing:        &hubpb.Routing{Kind: session.RouteHandoff, Tool: "transfer_to_bob"},
			ContextUpdates: &hubpb.ContextUpdate{Set: map[string]*structpb.Value{"route": structpb.NewStringValue("billing")}},
		}},
		AcceptedAt: session.Stamp(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
	}
	if err := session.CheckEnvelope(e); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := hubpb.MarshalJSON(e)
	fmt.Println(string(b))

	stored, _ := session.MarshalEnvelope(e)
	back, _ := session.UnmarshalEnvelope(stored)
	fmt.Println(back.GetFrom(), session.ProtocolName(back.GetType()), session.ToolOf(back))

	e.Type = session.EventText
	fmt.Println(session.CheckEnvelope(e))
	// Output:
	// {"seq":"3","from":"alice","type":"packet","packet":{"body":"over to you","routing":{"kind":"handoff","tool":"transfer_to_bob"},"context_updates":{"set":{"route":"billing"}}},"accepted_at":"2026-01-02T03:04:05Z"}
	// alice EV_PACKET transfer_to_bob
	// text needs the envelope field text, got packet: session: malformed
}

// Context values are compared by their canonical form.
func ExampleCanonicalJSON() {
	for _, in := range []string{`{"b": 1.0, "a": [1e0, "x"]}`, `1.50`, `-0`, `12345678901234567890123`} {
		c, _ := session.CanonicalJSON([]byte(in))
		fmt.Println(string(c))
	}
	a, _ := session.CanonicalJSON([]byte(`1`))
	b, _ := session.CanonicalJSON([]byte(`1.0`))
	fmt.Println(string(a) == string(b))
	// Output:
	// {"a":[1,"x"],"b":1}
	// 1.5
	// 0
	// 12345678901234567890123
	// true
}

// A session's lifecycle folded from its lifecycle envelopes.
func ExampleLifecycle() {
	var l session.Lifecycle
	apply := func(e *hubpb.Envelope) {
		if err := l.Admit(e.GetType(), e.GetFrom()); err != nil {
			fmt.Println("refused:", err)
			return
		}
		l.Fold(e)
	}
	text := func(from, s string) *hubpb.Envelope {
		return &hubpb.Envelope{From: from, Type: session.EventText, Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: s}}}
	}
	apply(&hubpb.Envelope{Type: session.EventInvite, Payload: &hubpb.Envelope_Invite{Invite: &hubpb.Invite{Invitees: []string{"bob"}}}})
	apply(text("alice", "too early"))
	apply(&hubpb.Envelope{From: "bob", Type: session.EventInviteAck})
	apply(&hubpb.Envelope{Type: session.EventOpened})
	fmt.Println(l.State)
	apply(session.Ended(session.EventClosed, session.ReasonExplicitClose))
	apply(text("bob", "too late"))
	// Output:
	// refused: session is waiting for invite acks from bob: session: session not open
	// OPEN
	// refused: session is CLOSED (explicit_close): session: session closed
}
