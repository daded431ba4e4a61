package agentsdk

import (
	"context"

	"github.com/hubd/hubd/hubpb"
)

// ForkOptions are the edits of a fork: context variables to set (any Go
// value encoding/json encodes) and delete, the participant to speak next
// ("" keeps who the source expected), and labels added to the source's.
type ForkOptions struct {
	Set         map[string]any
	Delete      []string
	NextSpeaker string
	Labels      map[string]string
}

// Fork opens a new session that continues sessionID from its seq atSeq
// (1 to its last seq), with opts' edits: the source's type, graph and
// participants, its state at that seq (no held turn, no pending question,
// no children), labelled forked_from. The source is not changed. A
// participant of the source (or an operator) may fork it.
func (c *Client) Fork(ctx context.Context, sessionID string, atSeq uint64, opts ForkOptions) (*Session, error) {
	set, err := values("context variable", opts.Set)
	if err != nil {
		return nil, err
	}
	req := &hubpb.ForkRequest{SessionId: sessionID, AtSeq: atSeq, NextSpeaker: opts.NextSpeaker, Labels: opts.Labels}
	if len(set) > 0 || len(opts.Delete) > 0 {
		req.Context = &hubpb.ContextUpdate{Set: set, Delete: opts.Delete}
	}
	resp, err := c.rpc.Fork(ctx, req)
	if err != nil {
		return nil, wrapErr("fork session", err)
	}
	return &Session{SessionInfo: resp.GetSession()}, nil
}
