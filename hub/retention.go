package hub

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// Retention is how long the log keeps ended sessions. A session's
// retention is its open's (SessionMeta.retention), else that of the
// first rule whose labels it carries, else Ended; zero keeps it for
// ever. A session is purged (archived first with Config.Archive) once it
// ended, its whole tree ended, and its retention passed since it ended
// (its last envelope's time, from its log): the hub sweeps every Sweep.
// Open sessions, held turns (only an open session holds one) and trees
// with a live member are never purged.
type Retention struct {
	// Ended is the deployment's retention (hubd serve --retain-ended);
	// zero: for ever.
	Ended time.Duration
	// Rules match labels, first match wins (--retention-policy).
	Rules []RetentionRule
	// Sweep is how often the hub looks for sessions to purge; default 1m.
	Sweep time.Duration
	// Rate is how many sessions a second the sweep purges at most
	// (default DefaultPurgeRate); the sweep also rests at least as long
	// as each batch took, so that it never takes more than half of a
	// core from the send path.
	Rate int
}

// DefaultPurgeRate is Retention.Rate's default: a sweep of a backlog
// (a retention shortened, a hub that was down) is spread out, so that
// the send path's latency does not feel it (docs/PERFORMANCE.md,
// "Retention and purge").
const DefaultPurgeRate = 100

// RetentionRule keeps the sessions that carry every label of Labels for
// Keep (zero: for ever).
type RetentionRule struct {
	Labels map[string]string
	Keep   time.Duration
}

// on reports whether anything is ever purged.
func (r Retention) on() bool {
	if r.Ended > 0 {
		return true
	}
	for _, x := range r.Rules {
		if x.Keep > 0 {
			return true
		}
	}
	return false
}

// keep returns how long a session with meta m is kept after it ended; 0
// is for ever.
func (r Retention) keep(m *hubpb.SessionMeta) time.Duration {
	if d := m.GetRetention(); d != nil {
		return d.AsDuration()
	}
	labels := m.GetLabels()
	for _, x := range r.Rules {
		match := true
		for k, v := range x.Labels { //hubd:orderless every label must match
			if labels[k] != v {
				match = false
			}
		}
		if match {
			return x.Keep
		}
	}
	return r.Ended
}

// startSweep arms the retention sweep of a hub whose retention keeps
// anything less than for ever. A hub that keeps everything reads nothing
// for it, until it accepts an open with a retention of its own
// (sweepFor).
func (h *Hub) startSweep() {
	if h.cfg.Retention.on() {
		h.retain.armed.Do(h.armSweep)
	}
}

// sweepFor arms the sweep once a session with a retention of its own
// was opened.
func (h *Hub) sweepFor(m *hubpb.SessionMeta) {
	if m.GetRetention() != nil && !h.cfg.FoldAll {
		h.retain.armed.Do(h.armSweep)
	}
}

// armSweep runs the sweep every Retention.Sweep (default 1m), on the
// hub's clock, until Close.
func (h *Hub) armSweep() {
	r := h.cfg.Retention
	every := r.Sweep
	if every <= 0 {
		every = time.Minute
	}
	var arm func()
	arm = func() {
		stop := h.cfg.Clock.AfterFunc(every, func() {
			if err := h.gate.enter(); err != nil {
				return
			}
			if _, err := h.Sweep(h.gate.life); err != nil && h.gate.life.Err() == nil {
				h.cfg.Logger.Warn().Err(err).Msg("retention sweep stopped; it runs again at the next interval")
			}
			h.gate.leave()
			arm()
		})
		h.retain.stop.Store(&stop)
	}
	arm()
}

// Reclaimer is a Log that gives the space of deleted sessions back to the
// disk (the badger log: a flush of its memtables, then a compaction of
// its whole tree); no purge runs meanwhile. The sweep calls
// it after purging reclaimBatch sessions or more, or once reclaimEvery
// has passed since the last time with something purged meanwhile.
type Reclaimer interface {
	Reclaim(ctx context.Context) error
}

const (
	reclaimBatch = 1000
	reclaimEvery = time.Hour
)

