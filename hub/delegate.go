package hub

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// MaxChildren bounds the children one delegation opens.
const MaxChildren = 64

// Delegate opens children of session id on the delegator's turn there: each
// child's open and the delegation record in the parent are one atomic
// write. A blocking delegation holds the delegator's turn until the
// children are done (all, or any): the hub then appends their results to
// the parent and tells the delegator its turn again, with the last result
// as trigger. A background delegation leaves the turn as it is; each result
// is a notice for the delegator (a turn of its own with notify "turn").
// Refusals write nothing: depth past the hub's maximum (DEPTH_EXCEEDED),
// not the delegator's turn (OUT_OF_TURN), a held turn (TURN_HELD), a closed
// parent (SESSION_CLOSED), a delegate outside the parent's allow-list
// (DELEGATE_NOT_ALLOWED). A retry with the same client message id answers
// with the first delegation.
func (h *Hub) Delegate(ctx context.Context, delegator string, req *hubpb.DelegateRequest) (*hubpb.DelegateResponse, error) {
	if err := h.gate.enter(); err != nil {
		return nil, err
	}
	defer h.gate.leave()
	return h.delegateReq(ctx, delegator, req)
}

// delegateReq is Delegate within a call the hub has entered.
func (h *Hub) delegateReq(ctx context.Context, delegator string, req *hubpb.DelegateRequest) (*hubpb.DelegateResponse, error) {
	if err := session.CheckName(delegator); err != nil {
		return nil, err
	}
	mode, await, notify, err := delegationMode(req)
	if err != nil {
		return nil, err
	}
	pid, err := session.ParseIDOf("session_id", req.GetSessionId())
	if err != nil {
		return nil, err
	}
	p, err := h.lookup(ctx, pid)
	if err != nil {
		return nil, err
	}
	if err := p.acquire(ctx); err != nil {
		return nil, err
	}
	defer p.release()
	if err := h.ready(ctx, p); err != nil {
		return nil, err
	}
	if k := req.GetClientMsgId(); k != "" {
		if seq, ok := p.dedup[dedupKey(delegator, k)]; ok {
			return h.delegated(ctx, p, seq)
		}
	}
	if err := h.mayDelegate(p, delegator); err != nil {
		return nil, err
	}
	if err := h.checkFanOut(p, len(req.GetChildren())); err != nil {
		return nil, err
	}
	d := &hubpb.Delegation{Delegator: delegator, Mode: mode, Await: await, Notify: notify}
	env := &hubpb.Envelope{Id: h.newID().String(), Type: session.EventDelegation, ClientMsgId: req.GetClientMsgId(),
		Payload: &hubpb.Envelope_Delegation{Delegation: d}}
	kids, err := h.children(ctx, p, delegator, env.GetId(), req.GetChildren())
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		d.ChildSessionIds = append(d.ChildSessionIds, k.meta.GetSessionId())
	}
	return h.delegate(ctx, p, env, kids)
}

// mayDelegate checks, in this order, that the delegator takes part in the
// parent, that a child would not be too deep, and that it is the
// delegator's turn (the parent open, no turn held).
func (h *Hub) mayDelegate(p *Session, delegator string) error {
	if !session.IsParticipant(p.meta, delegator) {
		return adapters.NotParticipant(delegator, p.meta.GetSessionId())
	}
	if d := int(p.meta.GetDepth()) + 1; d > h.cfg.MaxDepth {
		return fmt.Errorf("a child of %v would be at depth %d, the limit is %d: %w", p.id, d, h.cfg.MaxDepth, ErrDepthExceeded)
	}
	return p.m.CheckTurn(delegator)
}

// checkFanOut refuses a delegation of n children past the children a
// turn may open or the sessions its tree may hold; the caller holds the
// tree's lock.
func (h *Hub) checkFanOut(p *Session, n int) error {
	if max := h.cfg.MaxChildrenPerTurn; max > 0 && p.turnKids+n > max {
		return h.limitErr("--max-children-per-turn", max, ErrLimit,
			"session %v opened %d children on this turn and this delegation asks for %d more (a new turn, such as another participant's text, opens more)",
			p.id, p.turnKids, n)
	}
	if max := h.cfg.MaxTreeSessions; max > 0 && int(p.tree.live.Load())+n > max {
		return h.limitErr("--max-tree-sessions", max, ErrLimit,
			"the tree of session %v (root %v) holds %d sessions pending or open and this delegation asks for %d more", p.id, p.tree.root, p.tree.live.Load(), n)
	}
	return nil
}

// delegationMode returns a request's mode, await and notify with their
// defaults (blocking, all), checked.
func delegationMode(req *hubpb.DelegateRequest) (mode, await, notify string, err error) {
	mode, await, notify = req.GetMode(), req.GetAwait(), req.GetNotify()
	if mode == "" {
		mode = session.ModeBlocking
	}
	if mode == session.ModeBlocking && await == "" {
		await = session.AwaitAll
	}
	if n := len(req.GetChildren()); n == 0 || n > MaxChildren {
		return "", "", "", fmt.Errorf("a delegation opens 1 to %d children, got %d: %w", MaxChildren, n, session.ErrMalformed)
	}
	return mode, await, notify, session.CheckDelegationMode(mode, await, notify)
}

