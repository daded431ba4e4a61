package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/natstest"
	"github.com/hubd/hubd/session"
)

// TestClusterLoadQuarantinesDamaged: a partition stream holds a record
// whose frame fails its checksum (one session's), and a record of a
// session that has no metadata; the node that takes the partition over
// quarantines those two sessions and serves the partition's others:
// they answer and take writes, the damaged ones answer QUARANTINED.
func TestClusterLoadQuarantinesDamaged(t *testing.T) {
	if testing.Short() {
		t.Skip("a NATS server and two nodes")
	}
	c := natstest.RunServer(t)
	a := startClusterNode(t, c, "a")
	waitUntil(t, "a serves every partition", 10*time.Second, func() bool { return len(a.Served()) == 4 })
	ca := rawClient(t, a.Addr())
	parts := []*hubpb.Participant{{Name: "alice"}, {Name: "bob", AutoAccept: true}}
	// Sessions until two share a partition: the damaged one and its
	// sibling, which must go on serving.
	byPart := map[int]string{}
	var damaged, sibling string
	var others []string
	for damaged == "" {
		resp, err := ca.Open(as("alice"), &hubpb.OpenRequest{Type: "conversation@1", Participants: parts})
		if err != nil {
			t.Fatal(err)
		}
		id := resp.GetSession().GetMeta().GetSessionId()
		if _, err := sendText(t, ca, "alice", id, "one"); err != nil {
			t.Fatal(err)
		}
		k := a.PartitionOf(session.MustParseID(id))
		if prev, ok := byPart[k]; ok {
			damaged, sibling = id, prev
		} else {
			byPart[k] = id
			others = append(others, id)
		}
	}
	k := a.PartitionOf(session.MustParseID(damaged))
	// A session of the same partition with a record and no metadata.
	ghost := uuid.Must(uuid.NewV7())
	for a.PartitionOf(session.ID(ghost)) != k {
		ghost = uuid.Must(uuid.NewV7())
	}

	js, err := c.Connect(t).JetStream()
	if err != nil {
		t.Fatal(err)
	}
	publish := func(id string, seq int, payload []byte) {
		t.Helper()
		m := nats.NewMsg(fmt.Sprintf("hub.p%d.s.%s", k, id))
		m.Header.Set("Nats-Msg-Id", fmt.Sprintf("%s/%d", id, seq))
		m.Data = payload
		if _, err := js.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	// Frame version 1, a checksum of zeros, some data: seq 4 of the
	// damaged session (after invite, open, "one").
	publish(damaged, 4, []byte{1, 0, 0, 0, 0, 'x'})
	publish(ghost.String(), 1, []byte{1, 0, 0, 0, 0, 'x'})

	// a leaves; b takes every partition over, the damaged one included.
	a.Shutdown(context.Background())
	b := startClusterNode(t, c, "b")
	waitUntil(t, "b serves every partition", 20*time.Second, func() bool { return len(b.Served()) == 4 })
	cb := rawClient(t, b.Addr())
	for _, id := range append(others, sibling) {
		resp, err := sendText(t, cb, "bob", id, "two")
		if err != nil || resp.GetSeq() != 4 { // invite, open, one, two
			t.Fatalf("send to %s on b after the load: seq %d, %v; want seq 4", id, resp.GetSeq(), err)
		}
	}
	for _, id := range []string{damaged, ghost.String()} {
		_, err := cb.GetSession(as("alice"), &hubpb.GetSessionRequest{SessionId: id})
		if status.Code(err) != codes.DataLoss || errorInfo(t, err).GetReason() != "QUARANTINED" {
			t.Fatalf("GetSession(%s) on b: %v, want DATA_LOSS QUARANTINED", id, err)
		}
		if _, err := sendText(t, cb, "alice", id, "two"); errorInfo(t, err).GetReason() != "QUARANTINED" {
			t.Fatalf("send to %s on b: %v, want QUARANTINED", id, err)
		}
	}
}
