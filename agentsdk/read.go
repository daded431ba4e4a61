package agentsdk

import (
	"context"
	"time"

	"github.com/hubd/hubd/hubpb"
)

// ReadLog returns up to limit envelopes (0: the hub's default, 1000) of a
// session's log from seq fromSeq (0 or 1: the start), those the caller may
// see, in seq order.
func (c *Client) ReadLog(ctx context.Context, sessionID string, fromSeq uint64, limit int) ([]*Envelope, error) {
	resp, err := c.rpc.ReadLog(ctx, &hubpb.ReadLogRequest{SessionId: sessionID, FromSeq: fromSeq, Limit: int32(limit)})
	if err != nil {
		return nil, wrapErr("read log", err)
	}
	out := make([]*Envelope, 0, len(resp.GetEnvelopes()))
	for _, e := range resp.GetEnvelopes() {
		out = append(out, envelopeFromPB(e))
	}
	return out, nil
}

// PendingTurns returns, for each open session where it is the caller's
// turn, the envelope that began the turn (YourTurn is set).
func (c *Client) PendingTurns(ctx context.Context) ([]Delivery, error) {
	resp, err := c.rpc.PendingTurns(ctx, &hubpb.PendingTurnsRequest{})
	if err != nil {
		return nil, wrapErr("pending turns", err)
	}
	out := make([]Delivery, 0, len(resp.GetTurns()))
	for _, d := range resp.GetTurns() {
		out = append(out, deliveryFromPB(d))
	}
	return out, nil
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

// View is the transcript of a session the caller may see, for building a
// prompt.
type View struct {
	SessionID string
	Name      string
	// Items are the turns (and questions, answers, delegation results) in
	// seq order.
	Items []ViewItem
	// Older counts, per speaker, the items before the window; OlderTotal
	// is their sum.
	Older      []SpeakerCount
	OlderTotal int
}

// ViewItem is one transcript entry.
type ViewItem struct {
	Seq  uint64
	From string
	Type string
	Text string
	At   time.Time
}

// SpeakerCount is how many items of a speaker a window left out.
type SpeakerCount struct {
	Speaker string
	Count   int
}

// View returns the caller's view of a session.
func (c *Client) View(ctx context.Context, sessionID string, opts ViewOptions) (*View, error) {
	resp, err := c.rpc.GetView(ctx, &hubpb.GetViewRequest{SessionId: sessionID, Name: opts.Name, Window: int32(opts.Window)})
	if err != nil {
		return nil, wrapErr("view", err)
	}
	v := &View{SessionID: resp.GetSessionId(), Name: resp.GetName(), OlderTotal: int(resp.GetOlderTotal())}
	for _, it := range resp.GetItems() {
		item := ViewItem{Seq: it.GetSeq(), From: it.GetFrom(), Type: it.GetType(), Text: it.GetText()}
		if it.GetAt() != nil {
			item.At = it.GetAt().AsTime()
		}
		v.Items = append(v.Items, item)
	}
	for _, sc := range resp.GetOlder() {
		v.Older = append(v.Older, SpeakerCount{Speaker: sc.GetSpeaker(), Count: int(sc.GetCount())})
	}
	return v, nil
}
