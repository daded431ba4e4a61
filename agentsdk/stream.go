package agentsdk

import (
	"context"
	"errors"
	"io"
	"iter"
	"time"

	"google.golang.org/grpc"

	"github.com/hubd/hubd/hubpb"
)

// Stream is a stream of deliveries from Subscribe or Watch. Read it with
// Recv, or range over All; Close it when done. A Stream is read by one
// goroutine at a time.
type Stream struct {
	op     string
	s      grpc.ServerStreamingClient[hubpb.Delivery]
	cancel context.CancelFunc
}

// Recv returns the next delivery, waiting for it. It returns io.EOF when the
// hub ended the stream cleanly, and an [*Error] when it was cut off: match
// [ErrSlowSubscriber] or [ErrUnavailable] to resubscribe from your cursors.
func (s *Stream) Recv() (*hubpb.Delivery, error) {
	d, err := s.s.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, wrapErr(s.op, err)
	}
	return d, nil
}

// All ranges over the deliveries until the stream ends; a clean end (io.EOF)
// stops the loop without an error, any other error is yielded once, last.
func (s *Stream) All() iter.Seq2[*hubpb.Delivery, error] {
	return func(yield func(*hubpb.Delivery, error) bool) {
		for {
			d, err := s.Recv()
			if errors.Is(err, io.EOF) {
				return
			}
			if !yield(d, err) || err != nil {
				return
			}
		}
	}
}

// Close ends the stream.
func (s *Stream) Close() { s.cancel() }

// SubscribeOptions tune Subscribe.
type SubscribeOptions struct {
	// Cursors are the last seq processed per session id; the stream resumes
	// after each. Sessions without a cursor start from their beginning,
	// unless they have ended.
	Cursors map[string]uint64
	// IncludeEnded also delivers ended sessions without a cursor.
	IncludeEnded bool
	// TurnView, when set, makes every your_turn delivery carry the
	// agent's view of its session with these options (Delivery.View), so
	// that no View call is needed before answering.
	TurnView *ViewOptions
	// Terse delivers only what asks the agent to act or ends its work: its
	// turns, invites naming it, questions and their withdrawals, and the
	// ends of its sessions (SubscribeRequest.terse). A hub older than the
	// option delivers everything, as without it.
	Terse bool
}

// Subscribe opens the caller's delivery stream: what it missed after its
// cursors (the close of a session it was in included), then its pending
// turns, then everything live. Per session, seqs arrive in order with no gap
// and no duplicate; a turn is told once per triggering envelope.
func (c *Client) Subscribe(ctx context.Context, opts SubscribeOptions) (*Stream, error) {
	return c.subscribe(ctx, opts)
}

func (c *Client) subscribe(ctx context.Context, opts SubscribeOptions, callOpts ...grpc.CallOption) (*Stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	s, err := c.rpc.Subscribe(ctx, subscribeRequest(opts), callOpts...)
	if err != nil {
		cancel()
		return nil, wrapErr("subscribe", err)
	}
	return &Stream{op: "subscribe", s: s, cancel: cancel}, nil
}

// Watch streams the envelopes of one session from seq fromSeq (0 or 1:
// all), live, for dashboards, transcripts and audits: for a participant,
// every envelope it may read (addressed to it, or its own); for an
// operator, all of them. Nobody else may watch. Deliveries of a watch never
// have YourTurn set.
func (c *Client) Watch(ctx context.Context, sessionID string, fromSeq uint64) (*Stream, error) {
	return c.watch(ctx, sessionID, fromSeq)
}

func (c *Client) watch(ctx context.Context, sessionID string, fromSeq uint64, callOpts ...grpc.CallOption) (*Stream, error) {
	return c.openWatch(ctx, &hubpb.WatchRequest{SessionId: sessionID, FromSeq: fromSeq}, callOpts...)
}

// openWatch opens a Watch.
func (c *Client) openWatch(ctx context.Context, req *hubpb.WatchRequest, callOpts ...grpc.CallOption) (*Stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	s, err := c.rpc.Watch(ctx, req, callOpts...)
	if err != nil {
		cancel()
		return nil, wrapErr("watch", err)
	}
	return &Stream{op: "watch", s: s, cancel: cancel}, nil
}

// Follow calls fn with every envelope of a session from seq fromSeq (0 or
// 1: all), in order and each once, until the session ends, and returns the
// envelope that ended it (session_closed or session_expired). A watch that
// breaks (a restarting hub, a slow reader cut off) is resumed after the
// last envelope seen. It stops early with fn's error, or with ctx's. A nil
// fn just waits for the end.
func (c *Client) Follow(ctx context.Context, sessionID string, fromSeq uint64, fn func(*hubpb.Envelope) error) (*hubpb.Envelope, error) {
	return c.follow(ctx, sessionID, fromSeq, fn, nil)
}

