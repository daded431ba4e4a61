package agentsdk

import (
	"context"
	"time"

	"github.com/hubd/hubd/hubpb"
)

// Purged is a purged session's tombstone.
type Purged struct {
	SessionID string
	At        time.Time // when it was purged
	Archive   string    // the archive file that holds it ("": none)
}

// Purge archives (unless the hub runs without an archive) and purges an
// ended session whose whole tree ended, at once, whatever its retention:
// an operator's call. Every read of it answers ErrPurged afterwards.
// Refusals: ErrPermissionDenied for an agent that is not an operator;
// ErrBadTransition for a session that is open, in a tree with a session
// still open, or the source of a fork; ErrPurged for one purged already;
// ErrUnknownSession.
func (c *Client) Purge(ctx context.Context, sessionID string) (*Purged, error) {
	resp, err := c.rpc.Purge(ctx, &hubpb.PurgeRequest{SessionId: sessionID})
	if err != nil {
		return nil, wrapErr("purge session", err)
	}
	return &Purged{SessionID: resp.GetSessionId(), At: resp.GetPurgedAt().AsTime(), Archive: resp.GetArchive()}, nil
}
