package feed_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

func delta(stream string, i uint64, text string) *hubpb.Delta {
	return &hubpb.Delta{StreamId: stream, Index: i, Text: text}
}

// nextNow returns the subscription's next delivery, failing the test when
// none comes within a second.
func nextNow(t *testing.T, sub *feed.Subscription) *hubpb.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	d, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// logLen returns the seqs of session id's log.
func logLen(t *testing.T, e *env, id session.ID) int {
	t.Helper()
	es, _, err := e.hub.ReadLog(context.Background(), "a", true, id, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func TestDeltasForwardedNotLogged(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b")
	b, err := e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{Cursors: map[session.ID]uint64{id: 2}, Deltas: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	plain, err := e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{Cursors: map[session.ID]uint64{id: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	w, err := e.hub.Watch(ctx, "ops", true, id, feed.WatchOptions{From: 3, Deltas: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	before := logLen(t, e, id)
	for i, s := range []string{"Hel", "lo"} {
		ack, err := e.hub.SendDelta(ctx, "a", id, delta("m1", uint64(i), s))
		if err != nil || ack.GetIndex() != uint64(i) || ack.GetAcceptedAt() == nil {
			t.Fatalf("delta %d: %v, %v", i, ack, err)
		}
	}
	if n := logLen(t, e, id); n != before {
		t.Fatalf("the log holds %d envelopes after the deltas, %d before", n, before)
	}
	env := textEnv("Hello")
	env.ClientMsgId = "m1"
	if _, err := e.hub.Send(ctx, "a", id, env); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []*feed.Subscription{b, w} {
		for i, s := range []string{"Hel", "lo"} {
			d := nextNow(t, sub).GetDelta()
			if d.GetText() != s || d.GetIndex() != uint64(i) || d.GetFrom() != "a" || d.GetStreamId() != "m1" ||
				d.GetSessionId() != id.String() || d.GetAcceptedAt() == nil {
				t.Fatalf("delta %d: %v", i, d)
			}
		}
		if got := nextNow(t, sub).GetEnvelope(); got.GetText().GetText() != "Hello" || got.GetClientMsgId() != "m1" {
			t.Fatalf("after the deltas: %v; want the final envelope", got)
		}
	}
	if got := nextNow(t, plain); got.GetDelta() != nil || got.GetEnvelope().GetText().GetText() != "Hello" {
		t.Fatalf("a subscription without deltas got %v first", got)
	}
}

func TestDeltasRefusedLikeASend(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	o, err := e.hub.Open(ctx, "a", &hubpb.OpenRequest{Type: "discussion@1",
		Participants: []*hubpb.Participant{{Name: "b", AutoAccept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	id := session.MustParseID(o.GetSession().GetMeta().GetSessionId())
	before := logLen(t, e, id)
	for _, c := range []struct {
		from string
		d    *hubpb.Delta
		want error
	}{
		{"b", delta("m", 0, "x"), adapters.ErrOutOfTurn},
		{"c", delta("m", 0, "x"), session.ErrNotParticipant},
		{"a", &hubpb.Delta{StreamId: "m", From: "b"}, hub.ErrImpersonation},
		{"a", &hubpb.Delta{Text: "x"}, session.ErrMalformed},
		{"a", &hubpb.Delta{StreamId: "m", SessionId: "01940000-0000-7000-8000-00000000ffff"}, session.ErrMalformed},
	} {
		if _, err := e.hub.SendDelta(ctx, c.from, id, c.d); !errors.Is(err, c.want) {
			t.Errorf("delta %v from %s: %v; want %v", c.d, c.from, err, c.want)
		}
	}
	if _, err := e.hub.CloseSession(ctx, "a", false, id, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.hub.SendDelta(ctx, "a", id, delta("m", 0, "x")); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("delta to a closed session: %v", err)
	}
	if n := logLen(t, e, id); n != before+1 {
		t.Fatalf("the log holds %d envelopes; want %d (the close alone)", n, before+1)
	}
}

// A watcher that does not read drops deltas past its bound, never an
// envelope, and is not cut off for them.
func TestDeltasDroppedBySlowWatcher(t *testing.T) {
	var hooked atomic.Int64
	e := newEnvWith(t, func(c *hub.Config) { c.MaxDeltasPerSecond = -1 },
		func(c *feed.Config) { c.SubscriberBuffer, c.DeltaDropped = 4, func() { hooked.Add(1) } })
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b")
	w, err := e.hub.Watch(ctx, "ops", true, id, feed.WatchOptions{From: 3, Deltas: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const sent = 300
	for i := range sent {
		if _, err := e.hub.SendDelta(ctx, "a", id, delta("m", uint64(i), "t")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.hub.Send(ctx, "a", id, textEnv("final")); err != nil {
		t.Fatal(err)
	}
	got := 0
	for {
		d := nextNow(t, w)
		if d.GetDelta() == nil {
			if d.GetEnvelope().GetText().GetText() != "final" {
				t.Fatalf("got %v; want the final envelope", d)
			}
			break
		}
		if d.GetDelta().GetIndex() != uint64(got) {
			t.Fatalf("delta %d has index %d: the first ones are kept", got, d.GetDelta().GetIndex())
		}
		got++
	}
	if got == 0 || got >= sent || e.hub.DeltasDropped() != int64(sent-got) || hooked.Load() != int64(sent-got) {
		t.Fatalf("read %d deltas of %d, %d dropped, %d told", got, sent, e.hub.DeltasDropped(), hooked.Load())
	}
}

func TestDeltaCaps(t *testing.T) {
	e := newEnv(t, func(c *hub.Config) { c.MaxDeltasPerSecond, c.MaxDeltaBytesPerTurn = 3, 10 })
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b")
	for i := range 3 {
		if _, err := e.hub.SendDelta(ctx, "a", id, delta("m", uint64(i), "ab")); err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.hub.SendDelta(ctx, "a", id, delta("m", 3, "ab"))
	wantLimit(t, err, hub.ErrLimit, "--max-deltas-per-second", 3)
	e.clock.Advance(time.Second)
	if _, err := e.hub.SendDelta(ctx, "a", id, delta("m", 3, "abc")); err != nil {
		t.Fatalf("a second later: %v", err)
	}
	_, err = e.hub.SendDelta(ctx, "a", id, delta("m", 4, "abcd"))
	wantLimit(t, err, hub.ErrLimit, "--max-delta-bytes-per-turn", 10)
	if _, err := e.hub.Send(ctx, "a", id, textEnv("final")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.hub.SendDelta(ctx, "b", id, delta("n", 0, "abcdefghij")); err != nil {
		t.Fatalf("the next turn counts afresh: %v", err)
	}
}
