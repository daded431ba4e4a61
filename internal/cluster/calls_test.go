package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

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
