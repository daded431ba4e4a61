package hub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"
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
// set; so does an open with the thread key of a session the creator opened
// that is still open (otherwise the new session links the thread's
// previous one). An open with a parent is a background delegation of one
// child on the creator's turn in the parent (see Delegate). req is not
// modified.
func (h *Hub) Open(ctx context.Context, creator string, req *hubpb.OpenRequest) (*hubpb.OpenResponse, error) {
	if err := h.gate.enter(); err != nil {
		return nil, err
	}
	defer h.gate.leave()
	if err := session.CheckName(creator); err != nil {
		return nil, err
	}
	if p := req.GetParentSessionId(); p != "" {
		if _, err := session.ParseIDOf("parent_session_id", p); err != nil {
			return nil, err
		}
		return h.openChild(ctx, creator, req)
	}
	resp, prev, err := h.earlier(ctx, creator, req)
	if resp != nil || err != nil {
		return resp, err
	}
	meta, typ, err := h.buildMeta(ctx, creator, req)
	if err != nil {
		return nil, err
	}
	if !prev.IsZero() {
		meta.PreviousSessionId = prev.String()
	}
	m, err := h.machine(meta, typ, req.GetExpectations() == nil)
	if err != nil {
		return nil, err
	}
	s, err := h.create(ctx, m, req.GetTask())
	if err != nil {
		return nil, err
	}
	if f := h.cfg.Hooks.Opened; f != nil {
		f(meta)
	}
	h.sweepFor(meta)
	return h.openResponse(ctx, s, creator, false)
}

// earlier answers an open an earlier one made: the session of its
// idempotency key, or the open session of its thread key. Otherwise it
// returns the thread's latest session, which a new one follows. A session
// whose first write failed without landing answers nothing.
func (h *Hub) earlier(ctx context.Context, creator string, req *hubpb.OpenRequest) (*hubpb.OpenResponse, session.ID, error) {
	if key := req.GetIdempotencyKey(); key != "" {
		s, ok, err := h.existing(ctx, creator, key)
		if err != nil {
			return nil, session.ID{}, err
		}
		if ok {
			if field := h.openDiff(creator, s.meta, req); field != "" {
				return nil, session.ID{}, fmt.Errorf("idempotency key %q made session %s, and this open differs in %s: use a new key: %w",
					key, s.meta.GetSessionId(), field, ErrIdempotencyConflict)
			}
			if resp, err := h.openResponse(ctx, s, creator, true); !errors.Is(err, errNotWritten) {
				return resp, session.ID{}, err
			}
		}
	}
	prev, open, err := h.thread(ctx, creator, req.GetThreadKey())
	if err != nil || open == nil {
		return nil, prev, err
	}
	if resp, err := h.openResponse(ctx, open, creator, true); !errors.Is(err, errNotWritten) {
		return resp, session.ID{}, err
	}
	prev, _, err = h.thread(ctx, creator, req.GetThreadKey()) // the one before, from the log's index
	return nil, prev, err
}

// openChild opens a child of req's parent as a background delegation.
func (h *Hub) openChild(ctx context.Context, creator string, req *hubpb.OpenRequest) (*hubpb.OpenResponse, error) {
	resp, err := h.delegateReq(ctx, creator, &hubpb.DelegateRequest{SessionId: req.GetParentSessionId(),
		Children: []*hubpb.OpenRequest{req}, Mode: session.ModeBackground, ClientMsgId: req.GetIdempotencyKey()})
	if err != nil {
		return nil, err
	}
	if len(resp.GetChildren()) == 0 {
		return nil, fmt.Errorf("the delegation of a child of %s answered with no child: %w", req.GetParentSessionId(), ErrSessionFailed)
	}
	return &hubpb.OpenResponse{Session: resp.GetChildren()[0], Existing: resp.GetDuplicate()}, nil
}

// thread returns the id of the latest session creator opened with thread
// key, and that session when it is still live; zero without a key or such
// a session.
func (h *Hub) thread(ctx context.Context, creator, key string) (session.ID, *Session, error) {
	if key == "" {
		return session.ID{}, nil, nil
	}
	h.reg.mu.RLock()
	s := h.reg.threads[openKey(creator, key)]
	h.reg.mu.RUnlock()
	if s != nil {
		if !session.State(s.state.Load()).Ended() {
			return s.id, s, nil
		}
		return s.id, nil, nil
	}
	id, _, err := h.keyed(ctx, ixThread, creator, key)
	return id, nil, err
}

// create logs a new session's metadata, invite (and open) and task, and
// indexes it.
func (h *Hub) create(ctx context.Context, m *adapters.Machine, task string) (*Session, error) {
	return h.createWith(ctx, m, func(p *plan, s *Session) error { return h.applyOpen(p, s, task) })
}

