package feed

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Get returns a session's metadata and current state. Only its participants
// (or an operator) may read it.
func (f *Feed) Get(ctx context.Context, agent string, operator bool, id session.ID) (*hubpb.SessionInfo, error) {
	s, err := f.readable(ctx, agent, operator, id)
	if err != nil {
		return nil, err
	}
	return f.h.Info(ctx, s, agent, operator)
}

// GetTree returns the tree of session id from that session down: each
// node's listing, turns, own usage, duration (creation to end, or to now)
// and children, oldest first. Its participants (or an operator) may read
// it.
func (f *Feed) GetTree(ctx context.Context, agent string, operator bool, id session.ID) (*hubpb.TreeNode, error) {
	s, err := f.readable(ctx, agent, operator, id)
	if err != nil {
		return nil, err
	}
	return f.h.Tree(ctx, s)
}

// ListQuestions returns the pending questions agent must answer (all of
// them for an operator who names no answerer), oldest first; with
// answerer, only that answerer's (an operator's choice, or the caller's
// own); with root, only those of root's tree.
func (f *Feed) ListQuestions(ctx context.Context, agent string, operator bool, answerer string, root session.ID) ([]*hubpb.PendingQuestion, error) {
	if answerer == "" && !operator {
		answerer = agent
	}
	if answerer != agent && !operator {
		return nil, fmt.Errorf("%q may list only its own questions, not %q's: %w", agent, answerer, hub.ErrPermissionDenied)
	}
	var out []*hubpb.PendingQuestion
	for _, s := range f.h.Asking() {
		if !root.IsZero() && s.Root() != root {
			continue
		}
		out = append(out, s.Questions(answerer)...)
	}
	slices.SortStableFunc(out, func(a, b *hubpb.PendingQuestion) int {
		return a.GetEnvelope().GetAcceptedAt().AsTime().Compare(b.GetEnvelope().GetAcceptedAt().AsTime())
	})
	return out, nil
}

// ReadLog returns up to limit envelopes of a session from seq from (what
// agent may see of them; everything for an operator), within the read
// caps, and the seq to read from next: 0 when the page reached the end of
// the log.
func (f *Feed) ReadLog(ctx context.Context, agent string, operator bool, id session.ID, from uint64, limit int) ([]*hubpb.Envelope, uint64, error) {
	s, err := f.readable(ctx, agent, operator, id)
	if err != nil {
		return nil, 0, err
	}
	if limit <= 0 || limit > MaxReadItems {
		limit = MaxReadItems
	}
	from = max(from, 1)
	var out []*hubpb.Envelope
	var next uint64
	size, scanned := 0, 0
	err = f.h.Log().Scan(ctx, id, from, func(seq uint64, data []byte) error {
		if len(out) == limit || scanned == maxReadScan || (len(out) > 0 && size+len(data) > MaxReadBytes) {
			next = seq
			return errStop
		}
		scanned++
		e, err := s.Decode(data)
		if err != nil {
			return err
		}
		if operator || session.Visible(e, agent) {
			out = append(out, e)
			size += len(data)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, 0, fmt.Errorf("reading session %v from seq %d: %w", id, from, err)
	}
	return out, next, nil
}
