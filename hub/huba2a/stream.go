package huba2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/a2apb"
	"github.com/hubd/hubd/session"
)

// heartbeat is how often an idle stream gets a comment line, so that
// proxies keep it open.
const heartbeat = 15 * time.Second

// sendStream delivers a message, then streams its task: the task first,
// then each change, until the task ends or needs input.
func (c *call) sendStream(req *a2apb.SendMessageRequest) *rpcError {
	id, _, err := c.deliver(req.GetMessage())
	if err != nil {
		return err
	}
	return c.stream(id, req.GetConfiguration().HistoryLength, true)
}

// subscribe streams a task that has not ended, as sendStream does.
func (c *call) subscribe(id string) *rpcError {
	return c.stream(id, nil, false)
}

// stream writes the task as the log has it, then follows the session from
// the seq after it, so the stream has every change once. A stream of a
// message ends when the task needs input; a subscription to a task that
// needs input goes on until it changes.
func (c *call) stream(id string, historyLength *int32, fromSend bool) *rpcError {
	sid, perr := session.ParseID(id)
	if perr != nil {
		return fail(codeTaskNotFound, "MALFORMED", "task not found: %v", perr)
	}
	t, last, rerr := c.task(id, historyLength)
	if rerr != nil {
		return rerr
	}
	st := t.GetStatus().GetState()
	if !fromSend && terminal(st) {
		return fail(codeUnsupported, "SESSION_CLOSED", "task %s has ended (%s): read it with GetTask", id, st)
	}
	sub, err := c.s.cfg.Watch.Watch(c.r.Context(), c.who, c.operator, sid, feed.WatchOptions{From: last + 1})
	if err != nil {
		return fromHub(err)
	}
	defer sub.Close()
	out, ok := newSSE(c.w, c.rpcID)
	if !ok {
		return fail(codeInternal, "INTERNAL", "the connection cannot stream")
	}
	if out.send(&a2apb.StreamResponse{Payload: &a2apb.StreamResponse_Task{Task: t}}) != nil {
		return nil
	}
	if terminal(st) || (fromSend && st == a2apb.TaskState_TASK_STATE_INPUT_REQUIRED) {
		return nil
	}
	c.follow(sub, out, t)
	return nil
}

// follow streams the task's changes from sub until it ends, needs input
// anew, or the client leaves.
func (c *call) follow(sub *feed.Subscription, out *sse, t *a2apb.Task) {
	last := t.GetStatus().GetState()
	lastAgent := t.GetStatus().GetMessage()
	for {
		ctx, cancel := context.WithTimeout(c.r.Context(), heartbeat)
		d, err := sub.Next(ctx)
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded) && c.r.Context().Err() == nil:
			if out.comment("keepalive") != nil {
				return
			}
			continue
		case err != nil:
			return // the client left, or the session's stream ended
		}
		e := d.GetEnvelope()
		m := messageOf(e, t.GetId(), t.GetContextId(), c.agent.Agent, c.who)
		if m != nil && m.GetRole() == a2apb.Role_ROLE_AGENT {
			lastAgent = m
		}
		if e.GetFrom() == c.agent.Agent && (e.GetType() == session.EventText || e.GetType() == session.EventPacket) {
			ev := &a2apb.TaskArtifactUpdateEvent{TaskId: t.GetId(), ContextId: t.GetContextId(), LastChunk: true,
				Artifact: &a2apb.Artifact{ArtifactId: e.GetId(), Name: "reply", Parts: m.GetParts()}}
			if out.send(&a2apb.StreamResponse{Payload: &a2apb.StreamResponse_ArtifactUpdate{ArtifactUpdate: ev}}) != nil {
				return
			}
		}
		info, err := c.s.cfg.Client.GetSession(c.ctx, &hubpb.GetSessionRequest{SessionId: t.GetId()})
		if err != nil {
			return
		}
		st := TaskState(info, c.who)
		if st == last && !(e.GetType() == session.EventQuestion && st == a2apb.TaskState_TASK_STATE_INPUT_REQUIRED) {
			continue
		}
		last = st
		status := &a2apb.TaskStatus{State: st, Timestamp: e.GetAcceptedAt()}
		if st != a2apb.TaskState_TASK_STATE_WORKING {
			status.Message = lastAgent
		}
		ev := &a2apb.TaskStatusUpdateEvent{TaskId: t.GetId(), ContextId: t.GetContextId(), Status: status}
		if out.send(&a2apb.StreamResponse{Payload: &a2apb.StreamResponse_StatusUpdate{StatusUpdate: ev}}) != nil {
			return
		}
		if terminal(st) || st == a2apb.TaskState_TASK_STATE_INPUT_REQUIRED {
			return
		}
	}
}

// await waits until a task ends or needs input (a blocking SendMessage).
func (c *call) await(id string, after uint64) *rpcError {
	sid, err := session.ParseID(id)
	if err != nil {
		return fail(codeTaskNotFound, "MALFORMED", "task not found: %v", err)
	}
	sub, err := c.s.cfg.Watch.Watch(c.r.Context(), c.who, c.operator, sid, feed.WatchOptions{From: after + 1})
	if err != nil {
		return fromHub(err)
	}
	defer sub.Close()
	for {
		info, err := c.s.cfg.Client.GetSession(c.ctx, &hubpb.GetSessionRequest{SessionId: id})
		if err != nil {
			return fromHub(err)
		}
		if st := TaskState(info, c.who); terminal(st) || st == a2apb.TaskState_TASK_STATE_INPUT_REQUIRED {
			return nil
		}
		if _, err := sub.Next(c.r.Context()); err != nil {
			if c.r.Context().Err() != nil {
				return fail(codeInternal, "CANCELED", "the client left")
			}
			return nil // the watch ended: the task as it is now
		}
	}
}

// sse writes a stream's events: each a JSON-RPC response with the
// request's id and a StreamResponse as result.
type sse struct {
	w  http.ResponseWriter
	f  http.Flusher
	id json.RawMessage
}

func newSSE(w http.ResponseWriter, id json.RawMessage) (*sse, bool) {
	f, ok := w.(http.Flusher)
	if !ok {
		return nil, false
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, f: f, id: id}, true
}

func (s *sse) send(m *a2apb.StreamResponse) error {
	b, err := protojson.Marshal(m)
	if err != nil {
		return err
	}
	line, err := json.Marshal(response{JSONRPC: "2.0", ID: s.id, Result: b})
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", line); err != nil {
		return err
	}
	s.f.Flush()
	return nil
}

func (s *sse) comment(text string) error {
	if _, err := fmt.Fprintf(s.w, ": %s\n\n", text); err != nil {
		return err
	}
	s.f.Flush()
	return nil
}
