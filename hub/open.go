package hub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

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
	if err := h.applyOpen(p, s, task); err != nil {
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

// buildMeta checks the request and makes the session's metadata.
func (h *Hub) buildMeta(ctx context.Context, creator string, req *hubpb.OpenRequest) (*hubpb.SessionMeta, session.Type, error) {
	raws, err := h.checkOpenLimits(req)
	if err != nil {
		return nil, session.Type{}, err
	}
	typ, err := session.ParseType(req.GetType())
	if err != nil {
		return nil, typ, err
	}
	// The metadata owns every part (nothing is shared with req, which the
	// caller may reuse), but its knob values are the interner's: shared
	// by every session with equal values, never changed.
	meta := metaParts(req)
	id, err := h.sessionID(req.GetParentSessionId() == "", routeKey(creator, req))
	if err != nil {
		return nil, typ, err
	}
	meta.SessionId, meta.Type, meta.Creator, meta.OpenKey = id.String(), typ.String(), creator, req.GetIdempotencyKey()
	meta.CreatedAt = session.Stamp(h.cfg.Clock.Now().UTC().Round(0))
	if meta.InviteTimeout == nil {
		meta.InviteTimeout = durationpb.New(h.cfg.InviteTimeout)
	}
	knobs, err := knobs(req)
	if err != nil {
		return nil, typ, err
	}
	if meta.Knobs, err = h.interned.knobs(knobs, raws); err != nil {
		return nil, typ, err
	}
	if !slices.ContainsFunc(meta.Participants, func(p *hubpb.Participant) bool { return p.GetName() == creator }) {
		meta.Participants = append([]*hubpb.Participant{{Name: creator, Role: "creator"}}, meta.Participants...)
	}
	unconsented := h.applyConsent(creator, meta)
	meta.Delegates, meta.Budget = slices.Clone(req.GetDelegates()), proto.CloneOf(req.GetBudget())
	meta.ThreadKey, meta.RootCreator = req.GetThreadKey(), creator
	if err := h.checkTask(meta, req.GetTask(), unconsented); err != nil {
		return nil, typ, err
	}
	if p := req.GetParentSessionId(); p != "" {
		return meta, typ, h.placeChild(ctx, p, meta)
	}
	return meta, typ, checkBudget(meta.GetBudget())
}

// metaParts returns new metadata holding copies of req's labels, TTL,
// invite timeout, expectations and participants: what proto.CloneOf of
// them gives (unknown fields included), without its reflection, as every
// open makes one.
func metaParts(req *hubpb.OpenRequest) *hubpb.SessionMeta {
	m := &hubpb.SessionMeta{Labels: maps.Clone(req.GetLabels()), Ttl: cloneDuration(req.GetTtl()), InviteTimeout: cloneDuration(req.GetInviteTimeout())}
	if es := req.GetExpectations().GetItems(); len(es) > 0 {
		m.Expectations = make([]*hubpb.Expectation, len(es))
		for i, e := range es {
			c := &hubpb.Expectation{Name: e.GetName(), Action: e.GetAction(), Within: cloneDuration(e.GetWithin())}
			m.Expectations[i] = withUnknown(c, e)
		}
	}
	if ps := req.GetParticipants(); len(ps) > 0 {
		m.Participants = make([]*hubpb.Participant, len(ps))
		for i, p := range ps {
			m.Participants[i] = withUnknown(&hubpb.Participant{Name: p.GetName(), Role: p.GetRole(), AutoAccept: p.GetAutoAccept()}, p)
		}
	}
	return m
}

// cloneDuration copies d (nil stays nil).
func cloneDuration(d *durationpb.Duration) *durationpb.Duration {
	if d == nil {
		return nil
	}
	return withUnknown(&durationpb.Duration{Seconds: d.GetSeconds(), Nanos: d.GetNanos()}, d)
}

// withUnknown gives c a copy of src's unknown fields, if any, and returns
// c.
func withUnknown[M proto.Message](c, src M) M {
	if r := src.ProtoReflect(); r.IsValid() && len(r.GetUnknown()) > 0 {
		c.ProtoReflect().SetUnknown(slices.Clone(r.GetUnknown()))
	}
	return c
}

// checkTask refuses a task for a session that would not open at once, or
// one over the envelope limit; unconsented are the invitees whose
// auto_accept was dropped for want of their consent.
func (h *Hub) checkTask(meta *hubpb.SessionMeta, task string, unconsented []string) error {
	if task == "" {
		return nil
	}
	if len(unconsented) > 0 {
		return fmt.Errorf("a task needs the session to open at once, but %s did not consent to be added by %q without acknowledging "+
			"(the hub's consent file lists whom each agent accepts sessions from): %w",
			strings.Join(unconsented, ", "), meta.GetCreator(), ErrPermissionDenied)
	}
	if inv := session.Invitees(meta); len(inv) > 0 {
		return fmt.Errorf("a task needs the session to open at once, but %s must acknowledge (mark them auto_accept): %w",
			strings.Join(inv, ", "), session.ErrMalformed)
	}
	if len(task) > h.cfg.MaxEnvelopeBytes {
		return fmt.Errorf("task is %d bytes, the limit is %d: %w", len(task), h.cfg.MaxEnvelopeBytes, ErrTooLarge)
	}
	return nil
}

// taskOf is a new, open session's task from its creator: a text when the
// session type expects the creator to speak first, else a message.
func taskOf(m *adapters.Machine, task string) *hubpb.Envelope {
	creator := m.Meta.GetCreator()
	if slices.Contains(m.Expected(), creator) {
		return &hubpb.Envelope{Type: session.EventText, From: creator, Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: task}}}
	}
	return &hubpb.Envelope{Type: session.EventMessage, From: creator, Payload: &hubpb.Envelope_Message{Message: &hubpb.Text{Text: task}}}
}

