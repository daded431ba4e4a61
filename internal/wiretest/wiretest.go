package wiretest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/transition"
)

// ReasonOf returns a status error's code and ErrorInfo reason.
func ReasonOf(err error) (codes.Code, string) {
	st := status.Convert(err)
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return st.Code(), info.GetReason()
		}
	}
	return st.Code(), ""
}

// Pipeline opens a workflow alice → bob → carol (both auto-accepting) as
// alice and returns its id.
func Pipeline(t *testing.T, c hubpb.HubClient) string {
	t.Helper()
	graph, _ := json.Marshal(transition.Sequence("alice", "bob", "carol"))
	resp, err := c.Open(context.Background(), &hubpb.OpenRequest{Type: "workflow@1", GraphJson: string(graph),
		Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}, {Name: "carol", AutoAccept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetSession().GetState() != "OPEN" {
		t.Fatalf("state %s", resp.GetSession().GetState())
	}
	return resp.GetSession().GetSessionId()
}

// Text is a text envelope.
func Text(s string) *hubpb.Envelope {
	return &hubpb.Envelope{Type: "text", Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: s}}}
}

// BadInput sends each kind of bad input over the wire, as agents got from
// agent (development mode names) and anon (no credentials): each must get
// its code and stable reason and write nothing. The hub's envelope limit
// must be 4096 bytes.
func BadInput(t *testing.T, agent func(name string) hubpb.HubClient, anon hubpb.HubClient) {
	ctx := context.Background()
	alice, bob, carol, mallory := agent("alice"), agent("bob"), agent("carol"), agent("mallory")
	id := Pipeline(t, alice)
	graph, _ := json.Marshal(transition.Sequence("alice", "zed"))
	big := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name   string
		call   func() error
		code   codes.Code
		reason string
		msg    string
	}{
		{"malformed type", func() error {
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: "has space"}})
			return err
		}, codes.InvalidArgument, "MALFORMED", "space"},
		{"payload not matching type", func() error {
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: "text",
				Payload: &hubpb.Envelope_Packet{Packet: &hubpb.Packet{Body: "x"}}}})
			return err
		}, codes.InvalidArgument, "MALFORMED", "text needs"},
		{"bad context JSON", func() error {
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: "context_set",
				Payload: &hubpb.Envelope_ContextSet{ContextSet: &hubpb.ContextUpdate{Set: map[string]string{"k": "{nope"}}}}})
			return err
		}, codes.InvalidArgument, "MALFORMED", `context_set.set["k"]`},
		{"no envelope", func() error { _, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id}); return err },
			codes.InvalidArgument, "MALFORMED", "envelope is required"},
		{"bad session id", func() error {
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: "nope", Envelope: Text("x")})
			return err
		},
			codes.InvalidArgument, "MALFORMED", "session_id"},
		{"unknown session", func() error {
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: "0194d1a0-0000-7000-8000-000000000000", Envelope: Text("x")})
			return err
		}, codes.NotFound, "UNKNOWN_SESSION", "no session"},
		{"out of turn", func() error {
			_, err := bob.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: Text("x")})
			return err
		},
			codes.FailedPrecondition, "OUT_OF_TURN", `workflow expects "alice" to speak, got "bob"`},
		{"not a participant", func() error {
			_, err := mallory.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: Text("x")})
			return err
		},
			codes.PermissionDenied, "NOT_PARTICIPANT", `"mallory" is not a participant`},
		{"impersonation", func() error {
			e := Text("I am alice")
			e.From = "alice"
			_, err := carol.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: e})
			return err
		}, codes.PermissionDenied, "IMPERSONATION", `says it is from "alice" but the caller is "carol"`},
		{"hub-only event", func() error {
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: "session_closed",
				Payload: &hubpb.Envelope_Ended{Ended: &hubpb.Ended{Reason: "mine"}}}})
			return err
		}, codes.PermissionDenied, "HUB_ONLY_EVENT", "written by the hub"},
		{"oversized payload", func() error {
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: Text(big)})
			return err
		},
			codes.ResourceExhausted, "TOO_LARGE", "the limit is 4096"},
		{"handoff to a non-participant", func() error {
			_, err := alice.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: "packet",
				Payload: &hubpb.Envelope_Packet{Packet: &hubpb.Packet{Body: "x", Routing: &hubpb.Routing{Kind: "handoff", Target: "zed"}}}}})
			return err
		}, codes.InvalidArgument, "BAD_HANDOFF_TARGET", "valid targets: bob, carol"},
		{"invalid graph at open", func() error {
			_, err := alice.Open(ctx, &hubpb.OpenRequest{Type: "workflow@1", GraphJson: string(graph),
				Participants: []*hubpb.Participant{{Name: "bob"}}})
			return err
		}, codes.InvalidArgument, "INVALID_GRAPH", `agent "zed" is not a participant`},
		{"unknown session type", func() error {
			_, err := alice.Open(ctx, &hubpb.OpenRequest{Type: "chatroom", Participants: []*hubpb.Participant{{Name: "bob"}}})
			return err
		}, codes.InvalidArgument, "UNKNOWN_SESSION_TYPE", "chatroom@1"},
		{"close by a non-creator", func() error { _, err := bob.Close(ctx, &hubpb.CloseRequest{SessionId: id}); return err },
			codes.PermissionDenied, "PERMISSION_DENIED", `only the creator "alice"`},
		{"read by a non-participant", func() error { _, err := mallory.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id}); return err },
			codes.PermissionDenied, "PERMISSION_DENIED", "may not read it"},
		{"no agent name", func() error {
			_, err := anon.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
			return err
		},
			codes.Unauthenticated, "UNAUTHENTICATED", "x-hubd-agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := alice.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
			if err != nil {
				t.Fatal(err)
			}
			err = tc.call()
			code, reason := ReasonOf(err)
			if code != tc.code || reason != tc.reason || !strings.Contains(status.Convert(err).Message(), tc.msg) {
				t.Fatalf("got %v %s %q; want %v %s with %q", code, reason, status.Convert(err).Message(), tc.code, tc.reason, tc.msg)
			}
			after, _ := alice.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
			if after.GetSeq() != before.GetSeq() {
				t.Fatalf("a rejected call wrote: seq %d → %d", before.GetSeq(), after.GetSeq())
			}
		})
	}
}
