package hub

import (
	"context"
	"slices"

	"github.com/hubd/hubd/session"
)

// ResidentIDs returns the ids of the sessions in memory as live, in order
// (for tests).
func (h *Hub) ResidentIDs() []session.ID {
	h.reg.mu.RLock()
	defer h.reg.mu.RUnlock()
	ids := make([]session.ID, 0, len(h.reg.sessions))
	for id := range h.reg.sessions {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, compareIDs)
	return ids
}

// NewTimedIDs is New for a Config.NewID that makes UUIDv7s from the
// hub's clock, as the default does from the wall clock (for tests of the
// live snapshot, which only such ids use).
func NewTimedIDs(ctx context.Context, cfg Config) (*Hub, error) { return newHub(ctx, cfg, true) }
