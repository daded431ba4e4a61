package a2abridge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/internal/a2apb"
)

// serveRPC answers every request with status, content type and body.
func serveRPC(t *testing.T, status int, ctype, body string) *remote {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return &remote{cardURL: srv.URL, url: srv.URL, http: srv.Client(),
		retry: Backoff{Base: time.Millisecond, Max: time.Millisecond, For: 20 * time.Millisecond}}
}

func TestStreamAnswers(t *testing.T) {
	ctx := context.Background()
	var states []a2apb.TaskState
	collect := func(ev *a2apb.StreamResponse) (bool, error) {
		states = append(states, apply(nil, ev).GetStatus().GetState())
		return true, nil
	}
	for _, c := range []struct {
		name, ctype, body string
		status            int
		states            int
		err               func(error) bool
	}{
		{"events, one split over two data lines", "text/event-stream", `data: {"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","status":{"state":"TASK_STATE_WORKING"}}}}` + "\n\n" +
			`data: {"jsonrpc":"2.0","id":1,` + "\n" + `data: "result":{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_COMPLETED"}}}}` + "\n\n",
			200, 2, isTransient},
		{"an error event", "text/event-stream", `data: {"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Task not found"}}` + "\n\n",
			200, 0, func(err error) bool { var re *rpcError; return errors.As(err, &re) && re.Code == codeTaskNotFound }},
		{"a plain JSON-RPC error", "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32004,"message":"Unsupported"}}`,
			200, 0, func(err error) bool { return errors.Is(err, ErrRemote) }},
		{"a plain result", "application/json", `{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t"}}}`,
			200, 0, func(err error) bool {
				return errors.Is(err, ErrRemote) && strings.Contains(err.Error(), "want text/event-stream")
			}},
		{"503 until the budget is spent", "text/plain", "busy", 503, 0,
			func(err error) bool { return isTransient(err) && strings.Contains(err.Error(), "gave up after") }},
		{"404", "text/plain", "no", 404, 0, func(err error) bool { return errors.Is(err, ErrRemote) && !isTransient(err) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			states = nil
			r := serveRPC(t, c.status, c.ctype, c.body)
			err := r.stream(ctx, "SubscribeToTask", &a2apb.SubscribeToTaskRequest{Id: "t"}, collect)
			if len(states) != c.states || !c.err(err) {
				t.Fatalf("states %v, error %v", states, err)
			}
		})
	}
}

func TestCardWithoutJSONRPC(t *testing.T) {
	r := serveRPC(t, 200, "application/json", `{"name":"x","supportedInterfaces":[{"url":"http://h/rpc","protocolBinding":"JSONRPC","protocolVersion":"0.3"},{"url":"http://h/g","protocolBinding":"GRPC","protocolVersion":"1.0"}]}`)
	err := r.fetchCard(context.Background())
	if !errors.Is(err, ErrRemote) || !strings.Contains(err.Error(), `has no interface with protocolBinding "JSONRPC" and protocolVersion "1.0"`) {
		t.Fatalf("fetchCard: %v", err)
	}
}
