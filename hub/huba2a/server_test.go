package huba2a_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/a2aconf"
	"github.com/hubd/hubd/internal/a2apb"
	"github.com/hubd/hubd/internal/server"
)

// fixture is a real hub serving "writer" over A2A, and writer's client.
type fixture struct {
	srv    *server.Server
	writer *agentsdk.Client
}

func start(t *testing.T) *fixture {
	t.Helper()
	cfg := server.Config{Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0", InMemory: true, Logger: zerolog.Nop(),
		A2A: &a2aconf.File{Expose: []a2aconf.Exposed{{Agent: "writer", Description: "writes",
			Skills: []a2aconf.Skill{{ID: "poem", Name: "Poems", Description: "poems", Tags: []string{"writing"}}}}}}}
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	w, err := agentsdk.Dial(context.Background(), srv.Addr(), agentsdk.Options{Name: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &fixture{srv: srv, writer: w}
}

// post sends a JSON-RPC request as who and returns the answer's body.
func (f *fixture) post(t *testing.T, who, method, params string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":` + params + `}`
	req, _ := http.NewRequest("POST", "http://"+f.srv.HTTPAddr()+"/a2a/agents/writer", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("X-Hubd-Agent", who)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// result is a JSON-RPC answer's result, read into m; or its error code.
func (f *fixture) call(t *testing.T, who, method, params string, m *a2apb.Task) int {
	t.Helper()
	resp := f.post(t, who, method, params)
	defer resp.Body.Close()
	var out struct {
		Result json.RawMessage
		Error  *struct{ Code int }
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Error != nil {
		return out.Error.Code
	}
	if method == "SendMessage" {
		var r a2apb.SendMessageResponse
		if err := protojson.Unmarshal(out.Result, &r); err != nil {
			t.Fatal(err)
		}
		*m = *r.GetTask()
		return 0
	}
	if err := protojson.Unmarshal(out.Result, m); err != nil {
		t.Fatal(err)
	}
	return 0
}

// stream reads a stream's events, calling each(i, event) as they come.
func (f *fixture) stream(t *testing.T, who, method, params string, each func(int, *a2apb.StreamResponse)) []string {
	t.Helper()
	resp := f.post(t, who, method, params)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		t.Fatalf("%s: %s %s", method, ct, b.String())
	}
	var kinds []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var out struct{ Result json.RawMessage }
		if err := json.Unmarshal([]byte(data), &out); err != nil {
			t.Fatal(err)
		}
		var ev a2apb.StreamResponse
		if err := protojson.Unmarshal(out.Result, &ev); err != nil {
			t.Fatal(err)
		}
		switch ev.GetPayload().(type) {
		case *a2apb.StreamResponse_Task:
			kinds = append(kinds, "task")
		case *a2apb.StreamResponse_StatusUpdate:
			kinds = append(kinds, "status:"+ev.GetStatusUpdate().GetStatus().GetState().String())
		case *a2apb.StreamResponse_ArtifactUpdate:
			kinds = append(kinds, "artifact:"+ev.GetArtifactUpdate().GetArtifact().GetParts()[0].GetText())
		}
		if each != nil {
			each(len(kinds)-1, &ev)
		}
	}
	return kinds
}

// TestSubscribeHasEveryChangeOnce subscribes to a task twice, each time
// as the writer changes it: each stream starts with the task as the log
// has it and then has each later change exactly once.
func TestSubscribeHasEveryChangeOnce(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	var task a2apb.Task
	if code := f.call(t, "alice", "SendMessage", `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"a haiku"}]},"configuration":{"returnImmediately":true}}`, &task); code != 0 {
		t.Fatalf("SendMessage: %d", code)
	}
	if task.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_WORKING || task.GetContextId() == "" {
		t.Fatalf("the new task: %v", &task)
	}
	ask := &hubpb.Envelope{Type: agentsdk.EventQuestion, Payload: &hubpb.Envelope_Question{Question: &hubpb.Question{
		QuestionId: "tone", Text: "calm or stormy?", Answerer: "alice"}}}
	first := f.stream(t, "alice", "SubscribeToTask", `{"id":"`+task.GetId()+`"}`, func(i int, _ *a2apb.StreamResponse) {
		if i == 0 {
			if _, err := f.writer.Send(ctx, task.GetId(), ask); err != nil {
				t.Error(err)
			}
		}
	})
	if want := []string{"task", "status:TASK_STATE_INPUT_REQUIRED"}; strings.Join(first, " ") != strings.Join(want, " ") {
		t.Errorf("the first stream: %v, want %v", first, want)
	}
	if code := f.call(t, "alice", "SendMessage", `{"message":{"messageId":"m2","taskId":"`+task.GetId()+`","role":"ROLE_USER","parts":[{"text":"calm"}]},"configuration":{"returnImmediately":true}}`, &task); code != 0 {
		t.Fatalf("the answer: %d", code)
	}
	second := f.stream(t, "alice", "SubscribeToTask", `{"id":"`+task.GetId()+`"}`, func(i int, ev *a2apb.StreamResponse) {
		if i == 0 {
			if n := len(ev.GetTask().GetHistory()); n != 3 {
				t.Errorf("the task resumed has %d messages, want 3 (the text, the question, the answer)", n)
			}
			if _, err := f.writer.SendText(ctx, task.GetId(), "tides breathe"); err != nil {
				t.Error(err)
			}
		}
	})
	if want := []string{"task", "artifact:tides breathe", "status:TASK_STATE_COMPLETED"}; strings.Join(second, " ") != strings.Join(want, " ") {
		t.Errorf("the second stream: %v, want %v", second, want)
	}
	if code := f.call(t, "alice", "SubscribeToTask", `{"id":"`+task.GetId()+`"}`, &task); code != -32004 {
		t.Errorf("a subscription to an ended task: code %d, want -32004", code)
	}
}

// TestTasksAreTheCallers: another agent cannot read, cancel or continue
// alice's task (task not found, as for a task that does not exist), nor
// list it.
func TestTasksAreTheCallers(t *testing.T) {
	f := start(t)
	var task a2apb.Task
	if code := f.call(t, "alice", "SendMessage", `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"a haiku"}]},"configuration":{"returnImmediately":true}}`, &task); code != 0 {
		t.Fatalf("SendMessage: %d", code)
	}
	var got a2apb.Task
	for _, c := range []struct{ method, params string }{
		{"GetTask", `{"id":"` + task.GetId() + `"}`},
		{"CancelTask", `{"id":"` + task.GetId() + `"}`},
		{"SendMessage", `{"message":{"messageId":"m9","taskId":"` + task.GetId() + `","role":"ROLE_USER","parts":[{"text":"mine now"}]}}`},
	} {
		if code := f.call(t, "mallory", c.method, c.params, &got); code != -32001 {
			t.Errorf("mallory's %s: code %d, want -32001", c.method, code)
		}
	}
	resp := f.post(t, "mallory", "ListTasks", `{}`)
	defer resp.Body.Close()
	var out struct{ Result map[string]any }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if tasks, _ := out.Result["tasks"].([]any); len(tasks) != 0 {
		t.Errorf("mallory lists %v", tasks)
	}
	// The same message sent again is the same task, not a second one.
	var again a2apb.Task
	if code := f.call(t, "alice", "SendMessage", `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"a haiku"}]},"configuration":{"returnImmediately":true}}`, &again); code != 0 || again.GetId() != task.GetId() {
		t.Errorf("the message sent again: code %d, task %s, want %s", code, again.GetId(), task.GetId())
	}
}
