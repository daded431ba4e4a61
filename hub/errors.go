package hub

import (
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Errors of the hub itself; protocol errors of a send come from packages
// session, transition and adapters. Each carries its stable reason (see
// session.Error); the gRPC layer maps the reason to a status code.
var (
	// ErrImpersonation: an envelope names a sender other than the caller.
	ErrImpersonation = session.NewError(hubpb.Reason_IMPERSONATION, "hub: impersonation")
	// ErrUnknownSession: no session has that id.
	ErrUnknownSession = session.NewError(hubpb.Reason_UNKNOWN_SESSION, "hub: unknown session")
	// ErrTooLarge: an envelope, or what an open carries (labels, knobs,
	// graph, participants, expectations, metadata), over its limit.
	ErrTooLarge = session.NewError(hubpb.Reason_TOO_LARGE, "hub: too large")
	// ErrPermissionDenied: the caller may not do this to the session (only
	// its creator closes it, only participants read it).
	ErrPermissionDenied = session.NewError(hubpb.Reason_PERMISSION_DENIED, "hub: permission denied")
	// ErrLimit: a per-agent limit is reached (open sessions).
	ErrLimit = session.NewError(hubpb.Reason_LIMIT_REACHED, "hub: limit reached")
	// ErrDelegateNotAllowed: a delegate outside the parent's allow-list.
	ErrDelegateNotAllowed = session.NewError(hubpb.Reason_DELEGATE_NOT_ALLOWED, "hub: delegate not allowed")
	// ErrDepthExceeded: a child session would be deeper than allowed.
	ErrDepthExceeded = session.NewError(hubpb.Reason_DEPTH_EXCEEDED, "hub: delegation depth exceeded")
	// ErrSessionFailed: the session's log could not be written or read; it
	// accepts nothing until it is reloaded from the log.
	ErrSessionFailed = session.NewError(hubpb.Reason_SESSION_FAILED, "hub: session failed")
	// ErrDiskFull: the log's disk is below its reserve; nothing was
	// written, and writes resume by themselves once space is freed. A Log
	// wraps it in the error of an append that wrote nothing for that
	// reason.
	ErrDiskFull = session.NewError(hubpb.Reason_DISK_FULL, "hub: disk full")
	// ErrStorageFailed: the log cannot make a commit durable on its
	// storage (its directory removed or replaced, a read-only or failing
	// file system, a failed fsync, a failed flush or compaction). Nothing
	// more is written until an operator acts and restarts the hub. A Log
	// wraps it in the error of every append it refuses for that reason.
	ErrStorageFailed = session.NewError(hubpb.Reason_STORAGE_FAILED, "hub: storage failed")
	// ErrIdempotencyConflict: an open reused an open key of the same
	// creator with other parameters.
	ErrIdempotencyConflict = session.NewError(hubpb.Reason_IDEMPOTENCY_CONFLICT, "hub: idempotency key reused with other parameters")
	// ErrQuarantined: the session's log is damaged (found at hydrate); it
	// serves nothing until an operator restores it.
	ErrQuarantined = session.NewError(hubpb.Reason_QUARANTINED, "hub: session quarantined")
	// ErrClosed: the hub is shutting down or closed.
	ErrClosed = session.NewError(hubpb.Reason_DRAINING, "hub: closed")
	// ErrNotOwner: in a cluster, another node serves the session's
	// partition, or a subscription's partition moved away; a
	// *NotOwnerError wraps it with the owner's address.
	ErrNotOwner = session.NewError(hubpb.Reason_NOT_OWNER, "hub: not the owner")
	// ErrSlowSubscriber: a subscriber fell behind its buffer and was cut
	// off; it resumes from its cursors.
	ErrSlowSubscriber = session.NewError(hubpb.Reason_SLOW_SUBSCRIBER, "hub: subscriber too slow")
)
