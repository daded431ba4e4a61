package feed_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/session"
)

// allocated returns the bytes f allocated.
func allocated(f func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestViewBoundedAsBuilt: a participant's full view of a session of 100
// texts of 200 KiB holds the newest that fit in feed.MaxReadBytes and
// counts the rest, and building it reads and decodes about what it keeps,
// not the 20 MB of the session (which a view read from the start decoded,
// all of it, to drop the older ones).
func TestViewBoundedAsBuilt(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b")
	text := strings.Repeat("v", 200<<10)
	for range 100 {
		if _, err := e.hub.Send(ctx, "a", id, textEnv(text)); err != nil {
			t.Fatal(err)
		}
	}
	var items, older int
	got := allocated(func() {
		v, err := e.hub.View(ctx, "b", id, feed.Scanned(feed.ViewOptions{Name: feed.ViewFull}))
		if err != nil {
			t.Fatal(err)
		}
		items, older = len(v.GetItems()), int(v.GetOlderTotal())
		if last := v.GetItems()[len(v.GetItems())-1].GetSeq(); last != 102 {
			t.Errorf("the newest item is seq %d, want 102", last)
		}
	})
	if fit := feed.MaxReadBytes / (200 << 10); items != fit || older != 100-fit {
		t.Errorf("full view: %d items, %d older; want %d and %d", items, older, fit, 100-fit)
	}
	if got > 4*feed.MaxReadBytes {
		t.Errorf("building the view allocated %d bytes, the session holds 20 MB", got)
	}
	t.Logf("a full view of 100 × 200 KiB: %d bytes allocated", got)
}

// TestCatchUpBoundedAsBuilt: a subscription catching up on a session of
// large envelopes reads it a page of feed.MaxReadBytes at a time, not 256
// envelopes at once.
func TestCatchUpBoundedAsBuilt(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b")
	text := strings.Repeat("c", 500<<10)
	for range 40 {
		if _, err := e.hub.Send(ctx, "a", id, textEnv(text)); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := e.hub.Subscribe(ctx, "b", feed.SubscribeOptions{Cursors: map[session.ID]uint64{id: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	got := allocated(func() {
		if _, err := sub.Next(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if got > 3*feed.MaxReadBytes {
		t.Errorf("the first delivery of a catch-up over 20 MB allocated %d bytes", got)
	}
	t.Logf("the first delivery of a catch-up over 40 × 500 KiB: %d bytes allocated", got)
	for n := 1; n < 40; n++ {
		if _, err := sub.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
