package agentsdk

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hubpb"
)

// ErrorDomain is the google.rpc.ErrorInfo domain of the hub's errors.
const ErrorDomain = "hubd"

// Sentinel errors, one per condition a caller branches on. Every error a
// Client method returns for a refused call is an [*Error] that matches one of
// them with errors.Is, and keeps the hub's message, reason and code.
var (
	// ErrOutOfTurn: the caller is a participant but not the one expected to
	// speak (OUT_OF_TURN).
	ErrOutOfTurn = errors.New("agentsdk: out of turn")
	// ErrSessionClosed: the session has ended and accepts nothing more
	// (SESSION_CLOSED).
	ErrSessionClosed = errors.New("agentsdk: session closed")
	// ErrSessionNotOpen: the session is still waiting for invite
	// acknowledgements (SESSION_NOT_OPEN).
	ErrSessionNotOpen = errors.New("agentsdk: session not open")
	// ErrNotParticipant: the caller does not take part in the session
	// (NOT_PARTICIPANT).
	ErrNotParticipant = errors.New("agentsdk: not a participant")
	// ErrBadHandoffTarget: a handoff names an agent that cannot take the
	// turn; the message lists the valid targets (BAD_HANDOFF_TARGET).
	ErrBadHandoffTarget = errors.New("agentsdk: bad handoff target")
	// ErrInvalidGraph: the workflow graph is refused; the message names the
	// offending node (INVALID_GRAPH).
	ErrInvalidGraph = errors.New("agentsdk: invalid graph")
	// ErrUnknownSessionType: the hub serves no such session type
	// (UNKNOWN_SESSION_TYPE).
	ErrUnknownSessionType = errors.New("agentsdk: unknown session type")
	// ErrBadTransition: the session's lifecycle does not allow this, e.g.
	// acknowledging an invite twice (BAD_LIFECYCLE_TRANSITION).
	ErrBadTransition = errors.New("agentsdk: bad lifecycle transition")
	// ErrHubOnly: the event type is written by the hub only
	// (HUB_ONLY_EVENT).
	ErrHubOnly = errors.New("agentsdk: event type reserved for the hub")
	// ErrMalformed: a request or payload is malformed (MALFORMED).
	ErrMalformed = errors.New("agentsdk: malformed request")
	// ErrUnknownSession: no session has that id (UNKNOWN_SESSION).
	ErrUnknownSession = errors.New("agentsdk: unknown session")
	// ErrTooLarge: the envelope is over the hub's size limit (TOO_LARGE).
	ErrTooLarge = errors.New("agentsdk: envelope too large")
	// ErrPermissionDenied: the caller may not do this to the session, e.g.
	// close a session it did not create (PERMISSION_DENIED).
	ErrPermissionDenied = errors.New("agentsdk: permission denied")
	// ErrImpersonation: an envelope names a sender other than the caller
	// (IMPERSONATION).
	ErrImpersonation = errors.New("agentsdk: impersonation")
	// ErrUnauthenticated: the hub does not know the caller (UNAUTHENTICATED
	// or the gRPC code Unauthenticated).
	ErrUnauthenticated = errors.New("agentsdk: unauthenticated")
	// ErrLimit: a per-agent limit is reached (LIMIT_REACHED).
	ErrLimit = errors.New("agentsdk: limit reached")
	// ErrDepthExceeded: a child session would be deeper than the hub allows
	// (DEPTH_EXCEEDED).
	ErrDepthExceeded = errors.New("agentsdk: delegation depth exceeded")
	// ErrSlowSubscriber: the hub cut a stream off because its reader fell
	// behind; resubscribe from the cursors (SLOW_SUBSCRIBER).
	ErrSlowSubscriber = errors.New("agentsdk: subscriber too slow")
	// ErrUnavailable: the hub cannot serve the call now: it is shutting
	// down (DRAINING), the session failed to write its log and is reloading
	// (SESSION_FAILED), or the connection is down (gRPC Unavailable). Retry.
	ErrUnavailable = errors.New("agentsdk: hub unavailable")
	// ErrInternal: the hub failed in a way it did not expect (INTERNAL).
	ErrInternal = errors.New("agentsdk: internal hub error")
	// ErrDiskFull: the hub's disk is below its reserve and it refuses
	// writes until space returns; reads go on (DISK_FULL). Not retried
	// automatically.
	ErrDiskFull = errors.New("agentsdk: hub disk full")
	// ErrStorageFailed: the hub cannot make a write durable on its storage
	// (its data directory vanished, turned read-only or fails) and refuses
	// every write until an operator acts (STORAGE_FAILED). Not retried.
	ErrStorageFailed = errors.New("agentsdk: hub storage failed")
	// ErrNothingToSteer: an operator action whose object is not there now:
	// no held turn to release, no running period of the expectation named
	// (NOTHING_TO_STEER).
	ErrNothingToSteer = errors.New("agentsdk: nothing to steer")
	// ErrPurged: the session was purged by its retention or an operator;
	// its records are gone from the hub's log (PURGED). The *Error's
	// Metadata says when ("purged_at", RFC 3339) and the archive file
	// that holds it ("archive"; "" when purged without an archive). Not
	// retried.
	ErrPurged = errors.New("agentsdk: session purged")
	// ErrErased: the session was erased on an operator's request; its
	// content is gone from the hub (ERASED). The *Error's Metadata says
	// when ("erased_at", RFC 3339), by whom ("erased_by") and why
	// ("reason"). Not retried.
	ErrErased = errors.New("agentsdk: session erased")
	// ErrTurnHeld: the turn is held while its holder waits for children or
	// an answer; the message names what is awaited (TURN_HELD).
	ErrTurnHeld = errors.New("agentsdk: turn held")
	// ErrDelegateNotAllowed: the session may not delegate to that agent;
	// the message names who may be called (DELEGATE_NOT_ALLOWED).
	ErrDelegateNotAllowed = errors.New("agentsdk: delegate not allowed")
	// ErrBadAnswer: the answer does not fit its question; the message says
	// what would be valid (BAD_ANSWER).
	ErrBadAnswer = errors.New("agentsdk: bad answer")
	// ErrIdempotencyConflict: an open reused an idempotency key of an
	// earlier one with other parameters (IDEMPOTENCY_CONFLICT); use a
	// new key.
	ErrIdempotencyConflict = errors.New("agentsdk: idempotency key reused with other parameters")
	// ErrQuarantined: the session's log is damaged; it serves nothing
	// until an operator restores it (QUARANTINED). Not retryable.
	ErrQuarantined = errors.New("agentsdk: session quarantined")
	// ErrNotOwner: in a cluster, the node that serves the session's
	// partition could not be reached at the moment: the partition changes
	// hands, or its node died (NOT_OWNER). Retry shortly, with the same
	// client message id; the Client's sends do. [Error.Metadata]
	// "owner_addr" names the owner when one is known.
	ErrNotOwner = errors.New("agentsdk: not the owner of the session")
	// ErrWithdrawn: a question was withdrawn before it was answered, its
	// session having ended (a question_closed envelope; the SDK's own,
	// no hub reason).
	ErrWithdrawn = errors.New("agentsdk: question withdrawn")
)

