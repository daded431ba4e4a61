package hubhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/hubd/hubd/hub/feed"
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
	// LastEventID is, for a tree stream, the id of the last event it
	// covered (the cursors to resume after).
	LastEventID string `json:"last_event_id,omitempty"`
	// Resume says that reconnecting with Last-Event-ID goes on where the
	// stream stopped.
	Resume bool `json:"resume,omitempty"`
}

// events streams a session's envelopes (with ?tree=true, its tree's) as
// server-sent events (see the package doc).
func (a *API) events(w http.ResponseWriter, r *http.Request) {
	id, err := a.identify(r, hubsvc.Hub_Watch_FullMethodName)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	q, err := eventsRequest(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sub, err := a.cfg.Feed.Watch(ctx, id.Agent, id.Operator, q.sid, feed.WatchOptions{From: q.from, Tree: q.tree, Verbose: q.verbose, Cursors: q.cursors, Deltas: q.deltas})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	defer sub.Close()
	if q.tree {
		q.cursors = sub.Cursors() // only the tree's: the others name nothing this stream hands out
	}
	info, err := a.cfg.Feed.Get(ctx, id.Agent, id.Operator, q.sid)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var cut error
	if f := a.cfg.Streams; f != nil {
		ended := f("events") // one kind for both: a tree stream is a session's events too
		defer func() { ended(cut) }()
	}
	st, _ := session.ParseState(info.GetState())
	over := st.Ended() && q.from > info.GetSeq()
	ended := streamEnd{Reason: "session_ended", State: info.GetState(), CloseReason: info.GetCloseReason(), LastSeq: info.GetSeq()}
	var first *hubpb.Delivery
	if over && q.tree {
		// The root ended before the cursor; its descendants may still
		// have envelopes of that last write to hand out (a tree watch
		// past its root's end catches them up, then ends at once).
		d, err := sub.Next(ctx)
		switch {
		case err == nil:
			first, over = d, false
		case !errors.Is(err, io.EOF):
			a.fail(w, r, err)
			return
		}
	}
	if over {
		if q.resumed {
			w.WriteHeader(http.StatusNoContent) // stops an EventSource from reconnecting
			return
		}
		s := openStream(w)
		if q.tree {
			ended.LastEventID = treeID(q.from-1, q.cursors)
		}
		s.end(ended)
		return
	}
	s := openStream(w)
	s.last = q.from - 1
	if q.tree {
		s.root, s.cursors = q.sid.String(), q.cursors
		if s.cursors == nil {
			s.cursors = map[string]uint64{}
		}
		s.ended = &ended
	}
	cut = a.pump(ctx, s, &peeked{first: first, watch: sub})
}

// peeked is a watch whose first delivery was already read.
type peeked struct {
	first *hubpb.Delivery
	watch
}

func (p *peeked) Next(ctx context.Context) (*hubpb.Delivery, error) {
	if d := p.first; d != nil {
		p.first = nil
		return d, nil
	}
	return p.watch.Next(ctx)
}

// eventsQuery is what an events request asks for.
type eventsQuery struct {
	sid  session.ID
	from uint64 // the first seq of the session (the root)
	// resumed: the client sent Last-Event-ID.
	resumed       bool
	tree, verbose bool
	// deltas: also the deltas of replies being written ("delta" events).
	deltas bool
	// cursors are the last seqs seen per descendant (tree streams).
	cursors map[string]uint64
}

// eventsRequest reads an events request: the session, whether it streams
// its tree, and where to start: after Last-Event-ID when a client resumes,
// else ?from (default 1) for the session and the start of every
// descendant.
func eventsRequest(r *http.Request) (q eventsQuery, err error) {
	q.sid, err = session.ParseID(r.PathValue("session_id"))
	if err != nil {
		return q, fmt.Errorf("session_id: %v: %w", err, session.ErrMalformed)
	}
	v := r.URL.Query()
	if q.tree, err = boolParam(v.Get("tree"), "tree"); err != nil {
		return q, err
	}
	if q.verbose, err = boolParam(v.Get("verbose"), "verbose"); err != nil {
		return q, err
	}
	if q.deltas, err = boolParam(v.Get("deltas"), "deltas"); err != nil {
		return q, err
	}
	if q.deltas && q.tree {
		return q, fmt.Errorf("deltas=true is for a session's stream, not tree=true: %w", session.ErrMalformed)
	}
	if q.verbose && !q.tree {
		return q, fmt.Errorf("verbose=true is for tree=true streams: %w", session.ErrMalformed)
	}
	q.from = 1
	if s := v.Get("from"); s != "" {
		if q.from, err = strconv.ParseUint(s, 10, 64); err != nil {
			return q, fmt.Errorf("from %q is not a seq: %w", s, session.ErrMalformed)
		}
	}
	if s := r.Header.Get("Last-Event-ID"); s != "" {
		var last uint64
		if q.tree {
			last, q.cursors, err = parseTreeID(s)
		} else if last, err = strconv.ParseUint(s, 10, 64); err != nil || last == ^uint64(0) {
			err = fmt.Errorf("Last-Event-ID %q is not a seq: %w", s, session.ErrMalformed)
		}
		if err != nil {
			return q, err
		}
		q.from, q.resumed = last+1, true
	}
	q.from = max(q.from, 1)
	return q, nil
}

// boolParam reads a boolean query parameter ("" is false).
func boolParam(s, name string) (bool, error) {
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%s %q is not true or false: %w", name, s, session.ErrMalformed)
	}
	return b, nil
}

