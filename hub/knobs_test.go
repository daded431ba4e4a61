package hub_test

import (
	"context"
	"errors"
	"strings"
	"testing"

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
