package huba2a

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/a2aconf"
	"github.com/hubd/hubd/internal/a2apb"
	"github.com/hubd/hubd/session"
)

// call is one JSON-RPC call of an authenticated caller to an exposed
// agent.
type call struct {
	s        *Server
	r        *http.Request
	w        http.ResponseWriter
	agent    a2aconf.Exposed
	who      string // the caller's agent name
	operator bool
	ctx      context.Context // the request's, with the caller's credentials for the hub
	rpcID    json.RawMessage
}

// dispatch runs a method. A stream writes its own answer and returns
// nil, nil.
func (c *call) dispatch(method string, params json.RawMessage) (proto.Message, *rpcError) {
	switch method {
	case "SendMessage":
		req := &a2apb.SendMessageRequest{}
		if err := decode(params, req); err != nil {
			return nil, err
		}
		return c.send(req)
	case "SendStreamingMessage":
		req := &a2apb.SendMessageRequest{}
		if err := decode(params, req); err != nil {
			return nil, err
		}
		return nil, c.sendStream(req)
	case "GetTask":
		req := &a2apb.GetTaskRequest{}
		if err := decode(params, req); err != nil {
			return nil, err
		}
		t, _, err := c.task(req.GetId(), req.HistoryLength)
		return t, err
	case "ListTasks":
		req := &a2apb.ListTasksRequest{}
		if err := decode(params, req); err != nil {
			return nil, err
		}
		return c.list(req)
	case "CancelTask":
		req := &a2apb.CancelTaskRequest{}
		if err := decode(params, req); err != nil {
			return nil, err
		}
		return c.cancel(req.GetId())
	case "SubscribeToTask":
		req := &a2apb.SubscribeToTaskRequest{}
		if err := decode(params, req); err != nil {
			return nil, err
		}
		return nil, c.subscribe(req.GetId())
	}
	return nil, unsupported(method)
}

// task is a task as the log has it, and the last seq it folds in.
func (c *call) task(id string, historyLength *int32) (*a2apb.Task, uint64, *rpcError) {
	if id == "" {
		return nil, 0, fail(codeInvalidParams, "MALFORMED", "want the task's id")
	}
	info, log, err := c.load(c.ctx, id)
	if err != nil {
		return nil, 0, fromHub(err)
	}
	var last uint64
	if n := len(log); n > 0 {
		last = log[n-1].GetSeq()
	}
	return taskOf(info, log, c.agent.Agent, c.who, historyLength), last, nil
}

// textOf is a message's parts as one text: text parts as they are, data
// parts as their JSON; files are refused.
func textOf(m *a2apb.Message) (string, *rpcError) {
	if m == nil || m.GetMessageId() == "" || len(m.GetParts()) == 0 {
		return "", fail(codeInvalidParams, "MALFORMED", "want a message with a messageId and at least one part")
	}
	if m.GetRole() == a2apb.Role_ROLE_AGENT {
		return "", fail(codeInvalidParams, "MALFORMED", "a client's message has the role ROLE_USER")
	}
	var b strings.Builder
	for i, p := range m.GetParts() {
		if mt := p.GetMediaType(); mt != "" && !strings.HasPrefix(mt, "text/") && mt != "application/json" {
			return "", fail(codeContentType, "CONTENT_TYPE_NOT_SUPPORTED", "part %d: media type %q is not taken: send text/plain or application/json", i, mt)
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		switch x := p.GetContent().(type) {
		case *a2apb.Part_Text:
			b.WriteString(x.Text)
		case *a2apb.Part_Data:
			j, err := protojson.Marshal(x.Data)
			if err != nil {
				return "", fail(codeInvalidParams, "MALFORMED", "part %d: %v", i, err)
			}
			b.Write(j)
		default:
			return "", fail(codeContentType, "CONTENT_TYPE_NOT_SUPPORTED", "part %d: files (raw or url parts) are not taken: send text or data parts", i)
		}
	}
	return b.String(), nil
}

// send delivers a message: a new task, or the next input of one; then,
// unless configuration.returnImmediately, it waits until the task ends
// or needs input.
func (c *call) send(req *a2apb.SendMessageRequest) (proto.Message, *rpcError) {
	id, after, err := c.deliver(req.GetMessage())
	if err != nil {
		return nil, err
	}
	hl := req.GetConfiguration().HistoryLength
	if !req.GetConfiguration().GetReturnImmediately() {
		if err := c.await(id, after); err != nil {
			return nil, err
		}
	}
	t, _, err := c.task(id, hl)
	if err != nil {
		return nil, err
	}
	return &a2apb.SendMessageResponse{Payload: &a2apb.SendMessageResponse_Task{Task: t}}, nil
}

// deliver puts a message into its task, opening the task if it names
// none, and returns the task's id and the seq the message was written
// at.
func (c *call) deliver(m *a2apb.Message) (string, uint64, *rpcError) {
	text, rerr := textOf(m)
	if rerr != nil {
		return "", 0, rerr
	}
	if m.GetTaskId() == "" {
		return c.open(m, text)
	}
	info, err := c.s.cfg.Client.GetSession(c.ctx, &hubpb.GetSessionRequest{SessionId: m.GetTaskId()})
	if err != nil {
		return "", 0, fromHub(err)
	}
	if info.GetMeta().GetLabels()[labelAgent] != c.agent.Agent {
		return "", 0, fail(codeTaskNotFound, "UNKNOWN_SESSION", "task not found: %s is not a task of %s", m.GetTaskId(), c.agent.Agent)
	}
	if ctxID := m.GetContextId(); ctxID != "" && ctxID != contextOf(info) {
		return "", 0, fail(codeInvalidParams, "MALFORMED", "contextId %q is not task %s's (%s)", ctxID, m.GetTaskId(), contextOf(info))
	}
	return c.input(info, m.GetMessageId(), text)
}

// input is a caller's message to a task that exists: the answer to its
// pending question, the caller's turn when it is to speak, and otherwise
// a note for the agent's turn (a "message" envelope). Each carries the
// messageId as its client_msg_id, so a message sent again is found, not
// written twice, whatever the task did since.
func (c *call) input(info *hubpb.SessionInfo, msgID, text string) (string, uint64, *rpcError) {
	id := info.GetMeta().GetSessionId()
	var ack *hubpb.SendResponse
	var err error
	switch h := askedOf(info, c.who); {
	case h != nil:
		ack, err = c.s.cfg.Client.Answer(c.ctx, &hubpb.AnswerRequest{SessionId: id, ClientMsgId: msgID,
			Answer: &hubpb.Answer{QuestionId: h.GetQuestionId(), Text: text}})
	case TaskState(info, c.who) == a2apb.TaskState_TASK_STATE_INPUT_REQUIRED:
		ack, err = c.s.cfg.Client.Send(c.ctx, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{
			Type: session.EventText, ClientMsgId: msgID, Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: text}}}})
	default:
		ack, err = c.s.cfg.Client.Send(c.ctx, &hubpb.SendRequest{SessionId: id, Envelope: &hubpb.Envelope{
			Type: session.EventMessage, ClientMsgId: msgID, Payload: &hubpb.Envelope_Message{Message: &hubpb.Text{Text: text}}}})
	}
	if reasonOf(err) == hubpb.Reason_SESSION_CLOSED {
		return "", 0, fail(codeUnsupported, "SESSION_CLOSED", "task %s has ended (%s): send a new message without its taskId", id, info.GetCloseReason())
	}
	if err != nil {
		return "", 0, fromHub(err)
	}
	return id, ack.GetSeq(), nil
}

