package workflow_test

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/adapters/workflow"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

// memoDecoder is a workflow.ValueDecoder that keeps graphs by value and
// counts the JSON it asks for.
type memoDecoder struct {
	reg   *transition.Registry
	kept  map[*structpb.Value]*transition.Graph
	jsons int
}

func (d *memoDecoder) Decode(data []byte) (*transition.Graph, error) { return d.reg.Decode(data) }

func (d *memoDecoder) DecodeValue(v *structpb.Value, raw func() (json.RawMessage, error)) (*transition.Graph, error) {
	if g, ok := d.kept[v]; ok {
		return g, nil
	}
	d.jsons++
	data, err := raw()
	if err != nil {
		return nil, err
	}
	g, err := d.Decode(data)
	if err == nil {
		d.kept[v] = g
	}
	return g, err
}

// TestValueDecoder: with a ValueDecoder, DefaultKnobs and Start decode a
// session's graph value once between them, and every outcome (defaults,
// state, errors) is the one a plain decoder gives.
func TestValueDecoder(t *testing.T) {
	graphJSON, _ := json.Marshal(transition.RoundRobin([]string{"a", "b"}, 0))
	meta := func(graph *structpb.Value) *hubpb.SessionMeta {
		m := &hubpb.SessionMeta{SessionId: "01940000-0000-7000-8000-000000000001", Type: "workflow@1", Creator: "a",
			Participants: []*hubpb.Participant{{Name: "a"}, {Name: "b"}}}
		if graph != nil {
			m.Knobs = map[string]*structpb.Value{workflow.KnobGraph: graph}
		}
		return m
	}
	plain := workflow.New(nil)
	memo := &memoDecoder{reg: transition.NewRegistry(), kept: map[*structpb.Value]*transition.Graph{}}
	byValue := workflow.New(memo)
	m := meta(session.MustValue(json.RawMessage(graphJSON)))
	if got := byValue.DefaultKnobs(m); len(got) != 1 || got[workflow.KnobMaxTurns].GetNumberValue() != workflow.DefaultMaxTurns {
		t.Fatalf("DefaultKnobs = %v", got)
	}
	st, err := byValue.Start(m)
	if err != nil || st.(*workflow.State).Graph().InitialSpeaker != "a" {
		t.Fatalf("Start = %v, %v", st, err)
	}
	if memo.jsons != 1 {
		t.Fatalf("the graph's JSON was written %d times for DefaultKnobs and Start, want once", memo.jsons)
	}
	for name, m := range map[string]*hubpb.SessionMeta{ //hubd:orderless independent cases
		"no graph":            meta(nil),
		"a value of no kind":  meta(&structpb.Value{}),
		"not a graph":         meta(structpb.NewStringValue("x")),
		"an unknown speaker":  meta(session.MustValue(map[string]any{"initial_speaker": "z"})),
		"a good graph, again": meta(session.MustValue(json.RawMessage(graphJSON))),
	} {
		_, errPlain := plain.Start(m)
		_, errMemo := byValue.Start(m)
		if (errPlain == nil) != (errMemo == nil) || (errPlain != nil && errPlain.Error() != errMemo.Error()) {
			t.Errorf("%s: Start = %v with a ValueDecoder, %v without", name, errMemo, errPlain)
		}
		if a, b := plain.DefaultKnobs(m), byValue.DefaultKnobs(m); len(a) != len(b) {
			t.Errorf("%s: DefaultKnobs = %v with a ValueDecoder, %v without", name, b, a)
		}
	}
}

// TestUnknownKnobNamed: of several unknown knobs, Start names the first
// in key order, every time.
func TestUnknownKnobNamed(t *testing.T) {
	graphJSON, _ := json.Marshal(transition.RoundRobin([]string{"a", "b"}, 0))
	m := &hubpb.SessionMeta{SessionId: "01940000-0000-7000-8000-000000000001", Type: "workflow@1", Creator: "a",
		Participants: []*hubpb.Participant{{Name: "a"}, {Name: "b"}}, Knobs: map[string]*structpb.Value{
			workflow.KnobGraph: session.MustValue(json.RawMessage(graphJSON)), "zz": structpb.NewNullValue(),
			"mm": structpb.NewNullValue(), "bb": structpb.NewNullValue(), workflow.KnobMaxTurns: structpb.NewNumberValue(3)}}
	for range 20 {
		_, err := workflow.New(nil).Start(m)
		if err == nil || !strings.Contains(err.Error(), `unknown knob "bb" (known: graph, max_handoffs, supervisor, max_turns, context)`) {
			t.Fatalf("Start = %v, want the unknown knob bb named", err)
		}
	}
}
