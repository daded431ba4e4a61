package wiretest

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
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

// Graph returns the wire form of a workflow graph.
func Graph(t testing.TB, g *transition.Graph) *structpb.Struct {
	t.Helper()
	raw, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	s := &structpb.Struct{}
	if err := hubpb.UnmarshalJSON(raw, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// Pipeline opens a workflow alice → bob → carol (both auto-accepting) as
// alice and returns its id.
func Pipeline(t *testing.T, c hubsvc.HubClient) string {
	t.Helper()
	resp, err := c.Open(context.Background(), &hubpb.OpenRequest{Type: "workflow@1", Graph: Graph(t, transition.Sequence("alice", "bob", "carol")),
		Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}, {Name: "carol", AutoAccept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetSession().GetState() != "OPEN" {
		t.Fatalf("state %s", resp.GetSession().GetState())
	}
	return resp.GetSession().GetMeta().GetSessionId()
}

// Text is a text envelope.
func Text(s string) *hubpb.Envelope {
	return &hubpb.Envelope{Type: "text", Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: s}}}
}

// badCase is one bad input and the refusal it must get.
type badCase struct {
	name   string
	call   func() error
	code   codes.Code
	reason string
	msg    string // a part of the status message
}

// BadInput sends each kind of bad input over the wire, as agents got from
// agent (development mode names) and anon (no credentials): each must get
// its code and stable reason and write nothing. The hub's envelope limit
// must be 4096 bytes.
func BadInput(t *testing.T, agent func(name string) hubsvc.HubClient, anon hubsvc.HubClient) {
	ctx := context.Background()
	alice := agent("alice")
	id := Pipeline(t, alice)
	cases := append(badSends(ctx, agent, id), badOpens(ctx, t, alice)...)
	cases = append(cases, badCalls(ctx, agent, anon, id)...)
	for _, tc := range cases {
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

// send returns a call sending env to session id as c.
func send(ctx context.Context, c hubsvc.HubClient, id string, env *hubpb.Envelope) func() error {
	return func() error {
		_, err := c.Send(ctx, &hubpb.SendRequest{SessionId: id, Envelope: env})
		return err
	}
}

// context returns a context_set envelope setting k to v.
func contextSet(k string, v *structpb.Value) *hubpb.Envelope {
	return &hubpb.Envelope{Type: "context_set",
		Payload: &hubpb.Envelope_ContextSet{ContextSet: &hubpb.ContextUpdate{Set: map[string]*structpb.Value{k: v}}}}
}

// badSends are refused sends into the pipeline id.
func badSends(ctx context.Context, agent func(string) hubsvc.HubClient, id string) []badCase {
	alice, bob, carol, mallory := agent("alice"), agent("bob"), agent("carol"), agent("mallory")
	impostor := Text("I am alice")
	impostor.From = "alice"
	return []badCase{
		{"malformed type", send(ctx, alice, id, &hubpb.Envelope{Type: "has space"}), codes.InvalidArgument, "MALFORMED", "space"},
		{"payload not matching type", send(ctx, alice, id, &hubpb.Envelope{Type: "text",
			Payload: &hubpb.Envelope_Packet{Packet: &hubpb.Packet{Body: "x"}}}), codes.InvalidArgument, "MALFORMED", "text needs the envelope field text"},
		{"bad context value", send(ctx, alice, id, contextSet("k", structpb.NewNumberValue(math.NaN()))),
			codes.InvalidArgument, "MALFORMED", `context_set.set["k"]`},
		{"context value without a kind", send(ctx, alice, id, contextSet("k", &structpb.Value{})),
			codes.InvalidArgument, "MALFORMED", `context_set.set["k"]`},
		{"no envelope", send(ctx, alice, id, nil), codes.InvalidArgument, "MALFORMED", "envelope is required"},
		{"bad session id", send(ctx, alice, "nope", Text("x")), codes.InvalidArgument, "MALFORMED", "session_id"},
		{"unknown session", send(ctx, alice, "0194d1a0-0000-7000-8000-000000000000", Text("x")), codes.NotFound, "UNKNOWN_SESSION", "no session"},
		{"out of turn", send(ctx, bob, id, Text("x")), codes.FailedPrecondition, "OUT_OF_TURN", `workflow expects "alice" to speak, got "bob"`},
		{"not a participant", send(ctx, mallory, id, Text("x")), codes.PermissionDenied, "NOT_PARTICIPANT", `"mallory" is not a participant`},
		{"impersonation", send(ctx, carol, id, impostor), codes.PermissionDenied, "IMPERSONATION", `says it is from "alice" but the caller is "carol"`},
		{"hub-only event", send(ctx, alice, id, &hubpb.Envelope{Type: "session_closed",
			Payload: &hubpb.Envelope_Ended{Ended: &hubpb.Ended{Reason: "mine"}}}), codes.PermissionDenied, "HUB_ONLY_EVENT", "written by the hub"},
		{"hub-only event in its protocol spelling", send(ctx, alice, id, &hubpb.Envelope{Type: "EV_SESSION_CLOSED",
			Payload: &hubpb.Envelope_Ended{Ended: &hubpb.Ended{Reason: "mine"}}}), codes.PermissionDenied, "HUB_ONLY_EVENT", "session_closed is written by the hub"},
		{"oversized payload", send(ctx, alice, id, Text(strings.Repeat("x", 5000))), codes.ResourceExhausted, "TOO_LARGE", "the limit is 4096"},
		{"payload over gRPC's old cap", send(ctx, alice, id, Text(strings.Repeat("x", 2<<20))), codes.ResourceExhausted, "TOO_LARGE", "the limit is 4096"},
		{"task progress not a number", send(ctx, alice, id, &hubpb.Envelope{Type: "task_progress",
			Payload: &hubpb.Envelope_TaskProgress{TaskProgress: &hubpb.TaskProgress{Percent: math.NaN()}}}), codes.InvalidArgument, "MALFORMED", "task_progress.percent"},
		{"audience of a non-participant", send(ctx, alice, id, &hubpb.Envelope{Type: "text", Audience: &hubpb.Audience{Names: []string{"bob", "zed"}},
			Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "psst"}}}), codes.InvalidArgument, "MALFORMED", `audience names "zed", who is not a participant`},
		{"bidirectional override in a handoff target", send(ctx, alice, id, &hubpb.Envelope{Type: "packet",
			Payload: &hubpb.Envelope_Packet{Packet: &hubpb.Packet{Body: "x", Routing: &hubpb.Routing{Kind: "handoff", Target: "bo\u202eb"}}}}),
			codes.InvalidArgument, "MALFORMED", "U+202E"},
		{"handoff to a non-participant", send(ctx, alice, id, &hubpb.Envelope{Type: "packet",
			Payload: &hubpb.Envelope_Packet{Packet: &hubpb.Packet{Body: "x", Routing: &hubpb.Routing{Kind: "handoff", Target: "zed"}}}}),
			codes.InvalidArgument, "BAD_HANDOFF_TARGET", "valid targets: bob, carol"},
	}
}

// badOpens are refused opens.
func badOpens(ctx context.Context, t *testing.T, alice hubsvc.HubClient) []badCase {
	open := func(req *hubpb.OpenRequest) func() error {
		return func() error { _, err := alice.Open(ctx, req); return err }
	}
	bob := []*hubpb.Participant{{Name: "bob"}}
	return []badCase{
		{"invalid graph at open", open(&hubpb.OpenRequest{Type: "workflow@1", Graph: Graph(t, transition.Sequence("alice", "zed")), Participants: bob}),
			codes.InvalidArgument, "INVALID_GRAPH", `agent "zed" is not a participant`},
		{"unknown session type", open(&hubpb.OpenRequest{Type: "chatroom", Participants: bob}),
			codes.InvalidArgument, "UNKNOWN_SESSION_TYPE", "chatroom@1"},
		{"knob value not finite", open(&hubpb.OpenRequest{Type: "conversation@1", Participants: bob,
			Knobs: map[string]*structpb.Value{"context": structpb.NewNumberValue(math.Inf(1))}}),
			codes.InvalidArgument, "MALFORMED", `knobs["context"]`},
		{"expectation without a threshold", open(&hubpb.OpenRequest{Type: "conversation@1", Participants: bob,
			Expectations: &hubpb.Expectations{Items: []*hubpb.Expectation{{Name: "turn_within", Action: "warn", Within: durationpb.New(-1)}}}}),
			codes.InvalidArgument, "MALFORMED", "must be positive"},
		{"expectation under the minimum threshold", open(&hubpb.OpenRequest{Type: "conversation@1", Participants: bob,
			Expectations: &hubpb.Expectations{Items: []*hubpb.Expectation{{Name: "max_silence", Action: "notify", Within: durationpb.New(1)}}}}),
			codes.InvalidArgument, "MALFORMED", "within 1ns is shorter than the minimum 1s"},
		{"ttl of 300 years", open(&hubpb.OpenRequest{Type: "conversation@1", Participants: bob, Ttl: &durationpb.Duration{Seconds: 300 * 365 * 86400}}),
			codes.InvalidArgument, "MALFORMED", "ttl 9460800000s is longer than the maximum"},
		{"nil parent", open(&hubpb.OpenRequest{Type: "conversation@1", Participants: bob, ParentSessionId: "00000000-0000-0000-0000-000000000000"}),
			codes.InvalidArgument, "MALFORMED", "is the nil UUID"},
		{"too many participants", open(&hubpb.OpenRequest{Type: "discussion@1", Participants: manyParticipants(300)}),
			codes.ResourceExhausted, "TOO_LARGE", "300 participants, the limit is 256"},
		{"label with a control character", open(&hubpb.OpenRequest{Type: "conversation@1", Participants: bob, Labels: map[string]string{"team": "a\x1b[2Jb"}}),
			codes.InvalidArgument, "MALFORMED", "U+001B"},
	}
}

// manyParticipants returns n auto-accepting participants.
func manyParticipants(n int) []*hubpb.Participant {
	out := make([]*hubpb.Participant, n)
	for i := range out {
		out[i] = &hubpb.Participant{Name: "p" + strconv.Itoa(i), AutoAccept: true}
	}
	return out
}

// badCalls are refused reads and closes.
func badCalls(ctx context.Context, agent func(string) hubsvc.HubClient, anon hubsvc.HubClient, id string) []badCase {
	bob, mallory := agent("bob"), agent("mallory")
	return []badCase{
		{"close by a non-creator", func() error { _, err := bob.Close(ctx, &hubpb.CloseRequest{SessionId: id}); return err },
			codes.PermissionDenied, "PERMISSION_DENIED", `only the creator "alice"`},
		{"read by a non-participant", func() error { _, err := mallory.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id}); return err },
			codes.PermissionDenied, "PERMISSION_DENIED", "may not read it"},
		{"no agent name", func() error { _, err := anon.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id}); return err },
			codes.Unauthenticated, "UNAUTHENTICATED", "x-hubd-agent"},
	}
}
