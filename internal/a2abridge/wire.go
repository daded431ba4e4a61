package a2abridge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/a2apb"
)

// deliver sends msg to the remote (streaming when its card says so) and
// returns its task once settled, or as the remote left it (the caller
// waits on). With rec, the task's id is recorded in the session as soon
// as the remote names it, before any wait.
func (k *task) deliver(ctx context.Context, msg *a2apb.Message, rec bool) (*a2apb.Task, error) {
	if k.r.streaming {
		return k.deliverStreaming(ctx, msg, rec)
	}
	req := &a2apb.SendMessageRequest{Message: msg, Configuration: &a2apb.SendMessageConfiguration{ReturnImmediately: true}}
	var resp a2apb.SendMessageResponse
	if err := k.r.call(ctx, "SendMessage", req, &resp); err != nil {
		return nil, err
	}
	tk := resp.GetTask()
	if m := resp.GetMessage(); m != nil {
		tk = messageTask(m) // the remote answered at once, with no task
	}
	if rec && tk.GetId() != "" {
		if err := k.remember(ctx, tk.GetId(), msg); err != nil {
			return nil, err
		}
	}
	k.observe(ctx, tk)
	return tk, nil
}

// deliverStreaming is deliver over SendStreamingMessage: it follows the
// events until the task settles or the stream ends, then reads the whole
// task (its artifacts, its history).
func (k *task) deliverStreaming(ctx context.Context, msg *a2apb.Message, rec bool) (*a2apb.Task, error) {
	var tk *a2apb.Task
	recorded := !rec
	err := k.r.stream(ctx, "SendStreamingMessage", &a2apb.SendMessageRequest{Message: msg}, func(ev *a2apb.StreamResponse) (bool, error) {
		if m := ev.GetMessage(); m != nil {
			tk = messageTask(m)
			return false, nil
		}
		tk = apply(tk, ev)
		if !recorded && tk.GetId() != "" {
			if err := k.remember(ctx, tk.GetId(), msg); err != nil {
				return false, err
			}
			recorded = true
		}
		k.observe(ctx, tk)
		return !settled(tk.GetStatus().GetState()), nil
	})
	switch {
	case tk == nil:
		return nil, err // nothing was said of a task: the message may be sent again
	case err != nil && !isTransient(err):
		return nil, err
	case tk.GetId() == "" || tk.GetStatus() == nil:
		return tk, nil
	}
	return k.get(ctx, tk.GetId())
}

// messageTask is a completed task standing for a remote's direct answer.
func messageTask(m *a2apb.Message) *a2apb.Task {
	return &a2apb.Task{Id: m.GetTaskId(), ContextId: m.GetContextId(),
		Status: &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_COMPLETED, Message: m}}
}

// apply folds a stream event into the task as far as the bridge needs it:
// its id, context and status.
func apply(tk *a2apb.Task, ev *a2apb.StreamResponse) *a2apb.Task {
	if t := ev.GetTask(); t != nil {
		return t
	}
	if tk == nil {
		tk = &a2apb.Task{}
	}
	if u := ev.GetStatusUpdate(); u != nil {
		tk.Id, tk.ContextId, tk.Status = u.GetTaskId(), u.GetContextId(), u.GetStatus()
	}
	if u := ev.GetArtifactUpdate(); u != nil && tk.Id == "" {
		tk.Id, tk.ContextId = u.GetTaskId(), u.GetContextId()
	}
	return tk
}

// get reads the task.
func (k *task) get(ctx context.Context, id string) (*a2apb.Task, error) {
	var tk a2apb.Task
	if err := k.r.call(ctx, "GetTask", &a2apb.GetTaskRequest{Id: id}, &tk); err != nil {
		return nil, fmt.Errorf("GetTask %s: %w", id, err)
	}
	return &tk, nil
}

// wait follows a task the remote works on until it settles: by
// SubscribeToTask when the remote streams, else by polling GetTask.
func (k *task) wait(ctx context.Context, tk *a2apb.Task) (*a2apb.Task, error) {
	id := tk.GetId()
	if id == "" {
		return nil, fmt.Errorf("the remote answered with a task with no id: %w", ErrRemote)
	}
	if k.r.streaming {
		err := k.r.stream(ctx, "SubscribeToTask", &a2apb.SubscribeToTaskRequest{Id: id}, func(ev *a2apb.StreamResponse) (bool, error) {
			tk = apply(tk, ev)
			k.observe(ctx, tk)
			return !settled(tk.GetStatus().GetState()), nil
		})
		var re *rpcError
		switch {
		case err == nil, errors.As(err, &re) && re.Code == codeUnsupported:
			// Settled, or the task had ended: read it.
		case isTransient(err) && ctx.Err() == nil:
			// The stream broke before the task settled: read it after a
			// pause, so that a remote that keeps closing its streams is
			// not called in a loop.
			if !sleep(ctx, k.b.o.Poll) {
				return nil, ctx.Err()
			}
		default:
			return nil, err
		}
		return k.get(ctx, id)
	}
	return k.poll(ctx, tk, func(next *a2apb.Task) bool { return settled(next.GetStatus().GetState()) })
}

// poll reads the task, each wait longer up to Options.Poll, until done
// says so, posting its status when it changes.
func (k *task) poll(ctx context.Context, tk *a2apb.Task, done func(*a2apb.Task) bool) (*a2apb.Task, error) {
	delay := min(50*time.Millisecond, k.b.o.Poll)
	for {
		if !sleep(ctx, delay) {
			return nil, ctx.Err()
		}
		next, err := k.get(ctx, tk.GetId())
		if err != nil {
			return nil, err
		}
		k.observe(ctx, next)
		if done(next) {
			return next, nil
		}
		tk, delay = next, min(2*delay, k.b.o.Poll)
	}
}

// observe posts the task's status as a task_progress envelope in the
// session when it differs from the last one posted (best effort: one that
// cannot be posted is logged).
func (k *task) observe(ctx context.Context, tk *a2apb.Task) {
	st := tk.GetStatus()
	if st == nil {
		return
	}
	key := st.GetState().String() + "\x00" + st.GetMessage().GetMessageId()
	if key == k.seen {
		return
	}
	k.seen = key
	detail := st.GetState().String()
	if s := partsText(st.GetMessage().GetParts()); s != "" {
		detail += ": " + s
	}
	env := &hubpb.Envelope{Type: agentsdk.EventTaskProgress, CausationId: k.t.Trigger.GetId(),
		Payload: &hubpb.Envelope_TaskProgress{TaskProgress: &hubpb.TaskProgress{Task: tk.GetId(), Detail: detail}}}
	if _, err := k.t.Client.Send(ctx, k.t.SessionID, env); err != nil && ctx.Err() == nil {
		k.b.lg.Warn().Err(err).Str("session", k.t.SessionID).Msg("a2a bridge: posting the remote task's progress")
	}
}

// sleep waits d, or less when ctx ends first (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
