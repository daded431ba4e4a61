package cluster_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/cluster"
	"github.com/hubd/hubd/internal/natstest"
	"github.com/hubd/hubd/session"
)

// TestClusterKeyedOpens: an open with an idempotency key, or a thread
// key, lands in the key's partition whichever node is asked: a node that
// does not serve it runs the open on the one that does, and there the
// retry, asked of either node, finds the first session instead of
// opening a second.
func TestClusterKeyedOpens(t *testing.T) {
	if testing.Short() {
		t.Skip("a NATS server and two nodes")
	}
	c := natstest.RunServer(t)
	a := startClusterNode(t, c, "a")
	waitUntil(t, "a serves every partition", 10*time.Second, func() bool { return len(a.Served()) == 4 })
	b := startClusterNode(t, c, "b")
	waitUntil(t, "two partitions each", 10*time.Second, func() bool { return len(a.Served()) == 2 && len(b.Served()) == 2 })
	clients := map[string]hubsvc.HubClient{a.Addr(): rawClient(t, a.Addr()), b.Addr(): rawClient(t, b.Addr())}

	// open asks node first and says whether the open ran on the other
	// node (where the key's partition is served).
	open := func(first string, req *hubpb.OpenRequest) (*hubpb.OpenResponse, bool) {
		t.Helper()
		resp, err := clients[first].Open(as("alice"), req)
		if err != nil {
			t.Fatalf("open on %s: %v, want it run on the key's owner", first, err)
		}
		k := a.PartitionOf(session.MustParseID(resp.GetSession().GetMeta().GetSessionId()))
		servedBy := b.Addr()
		if slices.Contains(a.Served(), k) {
			servedBy = a.Addr()
		}
		return resp, servedBy != first
	}
	parts := []*hubpb.Participant{{Name: "alice"}, {Name: "bob", AutoAccept: true}}
	partitions, followed := map[int]bool{}, 0
	for i := range 16 {
		key := fmt.Sprintf("order-%d", i)
		partitions[cluster.KeyPartition("open\x00alice\x00"+key, 4)] = true
		req := &hubpb.OpenRequest{Type: "conversation@1", Participants: parts, IdempotencyKey: key}
		first, f1 := open(a.Addr(), req)
		again, f2 := open(b.Addr(), req)
		if f1 {
			followed++
		}
		id := first.GetSession().GetMeta().GetSessionId()
		if first.GetExisting() || !again.GetExisting() || again.GetSession().GetMeta().GetSessionId() != id {
			t.Fatalf("key %s: first %s (existing %v), retry on the other node %s (existing %v): want one session",
				key, id, first.GetExisting(), again.GetSession().GetMeta().GetSessionId(), again.GetExisting())
		}
		if f1 == f2 {
			t.Fatalf("key %s: run elsewhere from a: %v, from b: %v; one of them serves it", key, f1, f2)
		}
		if k := cluster.KeyPartition("open\x00alice\x00"+key, 4); !slices.Contains(a.Served(), k) && !slices.Contains(b.Served(), k) {
			t.Fatalf("key %s: partition %d served by neither", key, k)
		} else if got := a.PartitionOf(session.MustParseID(id)); got != k {
			t.Fatalf("key %s: session %s lies in partition %d, the key's is %d", key, id, got, k)
		}
	}
	if len(partitions) < 3 || followed == 0 || followed == 16 {
		t.Fatalf("the 16 keys fell in partitions %v, %d of their opens on a were run on b: the test shows nothing", partitions, followed)
	}

	// A thread: the next session of a thread is linked to the previous
	// one, whichever node is asked.
	req := &hubpb.OpenRequest{Type: "conversation@1", Participants: parts, ThreadKey: "ticket-7"}
	first, _ := open(a.Addr(), req)
	id := first.GetSession().GetMeta().GetSessionId()
	if _, err := clients[a.Addr()].Close(as("alice"), &hubpb.CloseRequest{SessionId: id, Reason: "done"}); err != nil {
		if _, err := clients[b.Addr()].Close(as("alice"), &hubpb.CloseRequest{SessionId: id, Reason: "done"}); err != nil {
			t.Fatalf("close %s: %v", id, err)
		}
	}
	next, _ := open(b.Addr(), req)
	if got := next.GetSession().GetMeta().GetPreviousSessionId(); got != id {
		t.Fatalf("the thread's next session links %q, want %s", got, id)
	}
}
