package agentsdk

import (
	"context"

	"github.com/hubd/hubd/hubpb"
)

// Imported is a session written back from an archive.
type Imported struct {
	SessionID string
	Envelopes int    // how many it holds, seq 1 to Envelopes
	Archive   string // the archive file it came from
}

// Import writes purged sessions back into the hub's log from archive, the
// name of a file of the hub's archive directory ("hubd-archive-2026-11-29.hubarc"):
// those of sessionIDs, or every session of the file when there are none.
// An operator's call. Each comes back ended, labelled
// imported_from=<archive>, and every read answers it again; the retention
// sweep leaves it alone. A refusal imports nothing: ErrPermissionDenied
// for an agent that is not an operator; ErrMalformed for a name that is
// not a file of the directory, a damaged file, or a session the file does
// not hold; ErrBadTransition for a session the log holds (imported
// already, or never purged), and on a hub without an archive or a cluster
// node; ErrErased for an erased session.
func (c *Client) Import(ctx context.Context, archive string, sessionIDs ...string) ([]Imported, error) {
	resp, err := c.rpc.Import(ctx, &hubpb.ImportRequest{Archive: archive, SessionIds: sessionIDs})
	if err != nil {
		return nil, wrapErr("import sessions", err)
	}
	out := make([]Imported, 0, len(resp.GetSessions()))
	for _, s := range resp.GetSessions() {
		out = append(out, Imported{SessionID: s.GetSessionId(), Envelopes: int(s.GetEnvelopes()), Archive: s.GetArchive()})
	}
	return out, nil
}
