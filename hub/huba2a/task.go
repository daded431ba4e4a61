package huba2a

import (
	"context"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/a2apb"
	"github.com/hubd/hubd/session"
)

// TaskState is the A2A state of a task's session, for its caller: a
// pending session is submitted; an open one is input required while a
// question to the caller is pending or the caller is to speak, working
// otherwise; an ended one's state comes from its close reason (see
// closedState).
func TaskState(info *hubpb.SessionInfo, caller string) a2apb.TaskState {
	switch info.GetState() {
	case "PENDING":
		return a2apb.TaskState_TASK_STATE_SUBMITTED
	case "OPEN":
		if askedOf(info, caller) != nil {
			return a2apb.TaskState_TASK_STATE_INPUT_REQUIRED
		}
		for _, e := range info.GetExpected() {
			if e == caller {
				return a2apb.TaskState_TASK_STATE_INPUT_REQUIRED
			}
		}
		return a2apb.TaskState_TASK_STATE_WORKING
	}
	return closedState(info.GetState(), info.GetCloseReason())
}

// closedState maps an ended session to a terminal task state:
//
//	canceled, cancelled, parent_closed                      TASK_STATE_CANCELED
//	rejected, invite_rejected                               TASK_STATE_REJECTED
//	failed, an expired session (ttl_expired), a timer's end
//	(expectation_violated:NAME), invite_timeout,
//	budget_exceeded, max_turns, max_handoffs, depth_exceeded TASK_STATE_FAILED
//	any other reason (completed, finished, the graph's own) TASK_STATE_COMPLETED
func closedState(state, reason string) a2apb.TaskState {
	switch {
	case reason == "canceled" || reason == "cancelled" || reason == "parent_closed":
		return a2apb.TaskState_TASK_STATE_CANCELED
	case reason == "rejected" || reason == "invite_rejected":
		return a2apb.TaskState_TASK_STATE_REJECTED
	case state == "EXPIRED", reason == "failed", reason == "ttl_expired", reason == "invite_timeout",
		reason == "budget_exceeded", reason == "max_turns", reason == "max_handoffs", reason == "depth_exceeded",
		strings.HasPrefix(reason, "expectation_violated:"):
		return a2apb.TaskState_TASK_STATE_FAILED
	}
	return a2apb.TaskState_TASK_STATE_COMPLETED
}

// terminal says whether a task state is final.
func terminal(st a2apb.TaskState) bool {
	switch st {
	case a2apb.TaskState_TASK_STATE_COMPLETED, a2apb.TaskState_TASK_STATE_FAILED,
		a2apb.TaskState_TASK_STATE_CANCELED, a2apb.TaskState_TASK_STATE_REJECTED:
		return true
	}
	return false
}

// askedOf is the pending question the caller must answer, if any.
func askedOf(info *hubpb.SessionInfo, caller string) *hubpb.Hold {
	for _, h := range info.GetHolds() {
		if h.GetKind() == "question" && h.GetAnswerer() == caller {
			return h
		}
	}
	return nil
}

// contextOf is a task's context id: its session's thread key.
func contextOf(info *hubpb.SessionInfo) string {
	if k := info.GetMeta().GetLabels()[labelContext]; k != "" {
		return k
	}
	return info.GetMeta().GetThreadKey()
}

// taskOf builds the task of a session from its info and log: the state
// for the caller, the status message (the pending question, else the
// agent's last message), every reply of the agent as an artifact, and
// the history's last historyLength messages (nil: all).
func taskOf(info *hubpb.SessionInfo, log []*hubpb.Envelope, agent, caller string, historyLength *int32) *a2apb.Task {
	id, ctxID := info.GetMeta().GetSessionId(), contextOf(info)
	st := TaskState(info, caller)
	t := &a2apb.Task{Id: id, ContextId: ctxID, Status: &a2apb.TaskStatus{State: st}}
	var history []*a2apb.Message
	var lastAgent, question *a2apb.Message
	h := askedOf(info, caller)
	for _, e := range log {
		m := messageOf(e, id, ctxID, agent, caller)
		if m == nil {
			continue
		}
		history = append(history, m)
		if m.GetRole() == a2apb.Role_ROLE_AGENT {
			lastAgent = m
		}
		if h != nil && e.GetQuestion().GetQuestionId() == h.GetQuestionId() {
			question = m
		}
		if e.GetFrom() == agent && (e.GetType() == session.EventText || e.GetType() == session.EventPacket) {
			t.Artifacts = append(t.Artifacts, &a2apb.Artifact{ArtifactId: e.GetId(), Name: "reply", Parts: m.GetParts()})
		}
		if e.GetAcceptedAt() != nil {
			t.Status.Timestamp = e.GetAcceptedAt()
		}
	}
	switch {
	case question != nil:
		t.Status.Message = question
	case lastAgent != nil && st != a2apb.TaskState_TASK_STATE_WORKING && st != a2apb.TaskState_TASK_STATE_SUBMITTED:
		t.Status.Message = lastAgent
	}
	t.History = lastN(history, historyLength)
	t.Metadata = &structpb.Struct{Fields: map[string]*structpb.Value{
		"hubd_state": structpb.NewStringValue(info.GetState()), "hubd_close_reason": structpb.NewStringValue(info.GetCloseReason())}}
	return t
}