// Sweep purges every session whose retention passed (see Retention) and
// returns how many it purged. Sessions it may not purge yet (a tree with a
// live member, a fork's source) are left for a later sweep. It walks the
// log a page of sessions at a time, paced as its purges are (see
// purgeAll), so that neither the walk nor the purges of a large backlog
// come as one burst.
func (h *Hub) Sweep(ctx context.Context) (int, error) {
	began := time.Now()
	now := h.cfg.Clock.Now()
	pace := newSweepPace(h.cfg.Retention.Rate)
	n, expired := 0, 0
	var after session.ID
	var err error
	for {
		var ids []session.ID
		var last session.ID
		scanned := time.Now()
		ids, last, err = h.expired(ctx, now, after)
		pace.worked(ctx, 0, time.Since(scanned))
		if err != nil {
			break
		}
		expired += len(ids)
		var k int
		k, err = h.purgeAll(ctx, ids, pace)
		n += k
		if err != nil || last.IsZero() {
			break
		}
		after = last
	}
	if serr := pace.sync(ctx, h.cfg.Log, true); err == nil {
		err = serr
	}
	if n > 0 {
		took := time.Since(began)
		h.cfg.Logger.Info().Int("sessions", n).Int("expired", expired).Str("took", took.Round(time.Millisecond).String()).
			Float64("per_second", float64(n)/took.Seconds()).Msg("retention: purged the sessions whose retention passed")
	}
	if err == nil {
		err = h.reclaim(ctx, n)
	}
	return n, err
}

// reclaim calls the log's Reclaim when the sessions purged since the
// last call are many, or an hour old.
func (h *Hub) reclaim(ctx context.Context, n int) error {
	r, ok := h.cfg.Log.(Reclaimer)
	h.retain.mu.Lock()
	h.retain.pending += n
	due := ok && (h.retain.pending >= reclaimBatch || (h.retain.pending > 0 && h.cfg.Clock.Now().Sub(h.retain.last) >= reclaimEvery))
	if due {
		h.retain.pending, h.retain.last = 0, h.cfg.Clock.Now()
	}
	if !due {
		h.retain.mu.Unlock()
		return nil
	}
	defer h.retain.mu.Unlock() // a purge's deletions would meet badger refusing writes
	began := time.Now()
	if err := r.Reclaim(ctx); err != nil {
		return fmt.Errorf("reclaiming the space of purged sessions: %w", err)
	}
	h.cfg.Logger.Info().Str("took", time.Since(began).Round(time.Millisecond).String()).
		Msg("retention: the log gave the space of purged sessions back")
	return nil
}

// purgeBatchSize is how many sessions the sweep archives with one sync
// and deletes with one mark and one tombstone transaction: small, so that
// each batch is a short burst of work.
const purgeBatchSize = 32

// sweepPage is how many sessions' metadata the sweep reads at a time.
const sweepPage = 512

// sweepPace spaces the sweep's work: after a piece of work it rests as
// long as the work took (the sweep takes at most half of a core), and
// longer when the sessions purged would go faster than the rate.
type sweepPace struct {
	rate   int
	synced time.Time // when the sweep's lazy deletions were last synced
	dirty  bool      // deleted since
}

// syncEvery is how often a sweep has its lazy deletions synced: a crash
// of the machine undoes at most that much of its work (which the next
// sweep does again), and the send path feels one sync in that time.
const syncEvery = 10 * time.Second

func newSweepPace(rate int) *sweepPace {
	if rate <= 0 {
		rate = DefaultPurgeRate
	}
	return &sweepPace{rate: rate, synced: time.Now()}
}

// sync has the log sync the sweep's lazy deletions when syncEvery passed
// since the last time, or now with final.
func (p *sweepPace) sync(ctx context.Context, log Log, final bool) error {
	p.dirty = p.dirty || !final
	s, ok := log.(LazySyncer)
	if !ok || !p.dirty || (!final && time.Since(p.synced) < syncEvery) {
		return nil
	}
	p.synced, p.dirty = time.Now(), false
	if err := s.SyncDeletions(ctx); err != nil {
		return fmt.Errorf("syncing the sweep's deletions: %w", err)
	}
	return nil
}

// worked rests after n sessions purged in took; a cancelled ctx ends
// the rest at once (the sweep then stops at its next step).
func (p *sweepPace) worked(ctx context.Context, n int, took time.Duration) {
	_ = pause(ctx, max(took, time.Duration(n)*time.Second/time.Duration(p.rate)-took))
}

// purgeAll purges ids in batches paced by pace, skipping those not
// eligible yet.
func (h *Hub) purgeAll(ctx context.Context, ids []session.ID, pace *sweepPace) (int, error) {
	n := 0
	for len(ids) > 0 {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		batch := ids[:min(len(ids), purgeBatchSize)]
		ids = ids[len(batch):]
		began := time.Now()
		_, errs, err := h.purgeBatch(ctx, batch, true)
		pace.worked(ctx, len(batch), time.Since(began))
		if err != nil {
			return n, err
		}
		if err := pace.sync(ctx, h.cfg.Log, false); err != nil {
			return n, err
		}
		for i, err := range errs {
			switch {
			case err == nil:
				n++
			case errors.Is(err, session.ErrBadTransition), errors.Is(err, ErrPurged), errors.Is(err, ErrQuarantined),
				errors.Is(err, ErrNotOwner), errors.Is(err, ErrUnknownSession): // a partition moved to another node
				h.cfg.Logger.Debug().Err(err).Str("session", batch[i].String()).Msg("retention: not purged yet")
			default:
				return n, err
			}
		}
	}
	return n, nil
}

