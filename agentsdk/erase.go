package agentsdk

import (
	"context"
	"time"

	"github.com/hubd/hubd/hubpb"
)

// EraseOptions name the sessions an operator erases: by id, a creator's
// thread, an agent's sessions, or any of these together; Reason, which
// each tombstone keeps, is required.
type EraseOptions struct {
	SessionIDs  []string
	ThreadKey   string
	Creator     string // the thread's creator, with ThreadKey
	Participant string
	Reason      string
}

// Erased is what remains of an erased session: its tombstone.
type Erased struct {
	SessionID string
	At        time.Time // when it was erased
	By        string    // the operator who erased it
	Reason    string
}

// Erase erases sessions for good: an operator's call. Live ones are
// closed first; then every text, packet, context value and label of each
// leaves the hub's log, its files, its archives and its caches, and every
// read of it answers ErrErased. Not retried: an erasure that failed may
// be sent again (sessions erased already are listed again). Refusals:
// ErrPermissionDenied for an agent that is not an operator; ErrMalformed
// without a reason or sessions; ErrUnknownSession; ErrBadTransition for
// the source of a fork not erased with it, or on a cluster node.
func (c *Client) Erase(ctx context.Context, o EraseOptions) ([]Erased, error) {
	resp, err := c.rpc.Erase(ctx, &hubpb.EraseRequest{SessionIds: o.SessionIDs, ThreadKey: o.ThreadKey, Creator: o.Creator,
		Participant: o.Participant, Reason: o.Reason})
	if err != nil {
		return nil, wrapErr("erase sessions", err)
	}
	out := make([]Erased, 0, len(resp.GetSessions()))
	for _, s := range resp.GetSessions() {
		out = append(out, Erased{SessionID: s.GetSessionId(), At: s.GetErasedAt().AsTime(), By: s.GetErasedBy(), Reason: s.GetReason()})
	}
	return out, nil
}
