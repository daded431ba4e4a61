package a2abridge_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/a2aconf"
	"github.com/hubd/hubd/internal/a2apb"
	"github.com/hubd/hubd/internal/server"
)

// startHub runs hubd in process with the agent as the remote "echo"; dir
// "" keeps the log in memory.
func startHub(t *testing.T, addr, dir string, a *agent) *server.Server {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	srv, err := server.Start(context.Background(), server.Config{Listen: addr, DataDir: dir, InMemory: dir == "",
		Logger: zerolog.Nop(), A2A: &a2aconf.File{Remote: []a2aconf.Remote{{Agent: "echo", Card: a.cardURL(),
			Headers: map[string]string{"X-Api-Key": "k"}}}}})
	if err != nil {
		t.Fatalf("starting hubd: %v", err)
	}
	return srv
}

func stop(t *testing.T, srv *server.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("stopping hubd: %v", err)
	}
}

func dial(t *testing.T, ctx context.Context, addr, name string) *agentsdk.Client {
	t.Helper()
	c, err := agentsdk.Dial(ctx, addr, agentsdk.Options{Name: name})
	if err != nil {
		t.Fatalf("dial as %s: %v", name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// delegate opens alice's session with bob and delegates task to echo in
// a child conversation.
func delegate(t *testing.T, ctx context.Context, alice *agentsdk.Client, task string) *agentsdk.Task {
	t.Helper()
	p, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("alice", "bob")})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	tasks, err := alice.Delegate(ctx, p.ID(), agentsdk.DelegateOptions{Children: []agentsdk.OpenOptions{{
		Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("echo"), Task: task}}})
	if err != nil {
		t.Fatalf("delegate: %v", err)
	}
	return tasks[0]
}

// translator asks which language once, then completes with an artifact.
func translator(_ *agent, tk *a2apb.Task, msg *a2apb.Message) {
	if len(tk.GetHistory()) == 1 {
		tk.Status = status(a2apb.TaskState_TASK_STATE_INPUT_REQUIRED, "Which language?")
		return
	}
	first := tk.GetHistory()[0].GetParts()[0].GetText()
	complete(tk, "translated ["+first+"] to "+msg.GetParts()[0].GetText())
}

// errFound stops a Follow.
var errFound = errors.New("found")

// awaitQuestion waits for echo's question in session id and returns it
// as alice's pending questions list it.
func awaitQuestion(t *testing.T, ctx context.Context, alice *agentsdk.Client, id string) *hubpb.PendingQuestion {
	t.Helper()
	_, err := alice.Follow(ctx, id, 1, func(e *hubpb.Envelope) error {
		if e.GetFrom() == "echo" && e.GetQuestion() != nil {
			return errFound
		}
		return nil
	})
	if !errors.Is(err, errFound) {
		t.Fatalf("no question of echo: %v", err)
	}
	qs, err := alice.ListQuestions(ctx, "", "")
	if err != nil || len(qs) != 1 {
		t.Fatalf("alice's questions: %v, %v; want one", qs, err)
	}
	return qs[0]
}

func TestDelegateInputRequired(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		name := map[bool]string{true: "streaming", false: "polling"}[streaming]
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			a := newAgent(t, streaming, translator)
			srv := startHub(t, "", "", a)
			defer stop(t, srv)
			alice := dial(t, ctx, srv.Addr(), "alice")
			task := delegate(t, ctx, alice, "hello")

			q := awaitQuestion(t, ctx, alice, task.ID)
			if got := q.GetEnvelope().GetQuestion().GetText(); got != "Which language?" {
				t.Fatalf("question %q, want the remote's status message", got)
			}
			if _, err := alice.AnswerQuestion(ctx, q.GetSessionId(), &hubpb.Answer{QuestionId: q.GetEnvelope().GetQuestion().GetQuestionId(), Text: "French"}); err != nil {
				t.Fatalf("answer: %v", err)
			}
			res, err := task.Wait(ctx)
			if err != nil {
				t.Fatalf("wait: %v", err)
			}
			if res.GetReason() != "finished" || res.GetResponder() != "echo" || !strings.Contains(res.GetSummary(), "translated [alice: hello] to French") {
				t.Fatalf("result %v, want echo's artifact as the finish summary", res)
			}
			tk := a.only()
			if n := a.sentCount(tk.GetHistory()[0].GetMessageId()); n != 1 {
				t.Errorf("the turn's message was received %d times", n)
			}
			if got := tk.GetContextId(); got != "hubd-session:"+task.ID {
				t.Errorf("context %q, want the child session's", got)
			}
			log, err := alice.ReadLog(ctx, task.ID, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			var recorded, progress bool
			for _, e := range log {
				recorded = recorded || (e.GetFrom() == "echo" && e.GetToolCall().GetCallId() == tk.GetId())
				progress = progress || (e.GetFrom() == "echo" && strings.Contains(e.GetTaskProgress().GetDetail(), "INPUT_REQUIRED: Which language?"))
			}
			if !recorded || !progress {
				t.Errorf("recorded %v, progress %v: want a tool_call naming the task and its status as task_progress in\n%v", recorded, progress, log)
			}
		})
	}
}

