package session_test

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// set returns a context update setting k to v.
func set(k string, v *structpb.Value) *hubpb.ContextUpdate {
	return &hubpb.ContextUpdate{Set: map[string]*structpb.Value{k: v}}
}

// nested returns a JSON value of lists nested n deep.
func nested(n int) *structpb.Value {
	v := structpb.NewNumberValue(1)
	for range n {
		v = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{v}})
	}
	return v
}

func handoff(r *hubpb.Routing) *hubpb.Packet { return &hubpb.Packet{Body: "x", Routing: r} }

func TestCheckEnvelope(t *testing.T) {
	tests := []struct {
		name  string
		t     string
		p     any      // the payload (see with)
		frags []string // nil: valid
	}{
		// Valid envelopes beyond the samples.
		{"text, empty", session.EventText, &hubpb.Text{}, nil},
		{"packet, empty", session.EventPacket, &hubpb.Packet{}, nil},
		{"packet, text routing", session.EventPacket, handoff(&hubpb.Routing{Kind: session.RouteText}), nil},
		{"packet, handoff with tool only", session.EventPacket, handoff(&hubpb.Routing{Kind: session.RouteHandoff, Tool: "transfer_to_bob"}), nil},
		{"packet, handoff with target only", session.EventPacket, handoff(&hubpb.Routing{Kind: session.RouteHandoff, Target: "bob"}), nil},
		{"packet, finish", session.EventPacket, handoff(&hubpb.Routing{Kind: session.RouteFinish}), nil},
		{"packet, escalate", session.EventPacket, handoff(&hubpb.Routing{Kind: session.RouteEscalate, Reason: "stuck"}), nil},
		{"packet, zero usage", session.EventPacket, &hubpb.Packet{Usage: &hubpb.Usage{}}, nil},
		{"context_set, delete only", session.EventContextSet, &hubpb.ContextUpdate{Delete: []string{"x"}}, nil},
		{"context_set, null value", session.EventContextSet, set("x", structpb.NewNullValue()), nil},
		{"context_set, object", session.EventContextSet, set("x", session.MustValue(map[string]any{"a": []any{1, 1.5}, "b": "<"})), nil},
		{"context_set, 64 deep", session.EventContextSet, set("x", nested(64)), nil},
		{"context_set, longest key", session.EventContextSet, set(strings.Repeat("k", session.MaxContextKeyLen), structpb.NewBoolValue(true)), nil},
		{"invite, nobody", session.EventInvite, &hubpb.Invite{}, nil},
		{"violation without since", session.EventViolation, &hubpb.Violation{Expectation: session.TurnWithin}, nil},
		{"question without options", session.EventQuestion, &hubpb.Question{QuestionId: "q", Text: "why?"}, nil},
		{"answer with text only", session.EventAnswer, &hubpb.Answer{QuestionId: "q", Text: "because"}, nil},
		{"answer with options only", session.EventAnswer, &hubpb.Answer{QuestionId: "q", OptionIds: []string{"a"}}, nil},
		{"delegation result, empty", session.EventDelegationResult, &hubpb.DelegationResult{}, nil},
		{"task progress, zero", session.EventTaskProgress, &hubpb.TaskProgress{}, nil},
		{"custom without payload", customType, nil, nil},
		{"custom with empty bytes", customType, []byte{}, nil},
		{"custom with bytes", customType, []byte("x"), nil},
		{"protocol-spelled custom type", "EV_NOPE", nil, nil},
		{"lower-case EV_ custom type", "ev_text", []byte("x"), nil},

		// The payload field does not match the type, or is missing.
		{"text with a packet", session.EventText, &hubpb.Packet{}, []string{"text needs the envelope field text, got packet"}},
		{"packet with text", session.EventPacket, &hubpb.Text{}, []string{"packet needs the envelope field packet, got text"}},
		{"text without payload", session.EventText, nil, []string{"text needs the envelope field text, got none"}},
		{"packet without payload", session.EventPacket, nil, []string{"got none"}},
		{"context_set without payload", session.EventContextSet, nil, []string{"context_set needs the envelope field context_set, got none"}},
		{"context_set with text", session.EventContextSet, &hubpb.Text{Text: "x"}, []string{"field context_set, got text"}},
		{"invite without payload", session.EventInvite, nil, []string{"field invite, got none"}},
		{"invite with ended", session.EventInvite, &hubpb.Ended{Reason: "x"}, []string{"field invite, got ended"}},
		{"ack with text", session.EventInviteAck, &hubpb.Text{}, []string{"session_invite_ack carries no payload, got the field text"}},
		{"ack with custom bytes", session.EventInviteAck, []byte("x"), []string{"carries no payload, got the field custom"}},
		{"opened with ended", session.EventOpened, &hubpb.Ended{Reason: "x"}, []string{"session_opened carries no payload, got the field ended"}},
		{"reject without payload", session.EventInviteReject, nil, []string{"field ended, got none"}},
		{"closed without payload", session.EventClosed, nil, []string{"session_closed needs the envelope field ended, got none"}},
		{"expired with text", session.EventExpired, &hubpb.Text{}, []string{"field ended, got text"}},
		{"violation with ended", session.EventViolation, &hubpb.Ended{Reason: "x"}, []string{"field violation, got ended"}},
		{"question with answer", session.EventQuestion, &hubpb.Answer{QuestionId: "q", Text: "x"}, []string{"field question, got answer"}},
		{"answer without payload", session.EventAnswer, nil, []string{"field answer, got none"}},
		{"delegation result with text", session.EventDelegationResult, &hubpb.Text{}, []string{"field delegation_result, got text"}},
		{"task progress with custom", session.EventTaskProgress, []byte("x"), []string{"field task_progress, got custom"}},
		{"custom with text", customType, &hubpb.Text{Text: "x"}, []string{"app.note needs the envelope field custom, got text"}},

		// The stored form of a type, not its protocol spelling.
		{"EV_TEXT", "EV_TEXT", &hubpb.Text{Text: "x"}, []string{`event type "EV_TEXT" must be given as "text"`}},
		{"EV_SESSION_CLOSED", "EV_SESSION_CLOSED", &hubpb.Ended{Reason: "x"}, []string{`must be given as "session_closed"`}},
		{"EV_text", "EV_text", &hubpb.Text{Text: "x"}, []string{`must be given as "text"`}},

		// Packets.
		{"handoff without tool or target", session.EventPacket, handoff(&hubpb.Routing{Kind: session.RouteHandoff}), []string{"packet.routing.tool or packet.routing.target"}},
		{"handoff with reason only", session.EventPacket, handoff(&hubpb.Routing{Kind: session.RouteHandoff, Reason: "why"}), []string{"packet.routing.tool or packet.routing.target"}},
		{"handoff to a bad name", session.EventPacket, handoff(&hubpb.Routing{Kind: session.RouteHandoff, Target: "b ob"}), []string{"packet.routing.target", `"b ob"`}},
		{"handoff to @name", session.EventPacket, handoff(&hubpb.Routing{Kind: session.RouteHandoff, Target: "@bob"}), []string{"packet.routing.target", "'@'"}},
		{"bad routing kind", session.EventPacket, handoff(&hubpb.Routing{Kind: "teleport"}), []string{`packet.routing.kind "teleport"`, "text, handoff, finish, escalate"}},
		{"upper-case routing kind", session.EventPacket, handoff(&hubpb.Routing{Kind: "TEXT"}), []string{`"TEXT"`}},
		{"negative input tokens", session.EventPacket, &hubpb.Packet{Usage: &hubpb.Usage{InputTokens: -1}}, []string{"packet.usage {input_tokens: -1, output_tokens: 0, tool_calls: 0, cost_usd: 0}"}},
		{"negative output tokens", session.EventPacket, &hubpb.Packet{Usage: &hubpb.Usage{OutputTokens: -1}}, []string{"output_tokens: -1"}},
		{"negative cost", session.EventPacket, &hubpb.Packet{Usage: &hubpb.Usage{CostUsd: -0.01}}, []string{"cost_usd: -0.01"}},
		{"NaN cost", session.EventPacket, &hubpb.Packet{Usage: &hubpb.Usage{CostUsd: math.NaN()}}, []string{"cost_usd: NaN"}},
		{"infinite cost", session.EventPacket, &hubpb.Packet{Usage: &hubpb.Usage{CostUsd: math.Inf(1)}}, []string{"cost_usd: +Inf"}},
		{"packet context NaN", session.EventPacket, &hubpb.Packet{ContextUpdates: set("n", structpb.NewNumberValue(math.NaN()))}, []string{`packet.context_updates.set["n"]`, "not finite"}},
		{"packet context empty key", session.EventPacket, &hubpb.Packet{ContextUpdates: set("", structpb.NewNullValue())}, []string{"packet.context_updates.set", "context key"}},
		{"packet context empty delete key", session.EventPacket, &hubpb.Packet{ContextUpdates: &hubpb.ContextUpdate{Delete: []string{""}}}, []string{"packet.context_updates.delete"}},

		// Context updates.
		{"empty context_set", session.EventContextSet, &hubpb.ContextUpdate{}, []string{"context_set sets and deletes nothing"}},
		{"empty context_set, empty lists", session.EventContextSet, &hubpb.ContextUpdate{Set: map[string]*structpb.Value{}, Delete: []string{}}, []string{"nothing"}},
		{"context NaN", session.EventContextSet, set("n", structpb.NewNumberValue(math.NaN())), []string{`context_set.set["n"]`, "NaN is not finite"}},
		{"context -Inf", session.EventContextSet, set("n", structpb.NewNumberValue(math.Inf(-1))), []string{`["n"]`, "-Inf"}},
		{"context NaN in a list", session.EventContextSet, set("l", structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewNumberValue(math.NaN())}})), []string{`["l"]`}},
		{"context value without kind", session.EventContextSet, set("x", &structpb.Value{}), []string{`["x"]`, "no kind"}},
		{"context nil value", session.EventContextSet, set("x", nil), []string{`["x"]`, "no kind"}},
		{"context 65 deep", session.EventContextSet, set("x", nested(65)), []string{`["x"]`, "deeper than 64"}},
		{"context empty key", session.EventContextSet, set("", structpb.NewNumberValue(1)), []string{"context_set.set: context key", "1 to 256 bytes"}},
		{"context long key", session.EventContextSet, set(strings.Repeat("k", session.MaxContextKeyLen+1), structpb.NewNumberValue(1)), []string{"context key"}},
		{"context empty delete key", session.EventContextSet, &hubpb.ContextUpdate{Delete: []string{""}}, []string{"context_set.delete: context key"}},

		// Ends.
		{"reject without reason", session.EventInviteReject, &hubpb.Ended{}, []string{"session_invite_reject needs ended.reason"}},
		{"closed without reason", session.EventClosed, &hubpb.Ended{}, []string{"session_closed needs ended.reason"}},
		{"expired without reason", session.EventExpired, &hubpb.Ended{}, []string{"session_expired needs ended.reason"}},

		// Violations.
		{"violation since out of range", session.EventViolation, &hubpb.Violation{Since: &timestamppb.Timestamp{Seconds: 253402300800}}, []string{"violation.since"}},
		{"violation since bad nanos", session.EventViolation, &hubpb.Violation{Since: &timestamppb.Timestamp{Nanos: -1}}, []string{"violation.since"}},

		// Questions and answers.
		{"question without id", session.EventQuestion, &hubpb.Question{Text: "?"}, []string{"question needs question.question_id"}},
		{"option without id", session.EventQuestion, &hubpb.Question{QuestionId: "q", Options: []*hubpb.Option{{Id: "a"}, {Label: "B"}}}, []string{`"q"`, "without an id"}},
		{"duplicate option id", session.EventQuestion, &hubpb.Question{QuestionId: "q", Options: []*hubpb.Option{{Id: "a"}, {Id: "a"}}}, []string{`option id "a" twice`}},
		{"answer without question id", session.EventAnswer, &hubpb.Answer{Text: "x"}, []string{"answer needs answer.question_id"}},
		{"answer without options or text", session.EventAnswer, &hubpb.Answer{QuestionId: "q"}, []string{`answer to "q" has neither answer.option_ids nor answer.text`}},
		{"answer with empty options", session.EventAnswer, &hubpb.Answer{QuestionId: "q", OptionIds: []string{}}, []string{"neither"}},

		// Task progress.
		{"NaN percent", session.EventTaskProgress, &hubpb.TaskProgress{Percent: math.NaN()}, []string{"task_progress.percent NaN is not a finite number"}},
		{"infinite percent", session.EventTaskProgress, &hubpb.TaskProgress{Percent: math.Inf(1)}, []string{"task_progress.percent +Inf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := session.CheckEnvelope(with(header(tt.t), tt.p))
			if tt.frags == nil {
				if err != nil {
					t.Fatalf("CheckEnvelope = %v", err)
				}
				return
			}
			wantErr(t, err, session.ErrMalformed, tt.frags...)
		})
	}
}

