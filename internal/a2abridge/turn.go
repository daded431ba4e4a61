package a2abridge

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/a2apb"
)

// ErrTaskFailed is the cause of a turn the remote's task ended without
// completing (failed, rejected, canceled).
var ErrTaskFailed = errors.New("a2a task did not complete")

// task is one turn's A2A task: the remote, the session, the turn.
type task struct {
	b *Bridge
	r *remote
	t *agentsdk.Turn
	s *agentsdk.Session

	seen string // the status last posted as task_progress
}

// turn serves one turn of the remote, and logs why when it fails (the
// turn then posts nothing, as a hubd agent's failing handler).
func (b *Bridge) turn(ctx context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	r, err := b.take(ctx, t)
	if err != nil && ctx.Err() == nil {
		b.lg.Warn().Err(err).Str("session", t.SessionID).Uint64("trigger_seq", t.Trigger.GetSeq()).
			Msg("a2a bridge: the remote's turn failed")
	}
	return r, err
}

// take takes one turn of the remote: it sends the turn's view, or
// follows the task a record of the session names, until the task
// completes (the reply) or fails.
func (b *Bridge) take(ctx context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
	r, err := b.remote(ctx)
	if err != nil {
		return agentsdk.Reply{}, err
	}
	s, err := t.Client.GetSession(ctx, t.SessionID)
	if err != nil {
		return agentsdk.Reply{}, err
	}
	k := &task{b: b, r: r, t: t, s: s}
	defer b.track(t.SessionID, "")
	rec, err := k.record(ctx)
	if err != nil {
		return agentsdk.Reply{}, err
	}
	var tk *a2apb.Task
	if rec != nil {
		b.lg.Info().Str("session", t.SessionID).Str("task", rec.taskID).Msg("a2a bridge: resuming the recorded task")
		b.track(t.SessionID, rec.taskID)
		if tk, err = k.resume(ctx, rec.taskID); err == nil {
			k.observe(ctx, tk)
		}
	} else {
		tk, err = k.deliver(ctx, k.message(), true)
	}
	if err != nil {
		return agentsdk.Reply{}, err
	}
	return k.follow(ctx, tk)
}

// resume reads the recorded task; one the remote no longer knows (it
// lost its tasks) has failed.
func (k *task) resume(ctx context.Context, id string) (*a2apb.Task, error) {
	tk, err := k.get(ctx, id)
	var re *rpcError
	if errors.As(err, &re) && re.Code == codeTaskNotFound {
		return &a2apb.Task{Id: id, Status: &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_FAILED, Message: &a2apb.Message{
			Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "the remote agent no longer knows task " + id + ": " + re.Message}}}}}}, nil
	}
	return tk, err
}

// follow drives tk to its end: it waits while the remote works and asks
// the session while the remote wants input.
func (k *task) follow(ctx context.Context, tk *a2apb.Task) (agentsdk.Reply, error) {
	answered := ""
	for {
		var err error
		switch st := tk.GetStatus().GetState(); {
		case st == a2apb.TaskState_TASK_STATE_COMPLETED:
			return k.completed(tk), nil
		case ended(st):
			return k.failed(tk)
		case interrupted(st) && questionID(tk) == answered:
			// The remote has the answer but has not moved on yet.
			tk, err = k.poll(ctx, tk, func(next *a2apb.Task) bool {
				return !interrupted(next.GetStatus().GetState()) || questionID(next) != answered
			})
		case interrupted(st):
			var ans *hubpb.Answer
			if ans, err = k.ask(ctx, tk); err != nil {
				return agentsdk.Reply{}, err
			}
			answered = ans.GetQuestionId()
			tk, err = k.answer(ctx, tk, ans)
		default:
			tk, err = k.wait(ctx, tk)
		}
		if err != nil {
			return agentsdk.Reply{}, err
		}
	}
}

// ended reports a terminal state other than completed.
func ended(s a2apb.TaskState) bool {
	switch s {
	case a2apb.TaskState_TASK_STATE_FAILED, a2apb.TaskState_TASK_STATE_REJECTED, a2apb.TaskState_TASK_STATE_CANCELED:
		return true
	}
	return false
}

// interrupted reports a state that waits for the client.
func interrupted(s a2apb.TaskState) bool {
	return s == a2apb.TaskState_TASK_STATE_INPUT_REQUIRED || s == a2apb.TaskState_TASK_STATE_AUTH_REQUIRED
}

