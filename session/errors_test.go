package session_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

func TestSentinelReasons(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want hubpb.Reason
	}{
		{session.ErrMalformed, hubpb.Reason_MALFORMED},
		{session.ErrClosed, hubpb.Reason_SESSION_CLOSED},
		{session.ErrNotParticipant, hubpb.Reason_NOT_PARTICIPANT},
		{session.ErrNotOpen, hubpb.Reason_SESSION_NOT_OPEN},
		{session.ErrBadTransition, hubpb.Reason_BAD_LIFECYCLE_TRANSITION},
		{session.ErrHubOnly, hubpb.Reason_HUB_ONLY_EVENT},
	} {
		wrapped := fmt.Errorf("outer: %w", fmt.Errorf("inner %q: %w", "x", tt.err))
		if got, ok := session.ReasonOf(wrapped); !ok || got != tt.want {
			t.Errorf("ReasonOf(%v) = %v, %v; want %v", wrapped, got, ok, tt.want)
		}
		if !errors.Is(wrapped, tt.err) {
			t.Errorf("%v does not wrap %v", wrapped, tt.err)
		}
		if got := session.Detail(wrapped); got != `outer: inner "x"` {
			t.Errorf("Detail(%v) = %q", wrapped, got)
		}
	}
}

func TestError(t *testing.T) {
	e := session.NewError(hubpb.Reason_LIMIT_REACHED, "pkg: limit reached")
	if e.Error() != "pkg: limit reached" || e.Reason() != hubpb.Reason_LIMIT_REACHED {
		t.Errorf("NewError = %q, %v", e.Error(), e.Reason())
	}
	// Two sentinels with the same text are still different errors.
	if errors.Is(e, session.NewError(hubpb.Reason_LIMIT_REACHED, "pkg: limit reached")) {
		t.Error("errors.Is matches a different sentinel with the same text")
	}
	tests := []struct {
		err    error
		reason hubpb.Reason
		ok     bool
		detail string
	}{
		{e, hubpb.Reason_LIMIT_REACHED, true, "pkg: limit reached"}, // nothing but the sentinel: its text
		{fmt.Errorf("3 open: %w", e), hubpb.Reason_LIMIT_REACHED, true, "3 open"},
		{fmt.Errorf("%w: and more", e), hubpb.Reason_LIMIT_REACHED, true, "pkg: limit reached: and more"}, // not at the end: kept
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", session.ErrMalformed)), hubpb.Reason_MALFORMED, true, "a: b"},
		// The first sentinel wrapped gives the reason.
		{fmt.Errorf("closed: %w (%w)", session.ErrClosed, session.ErrMalformed), hubpb.Reason_SESSION_CLOSED, true, "closed: session: session closed (session: malformed)"},
		{errors.New("plain"), hubpb.Reason_REASON_UNSPECIFIED, false, "plain"},
		{fmt.Errorf("x: %w", session.ErrCorrupt), hubpb.Reason_REASON_UNSPECIFIED, false, "x: session: corrupt record"},
	}
	for _, tt := range tests {
		r, ok := session.ReasonOf(tt.err)
		if r != tt.reason || ok != tt.ok {
			t.Errorf("ReasonOf(%v) = %v, %v; want %v, %v", tt.err, r, ok, tt.reason, tt.ok)
		}
		if got := session.Detail(tt.err); got != tt.detail {
			t.Errorf("Detail(%v) = %q, want %q", tt.err, got, tt.detail)
		}
	}
	if r, ok := session.ReasonOf(nil); ok || r != hubpb.Reason_REASON_UNSPECIFIED {
		t.Errorf("ReasonOf(nil) = %v, %v", r, ok)
	}
}
