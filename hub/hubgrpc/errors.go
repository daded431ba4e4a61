package hubgrpc

import (
	"context"
	"errors"

	"github.com/rs/zerolog"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Domain is the ErrorInfo domain of hubd's errors.
const Domain = "hubd"

// ErrUnauthenticated: no valid credentials (UNAUTHENTICATED).
var ErrUnauthenticated = session.NewError(hubpb.Reason_UNAUTHENTICATED, "hubgrpc: unauthenticated")

// codeOf is the one table from a stable reason to its gRPC status code.
// The reasons themselves travel with the sentinel errors (session.Error);
// a reason missing here is a bug, caught by a test.
var codeOf = map[hubpb.Reason]codes.Code{
	hubpb.Reason_UNAUTHENTICATED:          codes.Unauthenticated,
	hubpb.Reason_IMPERSONATION:            codes.PermissionDenied,
	hubpb.Reason_OUT_OF_TURN:              codes.FailedPrecondition,
	hubpb.Reason_BAD_HANDOFF_TARGET:       codes.InvalidArgument,
	hubpb.Reason_UNKNOWN_SESSION_TYPE:     codes.InvalidArgument,
	hubpb.Reason_INVALID_GRAPH:            codes.InvalidArgument,
	hubpb.Reason_NOT_PARTICIPANT:          codes.PermissionDenied,
	hubpb.Reason_HUB_ONLY_EVENT:           codes.PermissionDenied,
	hubpb.Reason_SESSION_CLOSED:           codes.FailedPrecondition,
	hubpb.Reason_SESSION_NOT_OPEN:         codes.FailedPrecondition,
	hubpb.Reason_BAD_LIFECYCLE_TRANSITION: codes.FailedPrecondition,
	hubpb.Reason_MALFORMED:                codes.InvalidArgument,
	hubpb.Reason_UNKNOWN_SESSION:          codes.NotFound,
	hubpb.Reason_TOO_LARGE:                codes.ResourceExhausted,
	hubpb.Reason_PERMISSION_DENIED:        codes.PermissionDenied,
	hubpb.Reason_LIMIT_REACHED:            codes.ResourceExhausted,
	hubpb.Reason_DEPTH_EXCEEDED:           codes.FailedPrecondition,
	hubpb.Reason_SESSION_FAILED:           codes.Unavailable,
	hubpb.Reason_DRAINING:                 codes.Unavailable,
	hubpb.Reason_SLOW_SUBSCRIBER:          codes.ResourceExhausted,
	hubpb.Reason_CANCELED:                 codes.Canceled,
	hubpb.Reason_DEADLINE_EXCEEDED:        codes.DeadlineExceeded,
	hubpb.Reason_INTERNAL:                 codes.Internal,
	hubpb.Reason_DISK_FULL:                codes.ResourceExhausted,
	hubpb.Reason_TURN_HELD:                codes.FailedPrecondition,
	hubpb.Reason_DELEGATE_NOT_ALLOWED:     codes.PermissionDenied,
	hubpb.Reason_BAD_ANSWER:               codes.InvalidArgument,
	hubpb.Reason_IDEMPOTENCY_CONFLICT:     codes.InvalidArgument,
	hubpb.Reason_QUARANTINED:              codes.DataLoss,
	hubpb.Reason_NOT_OWNER:                codes.Unavailable,
	// Not Unavailable: nothing is to be retried until an operator acts.
	hubpb.Reason_STORAGE_FAILED:   codes.FailedPrecondition,
	hubpb.Reason_NOTHING_TO_STEER: codes.FailedPrecondition,
	// Gone for good: ErrorInfo says when and where it is archived.
	hubpb.Reason_PURGED: codes.NotFound,
	hubpb.Reason_ERASED: codes.NotFound,
}

// Code returns the gRPC status code of a stable reason.
func Code(r hubpb.Reason) codes.Code {
	if c, ok := codeOf[r]; ok {
		return c
	}
	return codes.Internal
}

// Status is the gRPC status error the service answers for err: its stable
// reason and ErrorInfo (with metadata such as a NOT_OWNER's owner_addr),
// CANCELED or DEADLINE_EXCEEDED for a context's error, a status as it is,
// and INTERNAL (logged to lg, for method) for an error that carries no
// reason. For code that answers calls around the service's handlers (a
// cluster node's routing).
func Status(lg zerolog.Logger, method string, err error) error { return statusOf(lg, method, err) }

// statusOf turns an error into a gRPC status error with an ErrorInfo. An
// error that carries no reason is Internal and logged, here, once; its text
// stays in the log, not in the answer.
func statusOf(lg zerolog.Logger, method string, err error) error {
	if err == nil {
		return nil
	}
	if r, ok := session.ReasonOf(err); ok {
		return withInfo(r, session.Detail(err), metadataOf(err))
	}
	switch {
	case errors.Is(err, context.Canceled):
		return withInfo(hubpb.Reason_CANCELED, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return withInfo(hubpb.Reason_DEADLINE_EXCEEDED, err.Error())
	}
	if _, ok := status.FromError(err); ok {
		return err // already a status (from gRPC itself)
	}
	lg.Error().Err(err).Str("method", method).Msg("internal error")
	return withInfo(hubpb.Reason_INTERNAL, "internal error (logged by the hub)")
}

// metadataOf returns the ErrorInfo metadata an error carries (a hub error
// with an ErrorMetadata method, such as hub.NotOwnerError), or nil.
func metadataOf(err error) map[string]string {
	var m interface{ ErrorMetadata() map[string]string }
	if errors.As(err, &m) {
		return m.ErrorMetadata()
	}
	return nil
}

func withInfo(reason hubpb.Reason, msg string, md ...map[string]string) error {
	st := status.New(Code(reason), msg)
	info := &errdetails.ErrorInfo{Reason: reason.String(), Domain: Domain}
	if len(md) > 0 {
		info.Metadata = md[0]
	}
	if d, err := st.WithDetails(info); err == nil {
		st = d
	}
	return st.Err()
}
