package session_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

func TestCheckFields(t *testing.T) {
	nested := func(v *structpb.Value) *hubpb.Envelope {
		return &hubpb.Envelope{Type: "context_set", Payload: &hubpb.Envelope_ContextSet{ContextSet: &hubpb.ContextUpdate{
			Set: map[string]*structpb.Value{"a": structpb.NewStringValue("ok"), "k": structpb.NewListValue(&structpb.ListValue{
				Values: []*structpb.Value{structpb.NewNumberValue(1), v}})}}}}
	}
	good := []proto.Message{
		nil,
		&hubpb.Envelope{},
		&hubpb.Envelope{Type: "text", Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "héllo 🌍"}}},
		nested(structpb.NewStringValue("fine")),
		&hubpb.OpenRequest{Labels: map[string]string{"team": "ünï"}, Budget: &hubpb.Budget{MaxCost: 2.5}},
	}
	for _, m := range good {
		if err := session.CheckFields(m); err != nil {
			t.Errorf("CheckFields(%v) = %v", m, err)
		}
	}
	bad := []struct {
		name string
		m    proto.Message
		frag string
	}{
		{"text", &hubpb.Envelope{Type: "text", Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "a\xffb"}}}, `text.text is not valid UTF-8 ("a\xffb")`},
		{"from", &hubpb.Envelope{From: "\xc3"}, "from is not valid UTF-8"},
		{"audience", &hubpb.Envelope{Audience: &hubpb.Audience{Names: []string{"bob", "\xff"}}}, "audience.names[1] is not valid UTF-8"},
		{"nested value", nested(structpb.NewStringValue("\xfe")), `context_set.set["k"].list_value.values[1].string_value is not valid UTF-8`},
		{"nested number", nested(structpb.NewNumberValue(math.Inf(-1))), `context_set.set["k"].list_value.values[1].number_value is -Inf`},
		{"map key", &hubpb.OpenRequest{Labels: map[string]string{"ok": "x", "t\xff": "x"}}, "labels key is not valid UTF-8"},
		{"map value", &hubpb.OpenRequest{Labels: map[string]string{"team": "\xff"}}, `labels["team"] is not valid UTF-8`},
		{"percent", &hubpb.Envelope{Payload: &hubpb.Envelope_TaskProgress{TaskProgress: &hubpb.TaskProgress{Percent: math.NaN()}}}, "task_progress.percent is NaN"},
		{"usage", &hubpb.Envelope{Payload: &hubpb.Envelope_Packet{Packet: &hubpb.Packet{Usage: &hubpb.Usage{CostUsd: math.Inf(1)}}}}, "packet.usage.cost_usd is +Inf"},
		{"budget", &hubpb.OpenRequest{Budget: &hubpb.Budget{MaxCost: math.NaN()}}, "budget.max_cost is NaN"},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) { wantErr(t, session.CheckFields(b.m), session.ErrMalformed, b.frag) })
	}
}

func TestCheckText(t *testing.T) {
	for _, s := range []string{"", "plain", "two\nlines\tand a tab", "ünï 🌍"} {
		if err := session.CheckText("reason", s); err != nil {
			t.Errorf("CheckText(%q) = %v", s, err)
		}
	}
	for _, b := range []struct{ in, frag string }{
		{"a\xff", "reason is not valid UTF-8"},
		{"a\x00", "U+0000"},
		{"a\x1b[2J", "U+001B"},
		{"x\u202ey", "U+202E"},
	} {
		wantErr(t, session.CheckText("reason", b.in), session.ErrMalformed, b.frag)
	}
}

