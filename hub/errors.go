package hub

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

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

// errStop ends a log scan early.
var errStop = errors.New("stop")

// errPlanAbandoned marks a session whose machine ran ahead of a write that
// was then refused; it is rebuilt from the log, silently.
var errPlanAbandoned = errors.New("a write across sessions was refused after it was applied")

// LimitError is a refusal at one of the hub's limits: what was refused,
// the limit's value and the flag of hubd serve that sets it. It wraps
// ErrLimit (counts), ErrTooLarge (sizes) or ErrSlowSubscriber (a stream
// cut off at a buffer bound); its ErrorInfo metadata names the limit
// ("limit": the flag without its dashes, "value").
type LimitError struct {
	// What is what was refused and why: `"alice" has 10000 sessions
	// pending or open`.
	What string
	// Flag is the hubd serve flag that sets the limit:
	// "--max-open-per-agent".
	Flag string
	// Value is the limit's value.
	Value int64
	// Err is ErrLimit, ErrTooLarge or ErrSlowSubscriber.
	Err error
}

// Error implements error: "WHAT, the limit is N (--flag): SENTINEL".
func (e *LimitError) Error() string {
	return fmt.Sprintf("%s, the limit is %d (%s): %v", e.What, e.Value, e.Flag, e.Err)
}

// Unwrap returns Err.
func (e *LimitError) Unwrap() error { return e.Err }

// Limit is the limit's name in metrics and ErrorInfo: the flag without its
// dashes.
func (e *LimitError) Limit() string { return strings.TrimLeft(e.Flag, "-") }

// ErrorMetadata is the ErrorInfo metadata of the refusal: the limit's
// name and value.
func (e *LimitError) ErrorMetadata() map[string]string {
	return map[string]string{"limit": e.Limit(), "value": strconv.FormatInt(e.Value, 10)}
}