func TestCheckEnvelopeHeader(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(e *hubpb.Envelope)
		frags  []string // nil: valid
	}{
		{"no audience: everyone", func(e *hubpb.Envelope) { e.Audience = nil }, nil},
		{"empty audience: log only", func(e *hubpb.Envelope) { e.Audience = session.Only() }, nil},
		{"no call", func(e *hubpb.Envelope) { e.Call = nil }, nil},
		{"no time", func(e *hubpb.Envelope) { e.AcceptedAt = nil }, nil},
		{"bare", func(e *hubpb.Envelope) { *e = hubpb.Envelope{Type: session.EventOpened} }, nil},
		{"longest type", func(e *hubpb.Envelope) { e.Type, e.Payload = strings.Repeat("x", session.MaxEventTypeLen), nil }, nil},
		{"empty type", func(e *hubpb.Envelope) { e.Type = "" }, []string{"event type is empty"}},
		{"type with a space", func(e *hubpb.Envelope) { e.Type = "a b" }, []string{`"a b"`}},
		{"type too long", func(e *hubpb.Envelope) { e.Type = strings.Repeat("x", session.MaxEventTypeLen+1) }, []string{"at most 64"}},
		{"audience with a bad name", func(e *hubpb.Envelope) { e.Audience = session.Only("bob", "c arol") }, []string{"audience", `"c arol"`}},
		{"audience with an empty name", func(e *hubpb.Envelope) { e.Audience = session.Only("") }, []string{"audience: agent name is empty"}},
		{"audience with @name", func(e *hubpb.Envelope) { e.Audience = session.Only("@bob") }, []string{"audience", "'@'"}},
		{"no causation", func(e *hubpb.Envelope) { e.CausationId = "" }, nil},
		{"causation not a UUID", func(e *hubpb.Envelope) { e.CausationId = "msg-1" }, []string{`envelope.causation_id "msg-1" is not a UUID`}},
		{"causation in capitals", func(e *hubpb.Envelope) { e.CausationId = strings.ToUpper(e.CausationId) }, []string{"envelope.causation_id", "lowercase"}},
		{"causation without hyphens", func(e *hubpb.Envelope) { e.CausationId = strings.ReplaceAll(e.CausationId, "-", "") }, []string{"envelope.causation_id"}},
		{"causation as a URN", func(e *hubpb.Envelope) { e.CausationId = "urn:uuid:" + e.CausationId }, []string{"envelope.causation_id"}},
		{"negative call depth", func(e *hubpb.Envelope) { e.Call.Depth = -1 }, []string{"call.depth -1 is negative"}},
		{"accepted_at out of range", func(e *hubpb.Envelope) { e.AcceptedAt = &timestamppb.Timestamp{Seconds: -62135596801} }, []string{"accepted_at"}},
		{"accepted_at bad nanos", func(e *hubpb.Envelope) { e.AcceptedAt = &timestamppb.Timestamp{Nanos: 1e9} }, []string{"accepted_at"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := samples()[0].e
			tt.mutate(e)
			err := session.CheckEnvelope(e)
			if tt.frags == nil {
				if err != nil {
					t.Fatalf("CheckEnvelope = %v", err)
				}
				return
			}
			wantErr(t, err, session.ErrMalformed, tt.frags...)
		})
	}
}

