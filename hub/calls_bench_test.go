package hub_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
)

// conversationWith opens a conversation as creator with other auto-accepted
// and returns its id.
func conversationWith(tb testing.TB, h *served, creator, other string) session.ID {
	tb.Helper()
	resp, err := h.Open(context.Background(), creator, &hubpb.OpenRequest{Type: "conversation@1",
		Participants: []*hubpb.Participant{{Name: other, AutoAccept: true}}})
	if err != nil {
		tb.Fatal(err)
	}
	return mustID(tb, resp.GetSession().GetMeta().GetSessionId())
}

// delegate opens n conversation children of parent as delegator (each
// with worker auto-accepted) in one delegation and returns their ids.
func delegate(tb testing.TB, h *served, delegator string, parent session.ID, mode string, n int, worker string) []session.ID {
	tb.Helper()
	req := &hubpb.DelegateRequest{SessionId: parent.String(), Mode: mode}
	for range n {
		req.Children = append(req.Children, &hubpb.OpenRequest{Type: "conversation@1",
			Participants: []*hubpb.Participant{{Name: worker, AutoAccept: true}}})
	}
	resp, err := h.Delegate(context.Background(), delegator, req)
	if err != nil {
		tb.Fatal(err)
	}
	var ids []session.ID
	for _, ch := range resp.GetChildren() {
		ids = append(ids, mustID(tb, ch.GetMeta().GetSessionId()))
	}
	return ids
}

func mustID(tb testing.TB, s string) session.ID {
	tb.Helper()
	id, err := session.ParseID(s)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// idleTree opens a tree of depth 3 (four sessions): a user's conversation
// with main, which delegates (blocking) to a child, which delegates to a
// grandchild, which delegates to a great-grandchild; every turn above the
// last is held, waiting.
func idleTree(tb testing.TB, h *served) {
	root := conversationWith(tb, h, "user", "main")
	if _, err := h.Send(context.Background(), "user", root, textEnv("go")); err != nil {
		tb.Fatal(err)
	}
	parent := root
	for range 3 {
		parent = delegate(tb, h, "main", parent, "blocking", 1, "worker")[0]
	}
}

// BenchmarkIdleTrees opens 10k call trees of depth 3 (40k sessions, every
// turn above the leaves held) and reports the hub's heap and goroutines
// per session. The log discards what it is given so the numbers are the
// hub's alone.
func BenchmarkIdleTrees(b *testing.B) {
	const trees, perTree = 10_000, 4
	for range b.N {
		// main delegates every child: its limit is off.
		h, err := openServed(context.Background(), hub.Config{Log: discardLog{}, Adapters: server.Adapters(nil), MaxOpenPerAgent: -1})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		for range trees {
			idleTree(b, h)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		n := float64(trees * perTree)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-B/session")
		b.ReportMetric(float64(runtime.NumGoroutine()-g0)/n, "goroutines/session")
		h.Close()
	}
}

// bigTree opens a root conversation and kids-1 background children of it
// (kids sessions in all), each child with one text of main's; it returns the root and how many envelopes the
// whole tree holds.
func bigTree(tb testing.TB, h *served, kids int) (session.ID, int) {
	root := conversationWith(tb, h, "user", "main")
	ctx := context.Background()
	if _, err := h.Send(ctx, "user", root, textEnv("go")); err != nil {
		tb.Fatal(err)
	}
	var children []session.ID
	for left := kids - 1; left > 0; left -= hub.MaxChildren {
		children = append(children, delegate(tb, h, "main", root, "background", min(left, hub.MaxChildren), "worker")...)
	}
	for _, c := range children {
		if _, err := h.Send(ctx, "main", c, textEnv("task")); err != nil {
			tb.Fatal(err)
		}
	}
	total := 0
	for _, id := range append([]session.ID{root}, children...) {
		info, err := h.Get(ctx, "", true, id)
		if err != nil {
			tb.Fatal(err)
		}
		total += int(info.GetSeq())
	}
	return root, total
}

// BenchmarkTreeWatch watches a 1,000-session tree from its start (verbose,
// as an operator) and reports the time to the first envelope and to the
// last, checking that every envelope of every session arrives exactly
// once.
func BenchmarkTreeWatch(b *testing.B) {
	l := openWAL(b, b.TempDir(), true)
	defer l.Close()
	// The tree's 999 children are opened on one turn.
	h, err := openServed(context.Background(), hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil), MaxChildrenPerTurn: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	root, total := bigTree(b, h, 1000)
	ctx := context.Background()
	var first, all time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		sub, err := h.Watch(ctx, "", true, root, feed.WatchOptions{Tree: true, Verbose: true})
		if err != nil {
			b.Fatal(err)
		}
		seen := map[string]bool{}
		for len(seen) < total {
			d, err := sub.Next(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if len(seen) == 0 {
				first += time.Since(t0)
			}
			env := d.GetEnvelope()
			k := fmt.Sprintf("%s/%d", env.GetSessionId(), env.GetSeq())
			if seen[k] {
				b.Fatalf("%s delivered twice", k)
			}
			seen[k] = true
		}
		all += time.Since(t0)
		sub.Close()
	}
	b.ReportMetric(float64(first.Microseconds())/float64(b.N)/1000, "ms-to-first")
	b.ReportMetric(float64(all.Microseconds())/float64(b.N)/1000, "ms-to-all")
	b.ReportMetric(float64(total), "envelopes")
}
