package hub

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Steer writes an operator action into session id: the hub records it as
// an operator_action envelope (from "", operator_action.operator the
// caller) through the ordinary commit, so it is logged, delivered to the
// session's watchers and participants and folded like any other envelope,
// live and on replay. Only an operator may steer (PERMISSION_DENIED); the
// session must be open, and the action's object there: see
// adapters.Machine.Admit for each refusal. A refusal writes nothing.
func (h *Hub) Steer(ctx context.Context, agent string, operator bool, req *hubpb.SteerRequest) (*hubpb.SendResponse, error) {
	if !operator {
		return nil, fmt.Errorf("%q is not an operator: only operators steer a session: %w", agent, ErrPermissionDenied)
	}
	if err := h.gate.enter(); err != nil {
		return nil, err
	}
	defer h.gate.leave()
	id, err := session.ParseIDOf("session_id", req.GetSessionId())
	if err != nil {
		return nil, err
	}
	a := proto.CloneOf(req.GetAction())
	if a == nil {
		return nil, fmt.Errorf("action is required: %w", session.ErrMalformed)
	}
	a.Operator = agent
	env := &hubpb.Envelope{Type: session.EventOperator, Payload: &hubpb.Envelope_OperatorAction{OperatorAction: a}}
	s, err := h.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	if err := h.ready(ctx, s); err != nil {
		return nil, err
	}
	if err := s.m.Admit(env); err != nil {
		h.rejected(s.id, agent, env.GetType(), err)
		return nil, err
	}
	all, err := h.commit(ctx, s, []*hubpb.Envelope{env}, nil)
	if err != nil {
		return nil, err
	}
	return ackOf(all), nil
}
