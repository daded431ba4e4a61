package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hubd/hubd/internal/cluster"
	"github.com/hubd/hubd/internal/natstest"
)

// BenchmarkCalls is one call's round trip between two nodes on a real
// NATS server (in this process): a small echo, unsigned and proven
// (cluster.NodeProof on the call and its answer).
//
//	go test ./internal/cluster -run '^$' -bench BenchmarkCalls -benchtime 5000x
func BenchmarkCalls(b *testing.B) {
	_, creds, err := cluster.NewCreds()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("unsigned", func(b *testing.B) { benchCalls(b, nil) })
	b.Run("proven", func(b *testing.B) { benchCalls(b, creds) })
}

func benchCalls(b *testing.B, creds *cluster.Creds) {
	ns := natstest.RunServer(b)
	serve := func(_ context.Context, c cluster.Call) cluster.Answer { return cluster.Answer{Body: c.Body} }
	a, err := cluster.ServeCalls(cluster.CallsConfig{Conn: ns.Connect(b), NodeID: "a", Serve: serve, Proof: creds.Proof()})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	c, err := cluster.ServeCalls(cluster.CallsConfig{Conn: ns.Connect(b), NodeID: "c", Serve: serve, Proof: creds.Proof()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	body := make([]byte, 256)
	for b.Loop() {
		if _, err := c.Call(context.Background(), "a", cluster.Call{Method: "/echo", Agent: "alice", Body: body}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNATSRequest is the baseline: a plain NATS request and reply of
// the same size on the same server.
func BenchmarkNATSRequest(b *testing.B) {
	ns := natstest.RunServer(b)
	nc1, nc2 := ns.Connect(b), ns.Connect(b)
	sub, err := nc1.Subscribe("echo", func(m *nats.Msg) { m.Respond(m.Data) })
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	nc1.Flush()
	body := make([]byte, 256)
	for b.Loop() {
		if _, err := nc2.Request("echo", body, time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
