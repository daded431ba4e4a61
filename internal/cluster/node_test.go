package cluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/cluster"
	"github.com/hubd/hubd/internal/cluster/bus"
	"github.com/hubd/hubd/internal/natstest"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
)

// The tests of this file and its siblings run whole hubd servers
// (internal/server) as the nodes of a cluster on an embedded NATS server:
// what a node does is seen through the gRPC its clients and the other
// nodes call.

// startClusterNode starts a server as node id of a cluster on c, with P=4
// and a one-second lease, its configuration changed by opts.
func startClusterNode(t testing.TB, c *natstest.Cluster, id string, opts ...func(*cluster.Config)) *server.Server {
	t.Helper()
	return startClusterNodeLogged(t, c, id, zerolog.Nop(), opts...)
}

// startClusterNodeLogged is startClusterNode logging to lg.
func startClusterNodeLogged(t testing.TB, c *natstest.Cluster, id string, lg zerolog.Logger, opts ...func(*cluster.Config)) *server.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cc := &cluster.Config{NATS: []string{c.URL(0)}, NodeID: id, Partitions: 4, LeaseTTL: time.Second, Replicas: 1}
	for _, o := range opts {
		o(cc)
	}
	srv, err := server.Start(ctx, server.Config{Listen: "127.0.0.1:0", Logger: lg, Cluster: cc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return srv
}

// twoNodes starts node a, waits until it serves every partition, then
// node b (with bOpts), and waits until each serves two: a session opened
// through one node is then placed on a partition only that node serves.
func twoNodes(t *testing.T, c *natstest.Cluster, bOpts ...func(*cluster.Config)) (a, b *server.Server) {
	t.Helper()
	a = startClusterNode(t, c, "a")
	waitUntil(t, "a serves every partition", 10*time.Second, func() bool { return len(a.Served()) == 4 })
	b = startClusterNode(t, c, "b", bOpts...)
	waitUntil(t, "two partitions each", 10*time.Second, func() bool { return len(a.Served()) == 2 && len(b.Served()) == 2 })
	return a, b
}

// rawClient is a gRPC client of addr calling as agent in development mode.
func rawClient(t testing.TB, addr string) hubsvc.HubClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return hubsvc.NewHubClient(conn)
}

func as(agent string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "x-hubd-agent", agent)
}

func waitUntil(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// errorInfo returns the ErrorInfo of a status error.
func errorInfo(t *testing.T, err error) *errdetails.ErrorInfo {
	t.Helper()
	st, _ := status.FromError(err)
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	t.Fatalf("no ErrorInfo in %v", err)
	return nil
}

func sendText(t *testing.T, c hubsvc.HubClient, from, id, text string) (*hubpb.SendResponse, error) {
	t.Helper()
	return c.Send(as(from), &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: session.EventText, From: from,
		ClientMsgId: text, Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: text}}}})
}