// FollowDeltas is Follow that also calls delta with the deltas of replies
// being written in the session (best-effort: a reader behind, or a watch
// resumed, loses some; each reply's final envelope, handed to fn, holds
// its whole text).
func (c *Client) FollowDeltas(ctx context.Context, sessionID string, fromSeq uint64, fn func(*hubpb.Envelope) error, delta func(*Delta) error) (*hubpb.Envelope, error) {
	return c.follow(ctx, sessionID, fromSeq, fn, delta)
}

func (c *Client) follow(ctx context.Context, sessionID string, fromSeq uint64, fn func(*hubpb.Envelope) error, delta func(*Delta) error) (*hubpb.Envelope, error) {
	next := max(fromSeq, 1)
	for attempt := 0; ; {
		var end *hubpb.Envelope
		w, err := c.openWatch(ctx, &hubpb.WatchRequest{SessionId: sessionID, FromSeq: next, Deltas: delta != nil}, grpc.WaitForReady(true))
		if err == nil {
			end, err = follow(w, &next, fn, delta)
			w.Close()
		}
		if end != nil || !retryable(err) || ctx.Err() != nil {
			return end, err
		}
		attempt++
		c.logf("agentsdk: follow %s: %v; watching again from seq %d", sessionID, err, next)
		if !sleep(ctx, backoffDelay(attempt, 50*time.Millisecond, 2*time.Second)) {
			return nil, err
		}
	}
}

// follow reads one watch, advancing next past each envelope handed to fn.
func follow(w *Stream, next *uint64, fn func(*hubpb.Envelope) error, delta func(*Delta) error) (*hubpb.Envelope, error) {
	for {
		d, err := w.Recv()
		if err != nil {
			return nil, err
		}
		if x := d.GetDelta(); x != nil {
			if delta != nil {
				if err := delta(x); err != nil {
					return nil, err
				}
			}
			continue
		}
		e := d.GetEnvelope()
		if e.GetSeq() < *next {
			continue
		}
		*next = e.GetSeq() + 1
		if fn != nil {
			if err := fn(e); err != nil {
				return nil, err
			}
		}
		if Ends(e) {
			return e, nil
		}
	}
}

// TreeOptions tune FollowTree.
type TreeOptions struct {
	// Verbose includes every envelope of every descendant; otherwise only
	// the root's own plus the questions, answers and delegation results of
	// its descendants.
	Verbose bool
	// From is the root's first seq (0 or 1: all); descendants start from
	// their beginning.
	From uint64
}

// FollowTree calls fn with every envelope of a root session and its
// descendants (each labelled with its session and depth in
// envelope.call), each once and in seq order per session, until the root
// ends and everything written with its end (the descendants it closed)
// has been handed over; it returns the envelope that ended the root. A watch that
// breaks is resumed from the last seq seen per session. The caller must be
// an operator or take part in every session it reads (a descendant it
// may not read is left out).
func (c *Client) FollowTree(ctx context.Context, rootID string, opts TreeOptions, fn func(*hubpb.Envelope) error) (*hubpb.Envelope, error) {
	next := map[string]uint64{rootID: max(opts.From, 1)}
	for attempt := 0; ; {
		end, err := c.followTree(ctx, rootID, opts.Verbose, next, fn)
		if end != nil || !retryable(err) || ctx.Err() != nil {
			return end, err
		}
		attempt++
		c.logf("agentsdk: follow tree %s: %v; watching again", rootID, err)
		if !sleep(ctx, backoffDelay(attempt, 50*time.Millisecond, 2*time.Second)) {
			return nil, err
		}
	}
}

// followTree reads one tree watch, advancing next (the next seq per
// session) past each envelope handed to fn.
func (c *Client) followTree(ctx context.Context, rootID string, verbose bool, next map[string]uint64, fn func(*hubpb.Envelope) error) (*hubpb.Envelope, error) {
	cursors := map[string]uint64{}
	for id, n := range next {
		if id != rootID {
			cursors[id] = n - 1
		}
	}
	w, err := c.openWatch(ctx, &hubpb.WatchRequest{SessionId: rootID, FromSeq: next[rootID], Tree: true, Verbose: verbose,
		Cursors: cursors}, grpc.WaitForReady(true))
	if err != nil {
		return nil, err
	}
	defer w.Close()
	var end *hubpb.Envelope
	for {
		d, err := w.Recv()
		if errors.Is(err, io.EOF) && end != nil {
			return end, nil // the hub ends a tree watch after the root's end
		}
		if err != nil {
			return nil, err
		}
		e := d.GetEnvelope()
		id := e.GetSessionId()
		if e.GetSeq() < next[id] {
			continue
		}
		next[id] = e.GetSeq() + 1
		if fn != nil {
			if err := fn(e); err != nil {
				return nil, err
			}
		}
		if id == rootID && Ends(e) {
			end = e
		}
	}
}
