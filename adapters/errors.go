package adapters

import (
	"errors"
	"strings"

	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

// Protocol errors of the session types. Each wraps into a message that says
// what was expected.
var (
	// ErrOutOfTurn: the sender is a participant but not the one expected to
	// speak.
	ErrOutOfTurn = errors.New("adapters: out of turn")
	// ErrBadHandoffTarget: a handoff names an agent that cannot take the
	// turn; the message lists the valid targets.
	ErrBadHandoffTarget = errors.New("adapters: bad handoff target")
	// ErrUnknownType: no adapter is registered for a session type.
	ErrUnknownType = errors.New("adapters: unknown session type")
)

// The stable reason strings of protocol errors, as sent in a gRPC status's
// ErrorInfo and printed by `hubd graph simulate`.
const (
	ReasonOutOfTurn        = "OUT_OF_TURN"
	ReasonNotParticipant   = "NOT_PARTICIPANT"
	ReasonSessionClosed    = "SESSION_CLOSED"
	ReasonSessionNotOpen   = "SESSION_NOT_OPEN"
	ReasonBadHandoffTarget = "BAD_HANDOFF_TARGET"
	ReasonMalformed        = "MALFORMED"
	ReasonInvalidGraph     = "INVALID_GRAPH"
	ReasonUnknownType      = "UNKNOWN_SESSION_TYPE"
	ReasonBadTransition    = "BAD_LIFECYCLE_TRANSITION"
	ReasonHubOnly          = "HUB_ONLY_EVENT"
)

// Reason returns the stable reason of a protocol error, and false for an
// error that is not one.
func Reason(err error) (string, bool) {
	for _, r := range []struct {
		err    error
		reason string
	}{
		{ErrOutOfTurn, ReasonOutOfTurn},
		{ErrBadHandoffTarget, ReasonBadHandoffTarget},
		{ErrUnknownType, ReasonUnknownType},
		{transition.ErrInvalid, ReasonInvalidGraph},
		{session.ErrClosed, ReasonSessionClosed},
		{session.ErrNotParticipant, ReasonNotParticipant},
		{session.ErrNotOpen, ReasonSessionNotOpen},
		{session.ErrBadTransition, ReasonBadTransition},
		{session.ErrHubOnly, ReasonHubOnly},
		{session.ErrMalformed, ReasonMalformed},
	} {
		if errors.Is(err, r.err) {
			return r.reason, true
		}
	}
	return "", false
}

// Detail returns an error's message without the text of the protocol
// sentinel it ends with: "workflow expects \"b\" to speak, got \"c\"" rather
// than "...: adapters: out of turn". The reason code says the rest.
func Detail(err error) string {
	msg := err.Error()
	for _, s := range []error{ErrOutOfTurn, ErrBadHandoffTarget, ErrUnknownType, transition.ErrInvalid,
		session.ErrClosed, session.ErrNotParticipant, session.ErrNotOpen, session.ErrBadTransition,
		session.ErrHubOnly, session.ErrMalformed} {
		if rest, ok := strings.CutSuffix(msg, ": "+s.Error()); ok {
			return rest
		}
	}
	return msg
}
