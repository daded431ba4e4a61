package adapters_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

// fuzzGraphs are the workflow graphs the fuzzer opens sessions with.
func fuzzGraphs() []*transition.Graph {
	return []*transition.Graph{
		transition.Sequence("a", "b", "c"),
		transition.RoundRobin([]string{"a", "b", "c"}, 0),
		transition.Supervisor(transition.SupervisorSpec{Router: "b", Specialists: []string{"c"}, User: "a"}),
		{InitialSpeaker: "a", Transitions: []transition.Transition{
			{When: transition.ContextEquals{Key: "k", Value: session.MustJSON(1)}, Then: transition.MentionedTarget{}},
			{When: transition.ContextCompare{Key: "k", Op: "gt", Value: 1}, Then: transition.SupervisorTarget{}, Priority: -1},
			{When: transition.Not{Condition: transition.TurnCountAtLeast{N: 4}}, Then: transition.ActiveAgentTarget{}},
		}, DefaultTarget: transition.StayTarget{}, MaxTurns: 9},
	}
}

// fuzzSession opens the session the first byte picks.
func fuzzSession(t *testing.T, reg *adapters.Registry, pick byte) (*adapters.DryRun, adapters.Adapter) {
	kinds := []string{"workflow@1", "conversation@1", "discussion@1", "consulting@1"}
	typ, _ := session.ParseType(kinds[int(pick)%len(kinds)])
	names := []string{"a", "b", "c"}
	meta := &session.Meta{Type: typ, Creator: "a", Knobs: map[string]json.RawMessage{}, CreatedAt: time.Unix(0, 0).UTC()}
	switch typ.Kind {
	case "conversation", "consulting":
		names = names[:2]
	case "workflow":
		gs := fuzzGraphs()
		raw, _ := json.Marshal(gs[int(pick/4)%len(gs)])
		meta.Knobs["graph"] = raw
		if pick&0x40 != 0 {
			meta.Knobs["max_handoffs"] = session.MustJSON(2)
		}
	}
	for _, n := range names {
		meta.Participants = append(meta.Participants, session.Participant{Name: n})
	}
	a, err := reg.Lookup(typ)
	if err != nil {
		t.Fatal(err)
	}
	dr, err := adapters.NewDryRun(a, meta)
	if err != nil {
		t.Fatalf("open %v: %v", typ, err)
	}
	return dr, a
}

// fuzzEnvelope builds an envelope from 4 bytes.
func fuzzEnvelope(b []byte) *session.Envelope {
	senders := []string{"a", "b", "c", "x"}
	types := []session.EventType{session.EventText, session.EventPacket, session.EventPacket, session.EventContextSet,
		session.EventQuestion, "app.custom", session.EventInviteAck, session.EventClosed}
	kinds := []session.RoutingKind{"", session.RouteText, session.RouteHandoff, session.RouteFinish, session.RouteEscalate, "bogus"}
	texts := []string{"hello", "@b hi", "@C.", "@x nope", ""}
	e := &session.Envelope{From: senders[int(b[0])%len(senders)], Type: types[int(b[1])%len(types)]}
	switch e.Type {
	case session.EventText:
		e.Payload = session.Text{Text: texts[int(b[2])%len(texts)]}
	case session.EventPacket:
		p := session.Packet{Body: texts[int(b[2])%len(texts)]}
		p.Routing.Kind = kinds[int(b[3])%len(kinds)]
		if b[3]&0x10 != 0 {
			p.Routing.Target = senders[int(b[2])%len(senders)]
		}
		if b[3]&0x20 != 0 {
			p.Routing.Tool = "transfer_to_c"
		}
		if b[3]&0x40 != 0 {
			p.Context.Set = map[string]json.RawMessage{"k": session.MustJSON(int(b[2] % 3))}
		}
		e.Payload = p
	case session.EventContextSet:
		u := session.ContextUpdate{Delete: []string{"k"}}
		if b[2]&1 != 0 {
			u.Set = map[string]json.RawMessage{"k": session.MustJSON(int(b[3] % 3))}
		}
		e.Payload = u
	case session.EventQuestion:
		e.Payload = session.Question{QuestionID: "q", Text: "?"}
	case session.EventClosed:
		e.Payload = session.Ended{Reason: "x"}
	}
	return e
}

// FuzzAdapters drives every session type with random envelope streams: no
// envelope panics, every accepted one folds, and replay equals live.
func FuzzAdapters(f *testing.F) {
	for i := range 16 {
		f.Add([]byte{byte(i), 0, 0, 0, 0, 1, 1, 1, 1, 0, 2, 2, 2, 1, 1, 3, 0, 2, 3, 3})
	}
	f.Add([]byte{0x40, 1, 2, 0x72, 0, 1, 1, 1, 1, 1, 1, 0x52, 2, 1, 1, 4})
	reg := registry(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		dr, a := fuzzSession(t, reg, data[0])
		for rest := data[1:]; len(rest) >= 4; rest = rest[4:] {
			step := dr.Try(fuzzEnvelope(rest[:4]))
			if !step.Accepted && step.Code == "INTERNAL" {
				t.Fatalf("unclassified rejection: %v", step.Err)
			}
		}
		live, _ := json.Marshal(dr.M)
		replayed, err := dr.Replay(a)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(replayed)
		if !bytes.Equal(got, live) {
			t.Fatalf("replay differs:\nlive:   %s\nreplay: %s", live, got)
		}
	})
}

func BenchmarkFold(b *testing.B) {
	reg := registry(b)
	for _, kind := range []string{"workflow@1", "conversation@1", "discussion@1", "consulting@1"} {
		b.Run(kind, func(b *testing.B) {
			typ, _ := session.ParseType(kind)
			a, _ := reg.Lookup(typ)
			names := []string{"a", "b", "c"}
			if kind == "conversation@1" || kind == "consulting@1" {
				names = names[:2]
			}
			meta := &session.Meta{Type: typ, Creator: "a", Knobs: map[string]json.RawMessage{}}
			if kind == "workflow@1" {
				raw, _ := json.Marshal(transition.RoundRobin(names, 0))
				meta.Knobs["graph"] = raw
			}
			for _, n := range names {
				meta.Participants = append(meta.Participants, session.Participant{Name: n})
			}
			b.ReportAllocs()
			var m *adapters.Machine
			env := &session.Envelope{Type: session.EventPacket}
			for i := range b.N {
				if m == nil || m.Life.State != session.StateOpen {
					b.StopTimer()
					dr, err := adapters.NewDryRun(a, meta)
					if err != nil {
						b.Fatal(err)
					}
					m = dr.M
					b.StartTimer()
				}
				env.From = m.Expected()[0]
				env.Seq = m.Seq + 1
				env.Payload = session.Packet{Body: fmt.Sprint("turn ", i&7)}
				if err := m.Admit(env); err != nil {
					b.Fatal(err)
				}
				if out := m.Fold(env); out.Close != "" {
					m.Life.State = session.StateClosed
				}
			}
		})
	}
}
