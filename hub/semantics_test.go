package hub_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/adapters/workflow"
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// TestNilParentRefused: a nil-UUID parent_session_id names no session; it
// is refused rather than read as "no parent".
func TestNilParentRefused(t *testing.T) {
	e := newEnv(t, nil)
	_, err := e.hub.Open(context.Background(), "a", &hubpb.OpenRequest{Type: "conversation@1",
		Participants: []*hubpb.Participant{{Name: "b", AutoAccept: true}}, ParentSessionId: "00000000-0000-0000-0000-000000000000"})
	if !errors.Is(err, session.ErrMalformed) || !strings.Contains(err.Error(), "parent_session_id 00000000-0000-0000-0000-000000000000 is the nil UUID") {
		t.Fatalf("open with the nil parent: %v", err)
	}
}

// TestIdempotencyConflict: an open key reused with the same parameters
// returns the first session; with other parameters it is refused with
// IDEMPOTENCY_CONFLICT naming the difference, also after a restart.
func TestIdempotencyConflict(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	req := func() *hubpb.OpenRequest {
		return &hubpb.OpenRequest{Type: "conversation", Participants: []*hubpb.Participant{{Name: "b", AutoAccept: true}},
			Labels: map[string]string{"team": "x"}, IdempotencyKey: "k1", Ttl: durationpb.New(3600e9),
			Knobs: map[string]*structpb.Value{"context": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"n": structpb.NewNumberValue(1)}})}}
	}
	first, err := e.hub.Open(ctx, "a", req())
	if err != nil {
		t.Fatal(err)
	}
	id := first.GetSession().GetMeta().GetSessionId()
	check := func(t *testing.T) {
		again, err := e.hub.Open(ctx, "a", req())
		if err != nil || !again.GetExisting() || again.GetSession().GetMeta().GetSessionId() != id {
			t.Fatalf("the same open again: %v, %v", again, err)
		}
		for field, change := range map[string]func(*hubpb.OpenRequest){
			"type":           func(r *hubpb.OpenRequest) { r.Type = "discussion" },
			"participants":   func(r *hubpb.OpenRequest) { r.Participants[0].Name = "c" },
			"labels":         func(r *hubpb.OpenRequest) { r.Labels["team"] = "y" },
			"knobs or graph": func(r *hubpb.OpenRequest) { r.Knobs = nil },
			"ttl":            func(r *hubpb.OpenRequest) { r.Ttl = nil },
			"expectations": func(r *hubpb.OpenRequest) {
				r.Expectations = &hubpb.Expectations{Items: []*hubpb.Expectation{session.Expect(session.MaxSilence, 60e9, session.ActionWarn)}}
			},
		} { //hubd:orderless independent cases
			r := req()
			change(r)
			_, err := e.hub.Open(ctx, "a", r)
			if !errors.Is(err, hub.ErrIdempotencyConflict) || !strings.Contains(err.Error(), "made session "+id+", and this open differs in "+field) {
				t.Errorf("key reused with another %s: %v", field, err)
			}
			if rs, _ := session.ReasonOf(err); rs != hubpb.Reason_IDEMPOTENCY_CONFLICT {
				t.Errorf("%s: reason %v", field, rs)
			}
		}
	}
	check(t)
	e.restart()
	check(t)
	// A workflow that got the default max_turns: its retry is the same open.
	wf := &hubpb.OpenRequest{Type: "workflow@1", Participants: []*hubpb.Participant{{Name: "b", AutoAccept: true}}, IdempotencyKey: "wf",
		Graph: &structpb.Struct{Fields: map[string]*structpb.Value{"version": structpb.NewNumberValue(1), "initial_speaker": structpb.NewStringValue("a"),
			"default_target": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"name": structpb.NewStringValue("agent"),
				"args": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"agent_id": structpb.NewStringValue("b")}})}})}}}
	o1, err := e.hub.Open(ctx, "a", wf)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := o1.GetSession().GetMeta().GetKnobs()["max_turns"]; !ok {
		t.Fatal("no default max_turns")
	}
	o2, err := e.hub.Open(ctx, "a", wf)
	if err != nil || !o2.GetExisting() {
		t.Fatalf("the workflow's retry: %v, %v", o2, err)
	}
}

