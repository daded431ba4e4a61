package cluster

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"

	"github.com/google/uuid"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal/jetstream"
)

// Placement: where a session is served. A tree lives in the partition of
// its root (wal/jetstream.Partition); a new root is drawn where it is
// asked for (newRootID), an open with a key where the key lands
// (keyedRootID); and the hub asks route who serves a session it does
// not hold.

// route answers for a session the hub does not hold: where its partition
// is served.
func (n *Node) route(ctx context.Context, id session.ID) error {
	k, found, err := n.log.Locate(ctx, id)
	switch {
	case err != nil:
		return fmt.Errorf("session %v: locating its partition: %v: %w", id, err, hub.ErrSessionFailed)
	case !found:
		return nil
	}
	if o, ok := n.leases.Owner(k); ok && o.NodeID == n.cfg.NodeID {
		if _, gone, err := n.log.Tombstone(ctx, id); err == nil && gone {
			return nil // deleted (the log knew it from before): the hub answers why
		}
		// Ours, being loaded: NOT_OWNER with no address, "retry shortly".
		return &hub.NotOwnerError{Session: id.String(), Partition: k,
			Why: fmt.Sprintf("session %v: partition %d is being loaded on this node; retry shortly", id, k)}
	}
	return n.notOwner(id, k)
}

// notOwner is NOT_OWNER for session id in partition k (-1: unknown).
func (n *Node) notOwner(id session.ID, k int) *hub.NotOwnerError {
	e := &hub.NotOwnerError{Session: id.String(), Partition: k}
	if k < 0 || n.leases == nil {
		return e
	}
	if o, ok := n.leases.Owner(k); ok && o.NodeID != n.cfg.NodeID {
		e.Node, e.Addr = o.NodeID, o.Addr
	}
	return e
}

// newRootIDTries bounds the ids drawn for a new root: with h of P
// partitions served, one lands in them with probability h/P.
const newRootIDTries = 1 << 16

// newRootID draws UUIDv7s until one's tree lands in a partition this node
// serves: a new root session is opened where it is asked. An open with a
// key (an idempotency or thread key: hub.Config.NewRootID) lands in the
// key's own partition, so that its retries and the next sessions of its
// thread are found by the one node that serves it: when that is not this
// node, the open is answered NOT_OWNER with the owner's address.
func (n *Node) newRootID(key string) (uuid.UUID, error) {
	if key != "" {
		return n.keyedRootID(key)
	}
	any := false
	for k := range n.serving {
		any = any || n.serving[k].Load()
	}
	if any {
		for range newRootIDTries {
			id := uuid.Must(uuid.NewV7())
			if k := n.log.PartitionOf(id); n.serving[k].Load() && n.leases.Holds(k) {
				return id, nil
			}
		}
	}
	e := &hub.NotOwnerError{Partition: -1, Why: "node " + n.cfg.NodeID + " serves no partition at the moment"}
	owners := n.leases.Owners()
	for _, k := range slices.Sorted(maps.Keys(owners)) {
		if o := owners[k]; o.NodeID != n.cfg.NodeID && o.Addr != "" {
			e.Node, e.Addr = o.NodeID, o.Addr
			break
		}
	}
	return uuid.UUID{}, e
}

// keyedRootID draws an id in the partition of key, if this node serves it.
func (n *Node) keyedRootID(key string) (uuid.UUID, error) {
	k := keyPartition(key, len(n.serving))
	if n.serving[k].Load() && n.leases.Holds(k) {
		for range newRootIDTries {
			if id := uuid.Must(uuid.NewV7()); n.log.PartitionOf(id) == k {
				return id, nil
			}
		}
	}
	e := n.notOwner(session.ID{}, k)
	e.Session, e.Why = "", fmt.Sprintf("an open with this key is served by the node of partition %d", k)
	if o, ok := n.leases.Owner(k); ok && o.NodeID == n.cfg.NodeID {
		e.Why = fmt.Sprintf("an open with this key is served by partition %d, being loaded on this node; retry shortly", k)
	}
	return uuid.UUID{}, e
}

// keyPartition is the partition of an open's key: the partition a root
// whose id had the key's hash as its bytes would be in.
func keyPartition(key string, partitions int) int {
	sum := sha256.Sum256([]byte(key))
	return jetstream.Partition([16]byte(sum[:16]), partitions)
}
