package hub

import (
	"context"
	"fmt"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// newSession makes a session of machine m, with the consumer's tail.
func (h *Hub) newSession(id session.ID, m *adapters.Machine) *Session {
	root := m.Meta.GetRootSessionId()
	if root == "" {
		root = id.String()
	}
	call := &hubpb.Call{Id: id.String(), Parent: m.Meta.GetParentSessionId(), Root: root, Depth: m.Meta.GetDepth()}
	s := &Session{id: id, meta: m.Meta, m: m, call: call, heapIdx: -1}
	if t := h.feed.Tail(m.Meta); t != nil {
		s.tail.Store(t)
	}
	return s
}

// start decodes a session's metadata and starts its machine.
func (h *Hub) start(ctx context.Context, metaBytes []byte, id session.ID) (*Session, error) {
	meta, err := session.UnmarshalMeta(metaBytes)
	if err != nil {
		return nil, err
	}
	if meta.Knobs, err = h.interned.knobs(meta.GetKnobs(), nil); err != nil {
		return nil, fmt.Errorf("metadata: %v: %w", err, session.ErrCorrupt)
	}
	return h.startMeta(ctx, meta, id)
}

func (h *Hub) startMeta(ctx context.Context, meta *hubpb.SessionMeta, id session.ID) (*Session, error) {
	if got, err := session.ParseID(meta.GetSessionId()); err != nil || got != id {
		return nil, fmt.Errorf("metadata names session %q: %w", meta.GetSessionId(), session.ErrCorrupt)
	}
	typ, err := session.ParseType(meta.GetType())
	if err != nil {
		return nil, fmt.Errorf("metadata: %v: %w", err, session.ErrCorrupt)
	}
	a, err := h.cfg.Adapters.Lookup(typ)
	if err != nil {
		return nil, err
	}
	m, err := adapters.NewMachine(a, meta)
	if err != nil {
		return nil, fmt.Errorf("metadata no longer starts a %v session: %w", typ, err)
	}
	if o := meta.GetForkedFrom(); o != nil {
		if m, err = h.forkBase(ctx, meta, o); err != nil {
			return nil, err
		}
	}
	return h.newSession(id, m), nil
}

// replay folds one logged record into s.
func replay(s *Session, seq uint64, data []byte) (err error) {
	e, err := s.decode(data)
	if err != nil {
		return fmt.Errorf("seq %d: %w", seq, err)
	}
	if e.GetSeq() != seq || seq != s.m.Seq+1 || e.GetSessionId() != s.meta.GetSessionId() {
		return fmt.Errorf("record at seq %d holds seq %d of session %q after seq %d: %w", seq, e.GetSeq(), e.GetSessionId(), s.m.Seq, session.ErrCorrupt)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("seq %d does not fold: %v: %w", seq, r, session.ErrCorrupt)
		}
	}()
	out := s.m.Fold(e)
	s.observe(e, out.Begins)
	return nil
}

// scanRest folds the records of s after its last folded seq.
func (h *Hub) scanRest(ctx context.Context, s *Session) error {
	return h.cfg.Log.Scan(ctx, s.id, s.m.Seq+1, func(seq uint64, data []byte) error {
		return replay(s, seq, data)
	})
}

// load rebuilds one session from its log.
func (h *Hub) load(ctx context.Context, id session.ID, meta *hubpb.SessionMeta) (*Session, error) {
	s, err := h.startMeta(ctx, meta, id)
	if err != nil {
		return nil, err
	}
	if err := h.scanRest(ctx, s); err != nil {
		return nil, err
	}
	return s, nil
}
