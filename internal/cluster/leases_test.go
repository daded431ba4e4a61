package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hubd/hubd/internal/cluster"
	"github.com/hubd/hubd/internal/natstest"
)

const ttl = 1500 * time.Millisecond

// node is one Leases under test, with what its callbacks saw.
type node struct {
	id string
	nc *nats.Conn
	l  *cluster.Leases

	mu     sync.Mutex
	serves map[int]uint64 // partition → epoch, between OnAcquire and OnLose
	log    []string
	lost   map[int]time.Time
}

func startNode(t *testing.T, nc *nats.Conn, id string, p, replicas int) *node {
	t.Helper()
	n := &node{id: id, nc: nc, serves: map[int]uint64{}, lost: map[int]time.Time{}}
	l, err := cluster.StartLeases(context.Background(), cluster.LeaseConfig{
		Conn: nc, NodeID: id, Addr: id + ":7000", Partitions: p, TTL: ttl, Replicas: replicas,
		OnAcquire: func(ctx context.Context, k int, epoch uint64) {
			n.mu.Lock()
			defer n.mu.Unlock()
			if _, dup := n.serves[k]; dup {
				t.Errorf("%s: OnAcquire(%d) while serving it", id, k)
			}
			n.serves[k] = epoch
			n.log = append(n.log, fmt.Sprintf("+%d", k))
		},
		OnLose: func(k int) {
			n.mu.Lock()
			defer n.mu.Unlock()
			if _, ok := n.serves[k]; !ok {
				t.Errorf("%s: OnLose(%d) while not serving it", id, k)
			}
			delete(n.serves, k)
			n.lost[k] = time.Now()
			n.log = append(n.log, fmt.Sprintf("-%d", k))
		},
	})
	if err != nil {
		t.Fatalf("Start %s: %v", id, err)
	}
	n.l = l
	t.Cleanup(func() { l.Close(context.Background()) })
	return n
}

// serving returns the partitions n's callbacks say it serves.
func (n *node) serving() []int {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []int
	for k := range n.serves {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		<-tick.C
	}
	return time.Since(start)
}

// spread reports whether nodes serve every partition once, each between
// lo and hi of them, and hold exactly what they serve.
func spread(p, lo, hi int, nodes ...*node) bool {
	seen := map[int]bool{}
	for _, n := range nodes {
		s := n.serving()
		if len(s) < lo || len(s) > hi || !slices.Equal(s, n.l.Held()) {
			return false
		}
		for _, k := range s {
			if seen[k] {
				return false
			}
			seen[k] = true
		}
	}
	return len(seen) == p
}

func TestSingleNode(t *testing.T) {
	c := natstest.RunServer(t)
	nc := c.Connect(t)
	a := startNode(t, nc, "a", 4, 1)
	waitFor(t, "a holds all", 5*ttl, func() bool { return spread(4, 4, 4, a) })
	// A lease just created reads epoch 0 until its first renewal writes it.
	waitFor(t, "every lease renewed once", 5*ttl, func() bool {
		for k := range 4 {
			if o, _ := a.l.Owner(k); o.Epoch == 0 {
				return false
			}
		}
		return true
	})
	for k := range 4 {
		o, ok := a.l.Owner(k)
		if !ok || o.NodeID != "a" || o.Addr != "a:7000" || o.Epoch == 0 || o.Revision <= o.Epoch {
			t.Errorf("Owner(%d) = %+v, %v", k, o, ok)
		}
	}
	if err := a.l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := a.serving(); len(got) != 0 || len(a.l.Held()) != 0 {
		t.Fatalf("after Close a serves %v", got)
	}
	b := startNode(t, nc, "b", 4, 1)
	took := waitFor(t, "b holds all after a's release", 5*ttl, func() bool { return spread(4, 4, 4, b) })
	t.Logf("b took 4 released partitions in %v", took.Round(time.Millisecond))
	if err := a.l.Close(context.Background()); err != cluster.ErrClosed {
		t.Errorf("second Close = %v", err)
	}
}

