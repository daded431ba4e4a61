package hub

import (
	"context"
	"fmt"
	"slices"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// ReasonParentClosed is the close reason of a child whose parent ended.
const ReasonParentClosed = "parent_closed"

// settle grows a plan by what its writes decide across the tree, until
// nothing more follows: a session that ends closes its open children
// (parent_closed, or budget_exceeded when a budget closed the tree) and
// posts its result to its parent when the parent goes on; a turn that
// crosses the tree's budget closes the root. Everything lands in the same
// atomic write as its cause.
func (h *Hub) settle(ctx context.Context, p *plan) error {
	done := map[*Session]bool{}
	budgetChecked := false
	for progress := true; progress; {
		progress = false
		for i := 0; i < len(p.parts); i++ {
			x := p.parts[i]
			if done[x.s] || x.before.Ended() || !x.s.m.Lifecycle.State.Ended() {
				continue
			}
			done[x.s] = true
			progress = true
			if err := h.ended(ctx, p, x.s); err != nil {
				return err
			}
		}
		if !budgetChecked {
			budgetChecked = true
			crossed, err := h.checkBudget(ctx, p)
			if err != nil {
				return err
			}
			progress = progress || crossed
		}
	}
	return nil
}

// ended closes the open children of s, which ended in this plan, and posts
// its result to its parent.
func (h *Hub) ended(ctx context.Context, p *plan, s *Session) error {
	reason := ReasonParentClosed
	if s.m.Lifecycle.Reason == session.ReasonBudgetExceeded {
		reason = session.ReasonBudgetExceeded
	}
	for _, c := range s.m.Calls.Children {
		k := s.kid(c.ID)
		if k == nil || k.m.Lifecycle.State.Ended() {
			continue
		}
		if err := h.ready(ctx, k); err != nil {
			return err
		}
		if err := h.apply(p, k, k.m.Ending(reason)...); err != nil {
			return err
		}
	}
	par := s.parent
	if par == nil || par.m.Lifecycle.State.Ended() {
		return nil
	}
	if err := h.ready(ctx, par); err != nil {
		return err
	}
	return h.apply(p, par, h.result(s))
}

// result is the delegation_result an ended child posts to its parent,
// addressed to its delegator.
func (h *Hub) result(c *Session) *hubpb.Envelope {
	st := "CLOSED"
	if c.m.Lifecycle.State == session.StateExpired {
		st = "EXPIRED"
	}
	return &hubpb.Envelope{Type: session.EventDelegationResult, Audience: session.Only(c.meta.GetCreator()),
		Payload: &hubpb.Envelope_DelegationResult{DelegationResult: &hubpb.DelegationResult{
			ChildSessionId: c.meta.GetSessionId(), Reason: c.m.Lifecycle.Reason, Summary: c.m.Calls.Result, State: st,
			Usage: treeUsage(c), Responder: c.m.Calls.Responder, DelegationId: c.meta.GetDelegationId()}}}
}

// treeUsage sums the usage of s's tree: its own, what its children's
// results reported, and the trees of the children it has no result from.
func treeUsage(s *Session) *hubpb.Usage {
	u := s.m.Usage()
	for _, c := range s.m.Calls.Children {
		if k := s.kid(c.ID); k != nil {
			u = session.AddUsage(u, treeUsage(k))
		}
	}
	return u
}

// checkBudget closes the tree's root when the plan's turns took the tree
// past its budget, and reports whether it did.
func (h *Hub) checkBudget(ctx context.Context, p *plan) (bool, error) {
	r := p.parts[0].s.root()
	b := r.meta.GetBudget()
	if b == nil || r.m.Lifecycle.State.Ended() || !usesTokens(p) {
		return false, nil
	}
	u := treeUsage(r)
	var detail string
	switch tokens := session.AddCounts(u.GetInputTokens(), u.GetOutputTokens()); {
	case b.GetMaxTokens() > 0 && tokens > b.GetMaxTokens():
		detail = fmt.Sprintf("session %s took the tree to %d tokens, past max_tokens %d", p.parts[0].s.id, tokens, b.GetMaxTokens())
	case b.GetMaxCost() > 0 && u.GetCostUsd() > b.GetMaxCost():
		detail = fmt.Sprintf("session %s took the tree to $%.4f, past max_cost $%.4f", p.parts[0].s.id, u.GetCostUsd(), b.GetMaxCost())
	default:
		return false, nil
	}
	if err := h.ready(ctx, r); err != nil {
		return false, err
	}
	end := r.m.Ending(session.ReasonBudgetExceeded)
	end[len(end)-1].GetEnded().Detail = detail
	return true, h.apply(p, r, end...)
}

// usesTokens reports whether the plan holds a turn with usage.
func usesTokens(p *plan) bool {
	return slices.ContainsFunc(p.parts, func(x *part) bool {
		return slices.ContainsFunc(x.envs, func(e *hubpb.Envelope) bool { return e.GetPacket().GetUsage() != nil })
	})
}
