package session_test

import (
	"strings"
	"testing"

	"github.com/hubd/hubd/session"
)

func TestParseEventType(t *testing.T) {
	long := strings.Repeat("x", session.MaxEventTypeLen)
	tests := []struct {
		in, want string
		err      bool
	}{
		// Built-ins in their stored spelling.
		{in: "text", want: session.EventText},
		{in: "packet", want: session.EventPacket},
		{in: "session_closed", want: session.EventClosed},
		{in: "expectation_violated", want: session.EventViolation},
		// Protocol spellings.
		{in: "EV_TEXT", want: session.EventText},
		{in: "EV_PACKET", want: session.EventPacket},
		{in: "EV_CONTEXT_SET", want: session.EventContextSet},
		{in: "EV_SESSION_INVITE_ACK", want: session.EventInviteAck},
		{in: "EV_SESSION_CLOSED", want: session.EventClosed},
		{in: "EV_EXPECTATION_VIOLATED", want: session.EventViolation},
		{in: "EV_DELEGATION_RESULT", want: session.EventDelegationResult},
		{in: "EV_text", want: session.EventText}, // the rest is lowered
		// Not built-ins: kept as custom types, unchanged.
		{in: "EV_NOPE", want: "EV_NOPE"},
		{in: "EV_", want: "EV_"},
		{in: "ev_text", want: "ev_text"},
		{in: "TEXT", want: "TEXT"},
		{in: "app.note", want: "app.note"},
		{in: "ünïcode/√", want: "ünïcode/√"},
		{in: long, want: long},
		// Malformed.
		{in: "", err: true},
		{in: long + "x", err: true},
		{in: "has space", err: true},
		{in: " text", err: true},
		{in: "text\n", err: true},
		{in: "a\tb", err: true},
		{in: "nul\x00", err: true},
		{in: "del\x7f", err: true},
	}
	for _, tt := range tests {
		got, err := session.ParseEventType(tt.in)
		if tt.err {
			if err == nil {
				t.Errorf("ParseEventType(%q) = %q, want an error", tt.in, got)
			} else {
				wantErr(t, err, session.ErrMalformed)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseEventType(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestEventTypePredicates(t *testing.T) {
	tests := []struct {
		t                                       string
		builtin, turn, lifecycle, hubOnly, ends bool
		protocol                                string
	}{
		{session.EventText, true, true, false, false, false, "EV_TEXT"},
		{session.EventPacket, true, true, false, false, false, "EV_PACKET"},
		{session.EventContextSet, true, false, false, false, false, "EV_CONTEXT_SET"},
		{session.EventInvite, true, false, true, true, false, "EV_SESSION_INVITE"},
		{session.EventInviteAck, true, false, true, false, false, "EV_SESSION_INVITE_ACK"},
		{session.EventInviteReject, true, false, true, false, false, "EV_SESSION_INVITE_REJECT"},
		{session.EventOpened, true, false, true, true, false, "EV_SESSION_OPENED"},
		{session.EventClosed, true, false, true, true, true, "EV_SESSION_CLOSED"},
		{session.EventExpired, true, false, true, true, true, "EV_SESSION_EXPIRED"},
		{session.EventViolation, true, false, true, true, false, "EV_EXPECTATION_VIOLATED"},
		{session.EventQuestion, true, false, false, false, false, "EV_QUESTION"},
		{session.EventAnswer, true, false, false, false, false, "EV_ANSWER"},
		{session.EventDelegationResult, true, false, false, true, false, "EV_DELEGATION_RESULT"},
		{session.EventTaskProgress, true, false, false, false, false, "EV_TASK_PROGRESS"},
		{session.EventQuestionClosed, true, false, false, true, false, "EV_QUESTION_CLOSED"},
		{session.EventDelegation, true, false, false, true, false, "EV_DELEGATION"},
		{session.EventToolCall, true, false, false, false, false, "EV_TOOL_CALL"},
		{session.EventToolResult, true, false, false, false, false, "EV_TOOL_RESULT"},
		{session.EventMessage, true, false, false, false, false, "EV_MESSAGE"},
		{"app.note", false, false, false, false, false, "app.note"},
		{"EV_NOPE", false, false, false, false, false, "EV_NOPE"},
		{"EV_TEXT", false, false, false, false, false, "EV_TEXT"}, // predicates want the stored form
	}
	if n := len(tests) - 3; n != len(allTypes) {
		t.Fatalf("table covers %d built-ins, there are %d", n, len(allTypes))
	}
	for _, tt := range tests {
		got := [...]bool{session.IsBuiltin(tt.t), session.IsTurn(tt.t), session.IsLifecycle(tt.t), session.IsHubOnly(tt.t), session.Ends(tt.t)}
		want := [...]bool{tt.builtin, tt.turn, tt.lifecycle, tt.hubOnly, tt.ends}
		if got != want {
			t.Errorf("%s: IsBuiltin, IsTurn, IsLifecycle, IsHubOnly, Ends = %v, want %v", tt.t, got, want)
		}
		if p := session.ProtocolName(tt.t); p != tt.protocol {
			t.Errorf("ProtocolName(%s) = %q, want %q", tt.t, p, tt.protocol)
		}
		// A built-in's protocol spelling parses back to it.
		if tt.builtin {
			if back, err := session.ParseEventType(tt.protocol); err != nil || back != tt.t {
				t.Errorf("ParseEventType(%q) = %q, %v; want %q", tt.protocol, back, err, tt.t)
			}
		}
	}
}