// pause waits d (0: not at all) or until ctx is done. It paces work by
// the wall clock, not the hub's: it measures the machine, not time as
// data.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// expired returns the ended sessions whose retention passed by now among
// a page of sessions after after, and the page's last session (zero: the
// walk is done).
func (h *Hub) expired(ctx context.Context, now time.Time, after session.ID) ([]session.ID, session.ID, error) {
	if h.cfg.Partitioned {
		ids, err := h.expiredResident(ctx, now)
		return ids, session.ID{}, err
	}
	var out []session.ID
	var last session.ID
	seen := 0
	err := h.cfg.Log.MetasFrom(ctx, after, func(raw [16]byte, meta []byte) error {
		if seen == sweepPage {
			return errStop
		}
		seen++
		id := session.ID(raw)
		last = id
		if s, ok := h.live(id); ok && !s.State().Ended() {
			return nil
		}
		m, err := session.UnmarshalMeta(meta)
		if err != nil {
			return nil // a quarantined session: not the sweep's to decide
		}
		keep := h.cfg.Retention.keep(m)
		if _, imported := m.GetLabels()[LabelImportedFrom]; keep <= 0 || imported {
			return nil
		}
		ended, err := h.endedAt(ctx, id)
		if err != nil || ended.IsZero() || now.Sub(ended) < keep {
			return nil
		}
		out = append(out, id)
		return nil
	})
	switch {
	case errors.Is(err, errStop):
		return out, last, nil
	case err != nil:
		return nil, session.ID{}, err
	}
	return out, session.ID{}, nil
}

// expiredResident is expired on a partitioned hub: the ended sessions
// of its partitions, which it holds, with when they ended.
func (h *Hub) expiredResident(ctx context.Context, now time.Time) ([]session.ID, error) {
	h.reg.mu.RLock()
	var ended []*Session
	for _, s := range h.reg.sessions { //hubd:orderless sorted below
		if s.State().Ended() {
			ended = append(ended, s)
		}
	}
	h.reg.mu.RUnlock()
	var out []session.ID
	for _, s := range ended {
		keep := h.cfg.Retention.keep(s.meta)
		if _, imported := s.meta.GetLabels()[LabelImportedFrom]; keep <= 0 || imported {
			continue
		}
		if err := s.acquire(ctx); err != nil {
			return nil, err
		}
		at := s.m.Lifecycle.Ended
		s.release()
		if !at.IsZero() && now.Sub(at) >= keep {
			out = append(out, s.id)
		}
	}
	slices.SortFunc(out, compareIDs)
	return out, nil
}

// ParseRetentionPolicy reads a retention policy file (hubd serve
// --retention-policy): one rule a line, "selector retention", where the
// selector is "key=value" pairs joined by commas (every one must match a
// session's labels; "*" matches any session) and the retention a Go
// duration ("720h", at least 1s) or "forever". Rules are tried in order,
// the first match wins; blank lines and lines starting with # are
// skipped.
//
//	# audits are kept for a year, scratch work for a day
//	team=audit          8760h
//	env=dev,kind=scratch 24h
//	pinned=yes          forever
func ParseRetentionPolicy(r io.Reader) ([]RetentionRule, error) {
	var out []RetentionRule
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("retention policy line %d: want \"key=value[,key=value...] retention\", got %q", n, line)
		}
		rule := RetentionRule{Labels: map[string]string{}}
		if f[0] != "*" {
			for _, kv := range strings.Split(f[0], ",") {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return nil, fmt.Errorf("retention policy line %d: label selector %q: want key=value", n, kv)
				}
				rule.Labels[k] = v
			}
		}
		if f[1] != "forever" {
			d, err := time.ParseDuration(f[1])
			if err != nil || d < time.Second {
				return nil, fmt.Errorf("retention policy line %d: retention %q: want a duration of at least 1s (\"720h\") or \"forever\"", n, f[1])
			}
			rule.Keep = d
		}
		out = append(out, rule)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("retention policy: %w", err)
	}
	return out, nil
}

// retainer is the hub's room for purges and the retention sweep.
type retainer struct {
	mu sync.Mutex // held by each purge, and while the log reclaims space; guards pending and last
	// pending counts the sessions purged since the log last gave their
	// space back, at last.
	pending int
	last    time.Time
	stop    atomic.Pointer[func() bool] // stops the armed sweep
	armed   sync.Once                   // the sweep is armed once
}
