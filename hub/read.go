package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/hubd/hubd/session"
)

// Info describes a session for listings and reads.
type Info struct {
	Meta     *session.Meta
	State    session.State
	Reason   string
	Seq      uint64
	Turn     int
	Expected []string
	Context  map[string]json.RawMessage
	Usage    session.Usage
	LastRule string
	// Snapshot is the whole folded state as JSON (see adapters.Machine).
	Snapshot json.RawMessage
}

// Get returns a session's current state. Only its participants (or an
// operator) may read it.
func (h *Hub) Get(ctx context.Context, agent string, operator bool, id session.ID) (Info, error) {
	s, err := h.readable(agent, operator, id)
	if err != nil {
		return Info{}, err
	}
	if err := s.acquire(ctx); err != nil {
		return Info{}, err
	}
	defer s.release()
	if err := h.ready(ctx, s); err != nil {
		return Info{}, err
	}
	sum := s.m.State.Summary()
	snap, _ := json.Marshal(s.m)
	ctxVars := make(map[string]json.RawMessage, len(sum.Context))
	for k, v := range sum.Context { //hubd:orderless copying a map
		ctxVars[k] = v
	}
	return Info{Meta: s.meta, State: s.m.Life.State, Reason: s.m.Life.Reason, Seq: s.m.Seq, Turn: sum.Turn,
		Expected: s.m.Expected(), Context: ctxVars, Usage: sum.Usage, LastRule: s.m.LastRule, Snapshot: snap}, nil
}

func (h *Hub) readable(agent string, operator bool, id session.ID) (*sess, error) {
	s, err := h.lookup(id)
	if err != nil {
		return nil, err
	}
	if !operator && !s.meta.IsParticipant(agent) {
		return nil, fmt.Errorf("%q is not a participant of session %v and may not read it: %w", agent, id, ErrPermissionDenied)
	}
	return s, nil
}

// Filter selects sessions in List. Zero fields match everything.
type Filter struct {
	State       session.State
	Creator     string
	Participant string
	Labels      map[string]string // every label must match
	After       session.ID        // page after this id (ids sort by creation)
	Limit       int               // default 100, at most 1000
}

// List returns the sessions matching f that agent may see (those it takes
// part in, or all for an operator), oldest first, and the id to pass as
// After for the next page (zero when there is none). Each Info has the
// metadata, state, last seq and close reason; Get has the rest.
func (h *Hub) List(agent string, operator bool, f Filter) ([]Info, session.ID, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	h.mu.RLock()
	var pool map[session.ID]*sess
	if operator {
		pool = h.sessions
	} else {
		pool = h.byAgent[agent]
	}
	var hits []*sess
	for _, s := range pool { //hubd:sorted below
		if f.matches(s) {
			hits = append(hits, s)
		}
	}
	h.mu.RUnlock()
	slices.SortFunc(hits, func(a, b *sess) int { return compareIDs(a.id, b.id) })
	var out []Info
	var next session.ID
	for _, s := range hits {
		if len(out) == limit {
			next = out[len(out)-1].Meta.ID
			break
		}
		info := Info{Meta: s.meta, State: session.State(s.state.Load()), Seq: s.lastSeq.Load()}
		if r := s.reason.Load(); r != nil {
			info.Reason = *r
		}
		out = append(out, info)
	}
	return out, next, nil
}

func (f Filter) matches(s *sess) bool {
	switch {
	case !f.After.IsZero() && compareIDs(s.id, f.After) <= 0,
		f.State != 0 && session.State(s.state.Load()) != f.State,
		f.Creator != "" && s.meta.Creator != f.Creator,
		f.Participant != "" && !s.meta.IsParticipant(f.Participant):
		return false
	}
	for k, v := range f.Labels { //hubd:orderless all must match
		if s.meta.Labels[k] != v {
			return false
		}
	}
	return true
}

// ReadLog returns up to limit envelopes of a session from seq from (what
// agent may see of them; everything for an operator).
func (h *Hub) ReadLog(ctx context.Context, agent string, operator bool, id session.ID, from uint64, limit int) ([]*session.Envelope, error) {
	if _, err := h.readable(agent, operator, id); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 1000
	}
	from = max(from, 1)
	var out []*session.Envelope
	err := h.log.Scan(ctx, id, from, func(seq uint64, data []byte) error {
		if len(out) == limit {
			return errStop
		}
		e, err := session.DecodeEnvelope(data)
		if err != nil {
			return err
		}
		if operator || e.From == agent || e.Audience.Includes(agent, e.From) {
			out = append(out, e)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, fmt.Errorf("reading session %v from seq %d: %w", id, from, err)
	}
	return out, nil
}