// sentinels maps the hub's stable reasons (hubpb.Reason) to the
// sentinels; a test checks that every reason has one.
var sentinels = map[hubpb.Reason]error{
	hubpb.Reason_OUT_OF_TURN:              ErrOutOfTurn,
	hubpb.Reason_SESSION_CLOSED:           ErrSessionClosed,
	hubpb.Reason_SESSION_NOT_OPEN:         ErrSessionNotOpen,
	hubpb.Reason_NOT_PARTICIPANT:          ErrNotParticipant,
	hubpb.Reason_BAD_HANDOFF_TARGET:       ErrBadHandoffTarget,
	hubpb.Reason_INVALID_GRAPH:            ErrInvalidGraph,
	hubpb.Reason_UNKNOWN_SESSION_TYPE:     ErrUnknownSessionType,
	hubpb.Reason_BAD_LIFECYCLE_TRANSITION: ErrBadTransition,
	hubpb.Reason_HUB_ONLY_EVENT:           ErrHubOnly,
	hubpb.Reason_MALFORMED:                ErrMalformed,
	hubpb.Reason_UNKNOWN_SESSION:          ErrUnknownSession,
	hubpb.Reason_TOO_LARGE:                ErrTooLarge,
	hubpb.Reason_PERMISSION_DENIED:        ErrPermissionDenied,
	hubpb.Reason_IMPERSONATION:            ErrImpersonation,
	hubpb.Reason_UNAUTHENTICATED:          ErrUnauthenticated,
	hubpb.Reason_LIMIT_REACHED:            ErrLimit,
	hubpb.Reason_DEPTH_EXCEEDED:           ErrDepthExceeded,
	hubpb.Reason_SLOW_SUBSCRIBER:          ErrSlowSubscriber,
	hubpb.Reason_DRAINING:                 ErrUnavailable,
	hubpb.Reason_SESSION_FAILED:           ErrUnavailable,
	hubpb.Reason_CANCELED:                 context.Canceled,
	hubpb.Reason_DEADLINE_EXCEEDED:        context.DeadlineExceeded,
	hubpb.Reason_INTERNAL:                 ErrInternal,
	hubpb.Reason_DISK_FULL:                ErrDiskFull,
	hubpb.Reason_TURN_HELD:                ErrTurnHeld,
	hubpb.Reason_DELEGATE_NOT_ALLOWED:     ErrDelegateNotAllowed,
	hubpb.Reason_BAD_ANSWER:               ErrBadAnswer,
	hubpb.Reason_IDEMPOTENCY_CONFLICT:     ErrIdempotencyConflict,
	hubpb.Reason_QUARANTINED:              ErrQuarantined,
	hubpb.Reason_NOT_OWNER:                ErrNotOwner,
	hubpb.Reason_STORAGE_FAILED:           ErrStorageFailed,
	hubpb.Reason_NOTHING_TO_STEER:         ErrNothingToSteer,
	hubpb.Reason_PURGED:                   ErrPurged,
	hubpb.Reason_ERASED:                   ErrErased,
}