// children makes the machines of the children a delegation opens.
func (h *Hub) children(ctx context.Context, p *Session, delegator, delegation string, reqs []*hubpb.OpenRequest) ([]*Session, error) {
	var out []*Session
	for i, r := range reqs {
		if r.GetParentSessionId() != "" && r.GetParentSessionId() != p.meta.GetSessionId() {
			return nil, fmt.Errorf("children[%d].parent_session_id names another session than the delegation's: %w", i, session.ErrMalformed)
		}
		r = proto.CloneOf(r)
		r.ParentSessionId, r.IdempotencyKey, r.ThreadKey = p.meta.GetSessionId(), "", ""
		meta, typ, err := h.buildMeta(ctx, delegator, r)
		if err != nil {
			return nil, fmt.Errorf("children[%d]: %w", i, err)
		}
		if err := allowed(p.meta, meta, delegator); err != nil {
			return nil, fmt.Errorf("children[%d]: %w", i, err)
		}
		meta.DelegationId, meta.Responder = delegation, responder(meta, delegator)
		m, err := h.machine(meta, typ, r.GetExpectations() == nil)
		if err != nil {
			return nil, fmt.Errorf("children[%d]: %w", i, err)
		}
		id, _ := session.ParseID(meta.GetSessionId())
		k := h.newSession(id, m)
		k.tree, k.parent, k.task = p.tree, p, r.GetTask()
		out = append(out, k)
	}
	return out, nil
}

// allowed refuses a child whose participants (its creator aside) are not
// all in the parent's allow-list, when the parent declares one.
func allowed(parent, child *hubpb.SessionMeta, delegator string) error {
	may := parent.GetDelegates()
	if len(may) == 0 {
		return nil
	}
	for _, n := range session.Names(child) {
		if n != delegator && !slices.Contains(may, n) {
			return fmt.Errorf("session %s may delegate to %s only, not %q: %w", parent.GetSessionId(), strings.Join(may, ", "), n, ErrDelegateNotAllowed)
		}
	}
	return nil
}

// responder is who first answers a child's caller: its first participant
// other than the delegator (the delegate), or the delegator alone.
func responder(meta *hubpb.SessionMeta, delegator string) string {
	for _, n := range session.Names(meta) {
		if n != delegator {
			return n
		}
	}
	return delegator
}

// delegate writes the delegation and the children's opens in one write.
func (h *Hub) delegate(ctx context.Context, p *Session, env *hubpb.Envelope, kids []*Session) (*hubpb.DelegateResponse, error) {
	var reserved []*Session
	undo := func() {
		for _, k := range reserved {
			h.unreserve(k, "")
		}
	}
	pl := h.newPlan(ctx, p)
	if err := h.apply(pl, p, env); err != nil {
		h.abandon(pl)
		return nil, err
	}
	for _, k := range kids {
		meta, err := h.interned.marshalMeta(k.meta)
		if err != nil {
			h.abandon(pl)
			undo()
			return nil, fmt.Errorf("encoding metadata: %v: %w", err, session.ErrMalformed)
		}
		if len(meta) > h.cfg.MaxMetaBytes {
			h.abandon(pl)
			undo()
			return nil, fmt.Errorf("child %s: its metadata is %d bytes stored, the limit is %d (MaxMetaBytes): %w",
				k.meta.GetSessionId(), len(meta), h.cfg.MaxMetaBytes, ErrTooLarge)
		}
		if err := h.reserve(k, ""); err != nil {
			h.abandon(pl)
			undo()
			return nil, err
		}
		reserved = append(reserved, k)
		x := pl.part(k)
		x.meta, x.isNew = meta, true
		if err := h.applyOpen(pl, k, k.task); err != nil {
			h.abandon(pl)
			undo()
			return nil, err
		}
	}
	if err := h.finish(ctx, pl); err != nil {
		if pl.unsure {
			// The write may have landed, children and record together:
			// the children stay in the tree, failed, and the reload that
			// comes before the tree's next change (or the parent's retry)
			// keeps them or drops them as the log says.
			p.kids = append(p.kids, kids...)
			return nil, err
		}
		undo()
		return nil, err
	}
	p.kids = append(p.kids, kids...)
	resp := &hubpb.DelegateResponse{Delegation: ackOf([]*hubpb.Envelope{env})}
	for _, k := range kids {
		if f := h.cfg.Hooks.Opened; f != nil {
			f(k.meta)
		}
		h.sweepFor(k.meta)
		resp.Children = append(resp.Children, h.infoLocked(k, env.GetFrom(), false))
	}
	return resp, nil
}

// delegated answers a retried delegation with the one made first.
func (h *Hub) delegated(ctx context.Context, p *Session, seq uint64) (*hubpb.DelegateResponse, error) {
	es, err := h.readFrom(ctx, p, seq, 1)
	if err != nil || len(es) == 0 || es[0].GetDelegation() == nil {
		return nil, fmt.Errorf("reading the delegation at seq %d of session %v: %v: %w", seq, p.id, err, ErrSessionFailed)
	}
	e := es[0]
	resp := &hubpb.DelegateResponse{Duplicate: true,
		Delegation: &hubpb.SendResponse{Seq: e.GetSeq(), Id: e.GetId(), AcceptedAt: e.GetAcceptedAt(), Duplicate: true}}
	for _, id := range e.GetDelegation().GetChildSessionIds() {
		kid, err := session.ParseID(id)
		if err != nil {
			continue
		}
		if k, err := h.lookup(ctx, kid); err == nil {
			resp.Children = append(resp.Children, listing(k))
		}
	}
	return resp, nil
}
