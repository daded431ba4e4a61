package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Tree returns the tree of s from s down: each node's listing, turns, own
// usage, duration (creation to end, or to now) and children, oldest
// first. It takes the tree's lock.
func (h *Hub) Tree(ctx context.Context, s *Session) (*hubpb.TreeNode, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	return h.node(ctx, s, h.cfg.Clock.Now())
}

// node is the tree of s, its ended descendants loaded from the log; the
// caller holds the tree's lock.
func (h *Hub) node(ctx context.Context, s *Session, now time.Time) (*hubpb.TreeNode, error) {
	life := s.m.Lifecycle
	end := life.Ended
	if end.IsZero() {
		end = now
	}
	n := &hubpb.TreeNode{Session: listing(s), Turns: int64(s.m.Turns.Summary().Turn), Usage: s.m.Turns.Summary().Usage,
		Duration: durationpb.New(max(0, end.Sub(life.Created)))}
	n.Session.TreeUsage = treeUsage(s)
	kids, err := h.allKids(ctx, s)
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		c, err := h.node(ctx, k, now)
		if err != nil {
			return nil, err
		}
		n.Children = append(n.Children, c)
	}
	return n, nil
}

// Replay re-folds session id from its log into a fresh machine, with no
// agent called and nothing written, and compares it with the live
// session: every logged rule with the rule the replay decides, and the
// final state with the live one. An operator's call.
func (h *Hub) Replay(ctx context.Context, id session.ID) (*hubpb.ReplayResponse, error) {
	s, err := h.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	fresh, err := h.startMeta(ctx, s.meta, id)
	if err != nil {
		return nil, err
	}
	resp := &hubpb.ReplayResponse{Equal: true}
	err = h.cfg.Log.Scan(ctx, id, 1, func(seq uint64, data []byte) error {
		e, err := s.decode(data)
		if err != nil {
			return fmt.Errorf("seq %d: %w", seq, err)
		}
		step, err := replayStep(fresh, e)
		if err != nil {
			return err
		}
		resp.Steps = append(resp.Steps, step)
		if step.GetRule() != e.GetRule() && resp.Equal {
			resp.Equal, resp.FirstDifference = false, seq
			resp.Detail = fmt.Sprintf("seq %d: the log says rule %q, the replay decides %q", seq, e.GetRule(), step.GetRule())
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("replaying session %v: %w", id, err)
	}
	return h.compareLive(ctx, s, fresh, resp)
}

// replayStep folds one logged envelope into the fresh session.
func replayStep(fresh *Session, e *hubpb.Envelope) (step *hubpb.ReplayStep, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("seq %d does not fold: %v: %w", e.GetSeq(), r, session.ErrCorrupt)
		}
	}()
	out := fresh.m.Fold(e)
	return &hubpb.ReplayStep{Envelope: e, Rule: out.Rule, Expected: fresh.m.Expected(),
		Turn: int64(fresh.m.Turns.Summary().Turn), State: fresh.m.Lifecycle.State.String()}, nil
}

// compareLive compares the replayed machine with the live one; the live
// session may have moved on since the scan, so only its state at the same
// seq is compared (a later seq is said to be so).
func (h *Hub) compareLive(ctx context.Context, s *Session, fresh *Session, resp *hubpb.ReplayResponse) (*hubpb.ReplayResponse, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	if err := h.ready(ctx, s); err != nil {
		return nil, err
	}
	if s.m.Seq != fresh.m.Seq {
		if resp.Equal {
			resp.Detail = fmt.Sprintf("the live session moved on to seq %d after the replay read seq %d", s.m.Seq, fresh.m.Seq)
		}
		return resp, nil
	}
	live, err1 := json.Marshal(s.m)
	again, err2 := json.Marshal(fresh.m)
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	if !bytes.Equal(live, again) && resp.Equal {
		resp.Equal, resp.FirstDifference = false, fresh.m.Seq
		resp.Detail = fmt.Sprintf("the replayed state differs from the live one at seq %d:\nlive:   %s\nreplay: %s", fresh.m.Seq, live, again)
	}
	return resp, nil
}
