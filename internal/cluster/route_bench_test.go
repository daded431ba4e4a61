package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/internal/cluster/bus"
	"github.com/hubd/hubd/internal/natstest"
	"github.com/hubd/hubd/session"
)

// BenchmarkClusterRouting measures what routing costs, as ratios within
// one run: a Send and a GetSession sent to the session's owner and the
// same through the other node (forwarded to the owner's node service), and
// ListSessions gathered from two nodes against the same listing from one
// node that serves every partition (before the second node joins).
//
//	go test ./internal/cluster -run '^$' -bench BenchmarkClusterRouting -benchtime 2000x
func BenchmarkClusterRouting(b *testing.B) {
	c := natstest.RunServer(b)
	one := startClusterNode(b, c, "a")
	waitBench(b, func() bool { return len(one.Served()) == 4 })
	ca := rawClient(b, one.Addr())
	parts := []*hubpb.Participant{{Name: "alice"}, {Name: "bob", AutoAccept: true}}
	var ids []string
	for i := range 40 {
		resp, err := ca.Open(as("alice"), &hubpb.OpenRequest{Type: "conversation@1", Participants: parts, Labels: map[string]string{"i": fmt.Sprint(i)}})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, resp.GetSession().GetMeta().GetSessionId())
	}
	list := func(name string, cl func() error) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := cl(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	list("ListSessions/one-node", func() error {
		_, err := ca.ListSessions(as("alice"), &hubpb.ListSessionsRequest{})
		return err
	})
	two := startClusterNode(b, c, "b")
	waitBench(b, func() bool { return len(one.Served()) == 2 && len(two.Served()) == 2 })
	cb := rawClient(b, two.Addr())
	list("ListSessions/gathered", func() error {
		resp, err := ca.ListSessions(as("alice"), &hubpb.ListSessionsRequest{})
		if err == nil && len(resp.GetSessions()) != len(ids) {
			err = fmt.Errorf("%d sessions listed, want %d", len(resp.GetSessions()), len(ids))
		}
		return err
	})
	var onA string
	for _, id := range ids {
		if slices.Contains(one.Served(), one.PartitionOf(session.MustParseID(id))) {
			onA = id
		}
	}
	for _, via := range []struct {
		name string
		cl   hubsvc.HubClient
	}{{"owner", ca}, {"forwarded", cb}} {
		n := 0
		list("Send/"+via.name, func() error {
			n++
			_, err := via.cl.Send(as("alice"), &hubpb.SendRequest{SessionId: onA, Envelope: &hubpb.Envelope{Type: session.EventText,
				Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: fmt.Sprint(via.name, n)}}}})
			return err
		})
		list("GetSession/"+via.name, func() error {
			_, err := via.cl.GetSession(as("alice"), &hubpb.GetSessionRequest{SessionId: onA})
			return err
		})
	}
}

func waitBench(b *testing.B, ok func() bool) {
	b.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			b.Fatal("partitions not spread")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkNodeCall measures one call between nodes: a GetSession (a
// reply of about 300 bytes) on a node's node service, as another node
// makes it, with the cluster's credentials (mutual TLS) and without
// (plain gRPC), beside the same call on the node's clients' address.
//
//	go test ./internal/cluster -run '^$' -bench BenchmarkNodeCall -benchtime 3000x
func BenchmarkNodeCall(b *testing.B) {
	_, creds, err := bus.NewCreds()
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		creds *bus.Creds
	}{{"plain", nil}, {"mtls", creds}} {
		b.Run(tc.name, func(b *testing.B) {
			var opts []natstest.Option
			if tc.creds != nil {
				opts = append(opts, natstest.WithCreds(tc.creds))
			}
			c := natstest.RunServer(b, opts...)
			a := startClusterNode(b, c, "a", withCreds(tc.creds))
			waitBench(b, func() bool { return len(a.Served()) == 4 })
			resp, err := rawClient(b, a.Addr()).Open(as("alice"), &hubpb.OpenRequest{Type: "conversation@1",
				Participants: []*hubpb.Participant{{Name: "alice"}, {Name: "bob", AutoAccept: true}}})
			if err != nil {
				b.Fatal(err)
			}
			req := &hubpb.GetSessionRequest{SessionId: resp.GetSession().GetMeta().GetSessionId()}
			for _, via := range []struct {
				name string
				cl   hubsvc.HubClient
				ctx  context.Context
			}{{"client", rawClient(b, a.Addr()), as("alice")}, {"node", nodeClient(b, a, tc.creds), asNode("alice")}} {
				b.Run(via.name, func(b *testing.B) {
					for b.Loop() {
						if _, err := via.cl.GetSession(via.ctx, req); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
