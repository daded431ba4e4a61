package session_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/hubd/hubd/session"
)

func TestEnvelopeCheck(t *testing.T) {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	set := func(k, v string) session.ContextUpdate {
		return session.ContextUpdate{Set: map[string]json.RawMessage{k: raw(v)}}
	}
	tests := []struct {
		name  string
		t     session.EventType
		p     session.Payload
		frags []string // nil: valid
	}{
		// Valid envelopes beyond the samples.
		{"text, empty", session.EventText, session.Text{}, nil},
		{"packet, zero", session.EventPacket, session.Packet{}, nil},
		{"packet, text routing", session.EventPacket, session.Packet{Routing: session.Routing{Kind: session.RouteText}}, nil},
		{"packet, handoff with tool only", session.EventPacket, session.Packet{Routing: session.Routing{Kind: session.RouteHandoff, Tool: "transfer_to_bob"}}, nil},
		{"packet, handoff with target only", session.EventPacket, session.Packet{Routing: session.Routing{Kind: session.RouteHandoff, Target: "bob"}}, nil},
		{"packet, finish", session.EventPacket, session.Packet{Routing: session.Routing{Kind: session.RouteFinish}}, nil},
		{"packet, escalate", session.EventPacket, session.Packet{Routing: session.Routing{Kind: session.RouteEscalate, Reason: "stuck"}}, nil},
		{"context_set, delete only", session.EventContextSet, session.ContextUpdate{Delete: []string{"x"}}, nil},
		{"context_set, null value", session.EventContextSet, set("x", "null"), nil},
		{"context_set, canonical object", session.EventContextSet, set("x", `{"a":[1,1.5],"b":"<"}`), nil},
		{"context escaped <", session.EventContextSet, set("x", `"\u003c"`), []string{`"x"`, `want "<"`}},
		{"invite, nobody", session.EventInvite, session.Invite{}, nil},
		{"question without options", session.EventQuestion, session.Question{QuestionID: "q", Text: "why?"}, nil},
		{"answer with text only", session.EventAnswer, session.Answer{QuestionID: "q", Text: "because"}, nil},
		{"answer with options only", session.EventAnswer, session.Answer{QuestionID: "q", OptionIDs: []string{"a"}}, nil},
		{"custom without payload", customType, nil, nil},
		{"custom with payload", customType, session.Custom{Data: []byte("x")}, nil},
		{"protocol-spelled custom", "EV_NOPE", session.Custom{}, nil},

		// Payload of the wrong type, or missing.
		{"text with a packet", session.EventText, session.Packet{}, []string{"session.Text", "session.Packet"}},
		{"packet with text", session.EventPacket, session.Text{}, []string{"session.Packet", "session.Text"}},
		{"text without payload", session.EventText, nil, []string{"got none"}},
		{"packet without payload", session.EventPacket, nil, []string{"got none"}},
		{"context_set without payload", session.EventContextSet, nil, []string{"got none"}},
		{"invite without payload", session.EventInvite, nil, []string{"got none"}},
		{"invite with ended", session.EventInvite, session.Ended{Reason: "x"}, []string{"session.Invite"}},
		{"ack with data", session.EventInviteAck, session.Text{}, []string{"carries no data"}},
		{"opened with data", session.EventOpened, session.Ended{Reason: "x"}, []string{"carries no data"}},
		{"closed without payload", session.EventClosed, nil, []string{"got none"}},
		{"violation with ended", session.EventViolation, session.Ended{Reason: "x"}, []string{"session.Violation"}},
		{"question with answer", session.EventQuestion, session.Answer{QuestionID: "q", Text: "x"}, []string{"session.Question"}},
		{"delegation result with text", session.EventDelegationResult, session.Text{}, []string{"session.DelegationResult"}},
		{"task progress with custom", session.EventTaskProgress, session.Custom{}, []string{"session.TaskProgress"}},
		{"custom with text", customType, session.Text{Text: "x"}, []string{"session.Custom", "session.Text"}},

		// Packets.
		{"handoff without tool or target", session.EventPacket, session.Packet{Routing: session.Routing{Kind: session.RouteHandoff}}, []string{"tool or a target"}},
		{"handoff with reason only", session.EventPacket, session.Packet{Routing: session.Routing{Kind: session.RouteHandoff, Reason: "why"}}, []string{"tool or a target"}},
		{"handoff to a bad name", session.EventPacket, session.Packet{Routing: session.Routing{Kind: session.RouteHandoff, Target: "b ob"}}, []string{"handoff target"}},
		{"handoff to @name", session.EventPacket, session.Packet{Routing: session.Routing{Kind: session.RouteHandoff, Target: "@bob"}}, []string{"handoff target"}},
		{"bad routing kind", session.EventPacket, session.Packet{Routing: session.Routing{Kind: "teleport"}}, []string{`"teleport"`, "text, handoff, finish, escalate"}},
		{"upper-case routing kind", session.EventPacket, session.Packet{Routing: session.Routing{Kind: "TEXT"}}, []string{`"TEXT"`}},
		{"negative input tokens", session.EventPacket, session.Packet{Usage: session.Usage{InputTokens: -1}}, []string{"usage"}},
		{"negative output tokens", session.EventPacket, session.Packet{Usage: session.Usage{OutputTokens: -1}}, []string{"usage"}},
		{"negative cost", session.EventPacket, session.Packet{Usage: session.Usage{CostUSD: -0.01}}, []string{"usage"}},
		{"NaN cost", session.EventPacket, session.Packet{Usage: session.Usage{CostUSD: math.NaN()}}, []string{"usage"}},
		{"infinite cost", session.EventPacket, session.Packet{Usage: session.Usage{CostUSD: math.Inf(1)}}, []string{"usage"}},
		{"packet with non-canonical context", session.EventPacket, session.Packet{Context: set("n", "1.0")}, []string{`context "n"`, "want 1"}},

		// Context updates.
		{"empty context_set", session.EventContextSet, session.ContextUpdate{}, []string{"sets and deletes nothing"}},
		{"empty context_set, empty maps", session.EventContextSet, session.ContextUpdate{Set: map[string]json.RawMessage{}, Delete: []string{}}, []string{"nothing"}},
		{"context 1.0", session.EventContextSet, set("n", "1.0"), []string{`"n"`, "not canonical"}},
		{"context with spaces", session.EventContextSet, set("o", `{ "a": 1 }`), []string{`"o"`, `{"a":1}`}},
		{"context unsorted keys", session.EventContextSet, set("o", `{"b":1,"a":2}`), []string{`"o"`}},
		{"context not JSON", session.EventContextSet, set("x", `{`), []string{`"x"`}},
		{"context empty value", session.EventContextSet, set("x", ``), []string{`"x"`}},
		{"context empty key", session.EventContextSet, set("", `1`), []string{"context key"}},
		{"context long key", session.EventContextSet, set(strings.Repeat("k", session.MaxContextKeyLen+1), `1`), []string{"context key"}},
		{"context empty delete key", session.EventContextSet, session.ContextUpdate{Delete: []string{""}}, []string{"context key"}},

		// Ends.
		{"reject without reason", session.EventInviteReject, session.Ended{}, []string{"session_invite_reject", "reason"}},
		{"closed without reason", session.EventClosed, session.Ended{}, []string{"session_closed", "reason"}},
		{"expired without reason", session.EventExpired, session.Ended{}, []string{"session_expired", "reason"}},

		// Questions and answers.
		{"question without id", session.EventQuestion, session.Question{Text: "?"}, []string{"question_id"}},
		{"option without id", session.EventQuestion, session.Question{QuestionID: "q", Options: []session.Option{{ID: "a"}, {Label: "B"}}}, []string{`"q"`, "without an id"}},
		{"duplicate option id", session.EventQuestion, session.Question{QuestionID: "q", Options: []session.Option{{ID: "a"}, {ID: "a"}}}, []string{`"a"`, "twice"}},
		{"answer without question id", session.EventAnswer, session.Answer{Text: "x"}, []string{"question_id"}},
		{"answer without options or text", session.EventAnswer, session.Answer{QuestionID: "q"}, []string{`"q"`, "neither"}},
		{"answer with empty options", session.EventAnswer, session.Answer{QuestionID: "q", OptionIDs: []string{}}, []string{"neither"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := header(tt.t, tt.p)
			err := e.Check()
			if tt.frags == nil {
				if err != nil {
					t.Fatalf("Check() = %v", err)
				}
				return
			}
			wantErr(t, err, session.ErrMalformed, tt.frags...)
		})
	}
}

