package session

import (
	"fmt"
	"strings"
)

// EventType names what an envelope carries. The built-in types are the
// constants below; any other non-empty string is a custom application type,
// logged and delivered like the rest but never advancing a turn.
type EventType string

// The built-in event types. Their strings are stable: they are stored in the
// write-ahead log and sent on the wire.
const (
	// Substantive events: they are turns.
	EventText   EventType = "text"
	EventPacket EventType = "packet"

	// EventContextSet updates the session's context variables (delete first,
	// then set). Any participant may send it at any time; it is not a turn.
	EventContextSet EventType = "context_set"

	// Lifecycle events, written by the hub (acks and rejects are sent by the
	// invitees).
	EventInvite       EventType = "session_invite"
	EventInviteAck    EventType = "session_invite_ack"
	EventInviteReject EventType = "session_invite_reject"
	EventOpened       EventType = "session_opened"
	EventClosed       EventType = "session_closed"
	EventExpired      EventType = "session_expired"
	EventViolation    EventType = "expectation_violated"

	// Orchestration events.
	EventQuestion         EventType = "question"
	EventAnswer           EventType = "answer"
	EventDelegationResult EventType = "delegation_result"
	EventTaskProgress     EventType = "task_progress"
)

// MaxEventTypeLen bounds the length of an event type string.
const MaxEventTypeLen = 64

// ParseEventType turns a type string into an EventType. It accepts the
// protocol spellings of the built-in types as well ("EV_TEXT" for "text",
// "EV_SESSION_CLOSED" for "session_closed"), so graphs and clients written
// against the protocol document work unchanged. Any other non-empty string
// of printable characters is a custom type.
func ParseEventType(s string) (EventType, error) {
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
		lower := EventType(strings.ToLower(rest))
		if lower.Builtin() {
			return lower, nil
		}
	}
	return EventType(s), nil
}

// Builtin reports whether t is one of the built-in event types.
func (t EventType) Builtin() bool {
	switch t {
	case EventText, EventPacket, EventContextSet, EventQuestion, EventAnswer, EventDelegationResult, EventTaskProgress:
		return true
	}
	return t.Lifecycle()
}

// Substantive reports whether t is a turn (text or packet).
func (t EventType) Substantive() bool { return t == EventText || t == EventPacket }

// Lifecycle reports whether t is a lifecycle event.
func (t EventType) Lifecycle() bool {
	switch t {
	case EventInvite, EventInviteAck, EventInviteReject, EventOpened, EventClosed, EventExpired, EventViolation:
		return true
	}
	return false
}

// HubOnly reports whether only the hub may write an envelope of type t.
// Agents send invite acks and rejects themselves; every other lifecycle
// event, and delegation results, come from the hub.
func (t EventType) HubOnly() bool {
	switch t {
	case EventInvite, EventOpened, EventClosed, EventExpired, EventViolation, EventDelegationResult:
		return true
	}
	return false
}

// Ends reports whether t ends a session (closed or expired).
func (t EventType) Ends() bool { return t == EventClosed || t == EventExpired }

// ProtocolName returns the protocol document's spelling of a built-in type
// ("EV_TEXT"); a custom type is returned unchanged.
func (t EventType) ProtocolName() string {
	if t.Builtin() {
		return "EV_" + strings.ToUpper(string(t))
	}
	return string(t)
}
