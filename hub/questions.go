package hub

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Answer answers a pending question of session id. The caller must be the
// question's answerer (a participant or not) or an operator, whose answer
// the hub writes on the answerer's behalf (answer.by names the operator).
// The answer is checked against the question (its options, one unless
// multiple; its schema) and refused with BAD_ANSWER, writing nothing, when
// it does not fit, when the question is not pending (answered, withdrawn,
// never asked) or when the caller may not answer it. An accepted answer
// releases the asker's turn, with the answer as its trigger. A retry with
// the same client message id answers with the first.
func (h *Hub) Answer(ctx context.Context, agent string, operator bool, req *hubpb.AnswerRequest) (*hubpb.SendResponse, error) {
	if err := h.gate.enter(); err != nil {
		return nil, err
	}
	defer h.gate.leave()
	id, err := session.ParseIDOf("session_id", req.GetSessionId())
	if err != nil {
		return nil, err
	}
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
	if k := req.GetClientMsgId(); k != "" {
		if seq, ok := s.dedup[dedupKey(agent, k)]; ok {
			return h.duplicate(ctx, s, seq)
		}
	}
	env, err := answerEnvelope(s.m, agent, operator, req)
	if err != nil {
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

// answerEnvelope is the answer as logged: from its answerer, or from the
// hub on an operator's behalf.
func answerEnvelope(m *adapters.Machine, agent string, operator bool, req *hubpb.AnswerRequest) (*hubpb.Envelope, error) {
	a := proto.CloneOf(req.GetAnswer())
	if a == nil {
		return nil, fmt.Errorf("answer is required: %w", session.ErrMalformed)
	}
	a.Defaulted, a.By = false, ""
	env := &hubpb.Envelope{Type: session.EventAnswer, From: agent, ClientMsgId: req.GetClientMsgId(),
		Payload: &hubpb.Envelope_Answer{Answer: a}}
	p := m.Calls.Pending(a.GetQuestionId())
	if p != nil && p.Question.GetAnswerer() != agent && operator {
		env.From, a.By = "", agent
	}
	return env, nil
}
