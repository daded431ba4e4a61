package agentsdk_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
)

// openPipeline opens alice → bob → carol with bob and carol auto-accepted.
func openPipeline(t *testing.T, ctx context.Context, alice *agentsdk.Client) *agentsdk.SessionInfo {
	t.Helper()
	info, err := alice.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.Sequence("alice", "bob", "carol"),
		Participants: agentsdk.AutoAccepted("bob", "carol")})
	if err != nil {
		t.Fatal(err)
	}
	if info.State != agentsdk.StateOpen {
		t.Fatalf("state %s", info.State)
	}
	return info
}

// TestErrorMapping triggers each refusal for real and checks the sentinel,
// the reason, the code and that the hub's message is kept.
func TestErrorMapping(t *testing.T) {
	cfg := server.Config{}
	cfg.Hub.MaxEnvelopeBytes = 4096
	cfg.Hub.MaxDepth = 1
	srv := startHub(t, cfg)
	ctx := testCtx(t)
	alice, bob, carol, mallory := dial(t, srv.Addr(), "alice"), dial(t, srv.Addr(), "bob"), dial(t, srv.Addr(), "carol"), dial(t, srv.Addr(), "mallory")

	open := openPipeline(t, ctx, alice)
	closed := openPipeline(t, ctx, alice)
	if _, err := alice.CloseSession(ctx, closed.ID, ""); err != nil {
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
	if _, err := bob.AckInvite(ctx, acked.ID); err != nil {
		t.Fatal(err)
	}
	child, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob"), Parent: open.ID})
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name     string
		call     func() error
		sentinel error
		reason   string
		code     codes.Code
		msg      string
	}{
		{"out of turn", func() error { _, err := carol.SendText(ctx, open.ID, "me first"); return err },
			agentsdk.ErrOutOfTurn, "OUT_OF_TURN", codes.FailedPrecondition, `workflow expects "alice" to speak, got "carol"`},
		{"session closed", func() error { _, err := alice.SendText(ctx, closed.ID, "late"); return err },
			agentsdk.ErrSessionClosed, "SESSION_CLOSED", codes.FailedPrecondition, "explicit_close"},
		{"not open", func() error { _, err := alice.SendText(ctx, pending.ID, "early"); return err },
			agentsdk.ErrSessionNotOpen, "SESSION_NOT_OPEN", codes.FailedPrecondition, "waiting for invite acks from bob"},
		{"not participant", func() error { _, err := mallory.SendText(ctx, open.ID, "hi"); return err },
			agentsdk.ErrNotParticipant, "NOT_PARTICIPANT", codes.PermissionDenied, "mallory"},
		{"bad handoff target", func() error {
			_, err := alice.SendPacket(ctx, open.ID, agentsdk.NewPacket("over").Handoff("", "zed", ""))
			return err
		}, agentsdk.ErrBadHandoffTarget, "BAD_HANDOFF_TARGET", codes.InvalidArgument, "valid targets: bob, carol"},
		{"invalid graph", func() error { _, err := alice.OpenWorkflow(ctx, agentsdk.Sequence("alice", "zed"), "bob"); return err },
			agentsdk.ErrInvalidGraph, "INVALID_GRAPH", codes.InvalidArgument, "zed"},
		{"unknown type", func() error { _, err := alice.Open(ctx, agentsdk.OpenOptions{Type: "nosuch@1"}); return err },
			agentsdk.ErrUnknownSessionType, "UNKNOWN_SESSION_TYPE", codes.InvalidArgument, "nosuch"},
		{"ack twice", func() error { _, err := bob.AckInvite(ctx, acked.ID); return err },
			agentsdk.ErrBadTransition, "BAD_LIFECYCLE_TRANSITION", codes.FailedPrecondition, "session_invite_ack"},
		{"hub only", func() error {
			_, err := alice.Send(ctx, open.ID, &hubpb.Envelope{Type: agentsdk.EventOpened})
			return err
		},
			agentsdk.ErrHubOnly, "HUB_ONLY_EVENT", codes.PermissionDenied, "session_opened"},
		{"malformed", func() error { _, err := alice.GetSession(ctx, "not-a-uuid"); return err },
			agentsdk.ErrMalformed, "MALFORMED", codes.InvalidArgument, "session_id"},
		{"unknown session", func() error { _, err := alice.GetSession(ctx, "01900000-0000-7000-8000-000000000000"); return err },
			agentsdk.ErrUnknownSession, "UNKNOWN_SESSION", codes.NotFound, ""},
		{"too large", func() error { _, err := alice.SendText(ctx, open.ID, strings.Repeat("x", 5000)); return err },
			agentsdk.ErrTooLarge, "TOO_LARGE", codes.ResourceExhausted, "4096"},
		{"permission denied", func() error { _, err := bob.CloseSession(ctx, open.ID, ""); return err },
			agentsdk.ErrPermissionDenied, "PERMISSION_DENIED", codes.PermissionDenied, `only the creator "alice"`},
		{"impersonation", func() error {
			_, err := alice.Send(ctx, open.ID, &hubpb.Envelope{From: "bob", Type: agentsdk.EventText,
				Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "it is me, bob"}}})
			return err
		}, agentsdk.ErrImpersonation, "IMPERSONATION", codes.PermissionDenied, `caller is "alice"`},
		{"depth exceeded", func() error {
			_, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob"), Parent: child.ID})
			return err
		}, agentsdk.ErrDepthExceeded, "DEPTH_EXCEEDED", codes.FailedPrecondition, "depth 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			checkErr(t, err, tc.sentinel, tc.reason, tc.code, tc.msg)
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
	cfg := server.Config{}
	cfg.Hub.MaxOpenPerAgent = 1
	srv := startHub(t, cfg)
	ctx := testCtx(t)
	alice := dial(t, srv.Addr(), "alice")
	openPipeline(t, ctx, alice)
	_, err := alice.Open(ctx, agentsdk.OpenOptions{Graph: agentsdk.Sequence("alice", "bob"), Participants: agentsdk.AutoAccepted("bob")})
	checkErr(t, err, agentsdk.ErrLimit, "LIMIT_REACHED", codes.ResourceExhausted, "the limit is 1")
}

// TestDraining: a hub shutting down ends streams with DRAINING, and a call
// to a hub that is gone is Unavailable; both are ErrUnavailable.
func TestDraining(t *testing.T) {
	srv, err := server.Start(context.Background(), server.Config{Listen: "127.0.0.1:0", InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	alice := dial(t, srv.Addr(), "alice")
	info := openPipeline(t, ctx, alice)
	w, err := alice.Watch(ctx, info.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Recv(); err != nil { // the stream is up
		t.Fatal(err)
	}
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		_, err = w.Recv()
		if err != nil {
			break
		}
	}
	checkErr(t, err, agentsdk.ErrUnavailable, "DRAINING", codes.Unavailable, "")
	_, err = alice.SendText(ctx, info.ID, "anyone?")
	if !errors.Is(err, agentsdk.ErrUnavailable) || status.Code(err) != codes.Unavailable {
		t.Errorf("send to a stopped hub: %v", err)
	}
	if _, ok := agentsdk.Reason(err); ok {
		t.Errorf("a transport error has a hub reason: %v", err)
	}
}

// TestCanceled: a call whose context is cancelled matches context.Canceled.
func TestCanceled(t *testing.T) {
	srv := startHub(t, server.Config{})
	alice := dial(t, srv.Addr(), "alice")
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