// BenchmarkCheckFields measures the UTF-8 and finite-number walk every
// request and envelope now takes, next to the stored encoding every
// accepted envelope takes anyway (the baseline of the ratio).
func BenchmarkCheckFields(b *testing.B) {
	env := &hubpb.Envelope{Type: "packet", From: "alice", Audience: session.Only("bob"), Payload: &hubpb.Envelope_Packet{Packet: &hubpb.Packet{
		Body: string(make([]byte, 200)), Routing: &hubpb.Routing{Kind: "handoff", Target: "bob"},
		Usage: &hubpb.Usage{InputTokens: 100, OutputTokens: 50, CostUsd: 0.01},
		ContextUpdates: &hubpb.ContextUpdate{Set: map[string]*structpb.Value{"stage": structpb.NewStringValue("review"),
			"scores": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewNumberValue(1), structpb.NewNumberValue(2)}})}}}}}
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			if err := session.CheckFields(env); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := session.MarshalEnvelope(env); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestOpenRequestFieldsOK: CheckFields of an open request (which takes a
// path of its own, without reflection) refuses a bad string or number in
// any field of it, as the reflective walk does; and the messages it
// covers have the fields it knows (a field added to one must be added to
// openRequestOK, then here).
func TestOpenRequestFieldsOK(t *testing.T) {
	known := map[string]string{
		"hubd.v1.OpenRequest":  "type participants labels ttl invite_timeout expectations parent_session_id idempotency_key graph knobs delegates budget thread_key task retention",
		"hubd.v1.Participant":  "name role auto_accept",
		"hubd.v1.Expectations": "items",
		"hubd.v1.Expectation":  "name action within",
		"hubd.v1.Budget":       "max_tokens max_cost",
	}
	for _, m := range []proto.Message{&hubpb.OpenRequest{}, &hubpb.Participant{}, &hubpb.Expectations{}, &hubpb.Expectation{}, &hubpb.Budget{}} {
		d := m.ProtoReflect().Descriptor()
		var names []string
		for i := range d.Fields().Len() {
			names = append(names, string(d.Fields().Get(i).Name()))
		}
		if got := strings.Join(names, " "); got != known[string(d.FullName())] {
			t.Errorf("%s has the fields %q, openRequestOK knows %q: check the new ones there", d.FullName(), got, known[string(d.FullName())])
		}
	}
	good := func() *hubpb.OpenRequest {
		return &hubpb.OpenRequest{Type: "workflow@1", ParentSessionId: "p", IdempotencyKey: "k", ThreadKey: "t", Task: "do",
			Participants: []*hubpb.Participant{{Name: "a", Role: "r"}, nil}, Labels: map[string]string{"l": "v"},
			Ttl: durationpb.New(time.Hour), InviteTimeout: durationpb.New(time.Minute),
			Expectations: &hubpb.Expectations{Items: []*hubpb.Expectation{{Name: "n", Action: "a", Within: durationpb.New(time.Second)}}},
			Graph: &structpb.Struct{Fields: map[string]*structpb.Value{"g": structpb.NewListValue(&structpb.ListValue{
				Values: []*structpb.Value{structpb.NewStringValue("s")}})}},
			Knobs:     map[string]*structpb.Value{"k": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"x": structpb.NewNumberValue(1)}})},
			Delegates: []string{"d"}, Budget: &hubpb.Budget{MaxTokens: 5, MaxCost: 1.5}}
	}
	if err := session.CheckFields(good()); err != nil {
		t.Fatalf("a good open: %v", err)
	}
	for name, spoil := range map[string]func(r *hubpb.OpenRequest){ //hubd:orderless independent cases
		"type":               func(r *hubpb.OpenRequest) { r.Type = "\xff" },
		"parent_session_id":  func(r *hubpb.OpenRequest) { r.ParentSessionId = "\xff" },
		"idempotency_key":    func(r *hubpb.OpenRequest) { r.IdempotencyKey = "\xff" },
		"thread_key":         func(r *hubpb.OpenRequest) { r.ThreadKey = "\xff" },
		"task":               func(r *hubpb.OpenRequest) { r.Task = "\xff" },
		"participant name":   func(r *hubpb.OpenRequest) { r.Participants[0].Name = "\xff" },
		"participant role":   func(r *hubpb.OpenRequest) { r.Participants[0].Role = "\xff" },
		"label key":          func(r *hubpb.OpenRequest) { r.Labels["\xff"] = "v" },
		"label value":        func(r *hubpb.OpenRequest) { r.Labels["l"] = "\xff" },
		"expectation name":   func(r *hubpb.OpenRequest) { r.Expectations.Items[0].Name = "\xff" },
		"expectation action": func(r *hubpb.OpenRequest) { r.Expectations.Items[0].Action = "\xff" },
		"graph key":          func(r *hubpb.OpenRequest) { r.Graph.Fields["\xff"] = structpb.NewNullValue() },
		"graph string": func(r *hubpb.OpenRequest) {
			r.Graph.Fields["g"].GetListValue().Values[0] = structpb.NewStringValue("\xff")
		},
		"graph number": func(r *hubpb.OpenRequest) { r.Graph.Fields["n"] = structpb.NewNumberValue(math.NaN()) },
		"knob key":     func(r *hubpb.OpenRequest) { r.Knobs["\xff"] = structpb.NewNullValue() },
		"knob string": func(r *hubpb.OpenRequest) {
			r.Knobs["k"].GetStructValue().Fields["x"] = structpb.NewStringValue("\xff")
		},
		"knob number": func(r *hubpb.OpenRequest) { r.Knobs["k"] = structpb.NewNumberValue(math.Inf(1)) },
		"delegate":    func(r *hubpb.OpenRequest) { r.Delegates = append(r.Delegates, "\xff") },
		"budget cost": func(r *hubpb.OpenRequest) { r.Budget.MaxCost = math.NaN() },
	} {
		r := good()
		spoil(r)
		if err := session.CheckFields(r); !errors.Is(err, session.ErrMalformed) {
			t.Errorf("an open with a bad %s: CheckFields = %v, want MALFORMED", name, err)
		}
	}
}
