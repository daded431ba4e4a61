package huba2a

import (
	"net/http/httptest"
	"testing"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/a2apb"
)

func TestClosedState(t *testing.T) {
	for _, c := range []struct {
		state, reason string
		want          a2apb.TaskState
	}{
		{"CLOSED", "completed", a2apb.TaskState_TASK_STATE_COMPLETED},
		{"CLOSED", "sequence_complete", a2apb.TaskState_TASK_STATE_COMPLETED},
		{"CLOSED", "finished", a2apb.TaskState_TASK_STATE_COMPLETED},
		{"CLOSED", "canceled", a2apb.TaskState_TASK_STATE_CANCELED},
		{"CLOSED", "cancelled", a2apb.TaskState_TASK_STATE_CANCELED},
		{"CLOSED", "parent_closed", a2apb.TaskState_TASK_STATE_CANCELED},
		{"CLOSED", "invite_rejected", a2apb.TaskState_TASK_STATE_REJECTED},
		{"CLOSED", "rejected", a2apb.TaskState_TASK_STATE_REJECTED},
		{"CLOSED", "failed", a2apb.TaskState_TASK_STATE_FAILED},
		{"CLOSED", "expectation_violated:turn_within", a2apb.TaskState_TASK_STATE_FAILED},
		{"CLOSED", "budget_exceeded", a2apb.TaskState_TASK_STATE_FAILED},
		{"CLOSED", "max_turns", a2apb.TaskState_TASK_STATE_FAILED},
		{"CLOSED", "invite_timeout", a2apb.TaskState_TASK_STATE_FAILED},
		{"EXPIRED", "ttl_expired", a2apb.TaskState_TASK_STATE_FAILED},
	} {
		if got := closedState(c.state, c.reason); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.state, c.reason, got, c.want)
		}
	}
}

func TestTaskState(t *testing.T) {
	q := &hubpb.Hold{Kind: "question", Answerer: "alice", Holder: "writer"}
	for _, c := range []struct {
		name string
		info *hubpb.SessionInfo
		want a2apb.TaskState
	}{
		{"pending", &hubpb.SessionInfo{State: "PENDING"}, a2apb.TaskState_TASK_STATE_SUBMITTED},
		{"the agent's turn", &hubpb.SessionInfo{State: "OPEN", Expected: []string{"writer"}}, a2apb.TaskState_TASK_STATE_WORKING},
		{"a question to the caller", &hubpb.SessionInfo{State: "OPEN", Expected: []string{"writer"}, Holds: []*hubpb.Hold{q}}, a2apb.TaskState_TASK_STATE_INPUT_REQUIRED},
		{"a question to someone else", &hubpb.SessionInfo{State: "OPEN", Expected: []string{"writer"},
			Holds: []*hubpb.Hold{{Kind: "question", Answerer: "ops"}}}, a2apb.TaskState_TASK_STATE_WORKING},
		{"the caller's turn", &hubpb.SessionInfo{State: "OPEN", Expected: []string{"alice"}}, a2apb.TaskState_TASK_STATE_INPUT_REQUIRED},
		{"closed", &hubpb.SessionInfo{State: "CLOSED", CloseReason: "completed"}, a2apb.TaskState_TASK_STATE_COMPLETED},
	} {
		if got := TaskState(c.info, "alice"); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestVersion(t *testing.T) {
	for header, want := range map[string]string{"": "0.3", "1.0": "1.0", "1.0.1": "1.0", " 1.0 ": "1.0", "0.3": "0.3", "2.1": "2.1"} {
		r := httptest.NewRequest("POST", "/a2a", nil)
		if header != "" {
			r.Header.Set("A2A-Version", header)
		}
		if got := version(r); got != want {
			t.Errorf("A2A-Version %q: %q, want %q", header, got, want)
		}
	}
	r := httptest.NewRequest("POST", "/a2a?A2A-Version=1.0", nil)
	if got := version(r); got != "1.0" {
		t.Errorf("the version as a parameter: %q", got)
	}
}

func TestTextOf(t *testing.T) {
	text := func(s string) *a2apb.Part { return &a2apb.Part{Content: &a2apb.Part_Text{Text: s}} }
	for _, c := range []struct {
		name string
		m    *a2apb.Message
		want string
		code int
	}{
		{"text", &a2apb.Message{MessageId: "m", Parts: []*a2apb.Part{text("a"), text("b")}}, "a\nb", 0},
		{"no id", &a2apb.Message{Parts: []*a2apb.Part{text("a")}}, "", codeInvalidParams},
		{"no parts", &a2apb.Message{MessageId: "m"}, "", codeInvalidParams},
		{"an agent's", &a2apb.Message{MessageId: "m", Role: a2apb.Role_ROLE_AGENT, Parts: []*a2apb.Part{text("a")}}, "", codeInvalidParams},
		{"a file", &a2apb.Message{MessageId: "m", Parts: []*a2apb.Part{{Content: &a2apb.Part_Url{Url: "http://x/a.png"}}}}, "", codeContentType},
		{"an image type", &a2apb.Message{MessageId: "m", Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "x"}, MediaType: "image/png"}}}, "", codeContentType},
	} {
		got, err := textOf(c.m)
		switch {
		case c.code == 0 && (err != nil || got != c.want):
			t.Errorf("%s: %q %v, want %q", c.name, got, err, c.want)
		case c.code != 0 && (err == nil || err.Code != c.code):
			t.Errorf("%s: %v, want code %d", c.name, err, c.code)
		}
	}
}
