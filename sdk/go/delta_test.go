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
