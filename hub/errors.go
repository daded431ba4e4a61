package hub

import "errors"

// Errors of the hub itself; protocol errors of a send come from packages
// session and adapters. The gRPC layer maps each to a status code and a
// stable reason.
var (
	// ErrUnknownSession: no session has that id (UNKNOWN_SESSION).
	ErrUnknownSession = errors.New("hub: unknown session")
	// ErrTooLarge: an envelope over the size limit (TOO_LARGE).
	ErrTooLarge = errors.New("hub: envelope too large")
	// ErrPermissionDenied: the caller may not do this to the session (only
	// its creator closes it, only participants read it).
	ErrPermissionDenied = errors.New("hub: permission denied")
	// ErrLimit: a per-agent limit is reached (open sessions).
	ErrLimit = errors.New("hub: limit reached")
	// ErrDepthExceeded: a child session would be deeper than allowed.
	ErrDepthExceeded = errors.New("hub: delegation depth exceeded")
	// ErrSessionFailed: the session's log could not be written or read; it
	// accepts nothing until it is reloaded from the log.
	ErrSessionFailed = errors.New("hub: session failed")
	// ErrClosed: the hub is shutting down or closed.
	ErrClosed = errors.New("hub: closed")
	// ErrSlowSubscriber: a subscriber fell behind its buffer and was cut
	// off; it resumes from its cursors.
	ErrSlowSubscriber = errors.New("hub: subscriber too slow")
)