// applyOpen applies a new session's invite (and open), then its task, to
// plan p.
func (h *Hub) applyOpen(p *plan, s *Session, task string) error {
	if err := h.apply(p, s, inviteOf(s.m)); err != nil || task == "" {
		return err
	}
	env := taskOf(s.m, task)
	if err := s.m.Admit(env); err != nil {
		return fmt.Errorf("task: %w", err)
	}
	return h.apply(p, s, env)
}

// checkBudget refuses a negative or non-finite budget.
func checkBudget(b *hubpb.Budget) error {
	if c := b.GetMaxCost(); b.GetMaxTokens() < 0 || c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
		return fmt.Errorf("budget {max_tokens: %d, max_cost: %v} must be finite and not negative: %w", b.GetMaxTokens(), c, session.ErrMalformed)
	}
	return nil
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

// placeChild makes meta a child of the session named parent: its parent,
// root, depth and root creator, within the hub's depth limit; a child has
// no budget of its own (the root's bounds the tree).
func (h *Hub) placeChild(ctx context.Context, parent string, meta *hubpb.SessionMeta) error {
	pid, err := session.ParseID(parent)
	if err != nil {
		return fmt.Errorf("parent_session_id: %v: %w", err, session.ErrMalformed)
	}
	p, err := h.lookup(ctx, pid)
	if err != nil {
		return fmt.Errorf("parent: %w", err)
	}
	meta.ParentSessionId, meta.RootSessionId, meta.Depth = pid.String(), p.call.GetRoot(), p.meta.GetDepth()+1
	meta.RootCreator, meta.Budget = p.meta.GetRootCreator(), nil
	if meta.RootCreator == "" {
		meta.RootCreator = p.meta.GetCreator()
	}
	if int(meta.Depth) > h.cfg.MaxDepth {
		return fmt.Errorf("a child of %v would be at depth %d, the limit is %d: %w", pid, meta.Depth, h.cfg.MaxDepth, ErrDepthExceeded)
	}
	return nil
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

// reserve indexes a new session before its first write, checking the
// creator's limit and the open key.
func (h *Hub) reserve(s *Session, key string) error {
	h.reg.mu.Lock()
	defer h.reg.mu.Unlock()
	creator := s.meta.GetCreator()
	if key != "" {
		if _, dup := h.reg.openKeys[openKey(creator, key)]; dup {
			return fmt.Errorf("an open with key %q is in progress: %w", key, ErrLimit)
		}
	}
	if max := h.cfg.MaxOpenPerAgent; max > 0 && h.reg.openCount[creator] >= max {
		return h.limitErr("--max-open-per-agent", max, ErrLimit, "%q has %d sessions pending or open (children it delegated included)", creator, h.reg.openCount[creator])
	}
	s.state.Store(uint32(session.StatePending))
	h.index(s)
	return nil
}

// unreserve removes a session whose first write failed.
func (h *Hub) unreserve(s *Session, key string) {
	h.reg.mu.Lock()
	defer h.reg.mu.Unlock()
	delete(h.reg.sessions, s.id)
	for _, p := range s.meta.GetParticipants() {
		delete(h.reg.byAgent[p.GetName()], s.id)
	}
	if key != "" {
		delete(h.reg.openKeys, openKey(s.meta.GetCreator(), key))
	}
	if k := openKey(s.meta.GetCreator(), s.meta.GetThreadKey()); h.reg.threads[k] == s {
		delete(h.reg.threads, k) // the thread's latest is again the one before, in the log's index
	}
	h.reg.openCount[s.meta.GetCreator()]--
	s.tree.live.Add(-1)
	h.sched.remove(s)
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
