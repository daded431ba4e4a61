package agentsdk

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/hubd/hubd/hubpb"
)

// Delta is a piece of a reply still being written (hubpb.Delta).
type Delta = hubpb.Delta

// SendDelta forwards a piece of the reply the agent is writing on its turn
// in a session: the session's watchers and the subscribers that asked for
// deltas get it at once; the hub writes nothing. streamID is the
// client message id the reply's final envelope will carry; index counts
// the pieces from 0. Refused as a send would be ([ErrOutOfTurn],
// [ErrSessionClosed], ...) and past the hub's caps ([ErrLimitReached]).
// [Turn.Stream] does this for a handler.
func (c *Client) SendDelta(ctx context.Context, sessionID, streamID string, index uint64, text string) error {
	_, err := c.rpc.SendDelta(ctx, &hubpb.Delta{SessionId: sessionID, StreamId: streamID, Index: index, Text: text})
	return wrapErr("send delta", err)
}

// WatchDeltas is Watch with the deltas of replies being written in the
// session too: Recv returns them as deliveries whose Delta is set (and
// Envelope nil), best-effort (a reader behind loses deltas, never
// envelopes), before the final envelope of their reply.
func (c *Client) WatchDeltas(ctx context.Context, sessionID string, fromSeq uint64) (*Stream, error) {
	return c.openWatch(ctx, &hubpb.WatchRequest{SessionId: sessionID, FromSeq: fromSeq, Deltas: true})
}

// TurnStream writes the reply of a turn as it is made (an LLM's tokens):
// each Write is forwarded at once as a delta, and the text accumulates
// for the final envelope, which Close sends (or return Reply from the
// handler: Serve sends it with the same client message id, so either way
// it is written once). Deltas are best-effort: one the hub refuses at its
// caps does not stop the reply: one over --max-deltas-per-second goes
// out with the next piece, and past --max-delta-bytes-per-turn the rest
// of the text is in the final envelope only. Safe for use by
// one goroutine at a time.
type TurnStream struct {
	t       *Turn
	ctx     context.Context
	id      string
	mu      sync.Mutex
	text    strings.Builder
	n       uint64
	pending string // written, not yet forwarded (a delta refused as too fast)
	capped  bool   // the hub refused a delta at a cap: the rest goes in the final envelope only
	closed  bool
}

// Stream returns a writer of the turn's reply (see [TurnStream]); ctx
// bounds its deltas and its Close.
func (t *Turn) Stream(ctx context.Context) *TurnStream {
	return &TurnStream{t: t, ctx: ctx, id: TurnMsgID(t.SessionID, t.Trigger.GetSeq())}
}

// ID is the stream's id: the client message id of the reply's final
// envelope.
func (s *TurnStream) ID() string { return s.id }

// Write forwards p as a delta and keeps it for the final envelope. It
// fails when the turn is no longer the agent's ([ErrOutOfTurn],
// [ErrSessionClosed], ...) or the stream was closed.
func (s *TurnStream) Write(p []byte) (int, error) { return s.WriteString(string(p)) }

// WriteString is Write with a string.
func (s *TurnStream) WriteString(text string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, errors.New("agentsdk: write to a closed turn stream")
	}
	if text == "" {
		return 0, nil
	}
	s.text.WriteString(text)
	if s.capped {
		return len(text), nil
	}
	s.pending += text
	err := s.t.Client.SendDelta(s.ctx, s.t.SessionID, s.id, s.n, s.pending)
	var e *Error
	switch {
	case err == nil:
		s.n++
		s.pending = ""
	case errors.As(err, &e) && e.Metadata["limit"] == "max-deltas-per-second":
		// Too fast: this piece goes out with the next one.
	case errors.Is(err, ErrLimit):
		s.capped = true // the turn's bytes of deltas: the rest is in the final envelope only
	default:
		return 0, err
	}
	return len(text), nil
}

// Text returns what was written so far.
func (s *TurnStream) Text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}

// Reply is the final reply: the text written. Return it from the handler
// instead of calling Close.
func (s *TurnStream) Reply() Reply { return ReplyText(s.Text()) }

// Close sends the final envelope, a text of everything written, with the
// stream's id as its client message id; the handler then returns the
// zero Reply (or Reply: a duplicate, not written twice).
func (s *TurnStream) Close() error {
	_, err := s.Finish(s.ctx, s.Reply())
	return err
}

// Finish sends r as the final envelope instead of the text written (a
// packet with routing, say), with the stream's id as its client message
// id.
func (s *TurnStream) Finish(ctx context.Context, r Reply) (Ack, error) {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	env, err := r.envelope()
	if err != nil {
		return Ack{}, err
	}
	env.CausationId = s.t.Trigger.GetId()
	return s.t.Client.Send(ctx, s.t.SessionID, env, WithClientMsgID(s.id))
}

// Abandon tells the readers of the deltas that this reply is given up:
// no final envelope will follow with the stream's id (readers drop what
// they showed of it). Write is refused afterwards; the turn stays the
// agent's, for another reply.
func (s *TurnStream) Abandon(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	n := s.n
	s.mu.Unlock()
	_, err := s.t.Client.rpc.SendDelta(ctx, &hubpb.Delta{SessionId: s.t.SessionID, StreamId: s.id, Index: n, Abandoned: true})
	return wrapErr("send delta", err)
}
