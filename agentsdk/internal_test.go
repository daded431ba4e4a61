package agentsdk

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hubpb"
)

func TestIsLoopback(t *testing.T) {
	for target, want := range map[string]bool{
		"127.0.0.1:7420":             true,
		"localhost:7420":             true,
		"[::1]:7420":                 true,
		"dns:///localhost:7420":      true,
		"passthrough:///127.0.0.2:1": true,
		"unix:///run/hubd.sock":      true,
		"10.0.0.1:7420":              false,
		"hub.example.com:443":        false,
		"dns:///hub.example.com":     false,
	} {
		if got := isLoopback(target); got != want {
			t.Errorf("isLoopback(%q) = %v", target, got)
		}
	}
}

func TestBackoffDelay(t *testing.T) {
	base, max := 100*time.Millisecond, time.Second
	for n := 1; n < 40; n++ {
		d := backoffDelay(n, base, max)
		ceil := min(base<<min(n-1, 20), max)
		if d < ceil/2 || d > ceil {
			t.Errorf("attempt %d: %v outside [%v, %v]", n, d, ceil/2, ceil)
		}
	}
}

// exported returns the errors a caller may match a refused call against.
func exported() []error {
	return []error{ErrOutOfTurn, ErrSessionClosed, ErrSessionNotOpen, ErrNotParticipant, ErrBadHandoffTarget,
		ErrInvalidGraph, ErrUnknownSessionType, ErrBadTransition, ErrHubOnly, ErrMalformed, ErrUnknownSession, ErrTooLarge,
		ErrPermissionDenied, ErrImpersonation, ErrUnauthenticated, ErrLimit, ErrDepthExceeded, ErrSlowSubscriber, ErrDiskFull, ErrStorageFailed, ErrTurnHeld, ErrDelegateNotAllowed, ErrBadAnswer, ErrIdempotencyConflict, ErrQuarantined, ErrNotOwner, ErrNothingToSteer, ErrPurged, ErrErased,
		ErrUnavailable, ErrInternal, context.Canceled, context.DeadlineExceeded}
}

// refusal is the status a hub answers with for reason.
func refusal(t *testing.T, code codes.Code, reason string) error {
	t.Helper()
	st, err := status.New(code, "refused").WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

// TestEveryReasonHasSentinel: every stable reason of the proto (but
// REASON_UNSPECIFIED) maps to one of the exported sentinels, and only the
// reasons that mean "retry" share one.
func TestEveryReasonHasSentinel(t *testing.T) {
	values := hubpb.Reason(0).Descriptor().Values()
	if values.Len() < 2 {
		t.Fatalf("the Reason enum has %d values", values.Len())
	}
	shared := map[error][]string{}
	for i := range values.Len() {
		r := hubpb.Reason(values.Get(i).Number())
		if r == hubpb.Reason_REASON_UNSPECIFIED {
			continue
		}
		// A code that maps to no sentinel of its own, so only the reason
		// can pick one.
		err := wrapErr("call", refusal(t, codes.FailedPrecondition, r.String()))
		got := errors.Unwrap(err)
		if got == nil || !slices.Contains(exported(), got) {
			t.Errorf("reason %s maps to %v, not an exported sentinel", r, got)
			continue
		}
		if reason, ok := Reason(err); !ok || reason != r.String() {
			t.Errorf("reason %s: Reason() = %q %v", r, reason, ok)
		}
		shared[got] = append(shared[got], r.String())
	}
	for sentinel, reasons := range shared { //hubd:orderless each entry is checked on its own
		if len(reasons) > 1 && !(sentinel == ErrUnavailable && slices.Equal(reasons, []string{"SESSION_FAILED", "DRAINING"})) {
			t.Errorf("reasons %v share %v", reasons, sentinel)
		}
	}
}

// TestUnknownReason: a reason this SDK does not know yet (from a newer
// hub) keeps its name and falls back to the sentinel of its code.
func TestUnknownReason(t *testing.T) {
	err := wrapErr("send", refusal(t, codes.Unavailable, "SOME_NEW_REASON"))
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("got %v", err)
	}
	if r, ok := Reason(err); !ok || r != "SOME_NEW_REASON" {
		t.Errorf("Reason() = %q %v", r, ok)
	}
	if err := wrapErr("send", refusal(t, codes.FailedPrecondition, "SOME_NEW_REASON")); errors.Unwrap(err) != nil {
		t.Errorf("an unknown reason with an unmapped code matches %v", errors.Unwrap(err))
	}
}