// createWith logs a new session's metadata and the first records first
// applies to it, and indexes it.
func (h *Hub) createWith(ctx context.Context, m *adapters.Machine, first func(p *plan, s *Session) error) (*Session, error) {
	encMeta, err := h.interned.marshalMeta(m.Meta)
	if err != nil {
		return nil, fmt.Errorf("encoding metadata: %v: %w", err, session.ErrMalformed)
	}
	if len(encMeta) > h.cfg.MaxMetaBytes {
		return nil, fmt.Errorf("the session's metadata is %d bytes stored, the limit is %d (MaxMetaBytes): %w", len(encMeta), h.cfg.MaxMetaBytes, ErrTooLarge)
	}
	id, _ := session.ParseID(m.Meta.GetSessionId())
	s := h.newSession(id, m)
	s.tree = newTree(id)
	s.hold() // nobody else knows s yet
	defer s.release()
	key := m.Meta.GetOpenKey()
	if err := h.reserve(s, key); err != nil {
		return nil, err
	}
	p := h.newPlan(ctx, s)
	x := p.part(s)
	x.meta, x.isNew = encMeta, true
	if err := first(p, s); err != nil {
		h.abandon(p)
		h.unreserve(s, key)
		return nil, err
	}
	if err := h.finish(ctx, p); err != nil {
		if p.unsure {
			// It may have landed: it stays, failed, until a reload (a
			// retry of the open, or the scheduler in a second) keeps it
			// or forgets it as the log says.
			h.sched.retry(s, h.cfg.Clock.Now().Add(timerRetry))
			return nil, err
		}
		h.unreserve(s, key)
		return nil, err
	}
	return s, nil
}

// openResponse answers creator's open with the session's state.
func (h *Hub) openResponse(ctx context.Context, s *Session, creator string, existing bool) (*hubpb.OpenResponse, error) {
	info, err := h.info(ctx, s, creator, false)
	if err != nil {
		return nil, err
	}
	return &hubpb.OpenResponse{Session: info, Existing: existing}, nil
}

// existing returns the session an earlier open with this key made: a
// live one from memory, an ended one through the index in the log (open
// keys are kept for good).
func (h *Hub) existing(ctx context.Context, creator, key string) (*Session, bool, error) {
	h.reg.mu.RLock()
	id, ok := h.reg.openKeys[openKey(creator, key)]
	s := h.reg.sessions[id]
	h.reg.mu.RUnlock()
	if ok && s != nil {
		return s, true, nil
	}
	id, ok, err := h.keyed(ctx, ixOpenKey, creator, key)
	if err != nil || !ok {
		return nil, false, err
	}
	s, err = h.lookup(ctx, id)
	return s, err == nil, err
}

// openDiff names the first parameter in which req differs from the open
// that made meta, "" when it is the same open (a retry). Unset invite
// timeout and expectations mean the defaults and match whatever they
// were; the task is not part of the metadata and not compared.
func (h *Hub) openDiff(creator string, meta *hubpb.SessionMeta, req *hubpb.OpenRequest) string {
	typ, err := session.ParseType(req.GetType())
	if err != nil || typ.String() != meta.GetType() {
		return "type"
	}
	ps := req.GetParticipants()
	if !slices.ContainsFunc(ps, func(p *hubpb.Participant) bool { return p.GetName() == creator }) {
		ps = append([]*hubpb.Participant{{Name: creator, Role: "creator"}}, ps...)
	}
	if !slices.EqualFunc(ps, meta.GetParticipants(), func(a, b *hubpb.Participant) bool { return proto.Equal(a, b) }) {
		return "participants"
	}
	if !maps.Equal(req.GetLabels(), meta.GetLabels()) {
		return "labels"
	}
	ks, err := knobs(req)
	if err == nil {
		ks, err = h.interned.knobs(ks, nil) // adapters see shared values only (see workflow.ValueDecoder)
	}
	if err != nil || !sameKnobs(h.withDefaultKnobs(typ, ks), meta.GetKnobs()) {
		return "knobs or graph"
	}
	if session.Duration(req.GetTtl()) != session.Duration(meta.GetTtl()) {
		return "ttl"
	}
	if it := req.GetInviteTimeout(); it != nil && session.Duration(it) != session.Duration(meta.GetInviteTimeout()) {
		return "invite_timeout"
	}
	if e := req.GetExpectations(); e != nil && !slices.EqualFunc(e.GetItems(), meta.GetExpectations(),
		func(a, b *hubpb.Expectation) bool { return proto.Equal(a, b) }) {
		return "expectations"
	}
	switch {
	case !slices.Equal(req.GetDelegates(), meta.GetDelegates()):
		return "delegates"
	case !proto.Equal(req.GetBudget(), meta.GetBudget()):
		return "budget"
	case req.GetThreadKey() != meta.GetThreadKey():
		return "thread_key"
	}
	return ""
}

// sameKnobs reports whether two sets of knobs hold the same JSON values.
func sameKnobs(a, b map[string]*structpb.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a { //hubd:orderless all must match
		vb, ok := b[k]
		if !ok {
			return false
		}
		ja, errA := session.ValueJSON(va)
		jb, errB := session.ValueJSON(vb)
		if errA != nil || errB != nil || string(ja) != string(jb) {
			return false
		}
	}
	return true
}

// withDefaultKnobs returns knobs with the defaults the session type adds at
// open (see machine), as a retry's knobs compare with the logged ones.
func (h *Hub) withDefaultKnobs(typ session.Type, knobs map[string]*structpb.Value) map[string]*structpb.Value {
	a, err := h.cfg.Adapters.Lookup(typ)
	if err != nil {
		return knobs
	}
	d, ok := a.(adapters.KnobDefaulter)
	if !ok {
		return knobs
	}
	add := d.DefaultKnobs(&hubpb.SessionMeta{Knobs: knobs})
	if len(add) == 0 {
		return knobs
	}
	out := maps.Clone(knobs)
	if out == nil {
		out = map[string]*structpb.Value{}
	}
	for k, v := range add { //hubd:orderless a set
		if _, set := out[k]; !set {
			out[k] = v
		}
	}
	return out
}
