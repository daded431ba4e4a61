package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/session"
)

// OpenRequest asks for a new session.
type OpenRequest struct {
	Type session.Type
	// Participants in session order; the creator is added first when
	// missing. Participants marked AutoAccept need not acknowledge.
	Participants []session.Participant
	Knobs        map[string]json.RawMessage
	Labels       map[string]string
	TTL          time.Duration
	// InviteTimeout overrides the hub's default wait for acks.
	InviteTimeout time.Duration
	// Expectations replace the session type's defaults when not nil (an
	// empty, non-nil list means none).
	Expectations []session.Expectation
	// Parent makes this a child session of a session the creator takes
	// part in.
	Parent session.ID
	// Key makes the open idempotent: the same creator and key return the
	// session the first open made.
	Key string
}

// Opened is the answer to an open.
type Opened struct {
	Meta *session.Meta
	// Existing: an earlier open with the same key made this session.
	Existing bool
	State    session.State
}

// Open creates a session on behalf of creator. The session is logged with
// its invite (and, when nobody needs to acknowledge, its open) in one
// write; invitees are told through their subscriptions.
func (h *Hub) Open(ctx context.Context, creator string, req OpenRequest) (Opened, error) {
	if err := h.enter(); err != nil {
		return Opened{}, err
	}
	defer h.leave()
	if err := session.CheckName(creator); err != nil {
		return Opened{}, err
	}
	if req.Key != "" {
		if o, ok := h.existing(creator, req.Key); ok {
			return o, nil
		}
	}
	meta, err := h.buildMeta(creator, req)
	if err != nil {
		return Opened{}, err
	}
	a, err := h.cfg.Adapters.Lookup(meta.Type)
	if err != nil {
		return Opened{}, err
	}
	if req.Expectations == nil {
		meta.Expectations = a.Expectations()
	}
	m, err := adapters.NewMachine(a, meta)
	if err != nil {
		return Opened{}, err
	}
	encMeta, err := session.EncodeMeta(meta)
	if err != nil {
		return Opened{}, fmt.Errorf("encoding metadata: %v: %w", err, session.ErrMalformed)
	}
	s := newSess(m)
	s.lock <- struct{}{} // nobody else knows s yet
	defer s.release()
	if err := h.reserve(s, req.Key); err != nil {
		return Opened{}, err
	}
	// Every participant gets the invite (the creator too: it is the
	// session's first record); Invitees says who must acknowledge.
	invite := &session.Envelope{Type: session.EventInvite, Payload: session.Invite{Invitees: meta.Invitees()}}
	if _, err := h.commit(ctx, s, []*session.Envelope{invite}, encMeta); err != nil {
		h.unreserve(s, req.Key)
		return Opened{}, err
	}
	if f := h.cfg.Hooks.Opened; f != nil {
		f(meta)
	}
	return Opened{Meta: meta, State: s.m.Life.State}, nil
}

// buildMeta checks the request and makes the session's metadata.
func (h *Hub) buildMeta(creator string, req OpenRequest) (*session.Meta, error) {
	meta := &session.Meta{ID: session.ID(h.newID()), Type: req.Type, Creator: creator, Knobs: req.Knobs, Labels: req.Labels,
		TTL: req.TTL, InviteTimeout: req.InviteTimeout, Expectations: req.Expectations, OpenKey: req.Key,
		CreatedAt: h.clock.Now().UTC().Round(0)}
	if meta.InviteTimeout == 0 {
		meta.InviteTimeout = h.cfg.InviteTimeout
	}
	meta.Participants = slices.Clone(req.Participants)
	if !slices.ContainsFunc(meta.Participants, func(p session.Participant) bool { return p.Name == creator }) {
		meta.Participants = append([]session.Participant{{Name: creator, Role: "creator"}}, meta.Participants...)
	}
	if !req.Parent.IsZero() {
		parent, err := h.lookup(req.Parent)
		if err != nil {
			return nil, fmt.Errorf("parent: %w", err)
		}
		if !parent.meta.IsParticipant(creator) {
			return nil, fmt.Errorf("%q is not a participant of the parent session %v: %w", creator, req.Parent, ErrPermissionDenied)
		}
		meta.Parent, meta.Root, meta.Depth = req.Parent, parent.meta.Root, parent.meta.Depth+1
		if meta.Root.IsZero() {
			meta.Root = req.Parent
		}
		if meta.Depth > h.cfg.MaxDepth {
			return nil, fmt.Errorf("a child of %v would be at depth %d, the limit is %d: %w", req.Parent, meta.Depth, h.cfg.MaxDepth, ErrDepthExceeded)
		}
	}
	return meta, meta.Check()
}

// existing returns the session an earlier open with this key made.
func (h *Hub) existing(creator, key string) (Opened, bool) {
	h.mu.RLock()
	id, ok := h.openKeys[openKey(creator, key)]
	s := h.sessions[id]
	h.mu.RUnlock()
	if !ok || s == nil {
		return Opened{}, false
	}
	return Opened{Meta: s.meta, Existing: true, State: session.State(s.state.Load())}, true
}

// reserve indexes a new session before its first write, checking the
// creator's limit and the open key.
func (h *Hub) reserve(s *sess, key string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if key != "" {
		if _, dup := h.openKeys[openKey(s.meta.Creator, key)]; dup {
			return fmt.Errorf("an open with key %q is in progress: %w", key, ErrLimit)
		}
	}
	if max := h.cfg.MaxOpenPerAgent; max > 0 && h.openCount[s.meta.Creator] >= max {
		return fmt.Errorf("%q has %d sessions pending or open, the limit is %d: %w", s.meta.Creator, h.openCount[s.meta.Creator], max, ErrLimit)
	}
	s.state.Store(uint32(session.StatePending))
	h.index(s)
	return nil
}

// unreserve removes a session whose first write failed.
func (h *Hub) unreserve(s *sess, key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.sessions, s.id)
	for _, p := range s.meta.Participants {
		delete(h.byAgent[p.Name], s.id)
	}
	if key != "" {
		delete(h.openKeys, openKey(s.meta.Creator, key))
	}
	h.openCount[s.meta.Creator]--
	h.sched.remove(s)
}
