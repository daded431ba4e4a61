package session

import (
	"errors"
	"strings"

	"github.com/hubd/hubd/hubpb"
)

// Error is a sentinel error that carries its stable reason: every refusal
// the hub can send is one, defined where its condition is (here, in
// packages transition, adapters, hub and hub/hubgrpc), so the reason travels
// with the error and no separate table maps one to the other. Callers
// branch with errors.Is on the sentinel; the wire sends the reason.
type Error struct {
	reason hubpb.Reason
	msg    string
}

// NewError returns a sentinel with a stable reason and a message.
func NewError(reason hubpb.Reason, msg string) *Error { return &Error{reason: reason, msg: msg} }

// Error implements error.
func (e *Error) Error() string { return e.msg }

// Reason returns the stable reason.
func (e *Error) Reason() hubpb.Reason { return e.reason }

// ReasonOf returns the stable reason of err: that of the first sentinel
// *Error it wraps, and false when it wraps none.
func ReasonOf(err error) (hubpb.Reason, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.reason, true
	}
	return hubpb.Reason_REASON_UNSPECIFIED, false
}

// Detail returns an error's message without the text of the sentinel it
// ends with: "workflow expects \"b\" to speak, got \"c\"" rather than
// "...: adapters: out of turn". The reason says the rest.
func Detail(err error) string {
	msg := err.Error()
	var e *Error
	if errors.As(err, &e) {
		if rest, ok := strings.CutSuffix(msg, ": "+e.msg); ok {
			return rest
		}
	}
	return msg
}

// Sentinel errors of the session vocabulary.
var (
	// ErrMalformed: an envelope or metadata whose shape is wrong (missing
	// field, bad value, payload not matching its type).
	ErrMalformed = NewError(hubpb.Reason_MALFORMED, "session: malformed")
	// ErrClosed: the session has ended; it accepts no further sends.
	ErrClosed = NewError(hubpb.Reason_SESSION_CLOSED, "session: session closed")
	// ErrNotParticipant: the sender is not a participant of the session.
	ErrNotParticipant = NewError(hubpb.Reason_NOT_PARTICIPANT, "session: not a participant")
	// ErrNotOpen: the session is still pending (waiting for invite acks).
	ErrNotOpen = NewError(hubpb.Reason_SESSION_NOT_OPEN, "session: session not open")
	// ErrBadTransition: a lifecycle move that cannot happen (open a closed
	// session, ack twice, ...).
	ErrBadTransition = NewError(hubpb.Reason_BAD_LIFECYCLE_TRANSITION, "session: impossible lifecycle transition")
	// ErrHubOnly: an agent tried to send an event only the hub writes.
	ErrHubOnly = NewError(hubpb.Reason_HUB_ONLY_EVENT, "session: event type written by the hub only")
	// ErrCorrupt: a stored record that does not decode. It has no reason of
	// its own: the hub reports the session that holds it as failed.
	ErrCorrupt = errors.New("session: corrupt record")
)
