package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hubd/hubd/internal/cluster"
	"github.com/hubd/hubd/internal/natstest"
)

// TestCalls sends calls between two nodes on a real NATS server: the
// answer, the caller's identity and trace context, a body and an answer
// larger than max_payload (sent in parts), a failure, the served
// partitions, a node nobody serves and a call that outlives its deadline.
func TestCalls(t *testing.T) {
	ns := natstest.RunServer(t)
	nc1, nc2 := ns.Connect(t), ns.Connect(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<17) // 2 MiB: over the 1 MiB max_payload
	got := make(chan cluster.Call, 10)
	release := make(chan struct{})
	serve := func(ctx context.Context, c cluster.Call) cluster.Answer {
		got <- c
		switch c.Method {
		case "/echo":
			return cluster.Answer{Body: append([]byte("echo:"), c.Body...), Served: []int{1, 4}}
		case "/fail":
			return cluster.Answer{Body: []byte("status"), Failed: true}
		case "/slow":
			<-release // past the caller's deadline
			return cluster.Answer{Body: []byte("late")}
		}
		return cluster.Answer{}
	}
	a, err := cluster.ServeCalls(cluster.CallsConfig{Conn: nc1, NodeID: "a", Serve: serve})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := cluster.ServeCalls(cluster.CallsConfig{Conn: nc2, NodeID: "b", Serve: serve})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	for _, body := range [][]byte{[]byte("hi"), nil, big} {
		ans, err := b.Call(ctx, "a", cluster.Call{Method: "/echo", Agent: "alice", Operator: true, Traceparent: "00-tp", Body: body})
		if err != nil {
			t.Fatalf("call of %d bytes: %v", len(body), err)
		}
		if want := append([]byte("echo:"), body...); !bytes.Equal(ans.Body, want) || ans.Failed || len(ans.Served) != 2 || ans.Served[1] != 4 {
			t.Fatalf("call of %d bytes: answer of %d bytes, failed %v, served %v", len(body), len(ans.Body), ans.Failed, ans.Served)
		}
		c := <-got
		if c.Agent != "alice" || !c.Operator || c.Traceparent != "00-tp" || c.From != "b" || !bytes.Equal(c.Body, body) {
			t.Fatalf("the node served %+v (body %d bytes)", c.Method, len(c.Body))
		}
	}
	ans, err := a.Call(ctx, "b", cluster.Call{Method: "/fail", Agent: "bob"})
	if err != nil || !ans.Failed || string(ans.Body) != "status" || ans.Served != nil {
		t.Fatalf("failed call: %+v, %v", ans, err)
	}
	if c := <-got; c.Agent != "bob" || c.Operator {
		t.Fatalf("the node served %+v", c)
	}
	if _, err := a.Call(ctx, "nobody", cluster.Call{Method: "/echo"}); !errors.Is(err, cluster.ErrUnreachable) {
		t.Fatalf("call to a node nobody serves: %v, want ErrUnreachable", err)
	}
	sctx, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer scancel()
	if _, err := a.Call(sctx, "b", cluster.Call{Method: "/slow"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow call: %v, want a deadline", err)
	}
	<-got
	close(release)
	// Once closed, a node answers no call.
	b.Close()
	if _, err := a.Call(ctx, "b", cluster.Call{Method: "/echo"}); !errors.Is(err, cluster.ErrUnreachable) {
		t.Fatalf("call to a closed node: %v, want ErrUnreachable", err)
	}
}

// TestCallsProof: nodes that share credentials call each other with
// proofs; a call published by whoever reaches the bus without them (a
// forged identity, no proof or a bad one), a genuine call replayed, and
// a call from a node with other credentials are answered refused, and
// none of them runs.
func TestCallsProof(t *testing.T) {
	ns := natstest.RunServer(t)
	_, creds, err := cluster.NewCreds()
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := cluster.NewCreds()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan cluster.Call, 10)
	serve := func(ctx context.Context, c cluster.Call) cluster.Answer {
		got <- c
		return cluster.Answer{Body: []byte("secret of " + c.Agent)}
	}
	start := func(id string, cr *cluster.Creds) *cluster.Calls {
		c, err := cluster.ServeCalls(cluster.CallsConfig{Conn: ns.Connect(t), NodeID: id, Serve: serve, Proof: cr.Proof()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	start("a", creds)
	b, stranger := start("b", creds), start("c", other)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// A spy on a's subject sees the genuine call b makes.
	raw := ns.Connect(t)
	spied, err := raw.SubscribeSync("hubd.node.a")
	if err != nil {
		t.Fatal(err)
	}
	raw.Flush()
	ans, err := b.Call(ctx, "a", cluster.Call{Method: "/get", Agent: "alice", Body: []byte("q")})
	if err != nil || string(ans.Body) != "secret of alice" {
		t.Fatalf("a call between nodes with the same credentials: %q, %v", ans.Body, err)
	}
	if c := <-got; c.Agent != "alice" || c.From != "b" {
		t.Fatalf("served %+v", c)
	}
	genuine, err := spied.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}

	refused := func(what string, m *nats.Msg, want string) {
		t.Helper()
		inbox := nats.NewInbox()
		if m.Reply != "" {
			inbox = m.Reply // the replay keeps the genuine reply subject
		}
		sub, err := raw.SubscribeSync(inbox)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		m.Reply = inbox
		if err := raw.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
		r, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("%s: no answer: %v", what, err)
		}
		if why := r.Header.Get("Hubd-Refused"); !strings.Contains(why, want) || len(r.Data) != 0 {
			t.Errorf("%s: answered %q (refused %q), want refused saying %q", what, r.Data, why, want)
		}
		if len(got) != 0 {
			t.Errorf("%s: served %+v", what, <-got)
		}
	}
	forged := func(proof string) *nats.Msg {
		m := nats.NewMsg("hubd.node.a")
		m.Header.Set("Hubd-Part", "0/1")
		m.Header.Set("Hubd-Method", "/get")
		m.Header.Set("Hubd-Agent", "alice")
		m.Header.Set("Hubd-Operator", "1")
		if proof != "" {
			m.Header.Set("Hubd-Proof", proof)
		}
		m.Data = []byte("q")
		return m
	}
	refused("a forged call with no proof", forged(""), "no Hubd-Proof header")
	refused("a forged call with a made-up proof", forged("v1 1 0123456789abcdef0123456789abcdef AAAA"), "signature does not match")
	lifted := forged(genuine.Header.Get("Hubd-Proof"))
	lifted.Header.Set("Hubd-From", "b")
	refused("a forged call with a genuine call's proof", lifted, "signature does not match")
	replay := nats.NewMsg(genuine.Subject)
	replay.Header, replay.Data, replay.Reply = genuine.Header, genuine.Data, genuine.Reply
	refused("a genuine call replayed", replay, "seen before (a replay)")

	// A call whose reply subject is not an inbox gets no answer at all: a
	// node publishes nothing where the caller points it (a partition
	// stream, the JetStream API) but to an inbox.
	reflected, err := raw.SubscribeSync("$JS.API.STREAM.DELETE.HUB_P00")
	if err != nil {
		t.Fatal(err)
	}
	aimed := forged("")
	aimed.Reply = "$JS.API.STREAM.DELETE.HUB_P00"
	if err := raw.PublishMsg(aimed); err != nil {
		t.Fatal(err)
	}
	refused("a forged call after one aimed at the JetStream API", forged(""), "no Hubd-Proof header")
	// What node a published before that refusal has reached raw by now.
	if n, _, _ := reflected.Pending(); n != 0 {
		m, _ := reflected.NextMsg(time.Second)
		t.Errorf("node a published on %s: %v", m.Subject, m.Header)
	}

	if _, err := stranger.Call(ctx, "a", cluster.Call{Method: "/get", Agent: "alice"}); !errors.Is(err, cluster.ErrNoProof) {
		t.Errorf("a call from a node with other credentials: %v, want ErrNoProof", err)
	}
	if len(got) != 0 {
		t.Errorf("served %+v", <-got)
	}
	// And b still calls a.
	if ans, err := b.Call(ctx, "a", cluster.Call{Method: "/get", Agent: "bob"}); err != nil || string(ans.Body) != "secret of bob" {
		t.Fatalf("a call after the refusals: %q, %v", ans.Body, err)
	}
	<-got
}