func TestPayloadField(t *testing.T) {
	want := map[string]string{
		session.EventText: "text", session.EventPacket: "packet", session.EventContextSet: "context_set",
		session.EventInvite: "invite", session.EventInviteAck: "", session.EventInviteReject: "ended",
		session.EventOpened: "", session.EventClosed: "ended", session.EventExpired: "ended",
		session.EventViolation: "violation", session.EventQuestion: "question", session.EventAnswer: "answer",
		session.EventDelegationResult: "delegation_result", session.EventTaskProgress: "task_progress",
		session.EventQuestionClosed: "question_closed", session.EventDelegation: "delegation",
		session.EventToolCall: "tool_call", session.EventToolResult: "tool_result", session.EventMessage: "message",
		customType: "custom", "EV_TEXT": "custom",
	}
	for _, ty := range append(allTypes, customType, "EV_TEXT") {
		if got := session.PayloadField(ty); got != want[ty] {
			t.Errorf("PayloadField(%s) = %q, want %q", ty, got, want[ty])
		}
	}
	// Every payload field it names is a member of the envelope's oneof, and
	// the samples carry exactly that field.
	oneof := (&hubpb.Envelope{}).ProtoReflect().Descriptor().Oneofs().ByName("payload")
	for _, s := range samples() {
		f := session.PayloadField(typeOf(s.name))
		got := s.e.ProtoReflect().WhichOneof(oneof)
		switch {
		case f == "" && got != nil:
			t.Errorf("%s: sample carries %s", s.name, got.Name())
		case f != "" && (got == nil || string(got.Name()) != f):
			t.Errorf("%s: PayloadField %q, sample carries %v", s.name, f, got)
		}
	}
}

