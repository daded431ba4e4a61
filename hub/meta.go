package hub

import (
	"context"
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
	m := &hubpb.SessionMeta{Labels: maps.Clone(req.GetLabels()), Ttl: cloneDuration(req.GetTtl()), InviteTimeout: cloneDuration(req.GetInviteTimeout()),
		Retention: cloneDuration(req.GetRetention())}
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

// checkBudget refuses a negative or non-finite budget.
func checkBudget(b *hubpb.Budget) error {
	if c := b.GetMaxCost(); b.GetMaxTokens() < 0 || c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
		return fmt.Errorf("budget {max_tokens: %d, max_cost: %v} must be finite and not negative: %w", b.GetMaxTokens(), c, session.ErrMalformed)
	}
	return nil
}

// applyConsent drops the auto_accept of the participants of meta that have
// not consented to be added by creator, and returns their names.
func (h *Hub) applyConsent(creator string, meta *hubpb.SessionMeta) []string {
	if !h.cfg.RequireConsent {
		return nil
	}
	var dropped []string
	for _, p := range meta.GetParticipants() {
		if p.GetAutoAccept() && !h.cfg.Consent.Allows(creator, p.GetName()) {
			p.AutoAccept = false
			dropped = append(dropped, p.GetName())
		}
	}
	return dropped
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

// machine starts the machine of new metadata, with the type's default
// expectations when the request gave none.
func (h *Hub) machine(meta *hubpb.SessionMeta, typ session.Type, defaults bool) (*adapters.Machine, error) {
	a, err := h.cfg.Adapters.Lookup(typ)
	if err != nil {
		return nil, err
	}
	if defaults {
		meta.Expectations = a.Expectations()
	}
	if d, ok := a.(adapters.KnobDefaulter); ok {
		if add := d.DefaultKnobs(meta); len(add) > 0 {
			knobs := maps.Clone(meta.Knobs) // the interner's map is shared
			if knobs == nil {
				knobs = map[string]*structpb.Value{}
			}
			for k, v := range add { //hubd:orderless a set
				knobs[k] = v
			}
			meta.Knobs = knobs
		}
	}
	return adapters.NewMachine(a, meta)
}

// inviteOf is a new session's first record: every participant gets it;
// invitees says who must acknowledge.
func inviteOf(m *adapters.Machine) *hubpb.Envelope {
	return &hubpb.Envelope{Type: session.EventInvite,
		Payload: &hubpb.Envelope_Invite{Invite: &hubpb.Invite{Invitees: session.Invitees(m.Meta)}}}
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
