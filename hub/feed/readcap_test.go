package feed_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/hubd/hubd/hub/feed"
)

// TestReadCaps: ReadLog answers at most MaxReadItems envelopes and
// MaxReadBytes of them whatever the limit asked, with the seq of the next
// page (0 at the end), and paging reads the whole log once; a view keeps
// at most MaxReadItems items and MaxReadBytes of text, counting the older
// ones.
func TestReadCaps(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b")
	const n = 2500
	for i := range n {
		if _, err := e.hub.Send(ctx, []string{"a", "b"}[i%2], id, textEnv("x")); err != nil {
			t.Fatal(err)
		}
	}
	last := uint64(n + 2) // invite and opened first
	es, next, err := e.hub.ReadLog(ctx, "", true, id, 1, math.MaxInt32)
	if err != nil || len(es) != feed.MaxReadItems || next != uint64(feed.MaxReadItems)+1 {
		t.Fatalf("a read of the whole log: %d envelopes, next %d, %v", len(es), next, err)
	}
	seen, from := 0, uint64(1)
	for from != 0 {
		es, next, err := e.hub.ReadLog(ctx, "b", false, id, from, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range es {
			if x.GetSeq() < from || (next != 0 && x.GetSeq() >= next) {
				t.Fatalf("seq %d outside page [%d, %d)", x.GetSeq(), from, next)
			}
		}
		seen += len(es)
		from = next
	}
	if seen != int(last) {
		t.Fatalf("paging read %d envelopes, the log holds %d", seen, last)
	}
	v, err := e.hub.View(ctx, "b", id, feed.ViewOptions{Name: feed.ViewFull})
	if err != nil || len(v.GetItems()) != feed.MaxReadItems || int(v.GetOlderTotal()) != n-feed.MaxReadItems ||
		v.GetItems()[len(v.GetItems())-1].GetSeq() != last {
		t.Fatalf("full view of %d items: %d items, %d older, %v", n, len(v.GetItems()), v.GetOlderTotal(), err)
	}

	// Large envelopes: a page stops at MaxReadBytes (but holds one at least).
	big := openConversation(t, e.hub, "a", "b")
	text := strings.Repeat("y", 900<<10)
	for range 5 {
		if _, err := e.hub.Send(ctx, "a", big, textEnv(text)); err != nil {
			t.Fatal(err)
		}
	}
	es, next, err = e.hub.ReadLog(ctx, "", true, big, 3, 0)
	if err != nil || len(es) != 2 || next != 5 {
		t.Fatalf("a page of 900 KiB envelopes: %d envelopes, next %d, %v", len(es), next, err)
	}
	v, err = e.hub.View(ctx, "b", big, feed.ViewOptions{Name: feed.ViewFull})
	if err != nil || len(v.GetItems()) != 2 || v.GetOlderTotal() != 3 {
		t.Fatalf("full view of 5 texts of 900 KiB: %d items, %d older, %v", len(v.GetItems()), v.GetOlderTotal(), err)
	}
	if _, next, _ := e.hub.ReadLog(ctx, "", true, big, 7, 0); next != 0 {
		t.Fatalf("the last page says next %d", next)
	}
}
