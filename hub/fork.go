package hub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// LabelForkedFrom is the label a fork carries: the id of its source.
const LabelForkedFrom = "forked_from"

// Fork opens a new session that continues session req.session_id from its
// seq req.at_seq, on behalf of caller: a participant of the source, or an
// operator (operator true). The source is not changed.
//
// The fork has an id of its own, the source's type, graph and knobs,
// participants, creator, expectations, TTL, delegates and budget, the
// source's labels with req's added and LabelForkedFrom set to the source's
// id; it is a root (a fork of a child answers no caller) with no thread or
// idempotency key. Its creator is the source's (who may close it, and
// whose --max-open-per-agent it counts against); who forked is logged in
// the fork record. Its log starts with one record the hub writes,
// session_forked (hubpb.Fork: the source and seq, the context edits, the
// chosen next speaker and who forked), and its metadata names the same
// origin (SessionMeta.forked_from). Its state is the source's session-type
// state at at_seq (turns, context, usage, who speaks next: a budget
// counts what the source had used by then), then the
// fork record's fold: the session is open (nobody is invited again), an
// end the source had decided by at_seq is forgotten, the context edits
// apply (deletes, then sets, visible to every participant), and the
// chosen next speaker, when given, is expected (a workflow; other types
// take none); without one, whoever the source expected (for a workflow
// that had decided to end there, its active agent).
//
// What waited at at_seq is not carried: the fork starts with no held turn,
// no pending question and no children. Questions asked before at_seq stay
// the source's (their answers go to the source); children opened before
// at_seq stay the source's children and report to it alone. A granted
// turn is not carried either.
//
// Replay: the fork's state at its first record is not copied into the
// log. Starting the fork's machine (hydrate, a reload, an audit's replay)
// reads the source's log up to at_seq and folds it through the adapter,
// exactly as the source itself is rebuilt (for a fork of a fork, the
// source's source first), then folds the fork's own records. The log
// stays the one record of every state: a snapshot would need a stored
// form of every session type's state, versioned with its adapter, and
// could disagree with the source's log, whereas this fold is the
// computation every replay already trusts. The cost is that a fork needs
// its source's records up to at_seq for as long as it is kept. A cluster
// node (Config.Partitioned) refuses to fork (BAD_LIFECYCLE_TRANSITION):
// its log keeps no metadata of ended sessions, and a fork's partition may
// be loaded by a node that does not serve its source's.
//
// Errors, each writing nothing: a session id that is not one is
// MALFORMED; an unknown source UNKNOWN_SESSION; a caller who is neither a
// participant nor an operator PERMISSION_DENIED; an at_seq outside 1 to
// the source's last seq, context edits that are not valid, a next speaker
// who is not a participant (or one given for a session type without a
// speaker order) MALFORMED; an at_seq where an invite still awaited its
// answer, or where the source had ended without opening (a rejected
// invite), BAD_LIFECYCLE_TRANSITION: the fork opens at once, and nobody
// is in it who had not accepted.
func (h *Hub) Fork(ctx context.Context, caller string, operator bool, req *hubpb.ForkRequest) (*hubpb.ForkResponse, error) {
	if err := h.gate.enter(); err != nil {
		return nil, err
	}
	defer h.gate.leave()
	if h.cfg.Partitioned {
		return nil, fmt.Errorf("a cluster node does not fork sessions: a fork's state is folded from its source's log, "+
			"which a node reads only for the partitions it loads: %w", session.ErrBadTransition)
	}
	m, rec, err := h.forkStart(ctx, caller, operator, req)
	if err != nil {
		return nil, err
	}
	s, err := h.createWith(ctx, m, func(p *plan, s *Session) error { return h.apply(p, s, rec) })
	if err != nil {
		return nil, err
	}
	if f := h.cfg.Hooks.Opened; f != nil {
		f(m.Meta)
	}
	info, err := h.info(ctx, s, caller, operator)
	if err != nil {
		return nil, err
	}
	return &hubpb.ForkResponse{Session: info}, nil
}