// sentinelOf returns the sentinel of a reason name, nil for an unknown one.
func sentinelOf(reason string) error {
	r, ok := hubpb.Reason_value[reason]
	if !ok {
		return nil
	}
	return sentinels[hubpb.Reason(r)]
}

// sentinelOfCode is the sentinel of a status without a known reason (one
// made by gRPC itself rather than by the hub).
func sentinelOfCode(c codes.Code) error {
	switch c {
	case codes.Unavailable:
		return ErrUnavailable
	case codes.Unauthenticated:
		return ErrUnauthenticated
	case codes.ResourceExhausted:
		// gRPC's own refusal of a message over its size cap, before the
		// hub saw it (or the client's cap on what it sends).
		return ErrTooLarge
	case codes.Canceled:
		return context.Canceled
	case codes.DeadlineExceeded:
		return context.DeadlineExceeded
	}
	return nil
}

// Error is a call the hub refused (or that failed on the way). It keeps the
// hub's message, its stable reason and the gRPC code, and matches the
// sentinel of its reason with errors.Is:
//
//	if errors.Is(err, agentsdk.ErrOutOfTurn) { ... }
//
// Use errors.As to read Reason or Code.
type Error struct {
	// Op is the call that failed ("send", "open", "subscribe", ...).
	Op string
	// Code is the gRPC status code.
	Code codes.Code
	// Reason is the hub's stable reason ("OUT_OF_TURN", ...); empty for an
	// error gRPC made itself (a broken connection).
	Reason string
	// Message is the hub's message, e.g. `workflow expects "bob" to speak,
	// got "carol"`.
	Message string
	// Metadata is the ErrorInfo's metadata, e.g. "owner_addr" with
	// NOT_OWNER; nil when there is none.
	Metadata map[string]string

	sentinel error
	st       *status.Status
}

// Error implements error: "agentsdk: op: message (REASON)".
func (e *Error) Error() string {
	tag := e.Reason
	if tag == "" {
		tag = e.Code.String()
	}
	return fmt.Sprintf("agentsdk: %s: %s (%s)", e.Op, e.Message, tag)
}

// Unwrap returns the sentinel the error matches, if any.
func (e *Error) Unwrap() error { return e.sentinel }

// GRPCStatus returns the original status, so status.Code and
// status.FromError work on the error.
func (e *Error) GRPCStatus() *status.Status { return e.st }

// wrapErr turns a gRPC call's error into an *Error; errors that are not a
// status (a local failure) are returned as they are.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("agentsdk: %s: %w", op, err)
	}
	e := &Error{Op: op, Code: st.Code(), Message: st.Message(), st: st}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == ErrorDomain {
			e.Reason, e.Metadata = info.GetReason(), info.GetMetadata()
			break
		}
	}
	e.sentinel = sentinelOf(e.Reason)
	if e.sentinel == nil {
		e.sentinel = sentinelOfCode(e.Code)
	}
	return e
}

// Reason returns the hub's stable reason of err ("OUT_OF_TURN", ...) and
// true, or "" and false when err carries none.
func Reason(err error) (string, bool) {
	var e *Error
	if errors.As(err, &e) && e.Reason != "" {
		return e.Reason, true
	}
	return "", false
}

// retryable reports whether a failed call may succeed if repeated as it
// is: the hub or the connection was unavailable, or a stream was cut off
// as slow.
func retryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch {
	case errors.Is(e, ErrUnavailable), errors.Is(e, ErrSlowSubscriber), errors.Is(e, ErrNotOwner):
		return true
	case e.Reason == "" && (e.Code == codes.Internal || e.Code == codes.Unknown || e.Code == codes.Aborted):
		// gRPC's own transport failures (a reset stream, a server that
		// went away mid-stream).
		return true
	}
	return false
}