func TestEnvelopeCheckHeader(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(e *session.Envelope)
		frags  []string
	}{
		{"empty type", func(e *session.Envelope) { e.Type = "" }, []string{"empty"}},
		{"type with space", func(e *session.Envelope) { e.Type = "a b" }, []string{`"a b"`}},
		{"audience with a bad name", func(e *session.Envelope) { e.Audience = session.Only("bob", "c arol") }, []string{"audience"}},
		{"audience with an empty name", func(e *session.Envelope) { e.Audience = session.Only("") }, []string{"audience"}},
		{"negative depth", func(e *session.Envelope) { e.Call.Depth = -1 }, []string{"depth -1"}},
	}
	for _, tt := range tests {
		e := samples()[0]
		tt.mutate(e)
		t.Run(tt.name, func(t *testing.T) { wantErr(t, e.Check(), session.ErrMalformed, tt.frags...) })
	}
	// An unrestricted audience's names are not looked at; a restricted one
	// with no names is log-only and valid.
	e := samples()[0]
	e.Audience = session.Audience{Names: []string{"not checked"}}
	if err := e.Check(); err != nil {
		t.Errorf("unrestricted audience: %v", err)
	}
	e.Audience = session.Only()
	if err := e.Check(); err != nil {
		t.Errorf("log-only audience: %v", err)
	}
}