// forkStart checks a fork and returns its machine, the source's state at
// the fork's seq, and its first record, admitted; it writes nothing.
func (h *Hub) forkStart(ctx context.Context, caller string, operator bool, req *hubpb.ForkRequest) (*adapters.Machine, *hubpb.Envelope, error) {
	src, err := h.forkSource(ctx, caller, operator, req)
	if err != nil {
		return nil, nil, err
	}
	meta, err := h.forkMeta(src, req)
	if err == nil {
		err = h.checkMeta(meta)
	}
	if err != nil {
		return nil, nil, err
	}
	at, err := h.sourceAt(ctx, meta.GetForkedFrom())
	if err != nil {
		return nil, nil, err
	}
	if err := checkAccepted(at, req); err != nil {
		return nil, nil, err
	}
	m := adapters.Fork(at, meta)
	rec := &hubpb.Envelope{Type: session.EventForked, Payload: &hubpb.Envelope_Fork{Fork: &hubpb.Fork{
		Origin: proto.CloneOf(meta.GetForkedFrom()), Context: proto.CloneOf(req.GetContext()),
		NextSpeaker: req.GetNextSpeaker(), ForkedBy: caller}}}
	if err := m.Admit(rec); err != nil {
		return nil, nil, err
	}
	return m, rec, nil
}

// forkSource returns the session req forks, once caller may fork it at
// req's seq.
func (h *Hub) forkSource(ctx context.Context, caller string, operator bool, req *hubpb.ForkRequest) (*Session, error) {
	id, err := session.ParseIDOf("session_id", req.GetSessionId())
	if err != nil {
		return nil, err
	}
	src, err := h.lookupFor(ctx, id, caller, operator)
	if err != nil {
		return nil, err
	}
	if !operator && !session.IsParticipant(src.meta, caller) {
		return nil, fmt.Errorf("%q is not a participant of session %v and may not fork it: %w", caller, id, ErrPermissionDenied)
	}
	if at, last := req.GetAtSeq(), src.LastSeq(); at < 1 || at > last {
		return nil, fmt.Errorf("at_seq %d is outside session %v's log: fork at a seq from 1 to %d: %w", at, id, last, session.ErrMalformed)
	}
	return src, nil
}

// forkMeta returns the metadata of a fork of src at req's seq.
func (h *Hub) forkMeta(src *Session, req *hubpb.ForkRequest) (*hubpb.SessionMeta, error) {
	sm := src.meta
	id, err := h.sessionID(true, "")
	if err != nil {
		return nil, err
	}
	labels := maps.Clone(sm.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, req.GetLabels())
	labels[LabelForkedFrom] = src.id.String()
	meta := &hubpb.SessionMeta{
		SessionId: id.String(), Type: sm.GetType(), Creator: sm.GetCreator(), Knobs: sm.GetKnobs(), Labels: labels,
		CreatedAt: session.Stamp(h.cfg.Clock.Now().UTC().Round(0)), RootCreator: sm.GetCreator(),
		ForkedFrom: &hubpb.ForkOrigin{SessionId: src.id.String(), AtSeq: req.GetAtSeq()},
	}
	for _, p := range sm.GetParticipants() {
		meta.Participants = append(meta.Participants, proto.CloneOf(p))
	}
	for _, e := range sm.GetExpectations() {
		meta.Expectations = append(meta.Expectations, proto.CloneOf(e))
	}
	meta.Ttl, meta.InviteTimeout = proto.CloneOf(sm.GetTtl()), proto.CloneOf(sm.GetInviteTimeout())
	meta.Delegates, meta.Budget = append([]string(nil), sm.GetDelegates()...), proto.CloneOf(sm.GetBudget())
	encMeta, err := h.interned.marshalMeta(meta)
	if err == nil && len(encMeta) > h.cfg.MaxMetaBytes {
		err = fmt.Errorf("the fork's metadata is %d bytes stored, the limit is %d (MaxMetaBytes): %w", len(encMeta), h.cfg.MaxMetaBytes, ErrTooLarge)
	}
	return meta, err
}

// checkAccepted refuses a fork at a seq where the source had not opened
// with every participant's consent: an invite still awaited an answer,
// or it had ended before it opened (a rejected invite). The fork opens at
// once, so nobody may be in it who had not accepted.
func checkAccepted(src *adapters.Machine, req *hubpb.ForkRequest) error {
	l := src.Lifecycle
	switch {
	case len(l.Awaiting) > 0:
		return fmt.Errorf("at seq %d session %s still awaited invite acks from %s: fork at a seq after they accepted: %w",
			req.GetAtSeq(), req.GetSessionId(), strings.Join(l.Awaiting, ", "), session.ErrBadTransition)
	case l.Opened.IsZero() && l.State.Ended():
		return fmt.Errorf("at seq %d session %s had ended (%s) without opening: there is nothing to continue: %w",
			req.GetAtSeq(), req.GetSessionId(), l.Reason, session.ErrBadTransition)
	}
	return nil
}

