package huba2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/a2aconf"
)

// JSON-RPC error codes: JSON-RPC 2.0's, then A2A's (specification 5.4).
const (
	codeParse              = -32700
	codeInvalidRequest     = -32600
	codeMethodNotFound     = -32601
	codeInvalidParams      = -32602
	codeInternal           = -32603
	codeUnauthenticated    = -32000 // a server error of JSON-RPC's range that A2A leaves to the server
	codeTaskNotFound       = -32001
	codeTaskNotCancelable  = -32002
	codePushNotSupported   = -32003
	codeUnsupported        = -32004
	codeContentType        = -32005
	codeVersionUnsupported = -32009
)

// rpcError is a JSON-RPC error: its code, its message, and the hub's
// stable reason as a google.rpc.ErrorInfo in data.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    []any  `json:"data,omitempty"`
	status  int    // the HTTP status it is sent with (0: 200)
}

func (e *rpcError) Error() string { return e.Message }

// fail is an A2A error with the hub's reason (or the A2A error's name).
func fail(code int, reason, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...), Data: []any{map[string]any{
		"@type": "type.googleapis.com/google.rpc.ErrorInfo", "domain": "hubd", "reason": reason}}}
}

// fromHub is the A2A error of a refusal of the hub's: a session the
// caller may not see is a task not found (the specification asks not to
// tell the two apart), bad input invalid params, an ended session an
// unsupported operation.
func fromHub(err error) *rpcError {
	var re *rpcError
	if errors.As(err, &re) {
		return re
	}
	r := reasonOf(err)
	msg := detailOf(err)
	switch r {
	case hubpb.Reason_UNKNOWN_SESSION, hubpb.Reason_NOT_PARTICIPANT, hubpb.Reason_PERMISSION_DENIED:
		return fail(codeTaskNotFound, r.String(), "task not found: %s", msg)
	case hubpb.Reason_MALFORMED, hubpb.Reason_TOO_LARGE, hubpb.Reason_LIMIT_REACHED, hubpb.Reason_IDEMPOTENCY_CONFLICT:
		return fail(codeInvalidParams, r.String(), "%s", msg)
	case hubpb.Reason_SESSION_CLOSED:
		return fail(codeUnsupported, r.String(), "the task has ended: %s", msg)
	case hubpb.Reason_UNAUTHENTICATED:
		e := fail(codeUnauthenticated, r.String(), "%s", msg)
		e.status = http.StatusUnauthorized
		return e
	case hubpb.Reason_REASON_UNSPECIFIED, hubpb.Reason_INTERNAL:
		return fail(codeInternal, hubpb.Reason_INTERNAL.String(), "internal error (logged by the hub)")
	}
	return fail(codeInternal, r.String(), "%s", msg)
}

// request is a JSON-RPC request.
type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// response is a JSON-RPC response: result or error.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpc serves one JSON-RPC request.
func (s *Server) rpc(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		reply(w, nil, nil, fail(codeInvalidRequest, "TOO_LARGE", "the request body: %v", err))
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		reply(w, nil, nil, fail(codeParse, "MALFORMED", "invalid JSON payload: %v", err))
		return
	}
	if req.JSONRPC != "2.0" || req.Method == "" || (len(req.ID) > 0 && req.ID[0] != '"' && (req.ID[0] < '0' || req.ID[0] > '9') && req.ID[0] != '-') {
		reply(w, req.ID, nil, fail(codeInvalidRequest, "MALFORMED", `not a JSON-RPC 2.0 request: want "jsonrpc": "2.0", a method and an id`))
		return
	}
	if v := version(r); v != ProtocolVersion {
		reply(w, req.ID, nil, fail(codeVersionUnsupported, "VERSION_NOT_SUPPORTED",
			"A2A version %q is not served here: this agent speaks A2A %s (send the header A2A-Version: %s)", v, ProtocolVersion, ProtocolVersion))
		return
	}
	agent, rerr := s.agentOf(r, req.Params)
	if rerr != nil {
		reply(w, req.ID, nil, rerr)
		return
	}
	id, err := s.cfg.Identify(r)
	if err != nil {
		reply(w, req.ID, nil, fromHub(err))
		return
	}
	c := &call{s: s, r: r, w: w, agent: agent, who: id.Agent, operator: id.Operator, ctx: s.call(r), rpcID: req.ID}
	result, rerr := c.dispatch(req.Method, req.Params)
	if result == nil && rerr == nil {
		return // a stream, which wrote its answer
	}
	reply(w, req.ID, result, rerr)
}

