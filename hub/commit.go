package hub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// A plan is one atomic write: the envelopes of one or more sessions of a
// tree, applied to their machines in order and appended to the log in one
// call. It begins with what a caller asked (a send, an open, a close, a
// timer's firing) and grows by what that decides across sessions: a child
// that ends posts its result to its parent, a session that ends closes its
// open children, a crossed budget closes the tree.
type plan struct {
	now   *hubpb.Envelope // only its accepted_at: the write's time
	trace string          // the caller's traceparent, for envelopes without one
	parts []*part
	first bool // nothing applied yet: the size limit applies to the next envelope
	// unsure: its append failed with the outcome unknown (it may have
	// landed), so its sessions stay, failed, until a reload reads the log.
	unsure bool
}

// part is one session's share of a plan.
type part struct {
	s       *Session
	meta    []byte // a new session's metadata
	isNew   bool
	before  session.State // the session's state before the plan
	envs    []*hubpb.Envelope
	recs    []LogRecord
	trigger *hubpb.Envelope // the last envelope that began a turn
}

func (h *Hub) newPlan(ctx context.Context, s *Session) *plan {
	return &plan{now: &hubpb.Envelope{AcceptedAt: session.Stamp(h.stamp(s))}, trace: traceparentOf(ctx), first: true}
}

// part returns s's part of the plan, adding one.
func (p *plan) part(s *Session) *part {
	for _, x := range p.parts {
		if x.s == s {
			return x
		}
	}
	x := &part{s: s, before: s.m.Lifecycle.State}
	p.parts = append(p.parts, x)
	return x
}

// apply stamps, checks the size of, applies and encodes envs in session s,
// in order, with the follow-ups each decides; it stops at the session's
// end. The first envelope of the plan is checked against the size limit
// before anything is applied.
func (h *Hub) apply(p *plan, s *Session, envs ...*hubpb.Envelope) error {
	x := p.part(s)
	for _, e := range envs {
		if s.m.Lifecycle.State.Ended() {
			break
		}
		h.stampEnvelope(p, s, e)
		if n := storedSize(e); p.first && n > h.cfg.MaxEnvelopeBytes {
			return fmt.Errorf("envelope is %d bytes stored, the limit is %d: %w", n, h.cfg.MaxEnvelopeBytes, ErrTooLarge)
		}
		p.first = false
		applied, out := s.m.Apply(e)
		if out.Trigger != nil {
			x.trigger = out.Trigger
		}
		if out.Rule != "" {
			e.Rule = out.Rule
		}
		// Encoded once, with the rule that decided it; a failure here
		// (never for an envelope CheckEnvelope passed) leaves the applied
		// machine to abandon, which rebuilds it from the log.
		data, err := encode(e)
		if err != nil {
			return fmt.Errorf("encoding seq %d: %v: %w", e.GetSeq(), err, session.ErrMalformed)
		}
		x.envs = append(x.envs, e)
		x.recs = append(x.recs, LogRecord{Seq: e.GetSeq(), Data: data})
		for _, f := range applied[1:] {
			f.Id = h.newID().String()
			if f.GetTraceparent() == "" {
				f.Traceparent = e.GetTraceparent() // a follow-up is part of its cause's trace
			}
			x.envs = append(x.envs, f)
			x.recs = append(x.recs, LogRecord{Seq: f.GetSeq(), Data: mustEncode(f)})
			f.Call = s.call
		}
		e.Call = s.call
	}
	return nil
}

// stampEnvelope sets what the hub assigns and stores: session, seq, time,
// id. The call is the session's, stamped after encoding (see encode).
func (h *Hub) stampEnvelope(p *plan, s *Session, e *hubpb.Envelope) {
	e.SessionId, e.Seq, e.AcceptedAt, e.Call = s.meta.GetSessionId(), s.m.Seq+1, p.now.GetAcceptedAt(), nil
	if e.GetId() == "" {
		e.Id = h.newID().String()
	}
	if e.GetTraceparent() == "" {
		e.Traceparent = p.trace
	}
}

// encode returns the stored form of e without its call: a session's call
// ids derive from its metadata, so they are stored once there and stamped
// on every envelope the hub hands out (see Session.decode).
func encode(e *hubpb.Envelope) ([]byte, error) {
	c := e.Call
	e.Call = nil
	b, err := session.MarshalEnvelope(e)
	e.Call = c
	return b, err
}

// storedSize is the size of e's stored form (see encode), without
// encoding it.
func storedSize(e *hubpb.Envelope) int {
	c := e.Call
	e.Call = nil
	n := e.SizeVT()
	e.Call = c
	return n
}

func mustEncode(e *hubpb.Envelope) []byte {
	b, err := encode(e)
	if err != nil {
		panic(fmt.Sprintf("hub: encoding seq %d of session %s: %v", e.GetSeq(), e.GetSessionId(), err))
	}
	return b
}

