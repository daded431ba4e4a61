package sdkgo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
	"github.com/hubd/hubd/hubpb"
)

// TestTurnStream: a handler writes its reply through turn.Stream; a
// watcher with deltas sees each piece before the final envelope, which
// holds the whole text, is written once, and carries the turn's client
// message id. Once the turn has passed, a write is refused.
func TestTurnStream(t *testing.T) {
	h := hubtest.New(t)
	ctx := testCtx(t)
	alice, bob, carol := dial(t, h.Addr(), "alice"), dial(t, h.Addr(), "bob"), dial(t, h.Addr(), "carol")
	s := openPipeline(t, ctx, alice)
	w, err := carol.WatchDeltas(ctx, s.ID(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for { // the watch's catch-up: it is registered
		d, err := w.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if d.GetEnvelope().GetSeq() == s.GetSeq() {
			break
		}
	}
	turns := make(chan *agentsdk.Turn, 1)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go bob.Serve(sctx, func(ctx context.Context, turn *agentsdk.Turn) (agentsdk.Reply, error) {
		ts := turn.Stream(ctx)
		for _, piece := range []string{"Hel", "lo"} {
			if _, err := fmt.Fprint(ts, piece); err != nil {
				return agentsdk.Reply{}, err
			}
		}
		turns <- turn
		return agentsdk.Reply{}, ts.Close()
	})
	if _, err := alice.SendText(ctx, s.ID(), "go"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 4 {
		d, err := w.Recv()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case d.GetDelta() != nil:
			got = append(got, "delta:"+d.GetDelta().GetText())
		case d.GetEnvelope().GetType() == agentsdk.EventText:
			got = append(got, d.GetEnvelope().GetFrom()+":"+agentsdk.TextOf(d.GetEnvelope()))
		}
	}
	if fmt.Sprint(got) != "[alice:go delta:Hel delta:lo bob:Hello]" {
		t.Fatalf("carol's watch read %v", got)
	}
	turn := <-turns
	log, err := alice.ReadLog(ctx, s.ID(), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var bobs []*hubpb.Envelope
	for _, e := range log {
		if e.GetFrom() == "bob" {
			bobs = append(bobs, e)
		}
	}
	if len(bobs) != 1 || agentsdk.TextOf(bobs[0]) != "Hello" || bobs[0].GetClientMsgId() != agentsdk.TurnMsgID(s.ID(), turn.Trigger.GetSeq()) {
		t.Fatalf("bob's envelopes in the log: %v", bobs)
	}
	late := turn.Stream(ctx)
	if _, err := late.WriteString("more"); !errors.Is(err, agentsdk.ErrOutOfTurn) {
		t.Fatalf("a write after the turn passed: %v", err)
	}
}

// TestTurnStreamAbandon: an abandoned reply tells the watchers so, and the
// turn stays the writer's.
func TestTurnStreamAbandon(t *testing.T) {
	h := hubtest.New(t)
	ctx := testCtx(t)
	alice, bob := dial(t, h.Addr(), "alice"), dial(t, h.Addr(), "bob")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeDiscussion, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	w, err := bob.WatchDeltas(ctx, s.ID(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for { // the catch-up: the watch is registered
		d, err := w.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if d.GetEnvelope().GetSeq() == s.GetSeq() {
			break
		}
	}
	turn := &agentsdk.Turn{SessionID: s.ID(), Trigger: &hubpb.Envelope{Seq: s.GetSeq()}, Client: alice}
	ts := turn.Stream(ctx)
	if _, err := ts.WriteString("draft"); err != nil {
		t.Fatal(err)
	}
	if err := ts.Abandon(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.WriteString("more"); err == nil {
		t.Fatal("a write after Abandon was taken")
	}
	for _, want := range []string{"draft", ""} {
		d, err := w.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if x := d.GetDelta(); x.GetText() != want || x.GetAbandoned() != (want == "") || x.GetStreamId() != ts.ID() {
			t.Fatalf("got %v; want the delta %q, then the abandon", d, want)
		}
	}
	if _, err := alice.SendText(ctx, s.ID(), "another reply"); err != nil {
		t.Fatalf("the turn after an abandoned reply: %v", err)
	}
}
