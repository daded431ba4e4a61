package hubhttp_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

// TestDeltasOverHTTP: a delta posted to /deltas on the writer's turn
// reaches an events stream opened with deltas=true as a "delta" event
// before the final envelope's event, and writes nothing; one out of turn
// is refused as a send would be.
func TestDeltasOverHTTP(t *testing.T) {
	srv := start(t, false)
	ctx := context.Background()
	alice := dial(t, srv, "alice")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeDiscussion, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	info, err := alice.Raw().GetSession(ctx, &hubpb.GetSessionRequest{SessionId: s.ID()})
	if err != nil {
		t.Fatal(err)
	}
	last := info.GetSeq()
	ev := openEvents(t, srv, "/v1/sessions/"+s.ID()+"/events?deltas=true", "", as("operator"))
	for envelopeEvent(t, ev.nextEvent(t)).GetSeq() != last { // caught up: the watch is registered
	}
	path := "/v1/sessions/" + s.ID() + "/deltas"
	r := do(t, srv, call{method: "POST", path: path, body: `{"stream_id":"r1","index":0,"text":"Hel"}`, header: as("alice")})
	if r.status != http.StatusOK || r.json(t)["accepted_at"] == nil {
		t.Fatalf("POST deltas: %d %s", r.status, r.body)
	}
	r = do(t, srv, call{method: "POST", path: path, body: `{"stream_id":"r2","text":"x"}`, header: as("bob")})
	if r.reason(t) != "OUT_OF_TURN" {
		t.Fatalf("bob's delta on alice's turn: %d %s", r.status, r.body)
	}
	if _, err := alice.Send(ctx, s.ID(), &hubpb.Envelope{Type: "text", ClientMsgId: "r1",
		Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "Hello"}}}); err != nil {
		t.Fatal(err)
	}
	e := ev.nextEvent(t)
	var d hubpb.Delta
	if e.name != "delta" || e.id != "" || hubpb.UnmarshalJSON([]byte(e.data), &d) != nil ||
		d.GetText() != "Hel" || d.GetFrom() != "alice" || d.GetStreamId() != "r1" {
		t.Fatalf("first event after the catch-up: %q id %q %s; want the delta", e.name, e.id, e.data)
	}
	if env := envelopeEvent(t, ev.nextEvent(t)); env.GetSeq() != last+1 || env.GetClientMsgId() != "r1" {
		t.Fatalf("after the delta: %v; want the final envelope at seq %d", env, last+1)
	}
	if bad := do(t, srv, call{method: "GET", path: "/v1/sessions/" + s.ID() + "/events?deltas=true&tree=true", header: as("operator")}); bad.reason(t) != "MALFORMED" {
		t.Fatalf("deltas on a tree stream: %d %s", bad.status, bad.body)
	}
}