// treeID is the id of a tree stream's event: the root's last seq, then
// "," and "SESSION:SEQ" for every descendant the stream handed out an
// envelope of, in session id order, e.g.
// "7,0190a0c4-8f4e-7a2b-9c3d-4e5f60718293:3". It is every cursor of the
// stream, so a client resuming with it as Last-Event-ID gets what follows
// each, with no gap and no duplicate.
func treeID(root uint64, cursors map[string]uint64) string {
	ids := make([]string, 0, len(cursors))
	for id, seq := range cursors {
		if seq > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	b := strconv.AppendUint(nil, root, 10)
	for _, id := range ids {
		b = append(b, ',')
		b = append(b, id...)
		b = append(b, ':')
		b = strconv.AppendUint(b, cursors[id], 10)
	}
	return string(b)
}

// maxTreeCursors bounds the descendants' cursors of a tree stream's event
// id: a stream names at most this many (a descendant past them, not yet
// named, is streamed from its start again on a resume), and a
// Last-Event-ID with more is refused.
const maxTreeCursors = 1024

// parseTreeID reads a tree stream's event id (see treeID); a bare seq
// (the id of a one-session stream) is the root's.
func parseTreeID(s string) (uint64, map[string]uint64, error) {
	bad := func(why string) error {
		return fmt.Errorf("Last-Event-ID %.80q is not a tree stream's id (SEQ,SESSION:SEQ,...): %s: %w", s, why, session.ErrMalformed)
	}
	head, rest, _ := strings.Cut(s, ",")
	root, err := strconv.ParseUint(head, 10, 64)
	if err != nil || root == ^uint64(0) {
		return 0, nil, bad("the root's seq")
	}
	if n := strings.Count(rest, ","); rest != "" && n+1 > maxTreeCursors {
		return 0, nil, bad(fmt.Sprintf("%d cursors, at most %d", n+1, maxTreeCursors))
	}
	cursors := map[string]uint64{}
	for rest != "" {
		var part string
		part, rest, _ = strings.Cut(rest, ",")
		k, v, ok := strings.Cut(part, ":")
		id, err := session.ParseID(k)
		if !ok || err != nil {
			return 0, nil, bad(fmt.Sprintf("%.40q is not SESSION:SEQ", part))
		}
		if id.IsZero() {
			return 0, nil, bad(fmt.Sprintf("%.40q: the nil UUID names no session", part))
		}
		seq, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, nil, bad(fmt.Sprintf("%.40q is not SESSION:SEQ", part))
		}
		cursors[id.String()] = seq
	}
	return root, cursors, nil
}

// next is one result of a subscription.
type next struct {
	d   *hubpb.Delivery
	err error
}

// watch is what pump reads deliveries from (a *feed.Subscription).
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
				if errors.Is(n.err, io.EOF) && s.ended != nil {
					s.ended.LastSeq, s.ended.LastEventID = s.last, treeID(s.last, s.cursors)
					s.end(*s.ended) // a tree stream: its root ended, and all that came with it was handed out
					return nil
				}
				return s.cutOff(ctx, n.err)
			}
			if d := n.d.GetDelta(); d != nil {
				if s.delta(d) != nil {
					return nil // the client is gone
				}
				continue
			}
			e := n.d.GetEnvelope()
			if s.envelope(e) != nil {
				return nil // the client is gone
			}
			if s.ended != nil {
				if e.GetSessionId() == s.root && session.Ends(e.GetType()) {
					s.ended.State, s.ended.CloseReason = endState(e.GetType()), e.GetEnded().GetReason()
				}
			} else if session.Ends(e.GetType()) {
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
	last uint64 // the last seq written (of the root, for a tree stream)
	// A tree stream's root session id, its cursors per descendant, and
	// the end event it closes with when its root has ended; nil ended: a
	// one-session stream.
	root    string
	cursors map[string]uint64
	ended   *streamEnd
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

// envelope writes e as an "envelope" event whose id is its seq, or for a
// tree stream the stream's cursors (treeID).
func (s *eventStream) envelope(e *hubpb.Envelope) error {
	data, err := hubpb.MarshalJSON(e)
	if err != nil {
		return err
	}
	var id string
	switch sid := e.GetSessionId(); {
	case s.ended == nil:
		s.last = e.GetSeq()
		id = strconv.FormatUint(s.last, 10)
	case sid == s.root:
		s.last = e.GetSeq()
		id = treeID(s.last, s.cursors)
	default:
		if _, named := s.cursors[sid]; named || len(s.cursors) < maxTreeCursors {
			s.cursors[sid] = e.GetSeq()
		}
		id = treeID(s.last, s.cursors)
	}
	return s.write(fmt.Appendf(nil, "id: %s\nevent: envelope\ndata: %s\n\n", id, data))
}

// delta writes a "delta" event: a piece of a reply being written. It has
// no id: a client that resumes does so after the last envelope, and the
// deltas it missed are gone (the final envelope holds their text).
func (s *eventStream) delta(d *hubpb.Delta) error {
	data, err := hubpb.MarshalJSON(d)
	if err != nil {
		return err
	}
	return s.write(fmt.Appendf(nil, "event: delta\ndata: %s\n\n", data))
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
	end := streamEnd{Reason: reasonOf(st), Message: st.Message(), LastSeq: s.last, Resume: resume}
	if s.ended != nil {
		end.LastEventID = treeID(s.last, s.cursors)
	}
	s.end(end)
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