func TestFailedTaskAnswersTheCaller(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := newAgent(t, true, func(_ *agent, tk *a2apb.Task, _ *a2apb.Message) {
		tk.Status = status(a2apb.TaskState_TASK_STATE_REJECTED, "I only translate")
	})
	srv := startHub(t, "", "", a)
	defer stop(t, srv)
	alice := dial(t, ctx, srv.Addr(), "alice")
	res, err := delegate(t, ctx, alice, "sing").Wait(ctx)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if res.GetReason() != "a2a_rejected" || res.GetSummary() != "I only translate" {
		t.Fatalf("result %v, want reason a2a_rejected with the remote's status message", res)
	}
}

// In a session the remote does not answer a caller for, a completed task
// is its text turn; transient failures of the remote are retried.
func TestRootSessionTurnAndRetries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := newAgent(t, false, func(_ *agent, tk *a2apb.Task, msg *a2apb.Message) {
		complete(tk, "echo of "+msg.GetParts()[0].GetText())
	})
	a.unavail = 2
	srv := startHub(t, "", "", a)
	defer stop(t, srv)
	alice := dial(t, ctx, srv.Addr(), "alice")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("alice", "echo"), ThreadKey: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SendText(ctx, s.ID(), "hi"); err != nil {
		t.Fatal(err)
	}
	var reply *hubpb.Envelope
	_, err = alice.Follow(ctx, s.ID(), 1, func(e *hubpb.Envelope) error {
		if e.GetFrom() == "echo" && e.GetType() == agentsdk.EventText {
			reply = e
			return errFound
		}
		return nil
	})
	if reply == nil {
		t.Fatalf("no reply of echo: %v", err)
	}
	if got := reply.GetText().GetText(); got != "echo of alice: hi" {
		t.Fatalf("reply %q", got)
	}
	if got := a.only().GetContextId(); got != "hubd-thread:alice:t1" {
		t.Errorf("context %q, want the thread's", got)
	}
}

// A hub restart while the remote works resumes the task by its recorded
// id: the message is not sent again, and the turn ends with the task's
// artifact.
func TestResumeAfterRestart(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		name := map[bool]string{true: "streaming", false: "polling"}[streaming]
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			a := newAgent(t, streaming, func(_ *agent, tk *a2apb.Task, _ *a2apb.Message) {
				tk.Status = status(a2apb.TaskState_TASK_STATE_WORKING, "thinking")
			})
			dir := t.TempDir()
			srv := startHub(t, "", dir, a)
			addr := srv.Addr()
			alice := dial(t, ctx, addr, "alice")
			task := delegate(t, ctx, alice, "slow work")
			recordedTask(t, ctx, alice, task.ID)
			stop(t, srv)

			srv = startHub(t, addr, dir, a)
			defer stop(t, srv)
			tk := a.only()
			a.set(tk.GetId(), func(tk *a2apb.Task) { complete(tk, "worked it out") })
			res, err := task.Wait(ctx)
			if err != nil {
				t.Fatalf("wait: %v", err)
			}
			if res.GetSummary() != "worked it out" {
				t.Fatalf("result %v, want the task's artifact", res)
			}
			if n := a.sentCount(tk.GetHistory()[0].GetMessageId()); n != 1 || len(a.only().GetHistory()) != 1 {
				t.Fatalf("the turn's message was received %d times (history %d), want once", n, len(a.only().GetHistory()))
			}
		})
	}
}

// recordedTask waits for the bridge's record of its task in session id.
func recordedTask(t *testing.T, ctx context.Context, c *agentsdk.Client, id string) {
	t.Helper()
	_, err := c.Follow(ctx, id, 1, func(e *hubpb.Envelope) error {
		if e.GetFrom() == "echo" && e.GetToolCall().GetName() == "a2a" {
			return errFound
		}
		return nil
	})
	if !errors.Is(err, errFound) {
		t.Fatalf("no task recorded in time: %v", err)
	}
}

// A hub restart while the remote's question is pending: the answer given
// after it goes to the recorded task, whose message is not sent again.
func TestAnswerAfterRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	a := newAgent(t, true, translator)
	dir := t.TempDir()
	srv := startHub(t, "", dir, a)
	addr := srv.Addr()
	alice := dial(t, ctx, addr, "alice")
	task := delegate(t, ctx, alice, "good night")
	q := awaitQuestion(t, ctx, alice, task.ID)
	stop(t, srv)

	srv = startHub(t, addr, dir, a)
	defer stop(t, srv)
	if _, err := alice.AnswerQuestion(ctx, q.GetSessionId(), &hubpb.Answer{QuestionId: q.GetEnvelope().GetQuestion().GetQuestionId(), Text: "Italian"}); err != nil {
		t.Fatalf("answer: %v", err)
	}
	res, err := task.Wait(ctx)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if want := "translated [alice: good night] to Italian"; res.GetSummary() != want {
		t.Fatalf("summary %q, want %q", res.GetSummary(), want)
	}
	tk := a.only()
	if n := a.sentCount(tk.GetHistory()[0].GetMessageId()); n != 1 || len(tk.GetHistory()) != 2 {
		t.Fatalf("first message received %d times, history %d messages; want once, then the answer", n, len(tk.GetHistory()))
	}
}

