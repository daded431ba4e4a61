package hubhttp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/hubpb/hubsvc"
	"github.com/hubd/hubd/session"
)

// writeTimeout bounds each write of an event stream: a client that stops
// reading is dropped instead of holding its stream forever.
const writeTimeout = 30 * time.Second

// retryMillis is the reconnection delay the stream suggests to EventSource.
const retryMillis = 2000

// streamEnd is the data of the "end" event that closes a stream.
type streamEnd struct {
	// Reason is "session_ended", or the stable hubd reason that cut the
	// stream off (SLOW_SUBSCRIBER, DRAINING, ...).
	Reason string `json:"reason"`
	// State and CloseReason say how the session ended.
	State       string `json:"state,omitempty"`
	CloseReason string `json:"close_reason,omitempty"`
	// Message details a cut-off.
	Message string `json:"message,omitempty"`
	// LastSeq is the last seq the stream covered: the cursor to resume
	// after.
	LastSeq uint64 `json:"last_seq"`
	// Resume says that reconnecting with Last-Event-ID goes on where the
	// stream stopped.
	Resume bool `json:"resume,omitempty"`
}

// events streams a session's envelopes as server-sent events (see the
// package doc).
func (a *API) events(w http.ResponseWriter, r *http.Request) {
	id, err := a.identify(r, hubsvc.Hub_Watch_FullMethodName)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	sid, from, resumed, err := eventsRequest(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sub, err := a.cfg.Hub.Watch(ctx, id.Agent, id.Operator, sid, hub.WatchOptions{From: from})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	defer sub.Close()
	info, err := a.cfg.Hub.Get(ctx, id.Agent, id.Operator, sid)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var cut error
	if f := a.cfg.Streams; f != nil {
		ended := f("events")
		defer func() { ended(cut) }()
	}
	if st, _ := session.ParseState(info.GetState()); st.Ended() && from > info.GetSeq() {
		if resumed {
			w.WriteHeader(http.StatusNoContent) // stops an EventSource from reconnecting
			return
		}
		s := openStream(w)
		s.end(streamEnd{Reason: "session_ended", State: info.GetState(), CloseReason: info.GetCloseReason(), LastSeq: info.GetSeq()})
		return
	}
	s := openStream(w)
	s.last = from - 1
	cut = a.pump(ctx, s, sub)
}

// eventsRequest reads the session and the first seq of an events request:
// after Last-Event-ID when a client resumes, else ?from (default 1).
func eventsRequest(r *http.Request) (sid session.ID, from uint64, resumed bool, err error) {
	sid, err = session.ParseID(r.PathValue("session_id"))
	if err != nil {
		return sid, 0, false, fmt.Errorf("session_id: %v: %w", err, session.ErrMalformed)
	}
	q := r.URL.Query()
	if t := q.Get("tree"); t != "" {
		if tree, err := strconv.ParseBool(t); err != nil || tree {
			return sid, 0, false, status.Error(codes.Unimplemented, "tree=true streams a delegation tree; it is not served yet")
		}
	}
	from = 1
	if v := q.Get("from"); v != "" {
		if from, err = strconv.ParseUint(v, 10, 64); err != nil {
			return sid, 0, false, fmt.Errorf("from %q is not a seq: %w", v, session.ErrMalformed)
		}
	}
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		last, err := strconv.ParseUint(v, 10, 64)
		if err != nil || last == ^uint64(0) {
			return sid, 0, false, fmt.Errorf("Last-Event-ID %q is not a seq: %w", v, session.ErrMalformed)
		}
		from, resumed = last+1, true
	}
	return sid, max(from, 1), resumed, nil
}

// next is one result of a subscription.
type next struct {
	d   *hubpb.Delivery
	err error
}

// watch is what pump reads deliveries from (a *hub.Subscription).
type watch interface {
	Next(ctx context.Context) (*hubpb.Delivery, error)
}

// pump writes the subscription's envelopes, with heartbeats while idle,
// until the session ends, the hub cuts the stream off or the client
// leaves. It returns the cut-off's error, nil otherwise.
func (a *API) pump(ctx context.Context, s *eventStream, sub watch) error {
	ch := make(chan next)
	go func() {
		for {
			d, err := sub.Next(ctx)
			select {
			case ch <- next{d, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	beat := time.NewTicker(a.cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case n := <-ch:
			if n.err != nil {
				return s.cutOff(ctx, n.err)
			}
			e := n.d.GetEnvelope()
			if s.envelope(e) != nil {
				return nil // the client is gone
			}
			if session.Ends(e.GetType()) {
				s.end(streamEnd{Reason: "session_ended", State: endState(e.GetType()), CloseReason: e.GetEnded().GetReason(), LastSeq: e.GetSeq()})
				return nil
			}
			beat.Reset(a.cfg.Heartbeat)
		case <-beat.C:
			if s.comment("heartbeat") != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// endState is the state a session ends in with an envelope of type t.
func endState(t string) string {
	if t == session.EventExpired {
		return session.StateExpired.String()
	}
	return session.StateClosed.String()
}

// eventStream writes one text/event-stream answer.
type eventStream struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	last uint64 // the last seq written
}

// openStream writes the headers of an event stream and its retry hint, and
// flushes them, so the client knows its watch is registered.
func openStream(w http.ResponseWriter) *eventStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer
	w.WriteHeader(http.StatusOK)
	s := &eventStream{w: w, rc: http.NewResponseController(w)}
	s.write(fmt.Appendf(nil, "retry: %d\n\n", retryMillis))
	return s
}

// envelope writes e as an "envelope" event whose id is its seq.
func (s *eventStream) envelope(e *hubpb.Envelope) error {
	data, err := hubpb.MarshalJSON(e)
	if err != nil {
		return err
	}
	s.last = e.GetSeq()
	return s.write(fmt.Appendf(nil, "id: %d\nevent: envelope\ndata: %s\n\n", e.GetSeq(), data))
}

// comment writes a comment line (a heartbeat).
func (s *eventStream) comment(text string) error {
	return s.write(fmt.Appendf(nil, ": %s\n\n", text))
}

// cutOff ends the stream after the hub ended the subscription with err,
// and returns err; a client that left gets nothing and nil.
func (s *eventStream) cutOff(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	st := statusOf(err)
	resume := st.Code() == codes.ResourceExhausted || st.Code() == codes.Unavailable
	s.end(streamEnd{Reason: reasonOf(st), Message: st.Message(), LastSeq: s.last, Resume: resume})
	return err
}

// end writes the "end" event.
func (s *eventStream) end(e streamEnd) {
	data, _ := json.Marshal(e) // plain fields: cannot fail
	s.write(fmt.Appendf(nil, "event: end\ndata: %s\n\n", data))
}

// write writes and flushes b within writeTimeout.
func (s *eventStream) write(b []byte) error {
	s.rc.SetWriteDeadline(time.Now().Add(writeTimeout)) // not every writer has deadlines
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}
