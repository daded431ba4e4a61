package hub

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Open creates a session on behalf of creator, who is its first
// participant (added first to req's participants when missing; those marked
// auto_accept need not acknowledge). The session is logged with its invite
// (and, when nobody needs to acknowledge, its open) in one write; invitees
// are told through their subscriptions. An open with the idempotency key of
// an earlier one by the same creator returns that session with existing
// set. req is not modified.
func (h *Hub) Open(ctx context.Context, creator string, req *hubpb.OpenRequest) (*hubpb.OpenResponse, error) {
	if err := h.enter(); err != nil {
		return nil, err
	}
	defer h.leave()
	if err := session.CheckName(creator); err != nil {
		return nil, err
	}
	if key := req.GetIdempotencyKey(); key != "" {
		if s, ok := h.existing(creator, key); ok {
			return h.openResponse(ctx, s, true)
		}
	}
	meta, typ, err := h.buildMeta(creator, req)
	if err != nil {
		return nil, err
	}
	a, err := h.cfg.Adapters.Lookup(typ)
	if err != nil {
		return nil, err
	}
	if req.GetExpectations() == nil {
		meta.Expectations = a.Expectations()
	}
	m, err := adapters.NewMachine(a, meta)
	if err != nil {
		return nil, err
	}
	s, err := h.create(ctx, m)
	if err != nil {
		return nil, err
	}
	if f := h.cfg.Hooks.Opened; f != nil {
		f(meta)
	}
	return h.openResponse(ctx, s, false)
}

// create logs a new session's metadata and invite and indexes it.
func (h *Hub) create(ctx context.Context, m *adapters.Machine) (*sess, error) {
	encMeta, err := session.MarshalMeta(m.Meta)
	if err != nil {
		return nil, fmt.Errorf("encoding metadata: %v: %w", err, session.ErrMalformed)
	}
	id, _ := session.ParseID(m.Meta.GetSessionId())
	s := newSess(id, m)
	s.lock <- struct{}{} // nobody else knows s yet
	defer s.release()
	key := m.Meta.GetOpenKey()
	if err := h.reserve(s, key); err != nil {
		return nil, err
	}
	// Every participant gets the invite (the creator too: it is the
	// session's first record); invitees says who must acknowledge.
	invite := &hubpb.Envelope{Type: session.EventInvite,
		Payload: &hubpb.Envelope_Invite{Invite: &hubpb.Invite{Invitees: session.Invitees(m.Meta)}}}
	if _, err := h.commit(ctx, s, []*hubpb.Envelope{invite}, encMeta); err != nil {
		h.unreserve(s, key)
		return nil, err
	}
	return s, nil
}

// openResponse answers an open with the session's state.
func (h *Hub) openResponse(ctx context.Context, s *sess, existing bool) (*hubpb.OpenResponse, error) {
	info, err := h.info(ctx, s)
	if err != nil {
		return nil, err
	}
	return &hubpb.OpenResponse{Session: info, Existing: existing}, nil
}

// buildMeta checks the request and makes the session's metadata.
func (h *Hub) buildMeta(creator string, req *hubpb.OpenRequest) (*hubpb.SessionMeta, session.Type, error) {
	typ, err := session.ParseType(req.GetType())
	if err != nil {
		return nil, typ, err
	}
	// The metadata owns every part (nothing is shared with req, which the
	// caller may reuse), but its knob values are the interner's: shared
	// by every session with equal values, never changed.
	meta := proto.CloneOf(&hubpb.SessionMeta{Labels: req.GetLabels(), Ttl: req.GetTtl(), InviteTimeout: req.GetInviteTimeout(),
		Expectations: req.GetExpectations().GetItems(), Participants: req.GetParticipants()})
	meta.SessionId, meta.Type, meta.Creator, meta.OpenKey = h.newID().String(), typ.String(), creator, req.GetIdempotencyKey()
	meta.CreatedAt = session.Stamp(h.clock.Now().UTC().Round(0))
	if meta.InviteTimeout == nil {
		meta.InviteTimeout = durationpb.New(h.cfg.InviteTimeout)
	}
	knobs, err := knobs(req)
	if err != nil {
		return nil, typ, err
	}
	if meta.Knobs, err = h.interned.knobs(knobs); err != nil {
		return nil, typ, err
	}
	if !slices.ContainsFunc(meta.Participants, func(p *hubpb.Participant) bool { return p.GetName() == creator }) {
		meta.Participants = append([]*hubpb.Participant{{Name: creator, Role: "creator"}}, meta.Participants...)
	}
	return meta, typ, h.placeChild(creator, req.GetParentSessionId(), meta)
}

// knobs returns the session's knobs: the request's, with its graph as the
// "graph" knob.
func knobs(req *hubpb.OpenRequest) (map[string]*structpb.Value, error) {
	out := maps.Clone(req.GetKnobs())
	if g := req.GetGraph(); g != nil {
		if _, dup := out["graph"]; dup {
			return nil, fmt.Errorf("the graph is given twice, as graph and as knobs[\"graph\"]: %w", session.ErrMalformed)
		}
		if out == nil {
			out = map[string]*structpb.Value{}
		}
		out["graph"] = structpb.NewStructValue(g)
	}
	return out, nil
}

// placeChild makes meta a child of the session named parent, if any.
func (h *Hub) placeChild(creator, parent string, meta *hubpb.SessionMeta) error {
	if parent == "" {
		return nil
	}
	pid, err := session.ParseID(parent)
	if err != nil {
		return fmt.Errorf("parent_session_id: %v: %w", err, session.ErrMalformed)
	}
	p, err := h.lookup(pid)
	if err != nil {
		return fmt.Errorf("parent: %w", err)
	}
	if !session.IsParticipant(p.meta, creator) {
		return fmt.Errorf("%q is not a participant of the parent session %v: %w", creator, pid, ErrPermissionDenied)
	}
	meta.ParentSessionId, meta.RootSessionId, meta.Depth = pid.String(), p.meta.GetRootSessionId(), p.meta.GetDepth()+1
	if meta.RootSessionId == "" {
		meta.RootSessionId = pid.String()
	}
	if int(meta.Depth) > h.cfg.MaxDepth {
		return fmt.Errorf("a child of %v would be at depth %d, the limit is %d: %w", pid, meta.Depth, h.cfg.MaxDepth, ErrDepthExceeded)
	}
	return nil
}

// existing returns the session an earlier open with this key made.
func (h *Hub) existing(creator, key string) (*sess, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	id, ok := h.openKeys[openKey(creator, key)]
	s := h.sessions[id]
	return s, ok && s != nil
}

// reserve indexes a new session before its first write, checking the
// creator's limit and the open key.
func (h *Hub) reserve(s *sess, key string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	creator := s.meta.GetCreator()
	if key != "" {
		if _, dup := h.openKeys[openKey(creator, key)]; dup {
			return fmt.Errorf("an open with key %q is in progress: %w", key, ErrLimit)
		}
	}
	if max := h.cfg.MaxOpenPerAgent; max > 0 && h.openCount[creator] >= max {
		return fmt.Errorf("%q has %d sessions pending or open, the limit is %d: %w", creator, h.openCount[creator], max, ErrLimit)
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
	for _, p := range s.meta.GetParticipants() {
		delete(h.byAgent[p.GetName()], s.id)
	}
	if key != "" {
		delete(h.openKeys, openKey(s.meta.GetCreator(), key))
	}
	h.openCount[s.meta.GetCreator()]--
	h.sched.remove(s)
}
