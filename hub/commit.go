package hub

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// commit applies envs to the locked session s, with meta when these are its
// first records, settles what they decide across the tree, appends it all
// in one write and runs the post-commit work. It returns s's envelopes
// written, follow-ups included.
func (h *Hub) commit(ctx context.Context, s *Session, envs []*hubpb.Envelope, meta []byte) ([]*hubpb.Envelope, error) {
	p := h.newPlan(ctx, s)
	if meta != nil {
		x := p.part(s)
		x.meta, x.isNew = meta, true
	}
	_, fold := h.spans.start(ctx, spanFold, s.id)
	if err := h.apply(p, s, envs...); err != nil {
		h.abandon(p)
		return nil, endSpan(fold, err)
	}
	fold.End()
	if err := h.finish(ctx, p); err != nil {
		return nil, err
	}
	return p.part(s).envs, nil
}

// finish settles a plan, appends it and runs the post-commit work. On a
// failed append every session of the plan is marked failed (rebuilt from
// the log before its next change) and nothing is acknowledged.
func (h *Hub) finish(ctx context.Context, p *plan) error {
	_, settle := h.spans.start(ctx, spanSettle, session.ID{})
	if err := h.settle(context.WithoutCancel(ctx), p); err != nil {
		h.abandon(p)
		return endSpan(settle, err)
	}
	settle.End()
	writes := make([]LogWrite, 0, len(p.parts))
	for _, x := range p.parts {
		if len(x.recs) > 0 {
			w := LogWrite{Session: x.s.id, Meta: x.meta, Records: x.recs}
			if x.isNew {
				w.Index = createIndex(x.s)
			} else if x.s.m.Lifecycle.State.Ended() && !x.before.Ended() {
				w.Index = []IndexEntry{{Key: liveKey(x.s.id), Delete: true}} // with its end, atomically
			}
			writes = append(writes, w)
		}
	}
	if len(writes) == 0 {
		return nil
	}
	// The folds have run: from here the outcome must not depend on the
	// caller giving up, or memory would run ahead of the log.
	_, wait := h.spans.start(ctx, spanCommitWait, session.ID{}, trace.WithAttributes(attribute.Int("hubd.sessions", len(writes))))
	if err := h.cfg.Log.Append(context.WithoutCancel(ctx), writes...); err != nil {
		if errors.Is(err, ErrDiskFull) {
			// Nothing was written: the machines ran ahead of the log and
			// are rebuilt quietly; the caller may retry once space returns.
			h.abandon(p)
			return endSpan(wait, fmt.Errorf("session %v: %v: %w", p.parts[0].s.id, err, ErrDiskFull))
		}
		if errors.Is(err, ErrStorageFailed) {
			// The log takes nothing more until a restart (it logged why,
			// once): the sessions of the plan are rebuilt from the log
			// for reads, quietly, delivering nothing the failed commit
			// may have left in the store without making it durable; a
			// new one is kept or forgotten as the log says.
			p.unsure = true
			for _, x := range p.parts {
				x.s.failed = err
			}
			return endSpan(wait, fmt.Errorf("session %v: %w", p.parts[0].s.id, err))
		}
		p.unsure = !errors.Is(err, ErrNotOwner)
		for _, x := range p.parts {
			h.fail(x.s, err)
			if !x.isNew {
				// The write may have landed: reload soon, whether or not
				// its sender retries, so that whoever it concerns is told.
				h.sched.retry(x.s, h.cfg.Clock.Now().Add(timerRetry))
			}
		}
		if errors.Is(err, ErrNotOwner) {
			// Nothing was written (the partition is not, or no longer,
			// this node's): the caller retries on the owner.
			return endSpan(wait, fmt.Errorf("session %v: %w", p.parts[0].s.id, err))
		}
		return endSpan(wait, fmt.Errorf("session %v: the write-ahead log did not take seq %d: %v: %w", p.parts[0].s.id, firstSeq(p), err, ErrSessionFailed))
	}
	wait.End()
	_, deliver := h.spans.start(ctx, spanDeliver, session.ID{})
	h.committed(p)
	deliver.End()
	return nil
}

// ackOf acknowledges a commit: the first envelope's seq, id and time, and
// whether the commit ended the session.
func ackOf(all []*hubpb.Envelope) *hubpb.SendResponse {
	first, last := all[0], all[len(all)-1]
	a := &hubpb.SendResponse{Seq: first.GetSeq(), Id: first.GetId(), AcceptedAt: first.GetAcceptedAt()}
	if session.Ends(last.GetType()) {
		a.Closed, a.CloseReason = true, last.GetEnded().GetReason()
	}
	return a
}