// TestAudienceOfNonParticipants: an envelope addressed to someone who is
// not a participant would reach nobody; it is refused.
func TestAudienceOfNonParticipants(t *testing.T) {
	e := newEnv(t, nil)
	id := openConversation(t, e.hub, "a", "b")
	env := textEnv("psst")
	env.Audience = session.Only("b", "zed")
	_, err := e.hub.Send(context.Background(), "a", id, env)
	if !errors.Is(err, session.ErrMalformed) || !strings.Contains(err.Error(), `audience names "zed", who is not a participant (participants: a, b)`) {
		t.Fatalf("send to zed: %v", err)
	}
	env = textEnv("psst")
	env.Audience = session.Only("b")
	if _, err := e.hub.Send(context.Background(), "a", id, env); err != nil {
		t.Fatalf("send to b: %v", err)
	}
}

// TestWorkflowDefaultCap: a workflow whose graph and knobs set no cap
// gets max_turns DefaultMaxTurns in its metadata and closes loudly there;
// a max_turns knob overrides it.
func TestWorkflowDefaultCap(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	raw := `{"version": 1, "initial_speaker": "a",
		"transitions": [{"when": {"name": "from_speaker", "args": {"agent_id": "a"}}, "then": {"name": "agent", "args": {"agent_id": "b"}}}],
		"default_target": {"name": "agent", "args": {"agent_id": "a"}}}`
	graph := &structpb.Struct{}
	if err := graph.UnmarshalJSON([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	open := func(knobs map[string]*structpb.Value) (session.ID, *hubpb.SessionMeta) {
		o, err := e.hub.Open(ctx, "a", &hubpb.OpenRequest{Type: "workflow@1", Graph: graph, Knobs: knobs,
			Participants: []*hubpb.Participant{{Name: "b", AutoAccept: true}}, Expectations: &hubpb.Expectations{}})
		if err != nil {
			t.Fatal(err)
		}
		return session.MustParseID(o.GetSession().GetMeta().GetSessionId()), o.GetSession().GetMeta()
	}
	pingPong := func(id session.ID, max int) (int, *hubpb.SendResponse) {
		for n := 1; n <= max; n++ {
			ack, err := e.hub.Send(ctx, []string{"a", "b"}[(n-1)%2], id, textEnv("again"))
			if err != nil {
				t.Fatalf("turn %d: %v", n, err)
			}
			if ack.GetClosed() {
				return n, ack
			}
		}
		return max, nil
	}
	id, meta := open(nil)
	if v := meta.GetKnobs()[workflow.KnobMaxTurns].GetNumberValue(); v != workflow.DefaultMaxTurns {
		t.Fatalf("knob max_turns %v in the metadata, want %d", v, workflow.DefaultMaxTurns)
	}
	if n, ack := pingPong(id, workflow.DefaultMaxTurns+1); ack == nil || n != workflow.DefaultMaxTurns || ack.GetCloseReason() != session.ReasonMaxTurns {
		t.Fatalf("the ping-pong ended at turn %d with %v; want max_turns at %d", n, ack, workflow.DefaultMaxTurns)
	}
	id, _ = open(map[string]*structpb.Value{workflow.KnobMaxTurns: structpb.NewNumberValue(5)})
	if n, ack := pingPong(id, 10); ack == nil || n != 5 || ack.GetCloseReason() != session.ReasonMaxTurns {
		t.Fatalf("with max_turns 5 the ping-pong ended at turn %d with %v", n, ack)
	}
	_, meta = open(map[string]*structpb.Value{workflow.KnobMaxHandoffs: structpb.NewNumberValue(3)})
	if _, ok := meta.GetKnobs()[workflow.KnobMaxTurns]; ok {
		t.Error("a workflow with max_handoffs got the default max_turns")
	}
}
