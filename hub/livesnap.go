package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/hubd/hubd/session"
)

// The live snapshot makes start-up independent of how many sessions have
// ended. The index marks the live sessions with 'L' keys, deleted when a
// session ends; badger keeps each deletion as a tombstone in the key
// range until compaction reaches its last level, so a scan of the 'L'
// range steps over one tombstone per ended session (at a million ended
// sessions, most of a start-up). A clean Close therefore writes the live
// set under one key:
//
//	'S' → "live1" | cutoff (16 bytes) | the live ids, 16 bytes each
//
// and hydrate checks it instead of scanning: each id it names is looked
// up (still live?), and the 'L' range is scanned only past the cutoff, for
// sessions opened after the snapshot. The cutoff is the newest id the hub
// had made or held live; ids are made increasing across restarts (a new
// id not above the newest one known, as after the wall clock was set
// back, is moved 1 ms past it), so every session opened after the
// snapshot lies past its cutoff. The snapshot is never trusted, only used
// as a starting point: a crash after it leaves it stale, and it still
// gives the live set exactly (the tail scan is then longer). It serves
// only hubs whose ids are UUIDv7s (the default Config.NewID): with other
// ids, their order says nothing of when they were made, and hydrate
// scans. (A hub of an older version ignores the snapshot; one run of it
// with the clock set back, then this one, could miss the sessions it
// opened: do not downgrade across a clock step.)
const (
	ixSnapshot    byte = 'S'
	liveSnapMagic      = "live1"
)

func snapshotKey() []byte { return []byte{ixSnapshot} }

// errBadSnapshot: the snapshot does not decode (hydrate then scans).
var errBadSnapshot = errors.New("hub: the live snapshot does not decode")

func encodeLiveSnap(cutoff session.ID, ids []session.ID) []byte {
	b := make([]byte, 0, len(liveSnapMagic)+16*(len(ids)+1))
	b = append(append(b, liveSnapMagic...), cutoff[:]...)
	for _, id := range ids {
		b = append(b, id[:]...)
	}
	return b
}

func decodeLiveSnap(b []byte) (cutoff session.ID, ids []session.ID, err error) {
	rest, ok := bytes.CutPrefix(b, []byte(liveSnapMagic))
	if !ok || len(rest) < 16 || len(rest)%16 != 0 {
		return cutoff, nil, errBadSnapshot
	}
	cutoff = session.ID(rest[:16])
	for rest = rest[16:]; len(rest) > 0; rest = rest[16:] {
		ids = append(ids, session.ID(rest[:16]))
	}
	return cutoff, ids, nil
}

// snapCutoff returns the key past which the tail scan looks: the
// cutoff's own (nil, the whole range, for a zero cutoff).
func snapCutoff(id session.ID) []byte {
	if id.IsZero() {
		return nil
	}
	return liveKey(id)
}

// snapshotEligible says whether this hub writes and reads the snapshot.
func (h *Hub) snapshotEligible() bool {
	return h.ids.v7 && !h.cfg.FoldAll && !h.cfg.Partitioned
}

// liveIDs returns the ids the index marks live, in id order.
func (h *Hub) liveIDs(ctx context.Context) ([]session.ID, error) {
	var out []session.ID
	err := h.cfg.Log.IndexScan(ctx, []byte{ixLive}, nil, func(k, _ []byte) error {
		if id, ok := indexedID(k); ok && len(k) == 17 {
			out = append(out, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hub: hydrate: listing the live sessions: %w", err)
	}
	return out, nil
}

// liveFromSnapshot returns the live ids from the snapshot, checked, or
// ok false when there is none to use (hydrate then scans).
func (h *Hub) liveFromSnapshot(ctx context.Context) (ids []session.ID, ok bool, err error) {
	if !h.snapshotEligible() {
		return nil, false, nil
	}
	raw, found, err := h.cfg.Log.IndexGet(ctx, snapshotKey())
	if err != nil || !found {
		return nil, false, err
	}
	cutoff, snap, err := decodeLiveSnap(raw)
	if err != nil {
		h.cfg.Logger.Warn().Err(err).Msg("live snapshot ignored: scanning the index")
		return nil, false, nil
	}
	h.ids.note(uuid.UUID(cutoff)) // the next snapshot's cutoff is no older
	from := snapCutoff(cutoff)
	seen := map[session.ID]bool{}
	for _, id := range snap {
		if bytes.Compare(liveKey(id), from) > 0 {
			continue // the tail scan finds it, if it is still live
		}
		_, live, err := h.cfg.Log.IndexGet(ctx, liveKey(id))
		if err != nil {
			return nil, false, err
		}
		if live && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	err = h.cfg.Log.IndexScan(ctx, []byte{ixLive}, from, func(k, _ []byte) error {
		if id, ok := indexedID(k); ok && len(k) == 17 && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	slices.SortFunc(ids, compareIDs)
	return ids, true, nil
}

// writeSnapshot writes the live set for the next start: called by Close
// once nothing else writes. It scans the index (the cost the next start
// is spared), so the snapshot is the index's live set exactly.
func (h *Hub) writeSnapshot(ctx context.Context) error {
	ids, err := h.liveIDs(ctx)
	if err != nil {
		return err
	}
	cutoff := h.ids.cutoff()
	if n := len(ids); n > 0 && compareIDs(ids[n-1], cutoff) > 0 {
		cutoff = ids[n-1]
	}
	if err := h.cfg.Log.PutIndex(ctx, []IndexEntry{{Key: snapshotKey(), Value: encodeLiveSnap(cutoff, ids)}}); err != nil {
		return fmt.Errorf("hub: writing the live snapshot: %w", err)
	}
	return nil
}
