package agentsdk

import (
	"context"

	"github.com/hubd/hubd/hubpb"
)

// ReadLog returns up to limit envelopes (0: 1000) of a session's log from
// seq fromSeq (0 or 1: the start), those the caller may see, in seq
// order. The hub answers in capped pages (at most 1000 envelopes and
// about 2 MiB each); ReadLog reads as many pages as it takes, so fewer
// than limit envelopes means the log ended.
func (c *Client) ReadLog(ctx context.Context, sessionID string, fromSeq uint64, limit int) ([]*hubpb.Envelope, error) {
	if limit <= 0 {
		limit = 1000
	}
	var out []*hubpb.Envelope
	for {
		want := min(limit-len(out), 1000)
		resp, err := c.rpc.ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: sessionID, FromSeq: fromSeq, Limit: int32(want)})
		if err != nil {
			return nil, wrapErr("read log", err)
		}
		out = append(out, resp.GetEnvelopes()...)
		next := resp.GetNextSeq()
		if next == 0 || len(out) >= limit || next <= fromSeq {
			return out, nil
		}
		fromSeq = next
	}
}

// PendingTurns returns, for each open session where it is the caller's
// turn, the envelope that began the turn (YourTurn is set).
func (c *Client) PendingTurns(ctx context.Context) ([]*hubpb.Delivery, error) {
	resp, err := c.rpc.PendingTurns(ctx, &hubpb.PendingTurnsRequest{})
	if err != nil {
		return nil, wrapErr("pending turns", err)
	}
	return resp.GetTurns(), nil
}

// The named views of a session.
const (
	ViewDefault  = "default"  // the session type's: windowed over two rounds for workflow and discussion, full otherwise
	ViewFull     = "full"     // the whole transcript the caller may see
	ViewWindowed = "windowed" // the last Window items, older ones counted per speaker
	ViewLast     = "last"     // the latest item only
)

// ViewOptions choose a view.
type ViewOptions struct {
	// Name is one of the View* names; "" is ViewDefault.
	Name string
	// Window is how many recent items ViewWindowed keeps (0: 10).
	Window int
}

// View returns the caller's view of a session.
func (c *Client) View(ctx context.Context, sessionID string, opts ViewOptions) (*hubpb.View, error) {
	resp, err := c.rpc.GetView(ctx, &hubpb.GetViewRequest{SessionId: sessionID, Name: opts.Name, Window: int32(opts.Window)})
	if err != nil {
		return nil, wrapErr("view", err)
	}
	return resp, nil
}
