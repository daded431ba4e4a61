package hubgrpc

import (
	"context"
	"errors"
	"strings"

	"github.com/rs/zerolog"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

// Domain is the ErrorInfo domain of hubd's errors.
const Domain = "hubd"

// Errors of the wire layer itself.
var (
	// ErrUnauthenticated: no valid credentials.
	ErrUnauthenticated = errors.New("hubgrpc: unauthenticated")
	// ErrImpersonation: an envelope names a sender other than the caller.
	ErrImpersonation = errors.New("hubgrpc: impersonation")
)

// Stable reasons of the errors that are not protocol errors of a session.
const (
	ReasonUnknownSession   = "UNKNOWN_SESSION"
	ReasonTooLarge         = "TOO_LARGE"
	ReasonPermissionDenied = "PERMISSION_DENIED"
	ReasonLimit            = "LIMIT_REACHED"
	ReasonDepthExceeded    = "DEPTH_EXCEEDED"
	ReasonSessionFailed    = "SESSION_FAILED"
	ReasonDraining         = "DRAINING"
	ReasonSlowSubscriber   = "SLOW_SUBSCRIBER"
	ReasonUnauthenticated  = "UNAUTHENTICATED"
	ReasonImpersonation    = "IMPERSONATION"
	ReasonCanceled         = "CANCELED"
	ReasonDeadline         = "DEADLINE_EXCEEDED"
	ReasonInternal         = "INTERNAL"
)

// rule is one row of the error table.
type rule struct {
	err    error
	code   codes.Code
	reason string
}

// table is the single table from error to gRPC code and stable reason. The
// first row whose error matches (errors.Is) wins.
func table() []rule {
	return []rule{
		{ErrUnauthenticated, codes.Unauthenticated, ReasonUnauthenticated},
		{ErrImpersonation, codes.PermissionDenied, ReasonImpersonation},
		{adapters.ErrOutOfTurn, codes.FailedPrecondition, adapters.ReasonOutOfTurn},
		{adapters.ErrBadHandoffTarget, codes.InvalidArgument, adapters.ReasonBadHandoffTarget},
		{adapters.ErrUnknownType, codes.InvalidArgument, adapters.ReasonUnknownType},
		{transition.ErrInvalid, codes.InvalidArgument, adapters.ReasonInvalidGraph},
		{session.ErrNotParticipant, codes.PermissionDenied, adapters.ReasonNotParticipant},
		{session.ErrHubOnly, codes.PermissionDenied, adapters.ReasonHubOnly},
		{session.ErrClosed, codes.FailedPrecondition, adapters.ReasonSessionClosed},
		{session.ErrNotOpen, codes.FailedPrecondition, adapters.ReasonSessionNotOpen},
		{session.ErrBadTransition, codes.FailedPrecondition, adapters.ReasonBadTransition},
		{session.ErrMalformed, codes.InvalidArgument, adapters.ReasonMalformed},
		{hub.ErrUnknownSession, codes.NotFound, ReasonUnknownSession},
		{hub.ErrTooLarge, codes.ResourceExhausted, ReasonTooLarge},
		{hub.ErrPermissionDenied, codes.PermissionDenied, ReasonPermissionDenied},
		{hub.ErrLimit, codes.ResourceExhausted, ReasonLimit},
		{hub.ErrDepthExceeded, codes.FailedPrecondition, ReasonDepthExceeded},
		{hub.ErrSessionFailed, codes.Unavailable, ReasonSessionFailed},
		{hub.ErrClosed, codes.Unavailable, ReasonDraining},
		{hub.ErrSlowSubscriber, codes.ResourceExhausted, ReasonSlowSubscriber},
		{context.Canceled, codes.Canceled, ReasonCanceled},
		{context.DeadlineExceeded, codes.DeadlineExceeded, ReasonDeadline},
	}
}

// Reasons lists every stable reason the service sends, for documentation
// and for clients that map them.
func Reasons() []string {
	var out []string
	for _, r := range table() {
		out = append(out, r.reason)
	}
	return append(out, ReasonInternal)
}

// statusOf turns an error into a gRPC status error with an ErrorInfo. An
// error in no row of the table is Internal and logged, here, once.
func statusOf(lg zerolog.Logger, method string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok && !isOurs(err) {
		return err // already a status (from gRPC itself)
	}
	for _, r := range table() {
		if errors.Is(err, r.err) {
			return withInfo(r.code, r.reason, detail(err, r.err))
		}
	}
	lg.Error().Err(err).Str("method", method).Msg("internal error")
	return withInfo(codes.Internal, ReasonInternal, "internal error: "+err.Error())
}

// isOurs reports whether err wraps one of the table's errors (and so is not
// a ready-made status).
func isOurs(err error) bool {
	for _, r := range table() {
		if errors.Is(err, r.err) {
			return true
		}
	}
	return false
}

func withInfo(code codes.Code, reason, msg string) error {
	st := status.New(code, msg)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: Domain}); err == nil {
		st = d
	}
	return st.Err()
}

// detail is the error's message without the sentinel's own text at its end.
func detail(err, sentinel error) string {
	msg := err.Error()
	if rest, ok := strings.CutSuffix(msg, ": "+sentinel.Error()); ok {
		return rest
	}
	return msg
}