// checkMeta checks a new session's metadata as a session of its type.
func (h *Hub) checkMeta(meta *hubpb.SessionMeta) error {
	typ, err := session.ParseType(meta.GetType())
	if err != nil {
		return err
	}
	a, err := h.cfg.Adapters.Lookup(typ)
	if err != nil {
		return err
	}
	_, err = adapters.NewMachine(a, meta)
	return err
}

// forkMachine starts the machine of a fork's metadata: the metadata is
// checked as any session's, then the state is the source's at the fork's
// seq (forkBase).
func (h *Hub) forkMachine(ctx context.Context, meta *hubpb.SessionMeta) (*adapters.Machine, error) {
	if err := h.checkMeta(meta); err != nil {
		return nil, err
	}
	return h.forkBase(ctx, meta, meta.GetForkedFrom())
}

// errFolded stops a scan of a fork's source at the fork's seq.
var errFolded = errors.New("hub: folded to the fork's seq")

// forkBase returns a fork's machine before its first record: the source's
// log folded up to the origin's seq (see Fork), under the fork's metadata.
func (h *Hub) forkBase(ctx context.Context, meta *hubpb.SessionMeta, o *hubpb.ForkOrigin) (*adapters.Machine, error) {
	src, err := h.sourceAt(ctx, o)
	if err != nil {
		return nil, err
	}
	return adapters.Fork(src, meta), nil
}

// sourceAt returns the machine of a fork's source folded from its log up
// to the origin's seq.
func (h *Hub) sourceAt(ctx context.Context, o *hubpb.ForkOrigin) (*adapters.Machine, error) {
	id, err := session.ParseID(o.GetSessionId())
	if err != nil {
		return nil, fmt.Errorf("fork origin: %v: %w", err, session.ErrCorrupt)
	}
	raw, err := h.cfg.Log.Meta(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reading the fork's source %v: %v: %w", id, err, ErrSessionFailed)
	}
	if raw == nil {
		return nil, fmt.Errorf("the fork's source %v is not in the log: %w", id, session.ErrCorrupt)
	}
	srcMeta, err := session.UnmarshalMeta(raw)
	if err == nil {
		srcMeta.Knobs, err = h.interned.knobs(srcMeta.GetKnobs(), nil)
	}
	if err != nil {
		return nil, fmt.Errorf("the fork's source %v: metadata: %v: %w", id, err, session.ErrCorrupt)
	}
	src, err := h.sourceMachine(ctx, srcMeta)
	if err != nil {
		return nil, err
	}
	err = h.cfg.Log.Scan(ctx, id, 1, func(seq uint64, data []byte) error {
		if seq > o.GetAtSeq() {
			return errFolded
		}
		return foldInto(src, seq, data)
	})
	if err != nil && !errors.Is(err, errFolded) {
		return nil, fmt.Errorf("folding the fork's source %v: %w", id, err)
	}
	if src.Seq != o.GetAtSeq() {
		return nil, fmt.Errorf("the fork's source %v ends at seq %d, before the fork's seq %d: %w", id, src.Seq, o.GetAtSeq(), session.ErrCorrupt)
	}
	return src, nil
}

// sourceMachine starts the machine of a fork's source, itself a fork's
// when it is one.
func (h *Hub) sourceMachine(ctx context.Context, meta *hubpb.SessionMeta) (*adapters.Machine, error) {
	if meta.GetForkedFrom() != nil {
		return h.forkMachine(ctx, meta)
	}
	typ, err := session.ParseType(meta.GetType())
	if err != nil {
		return nil, fmt.Errorf("the fork's source: %v: %w", err, session.ErrCorrupt)
	}
	a, err := h.cfg.Adapters.Lookup(typ)
	if err != nil {
		return nil, err
	}
	return adapters.NewMachine(a, meta)
}

// foldInto folds one logged record of a fork's source into its machine.
func foldInto(m *adapters.Machine, seq uint64, data []byte) (err error) {
	e, err := session.UnmarshalEnvelope(data)
	if err != nil {
		return fmt.Errorf("seq %d: %w", seq, err)
	}
	if e.GetSeq() != seq || seq != m.Seq+1 {
		return fmt.Errorf("record at seq %d holds seq %d after seq %d: %w", seq, e.GetSeq(), m.Seq, session.ErrCorrupt)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("seq %d does not fold: %v: %w", seq, r, session.ErrCorrupt)
		}
	}()
	m.Fold(e)
	return nil
}
