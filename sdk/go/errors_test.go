package sdkgo_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
	"github.com/hubd/hubd/hubpb"
)

// TestErrorMapping triggers each refusal for real and checks the sentinel,
// the reason, the code and that the hub's message is kept.
func TestErrorMapping(t *testing.T) {
	var o hubtest.Options
	o.Hub.MaxEnvelopeBytes = 4096
	o.Hub.MaxDepth = 1
	h := hubtest.New(t, o)
	ctx := testCtx(t)
	alice, bob, carol, mallory := dial(t, h.Addr(), "alice"), dial(t, h.Addr(), "bob"), dial(t, h.Addr(), "carol"), dial(t, h.Addr(), "mallory")

	open := openPipeline(t, ctx, alice).ID()
	closed := openPipeline(t, ctx, alice).ID()
	if _, err := alice.CloseSession(ctx, closed, ""); err != nil {
		t.Fatal(err)
	}
	pending, err := alice.OpenWorkflow(ctx, agentsdk.Sequence("alice", "bob"), "bob")
	if err != nil {
		t.Fatal(err)
	}
	acked, err := alice.OpenWorkflow(ctx, agentsdk.Sequence("alice", "bob"), "bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bob.AckInvite(ctx, acked.ID()); err != nil {
		t.Fatal(err)
	}
	child, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob"), Parent: open})
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name     string
		call     func() error
		sentinel error
		reason   hubpb.Reason
		code     codes.Code
		msg      string
	}{
		{"out of turn", func() error { _, err := carol.SendText(ctx, open, "me first"); return err },
			agentsdk.ErrOutOfTurn, hubpb.Reason_OUT_OF_TURN, codes.FailedPrecondition, `workflow expects "alice" to speak, got "carol"`},
		{"session closed", func() error { _, err := alice.SendText(ctx, closed, "late"); return err },
			agentsdk.ErrSessionClosed, hubpb.Reason_SESSION_CLOSED, codes.FailedPrecondition, "explicit_close"},
		{"not open", func() error { _, err := alice.SendText(ctx, pending.ID(), "early"); return err },
			agentsdk.ErrSessionNotOpen, hubpb.Reason_SESSION_NOT_OPEN, codes.FailedPrecondition, "waiting for invite acks from bob"},
		{"not participant", func() error { _, err := mallory.SendText(ctx, open, "hi"); return err },
			agentsdk.ErrNotParticipant, hubpb.Reason_NOT_PARTICIPANT, codes.PermissionDenied, "mallory"},
		{"bad handoff target", func() error {
			_, err := alice.SendPacket(ctx, open, agentsdk.NewPacket("over").Handoff("", "zed", ""))
			return err
		}, agentsdk.ErrBadHandoffTarget, hubpb.Reason_BAD_HANDOFF_TARGET, codes.InvalidArgument, "valid targets: bob, carol"},
		{"invalid graph", func() error { _, err := alice.OpenWorkflow(ctx, agentsdk.Sequence("alice", "zed"), "bob"); return err },
			agentsdk.ErrInvalidGraph, hubpb.Reason_INVALID_GRAPH, codes.InvalidArgument, "zed"},
		{"unknown type", func() error { _, err := alice.Open(ctx, agentsdk.OpenOptions{Type: "nosuch@1"}); return err },
			agentsdk.ErrUnknownSessionType, hubpb.Reason_UNKNOWN_SESSION_TYPE, codes.InvalidArgument, "nosuch"},
		{"ack twice", func() error { _, err := bob.AckInvite(ctx, acked.ID()); return err },
			agentsdk.ErrBadTransition, hubpb.Reason_BAD_LIFECYCLE_TRANSITION, codes.FailedPrecondition, "session_invite_ack"},
		{"hub only", func() error {
			_, err := alice.Send(ctx, open, &hubpb.Envelope{Type: agentsdk.EventOpened})
			return err
		}, agentsdk.ErrHubOnly, hubpb.Reason_HUB_ONLY_EVENT, codes.PermissionDenied, "session_opened"},
		{"malformed", func() error { _, err := alice.GetSession(ctx, "not-a-uuid"); return err },
			agentsdk.ErrMalformed, hubpb.Reason_MALFORMED, codes.InvalidArgument, "session_id"},
		{"unknown session", func() error { _, err := alice.GetSession(ctx, "01900000-0000-7000-8000-000000000000"); return err },
			agentsdk.ErrUnknownSession, hubpb.Reason_UNKNOWN_SESSION, codes.NotFound, ""},
		{"too large", func() error { _, err := alice.SendText(ctx, open, strings.Repeat("x", 5000)); return err },
			agentsdk.ErrTooLarge, hubpb.Reason_TOO_LARGE, codes.ResourceExhausted, "4096"},
		{"permission denied", func() error { _, err := bob.CloseSession(ctx, open, ""); return err },
			agentsdk.ErrPermissionDenied, hubpb.Reason_PERMISSION_DENIED, codes.PermissionDenied, `only the creator "alice"`},
		{"impersonation", func() error {
			_, err := alice.Send(ctx, open, &hubpb.Envelope{From: "bob", Type: agentsdk.EventText,
				Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "it is me, bob"}}})
			return err
		}, agentsdk.ErrImpersonation, hubpb.Reason_IMPERSONATION, codes.PermissionDenied, `caller is "alice"`},
		{"depth exceeded", func() error {
			_, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob"), Parent: child.ID()})
			return err
		}, agentsdk.ErrDepthExceeded, hubpb.Reason_DEPTH_EXCEEDED, codes.FailedPrecondition, "depth 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, tc.call(), tc.sentinel, tc.reason.String(), tc.code, tc.msg)
		})
	}
}