// nodeClient is a client of srv's node service acting as a node of the
// cluster of creds (nil: a cluster without credentials), as the nodes
// call each other.
func nodeClient(t testing.TB, srv *server.Server, creds *bus.Creds) hubsvc.HubClient {
	t.Helper()
	opts, err := cluster.NodeDialOptions(creds, "tester", srv.Node().ID())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(srv.Node().NodeAddr(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return hubsvc.NewHubClient(conn)
}

// asNode is the context of a node's call on behalf of agent.
func asNode(agent string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "hubd-node-agent", agent)
}

// TestClusterOwnership: two nodes share the partitions; a root session
// opens on a partition of the node asked; the other node runs calls for
// it on its owner, and its node service (which runs what it is asked
// where it is, as the owner does for the calls routed to it) answers
// NOT_OWNER with the owner's address; once the owner leaves, the other
// loads the session (its timers too) and continues its log.
func TestClusterOwnership(t *testing.T) {
	if testing.Short() {
		t.Skip("a NATS server and two nodes")
	}
	c := natstest.RunServer(t)
	a, b := twoNodes(t, c)

	ca, cb := rawClient(t, a.Addr()), rawClient(t, b.Addr())
	parts := []*hubpb.Participant{{Name: "alice"}, {Name: "bob", AutoAccept: true}}
	graph := map[string]any{"version": 1, "initial_speaker": "alice", "transitions": []any{map[string]any{
		"when": map[string]any{"name": "always", "args": map[string]any{}}, "then": map[string]any{"name": "round_robin", "args": map[string]any{}}, "priority": 0}},
		"default_target": map[string]any{"name": "terminate", "args": map[string]any{"reason": "done"}}}
	open := func(ttl time.Duration) string {
		t.Helper()
		req := &hubpb.OpenRequest{Type: "workflow@1", Participants: parts, Graph: mustStruct(t, graph)}
		if ttl > 0 {
			req.Ttl = durationpb.New(ttl)
		}
		resp, err := ca.Open(as("alice"), req)
		if err != nil {
			t.Fatal(err)
		}
		id := resp.GetSession().GetMeta().GetSessionId()
		if k := a.PartitionOf(session.MustParseID(id)); !slices.Contains(a.Served(), k) {
			t.Fatalf("session %s opened on node a lies in partition %d, a serves %v", id, k, a.Served())
		}
		return id
	}
	id := open(0)
	expiring := open(2 * time.Second)
	if _, err := sendText(t, ca, "alice", id, "one"); err != nil {
		t.Fatal(err)
	}

	// b does not serve it: it runs the call on a; b's node service
	// answers NOT_OWNER, with a's address, and writes nothing.
	if got, err := cb.GetSession(as("alice"), &hubpb.GetSessionRequest{SessionId: id}); err != nil || got.GetSeq() != 3 {
		t.Fatalf("GetSession through b: %v, %v; want seq 3 from a", got, err)
	}
	nb := nodeClient(t, b, nil)
	_, err := nb.GetSession(asNode("alice"), &hubpb.GetSessionRequest{SessionId: id})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("GetSession on b's node service: %v, want UNAVAILABLE NOT_OWNER", err)
	}
	info := errorInfo(t, err)
	if info.GetReason() != "NOT_OWNER" || info.GetMetadata()["owner_addr"] != a.Addr() || info.GetMetadata()["owner_node"] != "a" {
		t.Fatalf("GetSession on b's node service: ErrorInfo %v, want NOT_OWNER with owner_addr %s", info, a.Addr())
	}
	if _, err := nb.Send(asNode("bob"), &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{Type: session.EventText,
		Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "two"}}}}); errorInfo(t, err).GetReason() != "NOT_OWNER" {
		t.Fatalf("send on b's node service: %v, want NOT_OWNER", err)
	}

	// a leaves (handing its partitions back): b serves them all, with the
	// session where a left it.
	start := time.Now()
	a.Shutdown(context.Background())
	waitUntil(t, "b serves every partition", 10*time.Second, func() bool { return len(b.Served()) == 4 })
	t.Logf("b took a's partitions over in %v", time.Since(start).Round(time.Millisecond))
	resp, err := sendText(t, cb, "bob", id, "two")
	if err != nil {
		t.Fatalf("send on b after the move: %v", err)
	}
	if resp.GetSeq() != 4 { // invite, open, one, two
		t.Fatalf("bob's send after the move has seq %d, want 4", resp.GetSeq())
	}
	// The TTL armed on a fires on b, once.
	waitUntil(t, "the session expires on b", 10*time.Second, func() bool {
		info, err := cb.GetSession(as("alice"), &hubpb.GetSessionRequest{SessionId: expiring})
		return err == nil && info.GetState() == "EXPIRED"
	})
	log, err := cb.ReadLog(as("alice"), &hubpb.ReadLogRequest{SessionId: expiring})
	if err != nil {
		t.Fatal(err)
	}
	ends := 0
	for _, e := range log.GetEnvelopes() {
		if session.Ends(e.GetType()) {
			ends++
		}
	}
	if ends != 1 {
		t.Fatalf("the expiring session's log has %d ends, want 1: %v", ends, log.GetEnvelopes())
	}
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestClusterStreamsRouted: agentsdk clients of one node, which know
// nothing of the cluster, send on their agent streams for a session the
// other node serves (the node runs them there, with the same client
// message id), and a subscription through that node delivers the session
// from its owner, then, once the owner leaves and the node takes the
// partition over, from itself, every seq once and in order.
func TestClusterStreamsRouted(t *testing.T) {
	if testing.Short() {
		t.Skip("a NATS server and two nodes")
	}
	c := natstest.RunServer(t)
	a, b := twoNodes(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dial := func(name string) *agentsdk.Client {
		t.Helper()
		cl, err := agentsdk.Dial(ctx, b.Addr(), agentsdk.Options{Name: name, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	// The session lives on a: opened there.
	resp, err := rawClient(t, a.Addr()).Open(as("alice"), &hubpb.OpenRequest{Type: "conversation@1",
		Participants: []*hubpb.Participant{{Name: "alice"}, {Name: "bob", AutoAccept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetSession().GetMeta().GetSessionId()
	alice, bob := dial("alice"), dial("bob")
	stream, err := bob.Subscribe(ctx, agentsdk.SubscribeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	type delivery struct {
		seq  uint64
		turn bool
	}
	got := make(chan delivery, 100)
	go func() {
		for {
			d, err := stream.Recv()
			if err != nil {
				close(got)
				return
			}
			if d.GetEnvelope().GetSessionId() == id {
				got <- delivery{d.GetEnvelope().GetSeq(), d.GetYourTurn()}
			}
		}
	}()
	send := func(cl *agentsdk.Client, text string) uint64 {
		t.Helper()
		ack, err := cl.SendText(ctx, id, text)
		if err != nil {
			t.Fatalf("%s through b: %v", text, err)
		}
		return ack.Seq
	}
	var seen []uint64
	until := func(seq uint64) {
		t.Helper()
		for len(seen) == 0 || seen[len(seen)-1] < seq {
			select {
			case d, ok := <-got:
				if !ok {
					t.Fatalf("bob's stream ended; seqs %v", seen)
				}
				if len(seen) > 0 && d.seq <= seen[len(seen)-1] {
					if d.turn {
						continue // a pending turn told again after a resubscribe
					}
					t.Fatalf("bob's stream handed out seq %d after %v", d.seq, seen)
				}
				seen = append(seen, d.seq)
			case <-ctx.Done():
				t.Fatalf("bob did not get seq %d; got %v", seq, seen)
			}
		}
	}
	until(send(alice, "one")) // alice's send through b lands on a; bob hears it from a
	send(bob, "two")          // bob's own: not delivered to him
	a.Shutdown(context.Background())
	waitUntil(t, "b serves every partition", 10*time.Second, func() bool { return len(b.Served()) == 4 })
	three := send(alice, "three")
	until(three)    // from b now
	if three != 5 { // invite, open, one, two, three
		t.Fatalf("alice's send after the move has seq %d, want 5", three)
	}
	t.Logf("bob's stream: seqs %v", seen)
}

// TestClusterOpenOnStreamRouted: an agentsdk client of one node opens
// on its agent stream a root session (in that node's partitions) and a
// child whose parent lives on the other node: the node runs that open on
// the parent's owner, on the client's behalf.
func TestClusterOpenOnStreamRouted(t *testing.T) {
	if testing.Short() {
		t.Skip("a NATS server and two nodes")
	}
	c := natstest.RunServer(t)
	a, b := twoNodes(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := rawClient(t, a.Addr()).Open(as("alice"), &hubpb.OpenRequest{Type: "conversation@1",
		Participants: []*hubpb.Participant{{Name: "alice"}, {Name: "bob", AutoAccept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	parent := resp.GetSession().GetMeta().GetSessionId()
	alice, err := agentsdk.Dial(ctx, b.Addr(), agentsdk.Options{Name: "alice", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	root, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatalf("a root session through b: %v", err)
	}
	child, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob"), Parent: parent})
	if err != nil {
		t.Fatalf("a child of a's session through b: %v", err)
	}
	if child.GetMeta().GetParentSessionId() != parent || root.GetMeta().GetParentSessionId() != "" {
		t.Fatalf("child %v, root %v", child.GetMeta(), root.GetMeta())
	}
	if got, err := rawClient(t, a.Addr()).GetSession(as("alice"), &hubpb.GetSessionRequest{SessionId: child.ID()}); err != nil || got.GetMeta().GetParentSessionId() != parent {
		t.Fatalf("the child on its owner: %v %v", got, err)
	}
}

// TestClusterSubscribeFollowsNewNodes: a subscription through a node
// that serves every partition goes on delivering once another node joins
// and takes partitions over: a session the new node serves reaches the
// subscriber, through the node it subscribed to, without a resubscribe.
func TestClusterSubscribeFollowsNewNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("a NATS server and two nodes")
	}
	c := natstest.RunServer(t)
	a := startClusterNode(t, c, "a")
	waitUntil(t, "a serves every partition", 10*time.Second, func() bool { return len(a.Served()) == 4 })
	ctx, cancel := context.WithCancel(as("bob"))
	defer cancel()
	stream, err := rawClient(t, a.Addr()).Subscribe(ctx, &hubpb.SubscribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b := startClusterNode(t, c, "b")
	waitUntil(t, "two partitions each", 10*time.Second, func() bool { return len(a.Served()) == 2 && len(b.Served()) == 2 })
	resp, err := rawClient(t, b.Addr()).Open(as("alice"), &hubpb.OpenRequest{Type: "conversation@1",
		Participants: []*hubpb.Participant{{Name: "alice"}, {Name: "bob", AutoAccept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetSession().GetMeta().GetSessionId()
	if k := b.PartitionOf(session.MustParseID(id)); !slices.Contains(b.Served(), k) {
		t.Fatalf("session %s opened through b lies in partition %d, b serves %v", id, k, b.Served())
	}
	if _, err := sendText(t, rawClient(t, b.Addr()), "alice", id, "hello bob"); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		for {
			d, err := stream.Recv()
			if err != nil {
				got <- err.Error()
				return
			}
			if d.GetEnvelope().GetSessionId() == id && d.GetEnvelope().GetText().GetText() == "hello bob" {
				got <- "delivered"
				return
			}
		}
	}()
	select {
	case r := <-got:
		if r != "delivered" {
			t.Fatalf("bob's stream through a: %s", r)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("bob's stream through a did not deliver a session b serves")
	}
}
