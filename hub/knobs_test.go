package hub_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// TestOpenKnobRefusals: an open's bad knobs, graph and labels are refused
// with the same message every time, whatever the order of the request's
// maps: the first bad knob or label in key order is named, a graph knob
// counts against the graph's limit (its name included), a graph given
// twice is refused; nothing is written.
func TestOpenKnobRefusals(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	deep := structpb.NewNullValue()
	for range 70 {
		deep = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{deep}})
	}
	big := &structpb.ListValue{}
	for range 30000 {
		big.Values = append(big.Values, structpb.NewStringValue("0123456789"))
	}
	graph := workflowReq([]string{"alice", "bob"}).GetGraph()
	badGraph := &structpb.Struct{Fields: map[string]*structpb.Value{"initial_speaker": structpb.NewStringValue("alice"), "x": {}}}
	for _, tc := range []struct {
		name   string
		req    *hubpb.OpenRequest
		reason error
		msg    string
	}{
		{"first bad knob in key order", &hubpb.OpenRequest{Knobs: map[string]*structpb.Value{
			"d": {}, "b": deep, "c": {Kind: &structpb.Value_NullValue{NullValue: 5}}, "a": structpb.NewBoolValue(true)}},
			session.ErrMalformed, `knobs["b"]: value nested deeper than 64`},
		{"a value without a kind", &hubpb.OpenRequest{Knobs: map[string]*structpb.Value{"z": {}, "y": structpb.NewStringValue("ok")}},
			session.ErrMalformed, `knobs["z"]: value has no kind`},
		{"a bad graph", &hubpb.OpenRequest{Type: "workflow@1", Graph: badGraph, Knobs: map[string]*structpb.Value{"max_turns": structpb.NewNumberValue(3)}},
			session.ErrMalformed, `knobs["graph"]: value has no kind`},
		{"the graph twice", &hubpb.OpenRequest{Type: "workflow@1", Graph: graph, Knobs: map[string]*structpb.Value{"graph": structpb.NewStructValue(graph)}},
			session.ErrMalformed, "the graph is given twice"},
		{"a graph knob over the graph limit", &hubpb.OpenRequest{Type: "workflow@1", Knobs: map[string]*structpb.Value{"graph": structpb.NewListValue(big)}},
			hub.ErrTooLarge, "the graph is 390006 bytes of JSON, the limit is 262144 (MaxGraphBytes)"},
		{"first bad label in key order", &hubpb.OpenRequest{Labels: map[string]string{"d": "ok", "c": "a\x1bb", "b": "x\u202ey", "a": "fine"}},
			session.ErrMalformed, `labels["b"] has the control character U+202E at byte 1`},
		{"a bad label key", &hubpb.OpenRequest{Labels: map[string]string{"z": "a\x1bb", "k\x07": "v"}},
			session.ErrMalformed, `label key has the control character U+0007 at byte 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			if req.Type == "" {
				req.Type = "conversation@1"
			}
			req.Participants = []*hubpb.Participant{{Name: "bob", AutoAccept: true}}
			for range 20 { // maps iterate in a new order each time
				_, err := e.hub.Open(ctx, "alice", req)
				if !errors.Is(err, tc.reason) || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("got %v; want %v with %q", err, tc.reason, tc.msg)
				}
			}
		})
	}
	if list, _, _ := e.hub.List(ctx, "operator", true, feed.Filter{}); len(list) != 0 {
		t.Errorf("%d sessions after refused opens", len(list))
	}
}

// TestOpenGraphCanonical: two graphs equal in meaning but written
// differently (key order, spacing, number spellings, a negative zero)
// open to the same stored graph, its canonical form, whichever arrives
// first; it is what the hub hands back (GetSession) and what it keeps
// across a restart.
func TestOpenGraphCanonical(t *testing.T) {
	texts := []string{
		`{ "transitions": [ { "priority": -0, "then": {"args": {}, "name": "round_robin"},
		    "when": {"name": "context_compare", "args": {"value": 2.50e0, "op": "ge", "key": "n"}} } ],
		  "max_turns": 4.0, "initial_speaker": "alice", "version": 1e0,
		  "default_target": {"name": "terminate", "args": {"reason": "done"}} }`,
		`{"version":1,"initial_speaker":"alice","transitions":[{"when":{"name":"context_compare",` +
			`"args":{"key":"n","op":"ge","value":2.5}},"then":{"name":"round_robin","args":{}},"priority":0}],` +
			`"default_target":{"name":"terminate","args":{"reason":"done"}},"max_turns":4}`,
	}
	canonical, err := session.CanonicalJSON([]byte(texts[1]))
	if err != nil {
		t.Fatal(err)
	}
	want, err := session.JSONValue(canonical)
	if err != nil {
		t.Fatal(err)
	}
	stored := func(v *structpb.Value) []byte {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	e := newEnv(t, nil)
	ctx := context.Background()
	var ids []string
	for _, text := range texts {
		g := &structpb.Struct{}
		if err := hubpb.UnmarshalJSON([]byte(text), g); err != nil {
			t.Fatal(err)
		}
		o, err := e.hub.Open(ctx, "alice", &hubpb.OpenRequest{Type: "workflow@1", Graph: g,
			Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, o.GetSession().GetMeta().GetSessionId())
	}
	check := func(when string) {
		t.Helper()
		for i, id := range ids {
			info, err := e.hub.Get(ctx, "alice", false, session.MustParseID(id))
			if err != nil {
				t.Fatal(err)
			}
			got := info.GetMeta().GetKnobs()["graph"]
			if !bytes.Equal(stored(got), stored(want)) {
				t.Errorf("%s: the graph of open %d is stored as {%v}; want the canonical %s", when, i, got, canonical)
			}
		}
	}
	check("after the opens")
	e.restart()
	check("after a restart")
}