// settled reports a state the remote does not leave by itself.
func settled(s a2apb.TaskState) bool {
	return s == a2apb.TaskState_TASK_STATE_COMPLETED || ended(s) || interrupted(s)
}

// contextID is the A2A context of the session: its thread (per creator)
// when it has one, else the session.
func (k *task) contextID() string {
	m := k.s.GetMeta()
	if key := m.GetThreadKey(); key != "" {
		return "hubd-thread:" + m.GetCreator() + ":" + key
	}
	return "hubd-session:" + k.t.SessionID
}

// message is the turn's view as the A2A message that starts its task.
func (k *task) message() *a2apb.Message {
	return &a2apb.Message{MessageId: agentsdk.TurnMsgID(k.t.SessionID, k.t.Trigger.GetSeq()), ContextId: k.contextID(),
		Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: viewText(k.t)}}}}
}

// viewText renders the turn's view as lines "from: text", or the
// trigger's text when the turn has no view.
func viewText(t *agentsdk.Turn) string {
	var lines []string
	for _, it := range t.View.GetItems() {
		if it.GetText() == "" {
			continue
		}
		if it.GetFrom() == "" {
			lines = append(lines, it.GetText())
			continue
		}
		lines = append(lines, it.GetFrom()+": "+it.GetText())
	}
	if len(lines) == 0 {
		return t.Text()
	}
	return strings.Join(lines, "\n")
}

// completed is the reply of a completed task: its artifacts (or its
// status message); a finish in a child session the remote answers for.
func (k *task) completed(tk *a2apb.Task) agentsdk.Reply {
	body := artifactsText(tk.GetArtifacts())
	if body == "" {
		body = partsText(tk.GetStatus().GetMessage().GetParts())
	}
	if k.answersCaller() {
		return agentsdk.ReplyPacket(agentsdk.NewPacket(body).Finish("", body))
	}
	return agentsdk.ReplyText(body)
}

// failed ends the turn of a task that failed, was rejected or canceled:
// in a child session the remote answers for, a finish whose reason names
// the state (the caller gets a result at once); elsewhere an error, which
// posts nothing, as a failing hubd agent's handler.
func (k *task) failed(tk *a2apb.Task) (agentsdk.Reply, error) {
	st := tk.GetStatus().GetState()
	why := partsText(tk.GetStatus().GetMessage().GetParts())
	reason := "a2a_" + strings.ToLower(strings.TrimPrefix(st.String(), "TASK_STATE_"))
	if why == "" {
		why = fmt.Sprintf("the A2A task %s ended %s", tk.GetId(), st)
	}
	if k.answersCaller() {
		return agentsdk.ReplyPacket(agentsdk.NewPacket(why).Finish(reason, why)), nil
	}
	return agentsdk.Reply{}, fmt.Errorf("task %s: %s: %s: %w", tk.GetId(), st, why, ErrTaskFailed)
}

// answersCaller reports whether the remote answers the session's caller:
// a child session whose responder it is.
func (k *task) answersCaller() bool {
	m := k.s.GetMeta()
	return m.GetParentSessionId() != "" && k.s.GetResponder() == k.b.o.Remote.Agent
}

// artifactsText is the artifacts' parts in words, one artifact a paragraph.
func artifactsText(as []*a2apb.Artifact) string {
	var out []string
	for _, a := range as {
		if s := partsText(a.GetParts()); s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, "\n\n")
}

// partsText is parts in words: texts as they are, data as JSON, files by
// their name and URL.
func partsText(ps []*a2apb.Part) string {
	var out []string
	for _, p := range ps {
		switch c := p.GetContent().(type) {
		case *a2apb.Part_Text:
			out = append(out, c.Text)
		case *a2apb.Part_Data:
			if b, err := c.Data.MarshalJSON(); err == nil {
				out = append(out, string(b))
			}
		case *a2apb.Part_Url:
			out = append(out, strings.TrimSpace(p.GetFilename()+" "+c.Url))
		case *a2apb.Part_Raw:
			out = append(out, fmt.Sprintf("%s (%d bytes, %s)", p.GetFilename(), len(c.Raw), p.GetMediaType()))
		}
	}
	return strings.Join(out, "\n")
}
