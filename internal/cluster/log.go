package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal/jetstream"
)

// jsLog adapts a wal/jetstream log to the hub's Log interface: Append
// converts its types and gives the log's ownership refusals their hub
// meaning (NOT_OWNER, with the owner's address); Scan, ScanRange and
// Metas are the log's own (any node reads any partition).
type jsLog struct {
	*jetstream.Log
	n *Node
}

func (j jsLog) Append(ctx context.Context, writes ...hub.LogWrite) error {
	ws := make([]jetstream.Write, len(writes))
	for i, x := range writes {
		recs := make([]jetstream.Record, len(x.Records))
		for r, rec := range x.Records {
			recs[r] = jetstream.Record{Seq: rec.Seq, Data: rec.Data}
		}
		ws[i] = jetstream.Write{Session: x.Session, Meta: x.Meta, Records: recs}
	}
	err := j.Log.Append(ctx, ws...)
	if err == nil || len(writes) == 0 {
		return err
	}
	return j.n.appendErr(ctx, writes[0], err)
}

// rootOf is the log's Options.Root: a session's tree root from its stored
// metadata (root_session_id; the session itself for a root).
func rootOf(id [16]byte, meta []byte) ([16]byte, error) {
	m, err := session.UnmarshalMeta(meta)
	if err != nil {
		return id, err
	}
	r := m.GetRootSessionId()
	if r == "" {
		return id, nil
	}
	root, err := session.ParseID(r)
	if err != nil {
		return id, fmt.Errorf("root_session_id %q: %w", r, err)
	}
	return root, nil
}

// appendErr maps an append's error: ErrNotOwner (the partition is not
// this node's) and ErrFenced once the lease is gone become a
// *hub.NotOwnerError naming the owner; ErrFenced while the lease is still
// held (a deposed owner's write landed first) stays an error that makes
// the hub reload the session from the log before its next change.
func (n *Node) appendErr(ctx context.Context, w hub.LogWrite, err error) error {
	fenced := errors.Is(err, jetstream.ErrFenced)
	if !fenced && !errors.Is(err, jetstream.ErrNotOwner) {
		return err
	}
	k := -1
	if w.Meta != nil {
		if root, rerr := rootOf(w.Session, w.Meta); rerr == nil {
			k = n.log.PartitionOf(root)
		}
	} else if p, found, lerr := n.log.Locate(ctx, w.Session); lerr == nil && found {
		k = p
	}
	if fenced {
		n.fenced.Add(1)
		if k >= 0 && n.leases.Holds(k) {
			return err
		}
	}
	ne := n.notOwner(session.ID(w.Session), k)
	ne.Why = fmt.Sprintf("the log refused the write of session %s (%v)", session.ID(w.Session), err)
	return ne
}

// A cluster node's hub keeps every session of its partitions in memory
// (hub.Config.Partitioned: nothing leaves memory when it ends, and
// listings, children and keys are read from memory), so the JetStream log
// keeps no index of its own: it answers as a log that holds none.

// Meta returns nil: an ended session is never loaded from the log.
func (jsLog) Meta(context.Context, [16]byte) ([]byte, error) { return nil, nil }

// MetasFrom lists nothing (listings come from memory).
func (jsLog) MetasFrom(context.Context, [16]byte, func([16]byte, []byte) error) error { return nil }

// IndexGet finds nothing.
func (jsLog) IndexGet(context.Context, []byte) ([]byte, bool, error) { return nil, false, nil }

// IndexScan lists nothing.
func (jsLog) IndexScan(context.Context, []byte, []byte, func(key, value []byte) error) error {
	return nil
}

// PutIndex keeps nothing.
func (jsLog) PutIndex(context.Context, []hub.IndexEntry) error { return nil }

// DeleteSessions removes purged sessions from their partition streams,
// each leaving its tombstone (wal/jetstream Delete); the hub's index keys
// of ds are memory here.
func (j jsLog) DeleteSessions(ctx context.Context, ds []hub.Deletion) error {
	return j.delete(ctx, ds, false)
}

// EraseSessions is DeleteSessions with every message of the sessions
// overwritten in the streams' files first.
func (j jsLog) EraseSessions(ctx context.Context, ds []hub.Deletion) error {
	return j.delete(ctx, ds, true)
}

func (j jsLog) delete(ctx context.Context, ds []hub.Deletion, erase bool) error {
	out := make([]jetstream.Deletion, len(ds))
	for i, d := range ds {
		t, err := json.Marshal(tombstone(d.Tombstone))
		if err != nil {
			return err
		}
		out[i] = jetstream.Deletion{Session: d.Session, Tombstone: t, Erase: erase}
	}
	for i, d := range out {
		err := j.Log.Delete(ctx, out[i:i+1])
		switch {
		case errors.Is(err, jetstream.ErrDenied):
			return fmt.Errorf("%v: %w", err, session.ErrBadTransition)
		case errors.Is(err, jetstream.ErrNotOwner):
			k := -1
			if p, found, lerr := j.Log.Locate(ctx, d.Session); lerr == nil && found {
				k = p
			}
			ne := j.n.notOwner(session.ID(d.Session), k)
			ne.Why = fmt.Sprintf("the log refused to delete session %s (%v)", session.ID(d.Session), err)
			return ne
		case err != nil:
			return err
		}
	}
	return nil
}

// Gone returns a deleted session's tombstone, from any node.
func (j jsLog) Gone(ctx context.Context, id [16]byte) (hub.Tombstone, bool, error) {
	data, ok, err := j.Log.Tombstone(ctx, id)
	if err != nil || !ok {
		return hub.Tombstone{}, false, err
	}
	var t tombstone
	if err := json.Unmarshal(data, &t); err != nil {
		return hub.Tombstone{}, false, fmt.Errorf("session %v: its tombstone does not decode: %v: %w", session.ID(id), err, session.ErrCorrupt)
	}
	return hub.Tombstone(t), true, nil
}

// tombstone is the JSON form of a hub.Tombstone in a partition stream.
type tombstone struct {
	Kind    hub.GoneKind `json:"kind"`
	At      time.Time    `json:"at"`
	Archive string       `json:"archive,omitempty"`
	By      string       `json:"by,omitempty"`
	Reason  string       `json:"reason,omitempty"`
}