func lastN(ms []*a2apb.Message, n *int32) []*a2apb.Message {
	if n == nil || int(*n) >= len(ms) {
		return ms
	}
	if *n <= 0 {
		return nil
	}
	return ms[len(ms)-int(*n):]
}

// messageOf is an envelope as an A2A message: the caller's and the
// agent's texts and packets, the agent's questions (with their options as
// a data part) and the caller's answers; nil for the rest.
func messageOf(e *hubpb.Envelope, taskID, ctxID, agent, caller string) *a2apb.Message {
	var role a2apb.Role
	switch e.GetFrom() {
	case agent:
		role = a2apb.Role_ROLE_AGENT
	case caller:
		role = a2apb.Role_ROLE_USER
	default:
		return nil
	}
	var parts []*a2apb.Part
	switch e.GetType() {
	case session.EventText, session.EventMessage:
		parts = textPart(e.GetText().GetText() + e.GetMessage().GetText())
	case session.EventPacket:
		parts = textPart(e.GetPacket().GetBody())
	case session.EventQuestion:
		q := e.GetQuestion()
		parts = textPart(q.GetText())
		if len(q.GetOptions()) > 0 {
			opts := make([]any, 0, len(q.GetOptions()))
			for _, o := range q.GetOptions() {
				opts = append(opts, map[string]any{"id": o.GetId(), "label": o.GetLabel()})
			}
			v, _ := structpb.NewValue(map[string]any{"question_id": q.GetQuestionId(), "options": opts, "multiple": q.GetMultiple()})
			parts = append(parts, &a2apb.Part{Content: &a2apb.Part_Data{Data: v}, MediaType: "application/json"})
		}
	case session.EventAnswer:
		a := e.GetAnswer()
		text := a.GetText()
		if text == "" {
			text = strings.Join(a.GetOptionIds(), ", ")
		}
		parts = textPart(text)
	default:
		return nil
	}
	id := e.GetClientMsgId()
	if id == "" {
		id = e.GetId()
	}
	return &a2apb.Message{MessageId: id, ContextId: ctxID, TaskId: taskID, Role: role, Parts: parts}
}

func textPart(s string) []*a2apb.Part {
	return []*a2apb.Part{{Content: &a2apb.Part_Text{Text: s}, MediaType: "text/plain"}}
}

// load reads a task's session as the caller: its info and whole log. A
// session that is not one of agent's tasks is not found.
func (c *call) load(ctx context.Context, id string) (*hubpb.SessionInfo, []*hubpb.Envelope, error) {
	info, err := c.s.cfg.Client.GetSession(ctx, &hubpb.GetSessionRequest{SessionId: id})
	if err != nil {
		return nil, nil, err
	}
	if info.GetMeta().GetLabels()[labelAgent] != c.agent.Agent {
		return nil, nil, fail(codeTaskNotFound, "UNKNOWN_SESSION", "task not found: %s is not a task of %s", id, c.agent.Agent)
	}
	var log []*hubpb.Envelope
	for from := uint64(1); from != 0; {
		page, err := c.s.cfg.Client.ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: id, FromSeq: from})
		if err != nil {
			return nil, nil, err
		}
		log = append(log, page.GetEnvelopes()...)
		if next := page.GetNextSeq(); next > from && len(page.GetEnvelopes()) > 0 {
			from = next
		} else {
			from = 0
		}
	}
	return info, log, nil
}