// A session that ends while the remote works (its caller cancels it)
// cancels the remote's task.
func TestSessionEndCancelsTheTask(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := newAgent(t, true, func(_ *agent, tk *a2apb.Task, _ *a2apb.Message) {
		tk.Status = status(a2apb.TaskState_TASK_STATE_WORKING, "")
	})
	srv := startHub(t, "", "", a)
	defer stop(t, srv)
	alice := dial(t, ctx, srv.Addr(), "alice")
	task := delegate(t, ctx, alice, "endless")
	recordedTask(t, ctx, alice, task.ID)
	if err := task.Cancel(ctx); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	select {
	case id := <-a.canceled:
		if id != a.only().GetId() {
			t.Fatalf("cancelled %s", id)
		}
	case <-ctx.Done():
		t.Fatal("the remote task was not cancelled")
	}
}

// A task that fails in a session the remote answers no caller for fails
// the turn as a hubd agent's failing handler does: nothing is posted, and
// the session's timers decide (here turn_within closes the session).
func TestFailedTurnLeftToTheTimers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := newAgent(t, true, func(_ *agent, tk *a2apb.Task, _ *a2apb.Message) {
		tk.Status = status(a2apb.TaskState_TASK_STATE_FAILED, "out of ink")
	})
	srv, err := server.Start(ctx, server.Config{Listen: "127.0.0.1:0", InMemory: true, Logger: zerolog.Nop(),
		Hub: hub.Config{MinExpectation: 100 * time.Millisecond},
		A2A: &a2aconf.File{Remote: []a2aconf.Remote{{Agent: "echo", Card: a.cardURL()}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer stop(t, srv)
	alice := dial(t, ctx, srv.Addr(), "alice")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("alice", "echo"),
		Expectations: []*hubpb.Expectation{agentsdk.Expect("turn_within", 300*time.Millisecond, "auto_close")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SendText(ctx, s.ID(), "write"); err != nil {
		t.Fatal(err)
	}
	var turns int
	end, err := alice.Follow(ctx, s.ID(), 1, func(e *hubpb.Envelope) error {
		if e.GetFrom() == "echo" && agentsdk.IsTurn(e) {
			turns++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := agentsdk.CloseReason(end); got != "expectation_violated:turn_within" || turns != 0 {
		t.Fatalf("closed %q after %d turns of echo, want closed by turn_within after none", got, turns)
	}
}

// After a failed turn, someone else's turn abandons the failed task: the
// remote's next turn is a new task with the new view.
func TestNewTurnAfterAFailedOne(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := newAgent(t, false, func(_ *agent, tk *a2apb.Task, msg *a2apb.Message) {
		if strings.HasSuffix(msg.GetParts()[0].GetText(), "first") {
			tk.Status = status(a2apb.TaskState_TASK_STATE_FAILED, "not now")
			return
		}
		complete(tk, "done with "+tk.GetId())
	})
	srv := startHub(t, "", "", a)
	defer stop(t, srv)
	alice := dial(t, ctx, srv.Addr(), "alice")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("alice", "echo")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SendText(ctx, s.ID(), "first"); err != nil {
		t.Fatal(err)
	}
	var reply string
	_, err = alice.Follow(ctx, s.ID(), 1, func(e *hubpb.Envelope) error {
		switch {
		case e.GetFrom() == "echo" && e.GetType() == agentsdk.EventTaskProgress && strings.Contains(e.GetTaskProgress().GetDetail(), "not now"):
			_, err := alice.SendText(ctx, s.ID(), "second")
			return err
		case e.GetFrom() == "echo" && agentsdk.IsTurn(e):
			reply = agentsdk.TextOf(e)
			return errFound
		}
		return nil
	})
	if !errors.Is(err, errFound) || reply != "done with task-2" {
		t.Fatalf("echo's reply %q (%v), want the second task's", reply, err)
	}
}

// A recorded task the remote no longer knows (it lost its tasks across
// the hub's restart) has failed: the caller gets that as the result.
func TestResumeOfALostTask(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	a := newAgent(t, true, func(_ *agent, tk *a2apb.Task, _ *a2apb.Message) {
		tk.Status = status(a2apb.TaskState_TASK_STATE_WORKING, "")
	})
	dir := t.TempDir()
	srv := startHub(t, "", dir, a)
	addr := srv.Addr()
	alice := dial(t, ctx, addr, "alice")
	task := delegate(t, ctx, alice, "anything")
	recordedTask(t, ctx, alice, task.ID)
	stop(t, srv)
	a.mu.Lock()
	clear(a.tasks)
	a.mu.Unlock()

	srv = startHub(t, addr, dir, a)
	defer stop(t, srv)
	res, err := task.Wait(ctx)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	if res.GetReason() != "a2a_failed" || !strings.Contains(res.GetSummary(), "no longer knows task task-1") {
		t.Fatalf("result %v, want the lost task failed", res)
	}
}
