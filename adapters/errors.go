package adapters

import (
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Protocol errors of the session types. Each carries its stable reason (see
// session.Error) and wraps into a message that says what was expected.
var (
	// ErrOutOfTurn: the sender is a participant but not the one expected to
	// speak.
	ErrOutOfTurn = session.NewError(hubpb.Reason_OUT_OF_TURN, "adapters: out of turn")
	// ErrBadHandoffTarget: a handoff names an agent that cannot take the
	// turn; the message lists the valid targets.
	ErrBadHandoffTarget = session.NewError(hubpb.Reason_BAD_HANDOFF_TARGET, "adapters: bad handoff target")
	// ErrUnknownType: no adapter is registered for a session type.
	ErrUnknownType = session.NewError(hubpb.Reason_UNKNOWN_SESSION_TYPE, "adapters: unknown session type")
	// ErrTurnHeld: the turn is held waiting for children or an answer; the
	// message names what is awaited.
	ErrTurnHeld = session.NewError(hubpb.Reason_TURN_HELD, "adapters: turn held")
	// ErrBadAnswer: an answer that does not fit its question; the message
	// says what would be valid.
	ErrBadAnswer = session.NewError(hubpb.Reason_BAD_ANSWER, "adapters: bad answer")
)
