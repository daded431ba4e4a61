package feed_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/session"
)

// drainSeqs reads sub until it has handed out every seq of session id up
// to last, and returns them in order.
func drainSeqs(t *testing.T, sub *feed.Subscription, id session.ID, last uint64) []uint64 {
	t.Helper()
	var seqs []uint64
	for len(seqs) == 0 || seqs[len(seqs)-1] < last {
		d, err := sub.Next(context.Background())
		if err != nil {
			t.Fatalf("after seqs %v: %v", seqs, err)
		}
		if e := d.GetEnvelope(); e.GetSessionId() == id.String() && (len(seqs) == 0 || e.GetSeq() > seqs[len(seqs)-1]) {
			seqs = append(seqs, e.GetSeq())
		}
	}
	return seqs
}

// TestAgentBufferBytes: what one agent's streams hold unread is bounded
// across all of them (AgentBufferBytes), though each stays under its own
// bound: the delivery that would take the agent past it cuts off the
// stream it is for, with SLOW_SUBSCRIBER naming the limit; the agent
// resumes from its cursors with nothing lost, and other agents' streams
// go on.
func TestAgentBufferBytes(t *testing.T) {
	e := newFeedEnv(t, func(c *feed.Config) { c.SubscriberBufferBytes, c.AgentBufferBytes = 64<<10, 100<<10 })
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b")
	from := map[session.ID]uint64{id: 2}
	s1, err := e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{Cursors: from})
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	w, err := e.hub.Watch(ctx, "b", false, id, feed.WatchOptions{From: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	other, err := e.hub.Watch(ctx, "a", false, id, feed.WatchOptions{From: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	text := strings.Repeat("z", 20<<10)
	// Two sends: 2 × 20 KiB in each of b's two streams, 80 KiB; the third
	// would take b to 120 KiB.
	for range 3 {
		if _, err := e.hub.Send(ctx, "a", id, textEnv(text)); err != nil {
			t.Fatal(err)
		}
	}
	_, err1 := drainErr(s1)
	_, err2 := drainErr(w)
	var cut error
	switch {
	case err1 != nil && err2 == nil:
		cut = err1
	case err2 != nil && err1 == nil:
		cut = err2
	default:
		t.Fatalf("b's streams: %v, %v; want one of them cut off", err1, err2)
	}
	wantLimit(t, cut, hub.ErrSlowSubscriber, "--agent-buffer-bytes", 100<<10)
	// a's own stream holds 60 KiB: under every bound.
	if n, err := drainErr(other); err != nil || n != 3 {
		t.Fatalf("another agent's stream: %d deliveries, %v", n, err)
	}
	again, err := e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{Cursors: from})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := drainSeqs(t, again, id, 5); len(got) != 3 || got[0] != 3 {
		t.Fatalf("resumed from the cursor: seqs %v, want 3 to 5", got)
	}
}

// drainErr reads what sub holds without waiting: how many deliveries, and
// the error that ended it, if any.
func drainErr(sub *feed.Subscription) (int, error) {
	n := 0
	for {
		_, ok, err := sub.TryNext(context.Background())
		if err != nil || !ok {
			return n, err
		}
		n++
	}
}

// TestTotalBufferBytes: what every stream of the hub holds unread is
// bounded too (TotalBufferBytes); the delivery that would pass it cuts
// off its stream, naming the limit.
func TestTotalBufferBytes(t *testing.T) {
	e := newFeedEnv(t, func(c *feed.Config) { c.SubscriberBufferBytes, c.TotalBufferBytes = 64<<10, 100<<10 })
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b")
	from := map[session.ID]uint64{id: 2}
	var subs []*feed.Subscription
	for _, agent := range []string{"a", "a", "b"} { // a watches (its own texts), b subscribes
		s, err := e.hub.Watch(ctx, agent, false, id, feed.WatchOptions{From: 3})
		if agent == "b" {
			s, err = e.hub.Subscribe(ctx, agent, feed.SubscribeOptions{Cursors: from})
		}
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		subs = append(subs, s)
	}
	text := strings.Repeat("z", 20<<10)
	for range 2 {
		if _, err := e.hub.Send(ctx, "a", id, textEnv(text)); err != nil {
			t.Fatal(err)
		}
	}
	cut := 0
	for _, s := range subs {
		if _, err := drainErr(s); err != nil {
			wantLimit(t, err, hub.ErrSlowSubscriber, "--total-buffer-bytes", 100<<10)
			cut++
		}
	}
	if cut != 1 {
		t.Fatalf("%d streams cut off; want the one whose delivery passed 100 KiB", cut)
	}
	// What was handed out or dropped no longer counts: new streams fill
	// again up to the bound.
	s, err := e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{Cursors: map[session.ID]uint64{id: 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := e.hub.Send(ctx, "a", id, textEnv(text)); err != nil {
		t.Fatal(err)
	}
	if n, err := drainErr(s); err != nil || n == 0 {
		t.Fatalf("a stream after the others were read: %d deliveries, %v", n, err)
	}
}

// TestSubscriberBufferReasons: the bounds of one subscriber are named too
// when they cut it off.
func TestSubscriberBufferReasons(t *testing.T) {
	e := newFeedEnv(t, func(c *feed.Config) { c.SubscriberBuffer = 2 })
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b")
	sub, err := e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{Cursors: map[session.ID]uint64{id: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for range 3 {
		if _, err := e.hub.Send(ctx, "a", id, textEnv("x")); err != nil {
			t.Fatal(err)
		}
	}
	_, err = drainErr(sub)
	wantLimit(t, err, hub.ErrSlowSubscriber, "--subscriber-buffer", 2)
	if d := (feed.Config{}).WithDefaults(); d.SubscriberBufferBytes != feed.DefaultSubscriberBufferBytes ||
		d.AgentBufferBytes != feed.DefaultAgentBufferBytes || d.TotalBufferBytes != feed.DefaultTotalBufferBytes {
		t.Fatalf("defaults %d, %d, %d", d.SubscriberBufferBytes, d.AgentBufferBytes, d.TotalBufferBytes)
	}
}
