package adapters_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
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

// graphKnob returns the stored form of a graph, as a session's knob.
func graphKnob(t testing.TB, g *transition.Graph) *structpb.Value {
	raw, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	v, err := session.JSONValue(raw)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fuzzMeta returns the metadata of a session of type kind among a, b and c
// (a and b for the two-party types).
func fuzzMeta(kind string) *hubpb.SessionMeta {
	names := []string{"a", "b", "c"}
	if kind == "conversation@1" || kind == "consulting@1" {
		names = names[:2]
	}
	meta := &hubpb.SessionMeta{SessionId: scenarioSession, Type: kind, Creator: "a",
		Knobs: map[string]*structpb.Value{}, CreatedAt: session.Stamp(time.Unix(0, 0).UTC())}
	for _, n := range names {
		meta.Participants = append(meta.Participants, &hubpb.Participant{Name: n})
	}
	return meta
}

// fuzzSession opens the session the first byte picks.
func fuzzSession(t *testing.T, reg *adapters.Registry, pick byte) (*adapters.DryRun, adapters.Adapter) {
	kinds := []string{"workflow@1", "conversation@1", "discussion@1", "consulting@1"}
	meta := fuzzMeta(kinds[int(pick)%len(kinds)])
	if meta.GetType() == "workflow@1" {
		gs := fuzzGraphs()
		meta.Knobs["graph"] = graphKnob(t, gs[int(pick/4)%len(gs)])
		if pick&0x40 != 0 {
			meta.Knobs["max_handoffs"] = structpb.NewNumberValue(2)
		}
	}
	typ, _ := session.ParseType(meta.GetType())
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
func fuzzEnvelope(b []byte) *hubpb.Envelope {
	senders := []string{"a", "b", "c", "x"}
	types := []string{session.EventText, session.EventPacket, session.EventPacket, session.EventContextSet,
		session.EventQuestion, "app.custom", session.EventInviteAck, session.EventClosed,
		session.EventAnswer, session.EventDelegation, session.EventDelegationResult, session.EventQuestionClosed,
		session.EventToolCall, session.EventMessage, session.EventTaskProgress, session.EventAnswer}
	kinds := []string{"", session.RouteText, session.RouteHandoff, session.RouteFinish, session.RouteEscalate, "bogus", session.RoutePassCaller}
	kids := []string{"01940000-0000-7000-8000-00000000c001", "01940000-0000-7000-8000-00000000c002"}
	qids := []string{"q", "r"}
	texts := []string{"hello", "@b hi", "@C.", "@x nope", ""}
	e := &hubpb.Envelope{From: senders[int(b[0])%len(senders)], Type: types[int(b[1])%len(types)]}
	switch e.GetType() {
	case session.EventText:
		e.Payload = &hubpb.Envelope_Text{Text: &hubpb.Text{Text: texts[int(b[2])%len(texts)]}}
	case session.EventPacket:
		p := &hubpb.Packet{Body: texts[int(b[2])%len(texts)], Routing: &hubpb.Routing{Kind: kinds[int(b[3])%len(kinds)]}}
		if b[3]&0x10 != 0 {
			p.Routing.Target = senders[int(b[2])%len(senders)]
		}
		if b[3]&0x20 != 0 {
			p.Routing.Tool = "transfer_to_c"
		}
		if b[3]&0x40 != 0 {
			p.ContextUpdates = &hubpb.ContextUpdate{Set: map[string]*structpb.Value{"k": structpb.NewNumberValue(float64(b[2] % 3))}}
		}
		e.Payload = &hubpb.Envelope_Packet{Packet: p}
	case session.EventContextSet:
		u := &hubpb.ContextUpdate{Delete: []string{"k"}}
		if b[2]&1 != 0 {
			u.Set = map[string]*structpb.Value{"k": structpb.NewNumberValue(float64(b[3] % 3))}
		}
		e.Payload = &hubpb.Envelope_ContextSet{ContextSet: u}
	case session.EventQuestion:
		q := &hubpb.Question{QuestionId: qids[int(b[2])%2], Text: "?", Answerer: senders[int(b[3])%len(senders)]}
		if b[2]&2 != 0 {
			q.Options = []*hubpb.Option{{Id: "y", Label: "yes"}, {Id: "n", Label: "no"}}
			q.Multiple = b[2]&4 != 0
		}
		e.Payload = &hubpb.Envelope_Question{Question: q}
	case session.EventAnswer:
		a := &hubpb.Answer{QuestionId: qids[int(b[2])%2], Text: texts[int(b[3])%len(texts)]}
		if b[3]&0x10 != 0 {
			a.OptionIds = []string{"y"}
			if b[3]&0x20 != 0 {
				a.OptionIds = append(a.OptionIds, "n")
			}
		}
		if b[3]&0x40 != 0 {
			e.From, a.Defaulted = "", true // the hub's default at a deadline
		}
		e.Payload = &hubpb.Envelope_Answer{Answer: a}
	case session.EventQuestionClosed:
		e.From = ""
		e.Payload = &hubpb.Envelope_QuestionClosed{QuestionClosed: &hubpb.QuestionClosed{QuestionId: qids[int(b[2])%2], Reason: "expired"}}
	case session.EventDelegation:
		e.From = ""
		d := &hubpb.Delegation{Delegator: senders[int(b[0])%3], ChildSessionIds: kids[:1+int(b[2])%2], Mode: session.ModeBlocking, Await: session.AwaitAll}
		switch b[3] % 3 {
		case 1:
			d.Await = session.AwaitAny
		case 2:
			d.Mode, d.Await, d.Notify = session.ModeBackground, "", []string{"", session.NotifyTurn}[int(b[3]>>4)%2]
		}
		e.Payload = &hubpb.Envelope_Delegation{Delegation: d}
	case session.EventDelegationResult:
		e.From = ""
		e.Payload = &hubpb.Envelope_DelegationResult{DelegationResult: &hubpb.DelegationResult{ChildSessionId: kids[int(b[2])%2],
			Reason: "finished", State: "CLOSED", Summary: texts[int(b[3])%len(texts)], Usage: &hubpb.Usage{InputTokens: int64(b[3])}}}
	case session.EventToolCall:
		e.Payload = &hubpb.Envelope_ToolCall{ToolCall: &hubpb.ToolCall{CallId: "c1", Name: "search"}}
	case session.EventMessage:
		e.Payload = &hubpb.Envelope_Message{Message: &hubpb.Text{Text: texts[int(b[2])%len(texts)]}}
	case session.EventTaskProgress:
		e.Payload = &hubpb.Envelope_TaskProgress{TaskProgress: &hubpb.TaskProgress{Task: "t", Percent: float64(b[2] % 101)}}
	case session.EventClosed:
		e.Payload = &hubpb.Envelope_Ended{Ended: &hubpb.Ended{Reason: "x"}}
	}
	return e
}

// FuzzAdapters drives every session type with random envelope streams: no
// envelope panics, every accepted one folds, and replaying the accepted
// envelopes through their stored form equals the live machine.
func FuzzAdapters(f *testing.F) {
	for i := range 16 {
		f.Add([]byte{byte(i), 0, 0, 0, 0, 1, 1, 1, 1, 0, 2, 2, 2, 1, 1, 3, 0, 2, 3, 3})
	}
	f.Add([]byte{0x40, 1, 2, 0x72, 0, 1, 1, 1, 1, 1, 1, 0x52, 2, 1, 1, 4})
	// A question and its answers; a blocking delegation, a turn refused
	// while it holds, its results; a background one with a turn notice.
	f.Add([]byte{1, 0, 4, 2, 1, 1, 8, 0, 0x10, 0, 4, 3, 0, 1, 8, 0, 0x10, 0, 0, 0, 0})
	f.Add([]byte{1, 0, 9, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 10, 1, 1, 0, 0, 0, 0})
	f.Add([]byte{0, 0, 9, 0, 0x12, 0, 10, 0, 0, 0, 0, 0, 0, 1, 13, 2, 0, 0, 12, 0, 0})
	f.Add([]byte{4, 0, 4, 1, 0, 0, 11, 1, 0, 0, 0, 0, 0, 1, 14, 3, 0, 1, 2, 0, 0x16})
	reg := registry(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		dr, a := fuzzSession(t, reg, data[0])
		for rest := data[1:]; len(rest) >= 4; rest = rest[4:] {
			step := dr.Try(fuzzEnvelope(rest[:4]))
			if !step.Accepted && step.Code == hubpb.Reason_INTERNAL.String() {
				t.Fatalf("unclassified rejection: %v", step.Err)
			}
		}
		live, _ := json.Marshal(dr.M)
		fresh, err := adapters.NewDryRun(a, dr.M.Meta)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range dr.Accepted {
			fresh.M.Fold(viaStoredForm(t, e))
		}
		got, _ := json.Marshal(fresh.M)
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
			meta := fuzzMeta(kind)
			meta.CreatedAt = nil
			if kind == "workflow@1" {
				meta.Knobs["graph"] = graphKnob(b, transition.RoundRobin(session.Names(meta), 0))
			}
			b.ReportAllocs()
			var m *adapters.Machine
			env := &hubpb.Envelope{Type: session.EventPacket}
			for i := range b.N {
				if m == nil || m.Lifecycle.State != session.StateOpen {
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
				env.Payload = &hubpb.Envelope_Packet{Packet: &hubpb.Packet{Body: fmt.Sprint("turn ", i&7)}}
				if err := m.Admit(env); err != nil {
					b.Fatal(err)
				}
				if out := m.Fold(env); out.Close != "" {
					m.Lifecycle.State = session.StateClosed
				}
			}
		})
	}
}
