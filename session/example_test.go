package session_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/hubd/hubd/session"
)

// An envelope as an agent sends it, in its flat JSON form; the stored
// (binary) form gives back the same envelope.
func ExampleEnvelope_MarshalJSON() {
	e := &session.Envelope{
		Seq:  3,
		From: "alice",
		Type: session.EventPacket,
		Payload: session.Packet{
			Body:    "over to you",
			Routing: session.Routing{Kind: session.RouteHandoff, Tool: "transfer_to_bob"},
			Context: session.ContextUpdate{Set: map[string]json.RawMessage{"route": session.MustJSON("billing")}},
		},
		AcceptedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	if err := e.Check(); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := json.Marshal(e)
	fmt.Println(string(b))

	stored, _ := e.MarshalBinary()
	back, _ := session.DecodeEnvelope(stored)
	fmt.Println(back.From, back.Type.ProtocolName(), back.Tool())
	// Output:
	// {"seq":3,"from":"alice","type":"packet","accepted_at":"2026-01-02T03:04:05Z","body":"over to you","routing":{"kind":"handoff","tool":"transfer_to_bob"},"context_updates":{"set":{"route":"billing"}}}
	// alice EV_PACKET transfer_to_bob
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
	apply := func(t session.EventType, from string, p session.Payload) {
		if err := l.Admit(t, from); err != nil {
			fmt.Println("refused:", err)
			return
		}
		l.Fold(&session.Envelope{Type: t, From: from, Payload: p})
	}
	apply(session.EventInvite, "", session.Invite{Invitees: []string{"bob"}})
	apply(session.EventText, "alice", session.Text{Text: "too early"})
	apply(session.EventInviteAck, "bob", nil)
	apply(session.EventOpened, "", nil)
	fmt.Println(l.State)
	apply(session.EventClosed, "", session.Ended{Reason: session.ReasonExplicitClose})
	apply(session.EventText, "bob", session.Text{Text: "too late"})
	// Output:
	// refused: session is waiting for invite acks from bob: session: session not open
	// OPEN
	// refused: session is CLOSED (explicit_close): session: session closed
}