func checkErr(t *testing.T, err, sentinel error, reason string, code codes.Code, msg string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("got %v, want errors.Is %v", err, sentinel)
	}
	var e *agentsdk.Error
	if !errors.As(err, &e) {
		t.Fatalf("%v is not an *agentsdk.Error", err)
	}
	if e.Reason != reason || e.Code != code {
		t.Errorf("reason %q code %v, want %q %v", e.Reason, e.Code, reason, code)
	}
	if r, ok := agentsdk.Reason(err); !ok || r != reason {
		t.Errorf("Reason() = %q %v", r, ok)
	}
	if status.Code(err) != code {
		t.Errorf("status.Code = %v", status.Code(err))
	}
	if !strings.Contains(e.Message, msg) || !strings.Contains(err.Error(), e.Message) {
		t.Errorf("message %q (error %q) does not say %q", e.Message, err, msg)
	}
}

// TestLimitReached opens more sessions than the hub allows one agent.
func TestLimitReached(t *testing.T) {
	var o hubtest.Options
	o.Hub.MaxOpenPerAgent = 1
	h := hubtest.New(t, o)
	ctx := testCtx(t)
	alice := dial(t, h.Addr(), "alice")
	openPipeline(t, ctx, alice)
	_, err := alice.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.Sequence("alice", "bob"), Participants: agentsdk.AutoAccepted("bob")})
	checkErr(t, err, agentsdk.ErrLimit, "LIMIT_REACHED", codes.ResourceExhausted, "the limit is 1")
}

// TestDraining: a hub shutting down ends streams with DRAINING, and a call
// to a hub that is gone is Unavailable; both are ErrUnavailable.
func TestDraining(t *testing.T) {
	ctx := testCtx(t)
	h := startAt(t, ctx, "", "")
	// A short retry budget: a send to a stopped hub fails once it is spent.
	alice := dial(t, h.Addr(), "alice", func(o *agentsdk.Options) { o.RetryBudget = 300 * time.Millisecond })
	s := openPipeline(t, ctx, alice)
	w, err := alice.Watch(ctx, s.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Recv(); err != nil { // the stream is up
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = w.Recv()
	}
	checkErr(t, err, agentsdk.ErrUnavailable, "DRAINING", codes.Unavailable, "")
	_, err = alice.SendText(ctx, s.ID(), "anyone?")
	if !errors.Is(err, agentsdk.ErrUnavailable) || status.Code(err) != codes.Unavailable {
		t.Errorf("send to a stopped hub: %v", err)
	}
	if _, ok := agentsdk.Reason(err); ok {
		t.Errorf("a transport error has a hub reason: %v", err)
	}
}

// TestCanceled: a call whose context is cancelled matches context.Canceled.
func TestCanceled(t *testing.T) {
	h := hubtest.New(t)
	alice := dial(t, h.Addr(), "alice")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := alice.ListSessions(ctx, agentsdk.ListOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v", err)
	}
	w, err := alice.Subscribe(context.Background(), agentsdk.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := w.Recv(); !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		t.Errorf("recv on a closed stream: %v", err)
	}
}
