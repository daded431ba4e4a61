package a2abridge_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/internal/a2apb"
)

// agent is an outside A2A agent for the tests: the JSON-RPC binding of
// A2A 1.0 over HTTP, its tasks in memory, each message handed to react,
// which moves the task on (or leaves it working for the test to settle).
type agent struct {
	srv       *httptest.Server
	streaming bool
	react     func(a *agent, tk *a2apb.Task, msg *a2apb.Message)

	mu      sync.Mutex
	tasks   map[string]*a2apb.Task
	sent    map[string]int // messages received, by message id
	unavail int            // the next requests answered 503
	changed chan struct{}  // closed and replaced at each change of a task

	canceled chan string // the tasks CancelTask cancelled
}

func newAgent(t *testing.T, streaming bool, react func(a *agent, tk *a2apb.Task, msg *a2apb.Message)) *agent {
	a := &agent{streaming: streaming, react: react, tasks: map[string]*a2apb.Task{}, sent: map[string]int{},
		changed: make(chan struct{}), canceled: make(chan string, 8)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-card.json", a.card)
	mux.HandleFunc("POST /rpc", a.rpc)
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

func (a *agent) cardURL() string { return a.srv.URL + "/.well-known/agent-card.json" }

func (a *agent) card(w http.ResponseWriter, r *http.Request) {
	card := &a2apb.AgentCard{Name: "test agent", Description: "answers in tests", Version: "1",
		SupportedInterfaces: []*a2apb.AgentInterface{
			{Url: a.srv.URL + "/grpc", ProtocolBinding: "GRPC", ProtocolVersion: "1.0"},
			{Url: a.srv.URL + "/rpc", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
		},
		Capabilities: &a2apb.AgentCapabilities{Streaming: proto.Bool(a.streaming)}}
	b, _ := protojson.Marshal(card)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// set changes a task under the lock and wakes its subscribers.
func (a *agent) set(id string, f func(tk *a2apb.Task)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a.tasks[id])
	close(a.changed)
	a.changed = make(chan struct{})
}

// status is a status with a message from the agent.
func status(s a2apb.TaskState, text string) *a2apb.TaskStatus {
	st := &a2apb.TaskStatus{State: s}
	if text != "" {
		st.Message = &a2apb.Message{MessageId: fmt.Sprintf("st-%d-%s", s, text), Role: a2apb.Role_ROLE_AGENT,
			Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: text}}}}
	}
	return st
}

// complete completes a task with a text artifact.
func complete(tk *a2apb.Task, text string) {
	tk.Status = status(a2apb.TaskState_TASK_STATE_COMPLETED, "")
	tk.Artifacts = append(tk.Artifacts, &a2apb.Artifact{ArtifactId: "out", Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: text}}}})
}

func (a *agent) sentCount(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sent[id]
}

// only returns the one task, once there is one.
func (a *agent) only() *a2apb.Task {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, tk := range a.tasks {
		return proto.Clone(tk).(*a2apb.Task)
	}
	return nil
}