// version is the request's A2A version: the A2A-Version header (or
// parameter), "0.3" when it has none, as the specification says.
func version(r *http.Request) string {
	v := strings.TrimSpace(r.Header.Get("A2A-Version"))
	if v == "" {
		v = r.URL.Query().Get("A2A-Version")
	}
	if v == "" {
		return "0.3"
	}
	if i := strings.IndexByte(v, '.'); i >= 0 {
		if j := strings.IndexByte(v[i+1:], '.'); j >= 0 {
			v = v[:i+1+j] // a patch version does not count
		}
	}
	return v
}

// agentOf is the exposed agent a request is for: the path's, else the
// params' tenant.
func (s *Server) agentOf(r *http.Request, params json.RawMessage) (a2aconf.Exposed, *rpcError) {
	name := r.PathValue("agent")
	var t struct {
		Tenant string `json:"tenant"`
	}
	_ = json.Unmarshal(params, &t)
	switch {
	case name == "":
		name = t.Tenant
	case t.Tenant != "" && t.Tenant != name:
		return a2aconf.Exposed{}, fail(codeInvalidParams, "MALFORMED", "tenant %q: this endpoint serves %s", t.Tenant, name)
	}
	a, ok := s.agents[name]
	if !ok {
		return a, fail(codeInvalidParams, "MALFORMED", "no agent %q is served over A2A here; the hub's agents (its card's tenants): %s", name, s.names())
	}
	return a, nil
}

// decode reads params into m, ignoring fields it does not know (as the
// specification asks, for versions to come).
func decode(params json.RawMessage, m proto.Message) *rpcError {
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(params, m); err != nil {
		return fail(codeInvalidParams, "MALFORMED", "invalid params for %s: %v", m.ProtoReflect().Descriptor().Name(), err)
	}
	return nil
}

// reply writes a JSON-RPC response.
func reply(w http.ResponseWriter, id json.RawMessage, result proto.Message, rerr *rpcError) {
	resp := response{JSONRPC: "2.0", ID: id, Error: rerr}
	if len(id) == 0 {
		resp.ID = json.RawMessage("null")
	}
	status := http.StatusOK
	if rerr != nil && rerr.status != 0 {
		status = rerr.status
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hubd"`)
		}
	}
	if rerr == nil {
		b, err := protojson.Marshal(result)
		if err != nil {
			resp.Error = fail(codeInternal, "INTERNAL", "encoding the result: %v", err)
		} else {
			resp.Result = b
		}
	}
	var out bytes.Buffer
	if err := json.NewEncoder(&out).Encode(resp); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(out.Bytes())
}

// unsupported answers the methods of capabilities the cards do not
// declare.
func unsupported(method string) *rpcError {
	switch method {
	case "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig":
		return fail(codePushNotSupported, "PUSH_NOTIFICATION_NOT_SUPPORTED",
			"push notifications are not supported (the agent card's capabilities.pushNotifications is false): poll GetTask or stream with SubscribeToTask")
	case "GetExtendedAgentCard":
		return fail(codeUnsupported, "UNSUPPORTED_OPERATION", "there is no extended agent card (capabilities.extendedAgentCard is false)")
	}
	return fail(codeMethodNotFound, "MALFORMED", "method %q does not exist: A2A 1.0's are SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask, the push notification configuration methods and GetExtendedAgentCard", method)
}
