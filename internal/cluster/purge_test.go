package cluster_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/archive"
	"github.com/hubd/hubd/internal/cluster"
	"github.com/hubd/hubd/internal/disktest"
	"github.com/hubd/hubd/internal/natstest"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
)

// openEnded opens a conversation of alice and bob through c, with one
// text, and closes it; it returns its id.
func openEnded(t *testing.T, c hubsvc.HubClient, text string) string {
	t.Helper()
	resp, err := c.Open(as("alice"), &hubpb.OpenRequest{Type: "conversation@1",
		Participants: []*hubpb.Participant{{Name: "alice"}, {Name: "bob", AutoAccept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetSession().GetMeta().GetSessionId()
	if _, err := sendText(t, c, "alice", id, text); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Close(as("alice"), &hubpb.CloseRequest{SessionId: id, Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	return id
}

// wantGone checks that a read of session id through c answers reason.
func wantGone(t *testing.T, c hubsvc.HubClient, id, reason string) *hubpbErrorInfo {
	t.Helper()
	_, err := c.GetSession(as("alice"), &hubpb.GetSessionRequest{SessionId: id})
	if status.Code(err) == codes.OK {
		t.Fatalf("GetSession of %s: answered, want %s", id, reason)
	}
	info := errorInfo(t, err)
	if info.GetReason() != reason {
		t.Fatalf("GetSession of %s: %v, want %s", id, err, reason)
	}
	return &hubpbErrorInfo{md: info.GetMetadata()}
}

type hubpbErrorInfo struct{ md map[string]string }

// withArchive gives a node's hub an archive in dir.
func withArchive(t *testing.T, dir string) func(*server.Config) {
	return func(sc *server.Config) {
		w, err := archive.NewWriter(dir)
		if err != nil {
			t.Fatal(err)
		}
		sc.Hub.Archive = w
	}
}

// A cluster purges: through the node that does not serve the session
// (routed to its owner), archived first, its messages gone from the
// partition stream; PURGED answers from every node, and after the owner
// left, from the node that took its partitions, which did not load it.
func TestClusterPurge(t *testing.T) {
	if testing.Short() {
		t.Skip("a NATS server and two nodes")
	}
	c := natstest.RunServer(t)
	dir := t.TempDir()
	a := startClusterServer(t, c, "a", withArchive(t, dir))
	waitUntil(t, "a serves every partition", 10*time.Second, func() bool { return len(a.Served()) == 4 })
	b := startClusterServer(t, c, "b", withArchive(t, dir))
	waitUntil(t, "two partitions each", 10*time.Second, func() bool { return len(a.Served()) == 2 && len(b.Served()) == 2 })
	ca, cb := rawClient(t, a.Addr()), rawClient(t, b.Addr())
	purged := openEnded(t, ca, "purge me")
	kept := openEnded(t, ca, "keep me")

	resp, err := cb.Purge(as(server.DevOperator), &hubpb.PurgeRequest{SessionId: purged})
	if err != nil {
		t.Fatalf("Purge through b: %v", err)
	}
	if resp.GetArchive() == "" {
		t.Fatal("purged without an archive")
	}
	f, err := archive.Read(dir + "/" + resp.GetArchive())
	if err != nil || len(f.Sessions) != 1 || f.Sessions[0].Meta.GetSessionId() != purged || len(f.Sessions[0].Envelopes) == 0 {
		t.Fatalf("archive %s: %v, %v", resp.GetArchive(), f, err)
	}
	for _, cl := range []hubsvc.HubClient{ca, cb} {
		if g := wantGone(t, cl, purged, "PURGED"); g.md["archive"] != resp.GetArchive() {
			t.Fatalf("PURGED names archive %q, want %q", g.md["archive"], resp.GetArchive())
		}
	}
	if _, err := cb.Purge(as(server.DevOperator), &hubpb.PurgeRequest{SessionId: purged}); errorInfo(t, err).GetReason() != "PURGED" {
		t.Fatalf("a second purge: %v, want PURGED", err)
	}
	if _, err := cb.Purge(as("alice"), &hubpb.PurgeRequest{SessionId: kept}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("a purge by alice: %v, want PERMISSION_DENIED", err)
	}
	list, err := ca.ListSessions(as("alice"), &hubpb.ListSessionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.GetSessions() {
		if s.GetMeta().GetSessionId() == purged {
			t.Fatal("the purged session is still listed")
		}
	}

	a.Shutdown(context.Background())
	waitUntil(t, "b serves every partition", 10*time.Second, func() bool { return len(b.Served()) == 4 })
	wantGone(t, cb, purged, "PURGED")
	if got, err := cb.GetSession(as("alice"), &hubpb.GetSessionRequest{SessionId: kept}); err != nil || got.GetState() != "CLOSED" {
		t.Fatalf("the kept session after the move: %v, %v", got, err)
	}
}

// Each node sweeps the sessions of its partitions whose retention passed.
func TestClusterRetentionSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("a NATS server and a node")
	}
	c := natstest.RunServer(t)
	a := startClusterServer(t, c, "a", func(sc *server.Config) {
		sc.Hub.Retention = hub.Retention{Ended: 200 * time.Millisecond, Sweep: 100 * time.Millisecond}
	})
	waitUntil(t, "a serves every partition", 10*time.Second, func() bool { return len(a.Served()) == 4 })
	ca := rawClient(t, a.Addr())
	id := openEnded(t, ca, "brief")
	waitUntil(t, "the sweep purges the session", 10*time.Second, func() bool {
		_, err := ca.GetSession(as("alice"), &hubpb.GetSessionRequest{SessionId: id})
		return status.Code(err) != codes.OK && errorInfo(t, err).GetReason() == "PURGED"
	})
	if k := a.PartitionOf(session.MustParseID(id)); k < 0 {
		t.Fatal(k)
	}
}

// startClusterServer is startClusterNode with the server's configuration
// changed by opts.
func startClusterServer(t *testing.T, c *natstest.Cluster, id string, opts ...func(*server.Config)) *server.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sc := server.Config{Listen: "127.0.0.1:0", Cluster: &cluster.Config{NATS: []string{c.URL(0)}, NodeID: id, Partitions: 4,
		LeaseTTL: time.Second, Replicas: 1}}
	for _, o := range opts {
		o(&sc)
	}
	srv, err := server.Start(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return srv
}

// A cluster erases: a live session through the node that does not serve
// it (routed to its owner, which closes it first), and a purged one,
// whose archive is rewritten; no byte of either's text stays in the
// NATS server's files, and both answer ERASED from every node; so does
// an erasure by participant, whose sessions are on both nodes (every
// node erases its part).
func TestClusterErase(t *testing.T) {
	if testing.Short() {
		t.Skip("a NATS server and two nodes")
	}
	c := natstest.RunServer(t)
	dir := t.TempDir()
	a := startClusterServer(t, c, "a", withArchive(t, dir))
	waitUntil(t, "a serves every partition", 10*time.Second, func() bool { return len(a.Served()) == 4 })
	b := startClusterServer(t, c, "b", withArchive(t, dir))
	waitUntil(t, "two partitions each", 10*time.Second, func() bool { return len(a.Served()) == 2 && len(b.Served()) == 2 })
	ca, cb := rawClient(t, a.Addr()), rawClient(t, b.Addr())
	const secret, archived = "live-secret-5521", "archived-secret-8830"
	resp, err := ca.Open(as("alice"), &hubpb.OpenRequest{Type: "conversation@1",
		Participants: []*hubpb.Participant{{Name: "alice"}, {Name: "bob", AutoAccept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	live := resp.GetSession().GetMeta().GetSessionId()
	if _, err := sendText(t, ca, "alice", live, secret); err != nil {
		t.Fatal(err)
	}
	purged := openEnded(t, ca, archived)
	if _, err := ca.Purge(as(server.DevOperator), &hubpb.PurgeRequest{SessionId: purged}); err != nil {
		t.Fatal(err)
	}
	if n := len(disktest.FilesHolding(t, c.StoreDir(0), []byte(secret))); n == 0 {
		t.Fatal("the live session's text is not in the NATS store: the test proves nothing")
	}
	if n := len(disktest.FilesHolding(t, dir, []byte(archived))); n == 0 {
		t.Fatal("the purged session's text is not in the archive: the test proves nothing")
	}
	// dana's sessions on both nodes: one erasure by participant, asked
	// of either node, erases both.
	const danas = "dana-secret-3310"
	var dana []string
	for _, cl := range []hubsvc.HubClient{ca, cb} {
		resp, err := cl.Open(as("dana"), &hubpb.OpenRequest{Type: "conversation@1",
			Participants: []*hubpb.Participant{{Name: "dana"}, {Name: "bob", AutoAccept: true}}})
		if err != nil {
			t.Fatal(err)
		}
		id := resp.GetSession().GetMeta().GetSessionId()
		if _, err := sendText(t, cl, "dana", id, danas); err != nil {
			t.Fatal(err)
		}
		dana = append(dana, id)
	}
	if a.PartitionOf(session.MustParseID(dana[0])) == b.PartitionOf(session.MustParseID(dana[1])) {
		t.Fatal("dana's sessions landed in one partition: the test proves nothing")
	}
	er, err := ca.Erase(as(server.DevOperator), &hubpb.EraseRequest{Participant: "dana", Reason: "dana asked"})
	if err != nil || len(er.GetSessions()) != 2 {
		t.Fatalf("Erase of participant dana through a: %v, %v; want her 2 sessions", er, err)
	}
	_, err = ca.Erase(as(server.DevOperator), &hubpb.EraseRequest{SessionIds: []string{live}, Participant: "dana", Reason: "both"})
	if errorInfo(t, err).GetReason() != "BAD_LIFECYCLE_TRANSITION" {
		t.Fatalf("an erasure by ids and participant on a cluster: %v, want BAD_LIFECYCLE_TRANSITION", err)
	}
	for _, id := range dana {
		for _, cl := range []hubsvc.HubClient{ca, cb} {
			wantGone(t, cl, id, "ERASED")
		}
	}
	for _, id := range []string{live, purged} {
		er, err := cb.Erase(as(server.DevOperator), &hubpb.EraseRequest{SessionIds: []string{id}, Reason: "asked by alice"})
		if err != nil || len(er.GetSessions()) != 1 || er.GetSessions()[0].GetErasedBy() != server.DevOperator {
			t.Fatalf("Erase %s through b: %v, %v", id, er, err)
		}
	}
	for _, cl := range []hubsvc.HubClient{ca, cb} {
		for _, id := range []string{live, purged} {
			if g := wantGone(t, cl, id, "ERASED"); g.md["reason"] != "asked by alice" {
				t.Fatalf("ERASED of %s: %v", id, g.md)
			}
		}
	}
	for _, s := range []string{secret, archived, danas} {
		if n := len(disktest.FilesHolding(t, c.StoreDir(0), []byte(s))) + len(disktest.FilesHolding(t, dir, []byte(s))); n != 0 {
			t.Fatalf("%d files still hold %q", n, s)
		}
	}
}