type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func (a *agent) rpc(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	if a.unavail > 0 {
		a.unavail--
		a.mu.Unlock()
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	a.mu.Unlock()
	if r.Header.Get("A2A-Version") != "1.0" {
		http.Error(w, "want A2A-Version 1.0", http.StatusBadRequest)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var req rpcRequest
	if err := json.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch req.Method {
	case "SendMessage", "SendStreamingMessage":
		a.send(w, r, req)
	case "GetTask", "SubscribeToTask":
		a.task(w, r, req)
	case "CancelTask":
		a.cancel(w, req)
	default:
		a.fail(w, req.ID, -32601, "method not found")
	}
}

func (a *agent) send(w http.ResponseWriter, r *http.Request, req rpcRequest) {
	var p a2apb.SendMessageRequest
	if err := protojson.Unmarshal(req.Params, &p); err != nil {
		a.fail(w, req.ID, -32602, err.Error())
		return
	}
	tk, ok := a.receive(p.GetMessage())
	switch {
	case !ok:
		a.fail(w, req.ID, -32001, "task not found")
	case req.Method == "SendMessage":
		a.reply(w, req.ID, &a2apb.SendMessageResponse{Payload: &a2apb.SendMessageResponse_Task{Task: tk}})
	default:
		a.stream(w, r, req.ID, tk.GetId())
	}
}

func (a *agent) task(w http.ResponseWriter, r *http.Request, req rpcRequest) {
	var p a2apb.GetTaskRequest
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(req.Params, &p); err != nil {
		a.fail(w, req.ID, -32602, err.Error())
		return
	}
	tk := a.get(p.GetId())
	switch {
	case tk == nil:
		a.fail(w, req.ID, -32001, "task not found")
	case req.Method == "GetTask":
		a.reply(w, req.ID, tk)
	default:
		a.stream(w, r, req.ID, tk.GetId())
	}
}

func (a *agent) cancel(w http.ResponseWriter, req rpcRequest) {
	var p a2apb.CancelTaskRequest
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(req.Params, &p); err != nil || a.get(p.GetId()) == nil {
		a.fail(w, req.ID, -32001, "task not found")
		return
	}
	a.set(p.GetId(), func(tk *a2apb.Task) { tk.Status = status(a2apb.TaskState_TASK_STATE_CANCELED, "") })
	a.reply(w, req.ID, a.get(p.GetId()))
	a.canceled <- p.GetId()
}

// receive takes a message: a new task, or the next message of one.
func (a *agent) receive(m *a2apb.Message) (*a2apb.Task, bool) {
	a.mu.Lock()
	a.sent[m.GetMessageId()]++
	id := m.GetTaskId()
	if id == "" {
		id = fmt.Sprintf("task-%d", len(a.tasks)+1)
		a.tasks[id] = &a2apb.Task{Id: id, ContextId: m.GetContextId(), Status: status(a2apb.TaskState_TASK_STATE_SUBMITTED, "")}
	}
	tk, ok := a.tasks[id]
	if ok {
		tk.History = append(tk.History, m)
	}
	a.mu.Unlock()
	if !ok {
		return nil, false
	}
	a.set(id, func(tk *a2apb.Task) { a.react(a, tk, m) })
	return a.get(id), true
}

func (a *agent) get(id string) *a2apb.Task {
	a.mu.Lock()
	defer a.mu.Unlock()
	if tk, ok := a.tasks[id]; ok {
		return proto.Clone(tk).(*a2apb.Task)
	}
	return nil
}

func (a *agent) reply(w http.ResponseWriter, id json.RawMessage, m proto.Message) {
	b, _ := protojson.Marshal(m)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "result": json.RawMessage(b)})
}

func (a *agent) fail(w http.ResponseWriter, id json.RawMessage, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

// stream sends the task, then its status at each change, until it
// settles or the client leaves.
func (a *agent) stream(w http.ResponseWriter, r *http.Request, id json.RawMessage, taskID string) {
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(ev *a2apb.StreamResponse) {
		b, _ := protojson.Marshal(ev)
		out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": json.RawMessage(b)})
		fmt.Fprintf(w, "data: %s\n\n", out)
		w.(http.Flusher).Flush()
	}
	a.mu.Lock()
	tk, wake := proto.Clone(a.tasks[taskID]).(*a2apb.Task), a.changed
	a.mu.Unlock()
	event(&a2apb.StreamResponse{Payload: &a2apb.StreamResponse_Task{Task: tk}})
	for !final(tk.GetStatus().GetState()) {
		select {
		case <-r.Context().Done():
			return
		case <-wake:
		}
		a.mu.Lock()
		tk, wake = proto.Clone(a.tasks[taskID]).(*a2apb.Task), a.changed
		a.mu.Unlock()
		event(&a2apb.StreamResponse{Payload: &a2apb.StreamResponse_StatusUpdate{StatusUpdate: &a2apb.TaskStatusUpdateEvent{
			TaskId: tk.GetId(), ContextId: tk.GetContextId(), Status: tk.GetStatus()}}})
	}
}

func final(s a2apb.TaskState) bool {
	switch s {
	case a2apb.TaskState_TASK_STATE_SUBMITTED, a2apb.TaskState_TASK_STATE_WORKING, a2apb.TaskState_TASK_STATE_UNSPECIFIED:
		return false
	}
	return true
}
