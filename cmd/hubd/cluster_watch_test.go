package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

// TestE2EClusterWatchFollows watches a session through a node that does
// not serve it (agentsdk's Follow and FollowTree, a client of that node
// alone): the node runs the watches on the owner; the owner then hands
// its partitions back and stops (SIGTERM), which ends the watches there
// with NOT_OWNER, and the node resumes them on the new owner after the
// last seq seen: every envelope of the session's log handed over once,
// in order.
func TestE2EClusterWatchFollows(t *testing.T) {
	c := startCluster(t, false)
	n1, n2, n3 := c.nodes[0].addr, c.nodes[1].addr, c.nodes[2].addr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dial := func(addr, name string) *agentsdk.Client {
		t.Helper()
		cl, err := agentsdk.Dial(ctx, addr, agentsdk.Options{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	// A root session opened through n2 lands in a partition n2 serves.
	s, err := dial(n2, "alice").Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation,
		Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	if info, err := devClient(t, n1, "alice").GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id}); err != nil || info.GetMeta().GetSessionId() != id {
		t.Fatalf("GetSession through n1, which does not serve the session: %v, %v", info, err)
	}

	// Two watchers through n1, which does not serve the session.
	w := dial(n1, "alice")
	var mu sync.Mutex
	var plain, tree []uint64
	done := make(chan error, 2)
	go func() {
		_, err := w.Follow(ctx, id, 0, func(e *hubpb.Envelope) error {
			mu.Lock()
			defer mu.Unlock()
			plain = append(plain, e.GetSeq())
			return nil
		})
		done <- err
	}()
	go func() {
		_, err := w.FollowTree(ctx, id, agentsdk.TreeOptions{}, func(e *hubpb.Envelope) error {
			mu.Lock()
			defer mu.Unlock()
			tree = append(tree, e.GetSeq())
			return nil
		})
		done <- err
	}()
	// Alice and Bob talk through n3 (which runs their sends on the owner).
	talkers := []*agentsdk.Client{dial(n3, "alice"), dial(n3, "bob")}
	talk := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if _, err := talkers[i%2].SendText(ctx, id, fmt.Sprintf("line %d", i)); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
	}
	seen := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return len(plain), len(tree)
	}
	talk(0, 10)
	waitFor(t, "the watches to see the first lines", 20*time.Second, func() bool {
		p, tr := seen()
		return p >= 10 && tr >= 10
	})

	// n2 hands its partitions back and stops: the watches end there with
	// NOT_OWNER, and n1 resumes them on the new owner.
	c.nodes[1].stop(syscall.SIGTERM)
	c.waitSpread(t, []string{c.ids[0], c.ids[2]}, 60*time.Second)
	talk(10, 20)
	if _, err := talkers[0].CloseSession(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("follow: %v", err)
			}
		case <-ctx.Done():
			p, tr := seen()
			t.Fatalf("the follows did not reach the session's end: %d and %d envelopes", p, tr)
		}
	}
	log, err := w.ReadLog(ctx, id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want []uint64
	for _, e := range log {
		want = append(want, e.GetSeq())
	}
	if len(want) < 22 {
		t.Fatalf("the log has %d envelopes, want the open, 20 lines and the close", len(want))
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(plain, want) {
		t.Errorf("Follow saw seqs %v, the log has %v", plain, want)
	}
	if !slices.Equal(tree, want) {
		t.Errorf("FollowTree saw seqs %v, the log has %v", tree, want)
	}
}
