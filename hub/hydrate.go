package hub

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/hubd/hubd/session"
)

// loading is a session being rebuilt by hydrate.
type loading struct {
	meta []byte // its stored metadata, until its machine starts
	s    *Session
	err  error // why it is quarantined
}

// hydrate rebuilds the live sessions from the log. A log with the hub's
// index (see memory.go) names them: only they are folded, each on its own
// scan, in parallel (one goroutine per CPU). A log without it (written
// before the index) is folded whole, as before, by ranges of sessions;
// its index is then written, and its ended sessions leave memory. A
// session that fails is quarantined; the rest serve.
func (h *Hub) hydrate(ctx context.Context) error {
	start := time.Now() // for the log line only
	_, indexed, err := h.cfg.Log.IndexGet(ctx, versionKey())
	if err != nil {
		return fmt.Errorf("hub: hydrate: reading the index: %w", err)
	}
	all := map[session.ID]*loading{}
	var order []session.ID
	var records int64
	snapshot := false
	if indexed && !h.cfg.FoldAll {
		order, snapshot, err = h.liveFromSnapshot(ctx)
		if err != nil {
			return fmt.Errorf("hub: hydrate: checking the live snapshot: %w", err)
		}
		if !snapshot {
			if order, err = h.liveIDs(ctx); err != nil {
				return err
			}
		}
		if n := len(order); n > 0 && h.ids.v7 {
			h.ids.note(uuid.UUID(order[n-1]))
		}
		for _, id := range order {
			all[id] = &loading{}
		}
		records = h.foldEach(ctx, order, all)
	} else {
		err = h.cfg.Log.Metas(ctx, func(raw [16]byte, metaBytes []byte) error {
			id := session.ID(raw)
			order = append(order, id)
			all[id] = &loading{meta: bytes.Clone(metaBytes)}
			return nil
		})
		if err != nil {
			return fmt.Errorf("hub: hydrate: listing sessions: %w", err)
		}
		if len(order) > 0 {
			records = h.foldAll(ctx, order, all)
		}
		if order, err = h.buildIndex(ctx, order, all, !indexed && !h.cfg.FoldAll); err != nil {
			return err
		}
	}
	n := h.install(order, all)
	h.quarantineMarked(ctx)
	h.cfg.Logger.Info().Int("sessions", n).Int("quarantined", len(h.reg.quarantined)).Int64("records", records).Bool("indexed", indexed).Bool("snapshot", snapshot).
		Str("took", time.Since(start).Round(time.Millisecond).String()).Msg("hydrated")
	return nil
}

// DamageMarks is what a Log may also do: name the sessions it knows to be
// damaged (wal.Log's damage marks, recorded when a store opened with
// acknowledged records missing). Hydrate quarantines each of them, ended
// ones included, so that listings show them from the start.
type DamageMarks interface {
	// DamageMarks calls fn for every session marked damaged, with what
	// was found.
	DamageMarks(fn func(session [16]byte, cause string))
}

// quarantineMarked quarantines the sessions the log marks damaged that
// hydrate did not (ended ones: it does not read them).
func (h *Hub) quarantineMarked(ctx context.Context) {
	dm, ok := h.cfg.Log.(DamageMarks)
	if !ok || h.cfg.Partitioned {
		return
	}
	dm.DamageMarks(func(raw [16]byte, cause string) {
		id := session.ID(raw)
		h.reg.mu.RLock()
		_, done := h.reg.quarantined[id]
		_, live := h.reg.sessions[id]
		h.reg.mu.RUnlock()
		if done || live {
			return
		}
		meta, err := h.cfg.Log.Meta(ctx, id)
		if err != nil {
			meta = nil
		}
		h.quarantine(id, fmt.Errorf("the log marks it damaged: %s: %w", cause, session.ErrCorrupt), meta)
	})
}

// foldEach rebuilds the sessions in order, each from its metadata and its
// own scan, in one run per CPU, and returns how many records it read.
func (h *Hub) foldEach(ctx context.Context, order []session.ID, all map[session.ID]*loading) int64 {
	var records atomic.Int64
	var wg sync.WaitGroup
	for _, part := range split(order, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, id := range part {
				l := all[id]
				meta, err := h.cfg.Log.Meta(ctx, id)
				switch {
				case err != nil:
					l.err = err
				case meta == nil:
					l.err = fmt.Errorf("the index marks it live but it has no metadata: %w", session.ErrCorrupt)
				default:
					l.meta = meta // a quarantined session is listed with it
					l.s, l.err = h.start(ctx, meta, id)
				}
				if l.err == nil {
					l.err = h.scanRest(ctx, l.s)
					records.Add(int64(l.s.m.Seq))
				}
			}
		}()
	}
	wg.Wait()
	return records.Load()
}

