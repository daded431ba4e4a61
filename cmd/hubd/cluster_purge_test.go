package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/wiretest"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal/jetstream"
)

// TestE2EClusterPurgeAndErase runs retention, purge and erasure on three
// real hubd nodes: sessions opened through n1 (in its partitions) are
// purged through n2 by an operator, erased through n3, and swept once
// their own retention passed, each routed to n1; then n1 is killed (-9)
// and the nodes that take its partitions answer PURGED and ERASED for
// them (hydration does not bring them back) and still serve the session
// kept.
func TestE2EClusterPurgeAndErase(t *testing.T) {
	t.Parallel() // mostly waiting on leases and restarts: it overlaps another such test
	c := startCluster(t, false, "--retention-sweep", "200ms")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	alice := dialWith(t, c.nodes[0].addr, "x-hubd-agent", "alice")
	open := func(retention time.Duration) string {
		t.Helper()
		req := &hubpb.OpenRequest{Type: "conversation", Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}}}
		if retention > 0 {
			req.Retention = durationpb.New(retention)
		}
		resp, err := alice.Open(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		id := resp.GetSession().GetMeta().GetSessionId()
		send(t, alice, id, &hubpb.Envelope{Type: "text", Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "about " + id}}})
		if _, err := alice.Close(ctx, &hubpb.CloseRequest{SessionId: id, Reason: "done"}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	purged, erased, kept, swept := open(0), open(0), open(0), open(time.Second)
	st, ok := c.status(t, 0)
	if !ok {
		t.Fatal("cluster status failed")
	}
	for _, id := range []string{purged, erased, kept, swept} {
		if o := ownerOfSession(st, id); o != c.ids[0] {
			t.Fatalf("session %s opened through n1 is served by %s", id, o)
		}
	}
	out := mustHubd(t, "", "sessions", "purge", purged, "--hub", c.nodes[1].addr, "--as", "operator")
	if !strings.Contains(out, purged) || !strings.Contains(out, "archived in hubd-archive-") {
		t.Fatalf("sessions purge through n2 printed %q", out)
	}
	out = mustHubd(t, "", "sessions", "erase", erased, "--reason", "alice asked", "--hub", c.nodes[2].addr, "--as", "operator")
	if !strings.Contains(out, "erased "+erased) {
		t.Fatalf("sessions erase through n3 printed %q", out)
	}
	reason := func(i int, id string) string {
		_, err := dialWith(t, c.nodes[i].addr, "x-hubd-agent", "operator").GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
		_, r := wiretest.ReasonOf(err)
		return r
	}
	waitFor(t, "the sweep purges the session whose retention passed", 20*time.Second, func() bool { return reason(1, swept) == "PURGED" })

	c.nodes[0].stop(syscall.SIGKILL)
	c.waitSpread(t, []string{c.ids[1], c.ids[2]}, 60*time.Second)
	want := map[string]string{purged: "PURGED", erased: "ERASED", swept: "PURGED", kept: ""}
	for _, i := range []int{1, 2} {
		for id, w := range want {
			var got string
			waitFor(t, "a read through "+c.ids[i]+" after the move", 20*time.Second, func() bool {
				got = reason(i, id)
				return got != "NOT_OWNER"
			})
			if got != w {
				t.Fatalf("GetSession %s through %s after n1's kill: reason %q, want %q", id, c.ids[i], got, w)
			}
		}
	}
	if code, _, errs := hubd(t, "sessions", "show", erased, "--hub", c.nodes[1].addr, "--as", "operator"); code != 1 || !strings.HasSuffix(errs, "(ERASED)\n") {
		t.Fatalf("sessions show of the erased session: exit %d, %q", code, errs)
	}
}

// ownerOfSession is the node serving session id's partition.
func ownerOfSession(st *clusterState, id string) string {
	return st.Partitions[jetstream.Partition(session.MustParseID(id), e2ePartitions)].Owner
}