// open opens a task's session (in the message's context, or a new one)
// with the message as the caller's first turn, in one write. A message
// sent again (the same messageId) finds the session it opened.
func (c *call) open(m *a2apb.Message, text string) (string, uint64, *rpcError) {
	if c.who == c.agent.Agent {
		return "", 0, fail(codeInvalidParams, "MALFORMED", "%s cannot send a task to itself", c.who)
	}
	ctxID := m.GetContextId()
	if ctxID == "" {
		// A new context, named after the caller and the message so that
		// the message sent again names the same one.
		ctxID = uuid.NewSHA1(uuid.NameSpaceURL, []byte("hubd:a2a:"+c.who+"\x00"+m.GetMessageId())).String()
	}
	g, err := structpb.NewStruct(graph(c.who, c.agent.Agent))
	if err != nil {
		return "", 0, fail(codeInternal, "INTERNAL", "the task's graph: %v", err)
	}
	o, err := c.s.cfg.Client.Open(c.ctx, &hubpb.OpenRequest{
		Type: taskType, Graph: g, ThreadKey: ctxID, IdempotencyKey: "a2a:" + m.GetMessageId(), Task: text,
		Participants: []*hubpb.Participant{{Name: c.agent.Agent, AutoAccept: true}},
		Labels:       map[string]string{labelAgent: c.agent.Agent, labelContext: ctxID},
	})
	if err != nil {
		return "", 0, fromHub(err)
	}
	info := o.GetSession()
	if o.GetExisting() {
		// The message sent again, or the context's task still open: the
		// message is that task's (next) input.
		if info.GetMeta().GetLabels()[labelAgent] != c.agent.Agent {
			return "", 0, fail(codeInvalidParams, "MALFORMED", "contextId %q is a context of another agent's", ctxID)
		}
		return c.input(info, m.GetMessageId(), text)
	}
	return info.GetMeta().GetSessionId(), info.GetSeq(), nil
}

// graph is a task's workflow: the caller speaks, the agent answers, and
// the agent's answer completes the task (unless it asks the caller a
// question first, or hands the turn back).
func graph(caller, agent string) map[string]any {
	return map[string]any{
		"version": 1, "initial_speaker": caller,
		"transitions": []any{map[string]any{
			"when": map[string]any{"name": "from_speaker", "args": map[string]any{"agent_id": caller}},
			"then": map[string]any{"name": "agent", "args": map[string]any{"agent_id": agent}},
		}},
		"default_target": map[string]any{"name": "terminate", "args": map[string]any{"reason": "completed"}},
	}
}

// cancel ends a task: its session closes with reason canceled.
func (c *call) cancel(id string) (proto.Message, *rpcError) {
	t, _, rerr := c.task(id, nil)
	if rerr != nil {
		return nil, rerr
	}
	if terminal(t.GetStatus().GetState()) {
		return nil, fail(codeTaskNotCancelable, "SESSION_CLOSED", "task %s has ended (%s): it cannot be canceled", id, t.GetStatus().GetState())
	}
	if _, err := c.s.cfg.Client.Close(c.ctx, &hubpb.CloseRequest{SessionId: id, Reason: "canceled"}); err != nil {
		return nil, fromHub(err)
	}
	t, _, rerr = c.task(id, nil)
	return t, rerr
}
