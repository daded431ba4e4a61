package hub_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// contextEnv returns a context_set envelope setting k to v for audience
// (nil: everyone).
func contextEnv(k string, v float64, audience *hubpb.Audience) *hubpb.Envelope {
	return &hubpb.Envelope{Type: session.EventContextSet, Audience: audience,
		Payload: &hubpb.Envelope_ContextSet{ContextSet: &hubpb.ContextUpdate{Set: map[string]*structpb.Value{k: structpb.NewNumberValue(v)}}}}
}

// TestContextAudience: a context variable set by an envelope with an
// audience is read only by its setter, its audience and operators, in
// every read that returns context (GetSession, an open's answer), live
// and after a restart; a later public value is everyone's again, and a
// delete removes it for all.
func TestContextAudience(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	o, err := e.hub.Open(ctx, "a", &hubpb.OpenRequest{Type: "discussion@1", IdempotencyKey: "k1",
		Participants: []*hubpb.Participant{{Name: "b", AutoAccept: true}, {Name: "c", AutoAccept: true}},
		Knobs:        map[string]*structpb.Value{"context": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"pub": structpb.NewNumberValue(1)}})}})
	if err != nil {
		t.Fatal(err)
	}
	id := session.MustParseID(o.GetSession().GetMeta().GetSessionId())
	for _, env := range []*hubpb.Envelope{
		contextEnv("mine", 2, session.Only()),     // log only: a alone
		contextEnv("ours", 3, session.Only("b")),  // a and b
		contextEnv("self", 4, session.Only("a")),  // a alone
		contextEnv("later", 5, session.Only("c")), // made public below
		contextEnv("later", 6, nil),
	} {
		if _, err := e.hub.Send(ctx, "a", id, env); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]string{
		"a": {"later", "mine", "ours", "pub", "self"},
		"b": {"later", "ours", "pub"},
		"c": {"later", "pub"},
	}
	check := func(when string) {
		t.Helper()
		for _, who := range []string{"a", "b", "c"} {
			info, err := e.hub.Get(ctx, who, false, id)
			if err != nil {
				t.Fatal(err)
			}
			if got := keysOf(info.GetContext()); !slices.Equal(got, want[who]) {
				t.Errorf("%s: %s reads context %v, want %v", when, who, got, want[who])
			}
		}
		info, err := e.hub.Get(ctx, "", true, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := keysOf(info.GetContext()); !slices.Equal(got, want["a"]) {
			t.Errorf("%s: an operator reads context %v, want %v", when, got, want["a"])
		}
	}
	check("live")
	e.restart()
	check("after a restart")
	again, err := e.hub.Open(ctx, "a", &hubpb.OpenRequest{Type: "discussion@1", IdempotencyKey: "k1",
		Participants: []*hubpb.Participant{{Name: "b", AutoAccept: true}, {Name: "c", AutoAccept: true}},
		Knobs:        map[string]*structpb.Value{"context": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"pub": structpb.NewNumberValue(1)}})}})
	if err != nil || !again.GetExisting() {
		t.Fatalf("retried open: %v, %v", again, err)
	}
	if got := keysOf(again.GetSession().GetContext()); !slices.Equal(got, want["a"]) {
		t.Errorf("the creator's retried open reads context %v, want %v", got, want["a"])
	}
	del := &hubpb.Envelope{Type: session.EventContextSet, Audience: session.Only(),
		Payload: &hubpb.Envelope_ContextSet{ContextSet: &hubpb.ContextUpdate{Delete: []string{"ours"}}}}
	if _, err := e.hub.Send(ctx, "a", id, del); err != nil {
		t.Fatal(err)
	}
	if _, err := e.hub.Send(ctx, "b", id, contextEnv("mine", 7, nil)); err != nil {
		t.Fatal(err)
	}
	want["b"] = []string{"later", "mine", "pub"}
	want["c"] = []string{"later", "mine", "pub"}
	want["a"] = []string{"later", "mine", "pub", "self"}
	check("after a delete and a public overwrite")
}

// keysOf returns m's keys, sorted.
func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
