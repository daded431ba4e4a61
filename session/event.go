package session

import (
	"fmt"
	"strings"
)

// The built-in event types (hubpb.Envelope.Type). Their strings are stable:
// they are stored in the write-ahead log and sent on the wire. Any other
// non-empty string is a custom application type, logged and delivered like
// the rest but never a turn.
const (
	// Substantive events: they are turns.
	EventText   = "text"
	EventPacket = "packet"

	// EventContextSet updates the session's context variables (delete first,
	// then set). Any participant may send it at any time; it is not a turn.
	EventContextSet = "context_set"

	// Lifecycle events, written by the hub (acks and rejects are sent by the
	// invitees).
	EventInvite       = "session_invite"
	EventInviteAck    = "session_invite_ack"
	EventInviteReject = "session_invite_reject"
	EventOpened       = "session_opened"
	EventClosed       = "session_closed"
	EventExpired      = "session_expired"
	EventViolation    = "expectation_violated"

	// EventForked is a fork's first record, written by the hub: the
	// session continues another from one of its seqs (hubpb.Fork).
	EventForked = "session_forked"

	// Orchestration events. A question holds its asker's turn until its
	// answer (or its withdrawal, question_closed); a blocking delegation
	// holds the delegator's turn until its children's delegation_results.
	EventQuestion         = "question"
	EventAnswer           = "answer"
	EventQuestionClosed   = "question_closed"
	EventDelegation       = "delegation"
	EventDelegationResult = "delegation_result"
	EventTaskProgress     = "task_progress"

	// Side events, never turns: tools an agent used, and a message for a
	// session's next speaker.
	EventToolCall   = "tool_call"
	EventToolResult = "tool_result"
	EventMessage    = "message"

	// EventOperator is an operator's hand on a live session
	// (hubpb.OperatorAction), written by the hub on the operator's behalf;
	// never a turn.
	EventOperator = "operator_action"
)

// MaxEventTypeLen bounds the length of an event type string.
const MaxEventTypeLen = 64

// ParseEventType checks an event type string and returns its stored form.
// It accepts the protocol spellings of the built-in types as well ("EV_TEXT"
// for "text", "EV_SESSION_CLOSED" for "session_closed"), so graphs and
// clients written against the protocol document work unchanged. Any other
// non-empty string of printable characters is a custom type.
func ParseEventType(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("event type is empty: %w", ErrMalformed)
	}
	if len(s) > MaxEventTypeLen {
		return "", fmt.Errorf("event type is %d bytes, at most %d: %w", len(s), MaxEventTypeLen, ErrMalformed)
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return "", fmt.Errorf("event type %q has a space or control character: %w", s, ErrMalformed)
		}
	}
	if rest, ok := strings.CutPrefix(s, "EV_"); ok {
		if lower := strings.ToLower(rest); IsBuiltin(lower) {
			return lower, nil
		}
	}
	return s, nil
}

// IsBuiltin reports whether t is one of the built-in event types.
func IsBuiltin(t string) bool {
	switch t {
	case EventText, EventPacket, EventContextSet, EventQuestion, EventAnswer, EventQuestionClosed, EventDelegation,
		EventDelegationResult, EventTaskProgress, EventToolCall, EventToolResult, EventMessage, EventForked, EventOperator:
		return true
	}
	return IsLifecycle(t)
}

// IsTurn reports whether t is substantive: a turn (text or packet).
func IsTurn(t string) bool { return t == EventText || t == EventPacket }

// IsLifecycle reports whether t is a lifecycle event.
func IsLifecycle(t string) bool {
	switch t {
	case EventInvite, EventInviteAck, EventInviteReject, EventOpened, EventClosed, EventExpired, EventViolation:
		return true
	}
	return false
}

// IsHubOnly reports whether only the hub may write an envelope of type t.
// Agents send invite acks and rejects themselves; every other lifecycle
// event, delegations, their results and question withdrawals come from the
// hub (an answer is sent through the Answer call, which the hub checks).
func IsHubOnly(t string) bool {
	switch t {
	case EventInvite, EventOpened, EventClosed, EventExpired, EventViolation, EventDelegation, EventDelegationResult,
		EventQuestionClosed, EventForked, EventOperator:
		return true
	}
	return false
}

// Ends reports whether t ends a session (closed or expired).
func Ends(t string) bool { return t == EventClosed || t == EventExpired }

// ProtocolName returns the protocol document's spelling of a built-in type
// ("EV_TEXT"); a custom type is returned unchanged.
func ProtocolName(t string) string {
	if IsBuiltin(t) {
		return "EV_" + strings.ToUpper(t)
	}
	return t
}
