package hubgrpc_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/wiretest"
)

func logSize(t *testing.T, c hubsvc.HubClient, id string) int {
	t.Helper()
	r, err := c.ReadLog(context.Background(), &hubpb.ReadLogRequest{SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	return len(r.GetEnvelopes())
}

// nextDelta reads frames of a until a delta (deliveries of the catch-up
// before it are skipped).
func (a *agentStream) nextDelta() *hubpb.Delta {
	a.t.Helper()
	for {
		f := a.next()
		if d := f.GetDelta(); d != nil {
			return d
		}
		if f.GetDelivery() == nil {
			a.t.Fatalf("want a delta, got %v", f)
		}
	}
}

// TestDeltasOnTheWire: deltas sent by SendDelta, on the agent stream and
// by SendStream reach the next speaker's agent stream (subscribed with
// deltas) and a watcher, in order, before the final envelope; none is
// logged; one out of turn is refused as a send would be.
func TestDeltasOnTheWire(t *testing.T) {
	f := start(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	alice, bob, carol := f.agent("alice"), f.agent("bob"), f.agent("carol")
	id := wiretest.Pipeline(t, alice)
	b := connect(t, bob, "bob", &hubpb.SubscribeRequest{Deltas: true})
	w, err := carol.Watch(ctx, &hubpb.WatchRequest{SessionId: id, Deltas: true})
	if err != nil {
		t.Fatal(err)
	}
	before := logSize(t, alice, id)
	for { // the watch's catch-up: it is registered
		d, err := w.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if d.GetEnvelope().GetSeq() == uint64(before) {
			break
		}
	}
	for b.delivery().GetEnvelope().GetSeq() != uint64(before) { // bob's catch-up: subscribed
	}

	wantDelta := func(i int, want string) {
		t.Helper()
		d := b.nextDelta()
		if d.GetText() != want || d.GetIndex() != uint64(i) || d.GetFrom() != "alice" || d.GetRefused() != nil {
			t.Fatalf("bob's delta %d: %v", i, d)
		}
	}
	if _, err := alice.SendDelta(ctx, &hubpb.Delta{SessionId: id, StreamId: "r1", Index: 0, Text: "one "}); err != nil {
		t.Fatal(err)
	}
	wantDelta(0, "one ")
	a := connect(t, alice, "alice", nil)
	a.frame(&hubpb.AgentFrame{Frame: &hubpb.AgentFrame_Delta{Delta: &hubpb.Delta{SessionId: id, StreamId: "r1", Index: 1, Text: "two "}}})
	wantDelta(1, "two ")
	ss, err := alice.SendStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ss.Send(&hubpb.SendStreamFrame{Frame: &hubpb.SendStreamFrame_Delta{Delta: &hubpb.Delta{SessionId: id, StreamId: "r1", Index: 2, Text: "three"}}}); err != nil {
		t.Fatal(err)
	}
	wantDelta(2, "three")

	// Out of turn, by each way: refused, the stream goes on.
	_, err = bob.SendDelta(ctx, &hubpb.Delta{SessionId: id, StreamId: "b1", Text: "x"})
	if code, reason := wiretest.ReasonOf(err); code != codes.FailedPrecondition || reason != "OUT_OF_TURN" {
		t.Fatalf("bob's delta on alice's turn: %v", err)
	}
	b.frame(&hubpb.AgentFrame{Frame: &hubpb.AgentFrame_Delta{Delta: &hubpb.Delta{SessionId: id, StreamId: "b1", Index: 7, Text: "x"}}})
	if d := b.nextDelta(); d.GetIndex() != 7 || d.GetRefused().GetReason().String() != "OUT_OF_TURN" {
		t.Fatalf("bob's own delta came back as %v; want it refused, OUT_OF_TURN", d)
	}
	if n := logSize(t, alice, id); n != before {
		t.Fatalf("the log holds %d envelopes after the deltas; %d before", n, before)
	}

	final := wiretest.Text("one two three")
	final.ClientMsgId = "r1"
	if err := ss.Send(&hubpb.SendStreamFrame{Frame: &hubpb.SendStreamFrame_Final{Final: &hubpb.SendRequest{SessionId: id, Envelope: final}}}); err != nil {
		t.Fatal(err)
	}
	ack, err := ss.CloseAndRecv()
	if err != nil || ack.GetSeq() != uint64(before+1) {
		t.Fatalf("SendStream: %v, %v; want seq %d", ack, err, before+1)
	}
	if d := b.delivery(); d.GetEnvelope().GetClientMsgId() != "r1" || !d.GetYourTurn() {
		t.Fatalf("after the deltas bob got %v; want the final envelope, his turn", d)
	}
	var texts []string
	for len(texts) < 4 {
		d, err := w.Recv()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case d.GetDelta() != nil:
			texts = append(texts, d.GetDelta().GetText())
		case d.GetEnvelope().GetClientMsgId() == "r1":
			texts = append(texts, "final")
		}
	}
	if got := texts[0] + texts[1] + texts[2] + "|" + texts[3]; got != "one two three|final" {
		t.Fatalf("the watcher read %q", got)
	}
}

// TestSendStreamWithoutFinal: a SendStream that ends without its final
// envelope is refused and writes nothing.
func TestSendStreamWithoutFinal(t *testing.T) {
	f := start(t, "")
	ctx := context.Background()
	alice := f.agent("alice")
	id := wiretest.Pipeline(t, alice)
	before := logSize(t, alice, id)
	ss, err := alice.SendStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ss.Send(&hubpb.SendStreamFrame{Frame: &hubpb.SendStreamFrame_Delta{Delta: &hubpb.Delta{SessionId: id, StreamId: "r", Text: "x"}}}); err != nil {
		t.Fatal(err)
	}
	_, err = ss.CloseAndRecv()
	if code, reason := wiretest.ReasonOf(err); code != codes.InvalidArgument || reason != "MALFORMED" {
		t.Fatalf("SendStream without a final envelope: %v", err)
	}
	if n := logSize(t, alice, id); n != before {
		t.Fatalf("the log holds %d envelopes; %d before", n, before)
	}
}
