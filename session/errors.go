package session

import "errors"

// Sentinel errors. Callers branch on them with errors.Is; the hub's gRPC
// layer maps each to a status code and a stable reason.
var (
	// ErrMalformed: an envelope or metadata whose shape is wrong (missing
	// field, bad value, payload not matching its type).
	ErrMalformed = errors.New("session: malformed")
	// ErrClosed: the session has ended; it accepts no further sends.
	ErrClosed = errors.New("session: session closed")
	// ErrNotParticipant: the sender is not a participant of the session.
	ErrNotParticipant = errors.New("session: not a participant")
	// ErrNotOpen: the session is still pending (waiting for invite acks).
	ErrNotOpen = errors.New("session: session not open")
	// ErrBadTransition: a lifecycle move that cannot happen (open a closed
	// session, ack twice, ...).
	ErrBadTransition = errors.New("session: impossible lifecycle transition")
	// ErrHubOnly: an agent tried to send an event only the hub writes.
	ErrHubOnly = errors.New("session: event type written by the hub only")
	// ErrCorrupt: a stored record that does not decode.
	ErrCorrupt = errors.New("session: corrupt record")
)