// decode reads one of s's stored envelopes, with its call stamped.
func (s *Session) decode(data []byte) (*hubpb.Envelope, error) {
	e, err := session.UnmarshalEnvelope(data)
	if err == nil {
		e.Call = s.call
	}
	return e, err
}

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

func firstSeq(p *plan) uint64 {
	if x := p.parts[0]; len(x.envs) > 0 {
		return x.envs[0].GetSeq()
	}
	return 0
}

// abandon undoes a plan that was refused before its append: machines that
// applied something are rebuilt from the log before their next change.
func (h *Hub) abandon(p *plan) {
	for _, x := range p.parts {
		if len(x.envs) > 0 {
			x.s.failed = errPlanAbandoned
		}
	}
}

// errPlanAbandoned marks a session whose machine ran ahead of a write that
// was then refused; it is rebuilt from the log, silently.
var errPlanAbandoned = errors.New("a write across sessions was refused after it was applied")

// stamp returns the acceptance time of the next change: the clock, never
// earlier than the session's last acceptance, in UTC without a monotonic
// reading (the log keeps nanoseconds).
func (h *Hub) stamp(s *Session) time.Time {
	now := h.cfg.Clock.Now().UTC().Round(0)
	if now.Before(s.lastAt) {
		now = s.lastAt
	}
	return now
}

// fail marks s failed after a write the log did not take: its in-memory
// state may be ahead of the log, so it is rebuilt from the log before the
// next change (see ready).
func (h *Hub) fail(s *Session, err error) {
	s.failed = err
	h.cfg.Logger.Error().Err(err).Str("session", s.id.String()).Uint64("seq", s.m.Seq).Msg("write-ahead log append failed; session fails until reloaded")
	if f := h.cfg.Hooks.SessionFailed; f != nil {
		f(s.id, err)
	}
}

// ready makes sure a locked session's state matches its log, reloading it
// after a failed write. A failed append may have landed all the same (a
// replicated log that timed out after the write): what the log took beyond
// what was delivered is then delivered now, as if just committed, so that
// the next speaker is told its turn and watchers see every seq. Every
// failed session of the tree is reloaded with it: one write may span
// several of them.
func (h *Hub) ready(ctx context.Context, s *Session) error {
	if s.dropped {
		return notWritten(s)
	}
	if s.failed == nil {
		return nil
	}
	var failed []*Session
	for _, x := range treeOf(s) {
		if x.failed != nil {
			failed = append(failed, x)
		}
	}
	for _, x := range failed {
		if err := h.reload(ctx, x); err != nil {
			return err
		}
	}
	if s.dropped {
		return notWritten(s)
	}
	return nil
}

// errNotWritten is why a new session whose append failed is not served:
// its reload found nothing of it in the log (see forget).
var errNotWritten = errors.New("its open was not written")

// notWritten is the error of a call that reaches a forgotten session.
func notWritten(s *Session) error {
	return fmt.Errorf("no session %v: %w: %w", s.id, errNotWritten, ErrUnknownSession)
}

// treeOf returns every session of s's tree held in memory, s's root first.
func treeOf(s *Session) []*Session {
	root := s
	for root.parent != nil {
		root = root.parent
	}
	all := []*Session{root}
	for i := 0; i < len(all); i++ {
		all = append(all, all[i].kids...)
	}
	return all
}

// reload rebuilds a failed session from its log and delivers what the log
// took beyond the last seq delivered; the caller holds the tree's lock.
func (h *Hub) reload(ctx context.Context, s *Session) error {
	fresh, err := h.load(ctx, s.id, s.meta)
	if err != nil {
		return fmt.Errorf("session %v failed (%v) and could not be reloaded: %v: %w", s.id, s.failed, err, ErrSessionFailed)
	}
	delivered, before := s.lastSeq.Load(), session.State(s.state.Load())
	if delivered == 0 && fresh.m.Seq == 0 {
		h.forget(s)
		return nil
	}
	var landed []*hubpb.Envelope
	if fresh.m.Seq > delivered {
		if landed, err = h.readFrom(ctx, s, delivered+1, 0); err != nil {
			return fmt.Errorf("session %v failed (%v) and its log could not be read: %v: %w", s.id, s.failed, err, ErrSessionFailed)
		}
	}
	storageFailed := errors.Is(s.failed, ErrStorageFailed)
	if !errors.Is(s.failed, errPlanAbandoned) && !storageFailed {
		h.cfg.Logger.Info().Str("session", s.id.String()).Uint64("seq", fresh.m.Seq).Int("landed", len(landed)).
			Msg("session reloaded from the write-ahead log")
	}
	s.m, s.dedup, s.trigger, s.turnKids, s.lastAt, s.failed = fresh.m, fresh.dedup, fresh.trigger, fresh.turnKids, fresh.lastAt, nil
	if t := fresh.Tail(); t != nil {
		s.tail.Store(t)
	}
	if len(landed) == 0 || s.gone.Load() || storageFailed {
		// Unloaded (its partition moved): what landed is its new owner's
		// to tell, from the log it reads. Or the storage failed: what
		// landed was never made durable, and is not told.
		s.publish()
		return nil
	}
	if f := h.cfg.Hooks.Opened; f != nil && delivered == 0 {
		f(s.meta) // a new session whose open landed although its append failed
	}
	newTurn := s.trigger.GetSeq() > delivered
	for _, e := range landed {
		if newTurn && e.GetSeq() == s.trigger.GetSeq() {
			s.trigger = e // the envelope delivered is the one told as the turn's
		}
	}
	x := h.took(s, landed, before, newTurn)
	h.feed.Committed(&Commit{Parts: []Part{x.Part}})
	if x.ended {
		h.retire(s)
	}
	return nil
}

