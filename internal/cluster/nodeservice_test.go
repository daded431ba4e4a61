package cluster_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/cluster"
	"github.com/hubd/hubd/internal/cluster/bus"
	"github.com/hubd/hubd/internal/natstest"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
)

// withCreds gives a node the cluster's credentials.
func withCreds(c *bus.Creds) func(*cluster.Config) {
	return func(cc *cluster.Config) { cc.Creds = c }
}

// startTokenNode starts node id with the cluster's credentials whose
// clients authenticate with tokens ("name token" lines).
func startTokenNode(t *testing.T, c *natstest.Cluster, id string, creds *bus.Creds, tokens string) *server.Server {
	t.Helper()
	tok, err := hubgrpc.ParseTokens(strings.NewReader(tokens))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := server.Start(ctx, server.Config{Listen: "127.0.0.1:0", Tokens: tok, Cluster: &cluster.Config{NATS: []string{c.URL(0)},
		NodeID: id, Partitions: 4, LeaseTTL: time.Second, Replicas: 1, Creds: creds}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return srv
}

// withToken is the context of a call with a bearer token.
func withToken(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// TestNodeServiceForNodesOnly: a node of a cluster with credentials
// takes calls on behalf of clients (the caller named in metadata) on its
// node service alone, and only from a certificate the nodes' CA, derived
// from the credentials, signed. A client of the hub naming another agent
// in that metadata is still itself; a call to the node service with no
// certificate, in cleartext, with a certificate of another CA, or with
// one derived from other credentials is refused before it runs (a
// GetSession as a participant reveals nothing, a Close as operator
// changes nothing); a call from a node, as another node makes, runs as
// the agent it names; and two nodes route calls to each other.
func TestNodeServiceForNodesOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("a NATS server and two nodes")
	}
	dir := t.TempDir()
	_, creds := natstest.WriteCreds(t, dir, "nats.creds")
	_, other := natstest.WriteCreds(t, dir, "other.creds")
	c := natstest.RunServer(t, natstest.WithCreds(creds))
	const tokens = "alice alice-secret-token-1\ncarol carol-secret-token-1\nmallory mallory-token-0001\n"
	a := startTokenNode(t, c, "a", creds, tokens)
	waitUntil(t, "a serves every partition", 10*time.Second, func() bool { return len(a.Served()) == 4 })
	ca := rawClient(t, a.Addr())
	alice := withToken(context.Background(), "alice-secret-token-1")
	resp, err := ca.Open(alice, &hubpb.OpenRequest{Type: "conversation@1",
		Participants: []*hubpb.Participant{{Name: "alice"}, {Name: "carol"}}})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetSession().GetMeta().GetSessionId()
	if _, err := ca.AckInvite(withToken(context.Background(), "carol-secret-token-1"), &hubpb.InviteRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Send(alice, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: session.EventText,
		Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "the secret"}}}}); err != nil {
		t.Fatal(err)
	}

	// On the hub's own address the node metadata is nobody's: mallory
	// stays mallory.
	mallory := metadata.AppendToOutgoingContext(withToken(context.Background(), "mallory-token-0001"),
		"hubd-node-agent", "alice", "hubd-node-operator", "1")
	if _, err := ca.GetSession(mallory, &hubpb.GetSessionRequest{SessionId: id}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("GetSession as mallory naming alice in the node metadata: %v, want PERMISSION_DENIED", err)
	}
	if _, err := ca.Close(mallory, &hubpb.CloseRequest{SessionId: id, Reason: "forged"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("Close as mallory naming an operator in the node metadata: %v, want PERMISSION_DENIED", err)
	}

	// The node service refuses whoever is not a node.
	files := natstest.WriteTLS(t, dir)
	foreign, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	if err != nil {
		t.Fatal(err)
	}
	otherCert, err := cluster.NodeCertificate(other, "a")
	if err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string][]grpc.DialOption{
		"cleartext":          {grpc.WithTransportCredentials(insecure.NewCredentials())},
		"no certificate":     {grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{InsecureSkipVerify: true}))},
		"another CA's":       {grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{foreign}}))},
		"other credentials'": {grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{otherCert}}))},
	} {
		conn, err := grpc.NewClient(a.Node().NodeAddr(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		nc := hubsvc.NewHubClient(conn)
		ctx, cancel := context.WithTimeout(asNode("alice"), 5*time.Second)
		got, err := nc.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
		if err == nil || strings.Contains(fmt.Sprint(got), "secret") || status.Code(err) != codes.Unavailable {
			t.Errorf("GetSession as alice on the node service with %s: %v, %v; want refused at the handshake", name, got, err)
		}
		t.Logf("%s: %v", name, err)
		op := metadata.AppendToOutgoingContext(ctx, "hubd-node-operator", "1")
		if _, err := nc.Close(op, &hubpb.CloseRequest{SessionId: id, Reason: "forged"}); err == nil {
			t.Errorf("Close as operator on the node service with %s: answered", name)
		}
		cancel()
		conn.Close()
	}
	if info, err := ca.GetSession(alice, &hubpb.GetSessionRequest{SessionId: id}); err != nil || info.GetState() != "OPEN" {
		t.Fatalf("the session after the forged calls: %v, %v; want OPEN", info.GetState(), err)
	}

	// A node's call runs as the agent it names.
	na := nodeClient(t, a, creds)
	lg, err := na.ReadLog(asNode("alice"), &hubpb.ReadLogRequest{SessionId: id})
	if err != nil || !strings.Contains(fmt.Sprint(lg), "the secret") {
		t.Fatalf("ReadLog as alice from a node: %v, %v", lg, err)
	}
	if _, err := na.GetSession(asNode("mallory"), &hubpb.GetSessionRequest{SessionId: id}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("GetSession as mallory from a node: %v, want PERMISSION_DENIED", err)
	}

	// A second node with the credentials routes calls to a.
	b := startTokenNode(t, c, "b", creds, tokens)
	waitUntil(t, "two partitions each", 10*time.Second, func() bool { return len(a.Served()) == 2 && len(b.Served()) == 2 })
	got, err := rawClient(t, b.Addr()).GetSession(alice, &hubpb.GetSessionRequest{SessionId: id})
	if err != nil || got.GetMeta().GetSessionId() != id {
		t.Fatalf("GetSession through b: %v, %v", got, err)
	}
}

// TestClusterBusAccount: a NATS server configured as docs/OPERATIONS.md
// says for a NATS cluster of your own (hubd's account, from
// bus.NATSAccount, beside another application's) serves nodes with the
// credentials (they take partitions, open sessions, append); a client
// with no credentials is refused at connect, and one with the other
// application's credentials reaches none of hubd's subjects: the
// JetStream API shows it no partition stream, and what it publishes on a
// partition subject is stored nowhere.
func TestClusterBusAccount(t *testing.T) {
	if testing.Short() {
		t.Skip("a NATS server and a node")
	}
	dir := t.TempDir()
	_, creds := natstest.WriteCreds(t, dir, "nats.creds")
	_, guest := natstest.WriteCreds(t, dir, "guest.creds")
	c := natstest.RunServerConf(t, "accounts {\n"+bus.NATSAccount("HUBD", creds.PublicKey())+
		"APPS {\n  jetstream: enabled\n  users: [ { nkey: "+guest.PublicKey()+" } ]\n}\n}\n")
	a := startClusterNode(t, c, "a", withCreds(creds))
	waitUntil(t, "a serves every partition", 20*time.Second, func() bool { return len(a.Served()) == 4 })
	ca := rawClient(t, a.Addr())
	resp, err := ca.Open(as("alice"), &hubpb.OpenRequest{Type: "conversation@1",
		Participants: []*hubpb.Participant{{Name: "alice"}, {Name: "carol", AutoAccept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetSession().GetMeta().GetSessionId()
	if _, err := sendText(t, ca, "alice", id, "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := nats.Connect(c.URL(0), nats.Timeout(5*time.Second)); err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		t.Errorf("a client with no credentials: %v, want an authorization violation", err)
	}

	nc := c.ConnectWith(t, []nats.Option{guest.Option()})
	js, err := nc.JetStream(nats.MaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	k := a.PartitionOf(session.MustParseID(id))
	stream := fmt.Sprintf("HUB_P%02d", k)
	if _, err := js.StreamInfo(stream); !errors.Is(err, nats.ErrStreamNotFound) {
		t.Errorf("the other application's StreamInfo(%s): %v, want not found", stream, err)
	}
	subj := fmt.Sprintf("hub.p%d.junk", k)
	if _, err := js.Publish(subj, []byte("junk")); !errors.Is(err, nats.ErrNoStreamResponse) && !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("the other application's publish on %s: %v, want no stream to take it", subj, err)
	}
	node := c.ConnectWith(t, []nats.Option{creds.Option()})
	njs, err := node.JetStream(nats.MaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if si, err := njs.StreamInfo(stream); err != nil || si.State.Msgs != 4 { // metadata, invite, open, hello
		t.Errorf("hubd's %s after the other application's publish: %v messages, %v; want 4", stream, si.State.Msgs, err)
	}
	if _, err := sendText(t, ca, "alice", id, "still here"); err != nil {
		t.Fatalf("a send after the other application's attempts: %v", err)
	}
}