func TestCheckName(t *testing.T) {
	ok := []string{"a", "alice", "Bob_2", "agent.billing", "ünï", "a@b", "x-y:z", strings.Repeat("n", session.MaxNameLen)}
	for _, s := range ok {
		if err := session.CheckName(s); err != nil {
			t.Errorf("CheckName(%q) = %v", s, err)
		}
	}
	bad := []struct{ in, frag string }{
		{"", "empty"},
		{strings.Repeat("n", session.MaxNameLen+1), "129 bytes, at most 128"},
		{"@bob", "starts with '@'"},
		{"a b", "space"},
		{" a", "space"},
		{"a\t", "control"},
		{"a\nb", "control"},
		{"a,b", "comma"},
		{"a\x00", "control"},
		{"a\x7f", "control"},
		{"al\xffice", "not valid UTF-8"},
		{"\xc3", "not valid UTF-8"},
		{"evil\u202egnp.exe", "U+202E"},
		{"a\u2066b", "bidirectional"},
		{"zero\u200bwidth", "U+200B"},
		{"bom\ufeff", "format"},
		{"a\u0085", "U+0085"},
		{"a\u00a0b", "space"},
		{"a\u2028", "U+2028"},
	}
	for _, b := range bad {
		wantErr(t, session.CheckName(b.in), session.ErrMalformed, b.frag)
	}
}
