package hub

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/session"
)

// errStop ends a log scan early.
var errStop = errors.New("stop")

// Quarantined returns the sessions hydrate could not rebuild, with why.
func (h *Hub) Quarantined() map[session.ID]error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make(map[session.ID]error, len(h.quarantined))
	for id, err := range h.quarantined {
		out[id] = err
	}
	return out
}

// loading is a session being rebuilt by hydrate.
type loading struct {
	s   *sess
	err error // why it is quarantined
}

// hydrate rebuilds every session from the log: metadata first, then one
// pass over every record. A session that fails is quarantined; the rest
// serve.
func (h *Hub) hydrate(ctx context.Context) error {
	start := time.Now() // for the log line only
	all := map[session.ID]*loading{}
	var order []session.ID
	err := h.log.Sessions(ctx, func(raw [16]byte, metaBytes []byte) error {
		id := session.ID(raw)
		order = append(order, id)
		l := &loading{}
		all[id] = l
		l.s, l.err = h.start(metaBytes, id)
		return nil
	})
	if err != nil {
		return fmt.Errorf("hub: hydrate: listing sessions: %w", err)
	}
	records := 0
	scanErr := h.log.ScanAll(ctx, func(raw [16]byte, seq uint64, data []byte) error {
		records++
		l := all[session.ID(raw)]
		if l == nil || l.err != nil {
			return nil
		}
		l.err = replay(l.s, seq, data)
		return nil
	})
	if scanErr != nil {
		// One bad record stops the bulk scan: finish session by session, so
		// only the sessions with bad records are quarantined.
		h.lg.Warn().Err(scanErr).Msg("hydrate: bulk scan failed; rebuilding session by session")
		for _, id := range order {
			if l := all[id]; l.err == nil {
				l.err = h.scanRest(ctx, l.s)
			}
		}
	}
	n := h.install(order, all)
	h.lg.Info().Int("sessions", n).Int("quarantined", len(h.quarantined)).Int("records", records).
		Dur("took", time.Since(start)).Msg("hydrated")
	return nil
}

// start decodes a session's metadata and starts its machine.
func (h *Hub) start(metaBytes []byte, id session.ID) (*sess, error) {
	meta, err := session.DecodeMeta(metaBytes)
	if err != nil {
		return nil, err
	}
	if meta.ID != id {
		return nil, fmt.Errorf("metadata names session %v: %w", meta.ID, session.ErrCorrupt)
	}
	a, err := h.cfg.Adapters.Lookup(meta.Type)
	if err != nil {
		return nil, err
	}
	m, err := adapters.NewMachine(a, meta)
	if err != nil {
		return nil, fmt.Errorf("metadata no longer starts a %v session: %w", meta.Type, err)
	}
	return newSess(m), nil
}

// replay folds one logged record into s.
func replay(s *sess, seq uint64, data []byte) (err error) {
	e, err := session.DecodeEnvelope(data)
	if err != nil {
		return fmt.Errorf("seq %d: %w", seq, err)
	}
	if e.Seq != seq || seq != s.m.Seq+1 || e.Session != s.id {
		return fmt.Errorf("record at seq %d holds seq %d of session %v after seq %d: %w", seq, e.Seq, e.Session, s.m.Seq, session.ErrCorrupt)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("seq %d does not fold: %v: %w", seq, r, session.ErrCorrupt)
		}
	}()
	s.m.Fold(e)
	s.observe(e)
	return nil
}

// scanRest folds the records of s after its last folded seq.
func (h *Hub) scanRest(ctx context.Context, s *sess) error {
	return h.log.Scan(ctx, s.id, s.m.Seq+1, func(seq uint64, data []byte) error {
		return replay(s, seq, data)
	})
}

// install indexes the rebuilt sessions and arms their timers; the others
// are quarantined. It returns how many serve.
func (h *Hub) install(order []session.ID, all map[session.ID]*loading) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, id := range order {
		l := all[id]
		if l.err == nil && l.s.m.Life.State == 0 {
			l.err = fmt.Errorf("no invite record: %w", session.ErrCorrupt)
		}
		if l.err != nil {
			h.quarantined[id] = l.err
			h.lg.Error().Err(l.err).Str("session", id.String()).Msg("hydrate: session quarantined")
			if f := h.cfg.Hooks.SessionFailed; f != nil {
				f(id, l.err)
			}
			continue
		}
		l.s.publish()
		h.index(l.s)
		h.sched.add(l.s)
		n++
	}
	return n
}

// load rebuilds one session from its log.
func (h *Hub) load(ctx context.Context, meta *session.Meta) (*sess, error) {
	metaBytes, err := session.EncodeMeta(meta)
	if err != nil {
		return nil, err
	}
	s, err := h.start(metaBytes, meta.ID)
	if err != nil {
		return nil, err
	}
	if err := h.scanRest(ctx, s); err != nil {
		return nil, err
	}
	return s, nil
}
