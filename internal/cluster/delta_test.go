package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/natstest"
)

// TestClusterDeltasRouted: a delta sent through the node that does not
// serve its session runs on the owner, and reaches a subscriber of the
// other node (a merged subscription with deltas) before the final
// envelope.
func TestClusterDeltasRouted(t *testing.T) {
	if testing.Short() {
		t.Skip("a NATS server and two nodes")
	}
	c := natstest.RunServer(t)
	a, b := twoNodes(t, c)
	ctx, cancel := context.WithTimeout(as("bob"), 30*time.Second)
	defer cancel()
	resp, err := rawClient(t, a.Addr()).Open(as("alice"), &hubpb.OpenRequest{Type: "conversation@1",
		Participants: []*hubpb.Participant{{Name: "alice"}, {Name: "bob", AutoAccept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetSession().GetMeta().GetSessionId()
	viaB := rawClient(t, b.Addr())
	stream, err := viaB.Subscribe(ctx, &hubpb.SubscribeRequest{Deltas: true})
	if err != nil {
		t.Fatal(err)
	}
	for { // the catch-up: bob's subscription is registered on a
		d, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if d.GetEnvelope().GetSessionId() == id && d.GetEnvelope().GetType() == "session_opened" {
			break
		}
	}
	if _, err := viaB.SendDelta(as("alice"), &hubpb.Delta{SessionId: id, StreamId: "r1", Text: "Hel"}); err != nil {
		t.Fatalf("a delta through b: %v", err)
	}
	if _, err := viaB.Send(as("alice"), &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: "text", ClientMsgId: "r1",
		Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "Hello"}}}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 2 {
		d, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case d.GetDelta() != nil:
			got = append(got, "delta:"+d.GetDelta().GetText())
		case d.GetEnvelope().GetType() == "text":
			got = append(got, "text:"+d.GetEnvelope().GetText().GetText())
		}
	}
	if got[0] != "delta:Hel" || got[1] != "text:Hello" {
		t.Fatalf("bob's stream through b: %v", got)
	}
}