// forget drops a new session whose first write failed and did not land
// (its reload found nothing in the log): it leaves the hub's indexes and
// its parent; the caller holds its tree's lock.
func (h *Hub) forget(s *Session) {
	h.unreserve(s, s.meta.GetOpenKey())
	s.failed, s.dropped = nil, true
	s.gone.Store(true)
	if p := s.parent; p != nil {
		p.kids = slices.DeleteFunc(p.kids, func(k *Session) bool { return k == s })
	}
}

// readFrom reads session s's envelopes from seq on, at most n of them (0:
// all).
func (h *Hub) readFrom(ctx context.Context, s *Session, seq uint64, n int) ([]*hubpb.Envelope, error) {
	var out []*hubpb.Envelope
	err := h.cfg.Log.Scan(ctx, s.id, seq, func(_ uint64, data []byte) error {
		if n > 0 && len(out) == n {
			return errStop
		}
		e, err := s.decode(data)
		if err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return out, err
}

// observe records what the hub derives from each envelope besides the
// machine: idempotency answers, the current turn's trigger (begins: e
// began a turn), the last time.
func (s *Session) observe(e *hubpb.Envelope, begins bool) {
	if k := e.GetClientMsgId(); k != "" {
		if from := dedupSender(e); from != "" {
			if s.dedup == nil {
				s.dedup = map[string]uint64{}
			}
			s.dedup[dedupKey(from, k)] = e.GetSeq()
		}
	}
	if begins {
		s.trigger, s.turnKids = e, 0
	}
	if d := e.GetDelegation(); d != nil {
		s.turnKids += len(d.GetChildSessionIds())
	}
	if t := s.Tail(); t != nil {
		t.Add(e)
	}
	if at := session.Time(e.GetAcceptedAt()); at.After(s.lastAt) {
		s.lastAt = at
	}
}

// dedupSender is whose idempotency key an envelope carries: its sender, or
// for what the hub wrote on someone's behalf (a delegation, an operator's
// answer) that someone.
func dedupSender(e *hubpb.Envelope) string {
	switch {
	case e.GetFrom() != "":
		return e.GetFrom()
	case e.GetDelegation() != nil:
		return e.GetDelegation().GetDelegator()
	case e.GetAnswer().GetBy() != "":
		return e.GetAnswer().GetBy()
	}
	return ""
}

// committed runs after a successful append: each session's derived
// state, indexes, hooks and timers, then the commit is published to the
// consumer (delivery), then the sessions it ended leave the live indexes.
func (h *Hub) committed(p *plan) {
	c := &Commit{Parts: make([]Part, len(p.parts))}
	var ended []*Session
	for i, x := range p.parts {
		for _, e := range x.envs {
			x.s.observe(e, e == x.trigger)
		}
		t := h.took(x.s, x.envs, x.before, x.trigger != nil)
		if t.ended {
			ended = append(ended, x.s)
		}
		c.Parts[i] = t.Part
	}
	h.feed.Committed(c)
	for _, s := range ended {
		h.retire(s)
	}
}

// share is a session's share of a commit, as published.
type share struct {
	Part
	ended bool // the commit ended the session
}

// took runs what follows envelopes the log took, once the session's state
// has observed them: hooks, what the session publishes, the index of
// sessions asking, the open count and timers. newTurn: they began a turn.
// It returns the session's part of the commit to publish.
func (h *Hub) took(s *Session, all []*hubpb.Envelope, before session.State, newTurn bool) share {
	if f := h.cfg.Hooks.Accepted; f != nil {
		for _, e := range all {
			f(e)
		}
	}
	after := s.m.Lifecycle.State
	s.publish()
	h.noteAsking(s)
	ended := after.Ended() && !before.Ended()
	if ended {
		h.reg.mu.Lock()
		h.reg.openCount[s.meta.GetCreator()]--
		h.reg.mu.Unlock()
		s.tree.live.Add(-1)
		if f := h.cfg.Hooks.Closed; f != nil {
			f(s.id, after, s.m.Lifecycle.Reason)
		}
	}
	h.sched.update(s)
	x := share{Part: Part{Session: s, Envelopes: all}, ended: ended}
	if newTurn {
		x.Turn = s.turn.Load()
	}
	return x
}
