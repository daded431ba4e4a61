package hub

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/adapters/workflow"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/transition"
)

func BenchmarkReplayRecord(b *testing.B) {
	reg, _ := adapters.NewRegistry(workflow.New(nil))
	g := transition.RoundRobin([]string{"a", "b", "c"}, 0)
	gj, _ := g.MarshalJSON()
	gv, _ := session.JSONValue(gj)
	meta := &hubpb.SessionMeta{SessionId: "019ab0c4-8f4e-7a2b-9c3d-4e5f60718293", Type: "workflow@1", Creator: "a",
		Knobs: map[string]*structpb.Value{"graph": gv}, Participants: []*hubpb.Participant{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	a, _ := reg.Lookup(session.Type{Kind: "workflow", Version: 1})
	m, err := adapters.NewMachine(a, meta)
	if err != nil {
		b.Fatal(err)
	}
	s := (&Hub{feed: noConsumer{}}).newSession(session.MustParseID(meta.SessionId), m)
	at := session.Stamp(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	enc := func(e *hubpb.Envelope) []byte {
		e.SessionId, e.Seq, e.AcceptedAt, e.Id = meta.SessionId, m.Seq+1, at, "019ab0c4-9a10-7c1e-8f00-2b840c467ac4"
		d, _ := session.MarshalEnvelope(e)
		return d
	}
	if err := replay(s, 1, enc(&hubpb.Envelope{Type: session.EventInvite, Payload: &hubpb.Envelope_Invite{Invite: &hubpb.Invite{}}})); err != nil {
		b.Fatal(err)
	}
	if err := replay(s, 2, enc(&hubpb.Envelope{Type: session.EventOpened})); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		e := &hubpb.Envelope{From: m.Expected()[0], Type: session.EventText, Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "a turn of about sixty bytes of text, as agents write them"}}}
		d := enc(e)
		b.StartTimer()
		if err := replay(s, m.Seq+1, d); err != nil {
			b.Fatal(err)
		}
	}
}