func TestAudienceIncludes(t *testing.T) {
	tests := []struct {
		a          session.Audience
		name, from string
		want       bool
	}{
		{session.Everyone(), "bob", "alice", true},
		{session.Everyone(), "alice", "alice", false}, // not delivered back to the sender
		{session.Everyone(), "alice", "", true},       // the hub's envelopes reach everyone
		{session.Only("bob"), "bob", "alice", true},
		{session.Only("bob"), "carol", "alice", false},
		{session.Only("bob", "alice"), "alice", "alice", true}, // named explicitly
		{session.Only(), "bob", "alice", false},                // log only
		{session.Only(), "alice", "alice", false},
		{session.Audience{Restricted: true}, "bob", "", false},
		{session.Only("Bob"), "bob", "alice", false}, // exact names
	}
	for _, tt := range tests {
		if got := tt.a.Includes(tt.name, tt.from); got != tt.want {
			t.Errorf("%+v.Includes(%q, from %q) = %v, want %v", tt.a, tt.name, tt.from, got, tt.want)
		}
	}
	names := []string{"bob"}
	a := session.Only(names...)
	names[0] = "mallory"
	if !a.Includes("bob", "alice") {
		t.Error("Only aliases its argument")
	}
}

func TestEnvelopeTextTool(t *testing.T) {
	tests := []struct {
		p          session.Payload
		text, tool string
	}{
		{session.Text{Text: "hi"}, "hi", ""},
		{session.Packet{Body: "body", Routing: session.Routing{Kind: session.RouteHandoff, Tool: "transfer_to_bob"}}, "body", "transfer_to_bob"},
		{session.Question{QuestionID: "q", Text: "not a turn"}, "", ""},
		{nil, "", ""},
	}
	for _, tt := range tests {
		e := &session.Envelope{Payload: tt.p}
		if e.Text() != tt.text || e.Tool() != tt.tool {
			t.Errorf("%#v: Text() = %q, Tool() = %q; want %q, %q", tt.p, e.Text(), e.Tool(), tt.text, tt.tool)
		}
	}
}