// TestLeases runs three nodes on a three-server cluster through spread,
// renewal, release, rejoin and the loss of a node.
func TestLeases(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-server cluster: skipped with -short")
	}
	const p = 6
	c := natstest.RunCluster(t, 3)
	nodes := []*node{
		startNode(t, c.Connect(t, 0), "a", p, 3),
		startNode(t, c.Connect(t, 1), "b", p, 3),
		startNode(t, c.Connect(t, 2), "c", p, 3),
	}
	a, b, cc := nodes[0], nodes[1], nodes[2]
	took := waitFor(t, "spread 2/2/2", 10*ttl, func() bool { return spread(p, 2, 2, a, b, cc) })
	t.Logf("spread over three nodes in %v: a %v, b %v, c %v", took.Round(time.Millisecond), a.serving(), b.serving(), cc.serving())
	if len(a.l.Nodes()) != 3 {
		t.Errorf("live nodes %v", a.l.Nodes())
	}

	// Renewal: every lease is renewed several times; nothing moves.
	before := a.l.Owners()
	waitFor(t, "three renewals", 5*ttl, func() bool {
		now := a.l.Owners()
		for k, o := range before {
			if now[k].Revision < o.Revision+3 {
				return false
			}
		}
		return len(now) == p
	})
	for k, o := range a.l.Owners() {
		// A lease just created reads epoch 0 until its first renewal
		// writes the epoch (its creation's revision): not a move.
		if o.NodeID != before[k].NodeID || (before[k].Epoch != 0 && o.Epoch != before[k].Epoch) {
			t.Errorf("partition %d moved during renewals: %+v → %+v", k, before[k], o)
		}
		if !slices.Contains(nodeByID(nodes, o.NodeID).l.Held(), k) {
			t.Errorf("partition %d: table says %s, which does not hold it", k, o.NodeID)
		}
	}

	// Voluntary release: c leaves; a and b take its partitions well under
	// a lease.
	released := time.Now()
	if err := cc.l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	took = waitFor(t, "spread 3/3 after c's release", 3*ttl, func() bool { return spread(p, 3, 3, a, b) })
	t.Logf("c released; a and b serve everything %v later (lease %v)", took.Round(time.Millisecond), ttl)
	if took > ttl {
		t.Errorf("release took %v, more than a lease", took)
	}
	_ = released

	// Rejoin: c comes back; a and b hand it two partitions.
	cc = startNode(t, c.Connect(t, 2), "c", p, 3)
	took = waitFor(t, "spread 2/2/2 again", 10*ttl, func() bool { return spread(p, 2, 2, a, b, cc) })
	t.Logf("c rejoined; back to 2/2/2 in %v", took.Round(time.Millisecond))

	// Loss: c's connection dies (a crash, from the cluster's side). c
	// drops its partitions when renewal fails; a and b take them over
	// once the leases expire, with greater epochs.
	epochs := map[int]uint64{}
	for k, o := range a.l.Owners() {
		epochs[k] = o.Epoch
	}
	gone := cc.serving()
	lost := time.Now()
	cc.nc.Close()
	took = waitFor(t, "takeover of c's partitions", 6*ttl, func() bool { return spread(p, 3, 3, a, b) })
	waitFor(t, "c dropped its partitions", 2*ttl, func() bool { return len(cc.serving()) == 0 && len(cc.l.Held()) == 0 })
	t.Logf("c lost; its partitions %v served by a and b %v later (lease %v)", gone, took.Round(time.Millisecond), ttl)
	for _, k := range gone {
		// The epoch the new owner was handed (the table shows a lease
		// just created with epoch 0 until its first renewal writes it).
		var epoch uint64
		for _, n := range []*node{a, b} {
			n.mu.Lock()
			if e, ok := n.serves[k]; ok {
				epoch = e
			}
			n.mu.Unlock()
		}
		if epoch <= epochs[k] {
			t.Errorf("partition %d: epoch %d at takeover, was %d", k, epoch, epochs[k])
		}
		cc.mu.Lock()
		at := cc.lost[k]
		cc.mu.Unlock()
		if d := at.Sub(lost); d > ttl {
			t.Errorf("c dropped partition %d %v after its connection died, more than a lease", k, d)
		}
	}
}

func nodeByID(nodes []*node, id string) *node {
	for _, n := range nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}
