package hubgrpc_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/wiretest"
)

// TestSteer: over the wire, an agent's Steer is refused PERMISSION_DENIED
// (a participant's too) and writes nothing; each refusal of an operator's
// carries its code and reason and names what was expected; an accepted
// one is in the log, from the hub, naming the operator, and changes who
// may speak.
func TestSteer(t *testing.T) {
	f := start(t, "")
	ctx := context.Background()
	alice, ops := f.agent("alice"), f.agent("operator")
	id := wiretest.Pipeline(t, alice)
	next := func(agent, reason string) *hubpb.SteerRequest {
		return &hubpb.SteerRequest{SessionId: id, Action: &hubpb.OperatorAction{Reason: reason,
			Action: &hubpb.OperatorAction_NextSpeaker{NextSpeaker: agent}}}
	}
	for _, tc := range []struct {
		name    string
		client  string
		req     *hubpb.SteerRequest
		code    codes.Code
		reason  string
		message string
	}{
		{"a participant", "alice", next("carol", "mine"), codes.PermissionDenied, "PERMISSION_DENIED", `"alice" is not an operator`},
		{"an outsider", "mallory", next("carol", "mine"), codes.PermissionDenied, "PERMISSION_DENIED", `"mallory" is not an operator`},
		{"no reason", "operator", next("carol", ""), codes.InvalidArgument, "MALFORMED", "needs a reason"},
		{"not a participant", "operator", next("zed", "x"), codes.InvalidArgument, "MALFORMED", "(participants: alice, bob, carol)"},
		{"nothing held", "operator", &hubpb.SteerRequest{SessionId: id, Action: &hubpb.OperatorAction{Reason: "x",
			Action: &hubpb.OperatorAction_ReleaseResult{ReleaseResult: "go"}}}, codes.FailedPrecondition, "NOTHING_TO_STEER", "no turn is held"},
		{"no action", "operator", &hubpb.SteerRequest{SessionId: id}, codes.InvalidArgument, "MALFORMED", "action is required"},
	} {
		_, err := f.agent(tc.client).Steer(ctx, tc.req)
		code, reason := wiretest.ReasonOf(err)
		if code != tc.code || reason != tc.reason || !strings.Contains(err.Error(), tc.message) {
			t.Errorf("%s: %v %s (%v), want %v %s %q", tc.name, code, reason, err, tc.code, tc.reason, tc.message)
		}
	}
	if log, _ := ops.ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: id}); len(log.GetEnvelopes()) != 2 {
		t.Fatalf("refusals wrote: %d envelopes, want the invite and the open", len(log.GetEnvelopes()))
	}
	if _, err := ops.Steer(ctx, next("carol", "carol first")); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: wiretest.Text("mine")}); err == nil {
		t.Fatal("alice spoke on carol's turn")
	}
	if _, err := f.agent("carol").Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: wiretest.Text("here")}); err != nil {
		t.Fatal(err)
	}
	log, err := ops.ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	a := log.GetEnvelopes()[2]
	if a.GetType() != "operator_action" || a.GetFrom() != "" || a.GetOperatorAction().GetOperator() != "operator" ||
		a.GetOperatorAction().GetReason() != "carol first" {
		t.Fatalf("logged %v", a)
	}
}
