package server

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/cluster"
	"github.com/hubd/hubd/internal/natstest"
	"github.com/hubd/hubd/session"
)

// withCreds gives a node the cluster's credentials.
func withCreds(c *cluster.Creds) func(*ClusterConfig) {
	return func(cc *ClusterConfig) { cc.Creds = c }
}

// forgedCall publishes on nc, to node's subject, the call of method as
// agent (operator if asked) with body, as anyone who reaches the bus
// could, proof given or none, and returns the answer.
func forgedCall(t *testing.T, nc *nats.Conn, node, method, agent string, operator bool, proof string, body proto.Message) *nats.Msg {
	t.Helper()
	b, err := proto.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg("hubd.node." + node)
	m.Header.Set("Hubd-Part", "0/1")
	m.Header.Set("Hubd-Method", method)
	m.Header.Set("Hubd-Agent", agent)
	m.Header.Set("Hubd-From", node)
	if operator {
		m.Header.Set("Hubd-Operator", "1")
	}
	if proof != "" {
		m.Header.Set("Hubd-Proof", proof)
	}
	m.Data = b
	r, err := nc.RequestMsg(m, 10*time.Second)
	if err != nil {
		t.Fatalf("forged %s: %v", method, err)
	}
	return r
}

// TestClusterForgedCallRefused: on a NATS bus where someone other than
// the nodes reaches hubd's subjects (a user wrongly given hubd's account,
// with every permission), nodes with the cluster's credentials refuse
// every call that does not prove it comes from a node: a GetSession as a
// participant and a Close as operator, with no proof or a made-up one,
// are answered refused, reveal nothing and change nothing; the nodes' own
// calls (a call forwarded between them) still run.
func TestClusterForgedCallRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("a NATS server and two nodes")
	}
	dir := t.TempDir()
	_, creds := natstest.WriteCreds(t, dir, "nats.creds")
	_, other := natstest.WriteCreds(t, dir, "other.creds")
	c := natstest.RunServerConf(t, fmt.Sprintf("accounts {\n  HUBD {\n    jetstream: enabled\n    users: [ { nkey: %s }, { nkey: %s } ]\n  }\n}\n",
		creds.PublicKey(), other.PublicKey()))
	a := startClusterNode(t, c, "a", withCreds(creds))
	waitUntil(t, "a serves every partition", 10*time.Second, func() bool { return len(a.Served()) == 4 })
	ca := rawClient(t, a.Addr())
	resp, err := ca.Open(as("alice"), &hubpb.OpenRequest{Type: "conversation@1",
		Participants: []*hubpb.Participant{{Name: "alice"}, {Name: "carol", AutoAccept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.GetSession().GetMeta().GetSessionId()
	if _, err := sendText(t, ca, "alice", id, "the secret"); err != nil {
		t.Fatal(err)
	}

	intruder := c.ConnectWith(t, []nats.Option{other.Option()})
	for _, proof := range []string{"", "v1 1 0123456789abcdef0123456789abcdef AAAA"} {
		r := forgedCall(t, intruder, "a", "/hubd.v1.Hub/GetSession", "alice", false, proof, &hubpb.GetSessionRequest{SessionId: id})
		if r.Header.Get("Hubd-Refused") == "" || len(r.Data) != 0 || strings.Contains(string(r.Data), "secret") {
			t.Errorf("forged GetSession as alice (proof %q): answered %q, headers %v; want refused", proof, r.Data, r.Header)
		}
		r = forgedCall(t, intruder, "a", "/hubd.v1.Hub/Close", "root", true, proof, &hubpb.CloseRequest{SessionId: id, Reason: "forged"})
		if r.Header.Get("Hubd-Refused") == "" {
			t.Errorf("forged Close as operator (proof %q): answered %q, headers %v; want refused", proof, r.Data, r.Header)
		}
	}
	info, err := ca.GetSession(as("alice"), &hubpb.GetSessionRequest{SessionId: id})
	if err != nil || info.GetState() != "OPEN" {
		t.Fatalf("the session after the forged calls: %v, %v; want OPEN", info.GetState(), err)
	}

	// A node with the credentials forwards to a: its calls are proven.
	b := startClusterNode(t, c, "b", withCreds(creds))
	waitUntil(t, "two partitions each", 10*time.Second, func() bool { return len(a.Served()) == 2 && len(b.Served()) == 2 })
	got, err := rawClient(t, b.Addr()).GetSession(as("alice"), &hubpb.GetSessionRequest{SessionId: id})
	if err != nil || got.GetMeta().GetSessionId() != id {
		t.Fatalf("GetSession through b: %v, %v", got, err)
	}
}

// TestClusterBusAccount: a NATS server configured as docs/OPERATIONS.md
// says for a NATS cluster of your own (hubd's account, from
// cluster.NATSAccount, beside another application's) serves nodes with
// the credentials (they take partitions, open sessions, append); a client
// with no credentials is refused at connect, and one with the other
// application's credentials reaches none of hubd's subjects: no node
// answers its calls, the JetStream API shows it no partition stream, and
// what it publishes on a partition subject is stored nowhere.
func TestClusterBusAccount(t *testing.T) {
	if testing.Short() {
		t.Skip("a NATS server and a node")
	}
	dir := t.TempDir()
	_, creds := natstest.WriteCreds(t, dir, "nats.creds")
	_, guest := natstest.WriteCreds(t, dir, "guest.creds")
	c := natstest.RunServerConf(t, "accounts {\n"+cluster.NATSAccount("HUBD", creds.PublicKey())+
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
	m := nats.NewMsg("hubd.node.a")
	m.Header.Set("Hubd-Part", "0/1")
	m.Header.Set("Hubd-Method", "/hubd.v1.Hub/ListSessions")
	m.Header.Set("Hubd-Agent", "alice")
	if _, err := nc.RequestMsg(m, 5*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("the other application's call to node a: %v, want no responders", err)
	}
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
