package feed_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/session"
)

// TestStreamsPerAgent: an agent holds at most MaxStreamsPerAgent
// subscriptions and watches at once (LIMIT_REACHED past it); ending one,
// or being cut off as a slow subscriber, frees its place, once.
func TestStreamsPerAgent(t *testing.T) {
	e := newFeedEnv(t, func(c *feed.Config) { c.MaxStreamsPerAgent = 3; c.SubscriberBuffer = 2 })
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b")
	s1, err := e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w1, err := e.hub.Watch(ctx, "b", false, id, feed.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.hub.Watch(ctx, "b", false, id, feed.WatchOptions{}); !errors.Is(err, hub.ErrLimit) {
		t.Fatalf("a fourth stream: %v", err)
	}
	if _, err := e.hub.Subscribe(ctx, "a", feed.SubscribeOptions{}); err != nil {
		t.Fatalf("another agent's stream: %v", err)
	}
	w1.Close()
	w1.Close()
	w2, err := e.hub.Watch(ctx, "b", false, id, feed.WatchOptions{})
	if err != nil {
		t.Fatalf("a stream after one ended: %v", err)
	}
	// s1 and s2 are never read: three sends cut them off.
	for range 3 {
		if _, err := e.hub.Send(ctx, "a", id, textEnv("x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s1.Next(ctx); !errors.Is(err, hub.ErrSlowSubscriber) {
		t.Fatalf("s1: %v", err)
	}
	s1.Close()
	s2.Close()
	w2.Close()
	var subs []*feed.Subscription
	for range 3 {
		s, err := e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{})
		if err != nil {
			t.Fatalf("after every stream ended: %v", err)
		}
		subs = append(subs, s)
	}
	if _, err := e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{}); !errors.Is(err, hub.ErrLimit) {
		t.Fatalf("a fourth stream again: %v", err)
	}
	for _, s := range subs {
		s.Close()
	}
}

// TestSlowSubscriberBytes: a subscriber is cut off when the bytes it has
// not read pass SubscriberBufferBytes, however few deliveries they are.
func TestSlowSubscriberBytes(t *testing.T) {
	e := newFeedEnv(t, func(c *feed.Config) { c.SubscriberBufferBytes = 64 << 10 })
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b")
	sub, err := e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{Cursors: map[session.ID]uint64{id: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	text := strings.Repeat("z", 20<<10)
	for range 4 {
		if _, err := e.hub.Send(ctx, "a", id, textEnv(text)); err != nil {
			t.Fatal(err)
		}
	}
	_, err = sub.Next(ctx)
	if !errors.Is(err, hub.ErrSlowSubscriber) || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("4 × 20 KiB unread under a 64 KiB buffer: %v", err)
	}
	// A reader that keeps up is never cut off.
	fast, err := e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{Cursors: map[session.ID]uint64{id: 6}})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	for range 8 {
		if _, err := e.hub.Send(ctx, "a", id, textEnv(text)); err != nil {
			t.Fatal(err)
		}
		if _, err := fast.Next(ctx); err != nil {
			t.Fatalf("a reader keeping up: %v", err)
		}
	}
}