// buildIndex returns the sessions of a log folded whole to serve: the live
// ones and those quarantined (which stay marked live, to be tried again at
// the next start); with write (a log written before the index), it writes
// their index and completes it with its version key.
func (h *Hub) buildIndex(ctx context.Context, order []session.ID, all map[session.ID]*loading, write bool) ([]session.ID, error) {
	var entries []IndexEntry
	threads := map[string]IndexEntry{}
	var keep []session.ID
	for _, id := range order {
		l := all[id]
		if l.err != nil || l.s == nil {
			entries = append(entries, IndexEntry{Key: liveKey(id)})
			keep = append(keep, id)
			continue
		}
		for _, x := range createIndex(l.s) {
			if x.Key[0] == ixThread {
				threads[string(x.Key)] = x // ids are time-ordered: the last is the latest
				continue
			}
			entries = append(entries, x)
		}
		if !l.s.m.Lifecycle.State.Ended() {
			keep = append(keep, id)
		}
	}
	for _, x := range threads { //hubd:orderless one entry per key
		entries = append(entries, x)
	}
	if !write {
		return keep, nil
	}
	err := h.cfg.Log.PutIndex(ctx, entries)
	if err == nil { // the version last: an index cut short is built again
		err = h.cfg.Log.PutIndex(ctx, []IndexEntry{{Key: versionKey(), Value: []byte(indexVersion)}})
	}
	if err != nil {
		return nil, fmt.Errorf("hub: hydrate: writing the index of %d sessions: %w", len(order), err)
	}
	if len(order) > 0 {
		h.cfg.Logger.Info().Int("sessions", len(order)).Int("live", len(keep)).Msg("indexed a log written before the index")
	}
	return keep, nil
}

// foldAll folds every record of the sessions in order (sorted by id), in
// one range per CPU, and returns how many records it read.
func (h *Hub) foldAll(ctx context.Context, order []session.ID, all map[session.ID]*loading) int64 {
	var records atomic.Int64
	var wg sync.WaitGroup
	for _, part := range split(order, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			records.Add(h.foldRange(ctx, part, all))
		}()
	}
	wg.Wait()
	return records.Load()
}

// split cuts ids into at most n contiguous runs of nearly equal length.
func split(ids []session.ID, n int) [][]session.ID {
	var out [][]session.ID
	for i := range n {
		lo, hi := i*len(ids)/n, (i+1)*len(ids)/n
		if lo < hi {
			out = append(out, ids[lo:hi])
		}
	}
	return out
}

// foldRange starts the machines of one run of sessions and folds their
// records. One bad record stops the range's bulk scan: the rest of the
// range is then rebuilt session by session, so only the sessions with bad
// records are quarantined.
func (h *Hub) foldRange(ctx context.Context, ids []session.ID, all map[session.ID]*loading) int64 {
	for _, id := range ids {
		l := all[id]
		l.s, l.err = h.start(ctx, l.meta, id)
		if l.err == nil {
			l.meta = nil // kept otherwise: a quarantined session is listed with it
		}
	}
	var n int64
	var lastID session.ID
	var last *loading
	err := h.cfg.Log.ScanRange(ctx, ids[0], ids[len(ids)-1], func(raw [16]byte, seq uint64, data []byte) error {
		n++
		if id := session.ID(raw); last == nil || id != lastID {
			lastID, last = id, all[id] // a session's records are contiguous
		}
		if last != nil && last.err == nil {
			last.err = replay(last.s, seq, data)
		}
		return nil
	})
	if err != nil {
		h.cfg.Logger.Warn().Err(err).Msg("hydrate: bulk scan failed; rebuilding session by session")
		for _, id := range ids {
			if l := all[id]; l.err == nil {
				l.err = h.scanRest(ctx, l.s)
			}
		}
	}
	return n
}

// install indexes the rebuilt sessions and arms their timers; the others
// are quarantined. It returns how many serve.
func (h *Hub) install(order []session.ID, all map[session.ID]*loading) int {
	h.reg.mu.Lock()
	defer h.reg.mu.Unlock()
	return h.installLocked(order, all)
}

// installLocked is install with the hub's mutex held.
func (h *Hub) installLocked(order []session.ID, all map[session.ID]*loading) int {
	trees := map[string]*tree{}
	n := 0
	for _, id := range order {
		l := all[id]
		if l.err == nil && l.s.m.Lifecycle.State == 0 {
			l.err = fmt.Errorf("no invite record: %w", session.ErrCorrupt)
		}
		if l.err == nil && l.s.m.Lifecycle.State.Ended() && !h.cfg.Partitioned {
			continue // marked live by an earlier start that quarantined it (a cluster node keeps ended ones)
		}
		if l.err != nil {
			h.reg.quarantined[id] = l.err
			if l.s != nil && l.s.meta != nil {
				h.reg.quarantinedMeta[id] = l.s.meta
			} else if m, err := session.UnmarshalMeta(l.meta); err == nil && m.GetSessionId() != "" {
				h.reg.quarantinedMeta[id] = m
			}
			h.cfg.Logger.Error().Err(l.err).Str("session", id.String()).Msg("hydrate: session quarantined")
			if f := h.cfg.Hooks.SessionFailed; f != nil {
				f(id, l.err)
			}
			continue
		}
		delete(h.reg.quarantined, id) // quarantined by an earlier load of its partition
		delete(h.reg.quarantinedMeta, id)
		h.plant(l.s, trees, all)
		l.s.publish()
		h.index(l.s)
		if len(l.s.m.Calls.Questions) > 0 {
			h.reg.askers[id] = l.s
			l.s.asking = true
		}
		h.sched.add(l.s)
		n++
	}
	return n
}

// plant puts a rebuilt session into its tree, under its parent when the
// parent serves (ids are time-ordered, so a parent comes before its
// children).
func (h *Hub) plant(s *Session, trees map[string]*tree, all map[session.ID]*loading) {
	t := trees[s.call.GetRoot()]
	if t == nil {
		t = newTree(session.MustParseID(s.call.GetRoot()))
		trees[s.call.GetRoot()] = t
	}
	s.tree = t
	if pid, err := session.ParseID(s.meta.GetParentSessionId()); err == nil {
		if p := all[pid]; p != nil && p.err == nil && p.s.tree != nil {
			s.parent = p.s
			p.s.kids = append(p.s.kids, s)
		}
	}
}
