package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hubd/hubd/internal/cluster"
	"github.com/hubd/hubd/internal/natstest"
	"github.com/hubd/hubd/wal/jetstream"
)

// logNode is a node as the hub will wire it: leases drive which partitions
// its log may write, and a new lease hydrates the partition first.
type logNode struct {
	id     string
	log    *jetstream.Log
	leases *cluster.Leases
	lconn  *nats.Conn // the leases' connection

	mu       sync.Mutex
	sessions map[[16]byte]uint64 // what its hydrates found: session → last seq
}

func startLogNode(t *testing.T, c *natstest.Cluster, id string, p int) *logNode {
	t.Helper()
	n := &logNode{id: id, sessions: map[[16]byte]uint64{}}
	l, err := jetstream.Open(context.Background(), jetstream.Options{Conn: c.Connect(t), Partitions: p, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	n.log = l
	n.lconn = c.Connect(t)
	n.leases, err = cluster.StartLeases(context.Background(), cluster.LeaseConfig{
		Conn: n.lconn, NodeID: id, Partitions: p, TTL: time.Second, Replicas: 1,
		OnAcquire: func(ctx context.Context, k int, epoch uint64) {
			_, err := l.Hydrate(ctx, k, jetstream.Visitor{Record: func(s [16]byte, seq uint64, _ []byte) error {
				n.mu.Lock()
				n.sessions[s] = seq
				n.mu.Unlock()
				return nil
			}})
			if err != nil {
				t.Errorf("%s: hydrating partition %d: %v", id, k, err)
				return
			}
			l.Own(k) // serve only once hydrated
		},
		OnLose: l.Disown, // at once
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.leases.Close(context.Background()) })
	return n
}

func (n *logNode) last(s [16]byte) uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sessions[s]
}

func TestLeasesDriveLog(t *testing.T) {
	c := natstest.RunServer(t)
	a := startLogNode(t, c, "a", 2)
	waitFor(t, "a owns both", 5*time.Second, func() bool { return a.log.Owns(0) && a.log.Owns(1) })
	s := [16]byte{1, 2, 3}
	k := a.log.PartitionOf(s)
	write := func(n *logNode, seq uint64) error {
		w := jetstream.Write{Session: s, Records: []jetstream.Record{{Seq: seq, Data: fmt.Appendf(nil, "r-%d", seq)}}}
		if seq == 1 {
			w.Meta = []byte("meta")
		}
		return n.log.Append(context.Background(), w)
	}
	for seq := uint64(1); seq <= 3; seq++ {
		if err := write(a, seq); err != nil {
			t.Fatal(err)
		}
	}

	// b joins: one partition each.
	b := startLogNode(t, c, "b", 2)
	waitFor(t, "one partition each", 5*time.Second, func() bool {
		return a.log.Owns(0) != a.log.Owns(1) && b.log.Owns(0) != b.log.Owns(1) && a.log.Owns(0) != b.log.Owns(0)
	})
	owner, other := a, b
	if b.log.Owns(k) {
		owner, other = b, a
	}
	if err := write(other, 4); !errors.Is(err, jetstream.ErrNotOwner) {
		t.Fatalf("append by the node without the lease = %v, want ErrNotOwner", err)
	}
	if owner == b && b.last(s) != 3 {
		t.Fatalf("b hydrated seq %d of the session, want 3", b.last(s))
	}
	if err := write(owner, 4); err != nil {
		t.Fatal(err)
	}

	// The owner's leases stop (their connection dies; its log's lives
	// on): it stops writing as soon as a renewal fails; the other takes
	// the partition over once the lease expires, hydrates and continues
	// the session.
	owner.lconn.Close()
	waitFor(t, "the owner drops the partition", 2*time.Second, func() bool { return !owner.log.Owns(k) })
	if err := write(owner, 5); !errors.Is(err, jetstream.ErrNotOwner) {
		t.Fatalf("append by the deposed owner = %v, want ErrNotOwner", err)
	}
	took := waitFor(t, "the other takes over", 5*time.Second, func() bool { return other.log.Owns(k) })
	t.Logf("%s took partition %d over %v after %s's renewals stopped", other.id, k, took.Round(time.Millisecond), owner.id)
	if other.last(s) != 4 {
		t.Fatalf("%s hydrated seq %d of the session, want 4", other.id, other.last(s))
	}
	if err := write(other, 5); err != nil {
		t.Fatalf("append after the takeover: %v", err)
	}
}
