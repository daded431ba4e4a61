package jetstream

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
)

// Visitor receives a partition's contents from Hydrate, in stream order:
// a session's metadata before its first record, its records in seq order,
// sessions interleaved as they were written. meta and data are valid only
// during the call; an error from a callback stops Hydrate and is returned
// as is.
type Visitor struct {
	// Meta is called once per session, before its records.
	Meta func(session [16]byte, meta []byte) error
	// Record is called for every record.
	Record func(session [16]byte, seq uint64, data []byte) error
	// Broken, if set, is told of a session whose messages fail their
	// checks (a gap, a record before its metadata, a bad frame); its later
	// messages are skipped and the others go on. If nil, Hydrate stops
	// with the error.
	Broken func(session [16]byte, err error)
	// Foreign, if set, is told of a message whose subject names no
	// session of the partition (no log writes one: another program
	// published into the partition's subjects), with its stream seq and
	// an ErrCorrupt naming it; it is skipped and the others go on. If
	// nil, Hydrate stops with that error.
	Foreign func(subject string, streamSeq uint64, err error)
}

// HydrateStats counts what Hydrate read.
type HydrateStats struct {
	Sessions, Records int
	Broken            int
	Foreign           int    // messages that name no session, skipped
	Gone              int    // tombstones of deleted sessions
	Resumed           int    // deletions Hydrate finished (their messages were left)
	LastSeq           uint64 // the stream seq of the last message read
}

// Hydrate reads partition k from its first message to its last with one
// ordered consumer and hands every session's metadata and records to v:
// what a new owner does before it serves the partition (the log reads
// about 300k messages a second). It checks every message (subject,
// Nats-Msg-Id, frame) and every session's density from seq 1, and
// remembers each session's last record, so the first appends after it need
// no lookup. A message whose subject names no session of the partition
// goes to v.Foreign, or stops it with ErrCorrupt. A session deleted
// (Delete) is not handed on: Hydrate reads the partition's tombstones
// first, skips the messages of their sessions, and removes those it
// found, finishing a deletion a crash interrupted.
func (l *Log) Hydrate(ctx context.Context, k int, v Visitor) (HydrateStats, error) {
	var st HydrateStats
	if err := l.enter(); err != nil {
		return st, err
	}
	defer l.exit()
	if k < 0 || k >= l.opts.Partitions {
		return st, fmt.Errorf("%w: partition %d of %d", ErrInvalid, k, l.opts.Partitions)
	}
	h := hydration{l: l, k: k, v: v, st: &st, last: map[[16]byte]pos{}, broken: map[[16]byte]bool{},
		gone: map[[16]byte]bool{}, left: map[[16]byte]bool{}}
	if err := l.consumeAll(ctx, k, l.y.kindFilter(k, kindGone), h.tombstone); err != nil {
		return st, err
	}
	st.Gone = len(h.gone)
	if err := l.consumeAll(ctx, k, l.y.streamSubjects(k), h.message); err != nil {
		return st, err
	}
	if err := h.finish(ctx); err != nil {
		return st, err
	}
	for id, p := range h.last {
		if !h.broken[id] && p.seq > 0 {
			l.cache.learnID(id, k, p, true)
		}
	}
	return st, nil
}

// hydration is one Hydrate in progress.
type hydration struct {
	l      *Log
	k      int
	v      Visitor
	st     *HydrateStats
	last   map[[16]byte]pos // per session seen: its last record (seq 0: metadata only)
	broken map[[16]byte]bool
	gone   map[[16]byte]bool // the deleted sessions
	left   map[[16]byte]bool // deleted sessions with messages left
}

// tombstone notes a deleted session.
func (h *hydration) tombstone(r raw) error {
	kind, id, err := h.l.y.parseSubject(h.k, r.subj)
	if err != nil || kind != kindGone {
		return nil // the main pass reports it
	}
	st, err := h.l.y.decode(h.k, r.subj, r.id, r.data, r.sseq)
	if err != nil {
		return h.fail(id, err)
	}
	h.gone[st.session] = true
	return nil
}

// finish removes what deletions left, in session order.
func (h *hydration) finish(ctx context.Context) error {
	ids := slices.SortedFunc(maps.Keys(h.left), func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	for _, id := range ids {
		if err := h.l.removeMessages(ctx, h.k, id); err != nil {
			return fmt.Errorf("jetstream: finishing the deletion of session %s: %w", formatUUID(id), err)
		}
		h.l.cache.remove(id)
		h.st.Resumed++
	}
	return nil
}

// message checks one message and hands it on.
func (h *hydration) message(r raw) error {
	h.st.LastSeq = r.sseq
	kind, id, err := h.l.y.parseSubject(h.k, r.subj)
	if err != nil {
		err = fmt.Errorf("stream seq %d: %w", r.sseq, err)
		if h.v.Foreign == nil {
			return err
		}
		h.st.Foreign++
		h.v.Foreign(r.subj, r.sseq, err)
		return nil
	}
	if _, deleted := h.gone[id]; deleted || kind == kindGone || h.broken[id] {
		if deleted && kind != kindGone {
			h.left[id] = true
		}
		return nil
	}
	st, err := h.l.y.decode(h.k, r.subj, r.id, r.data, r.sseq)
	if err == nil {
		err = h.check(st)
	}
	if err != nil {
		return h.fail(id, err)
	}
	if kind == kindMeta {
		h.last[id] = pos{}
		h.st.Sessions++
		if h.v.Meta != nil {
			return h.v.Meta(id, st.data)
		}
		return nil
	}
	h.last[id] = pos{st.seq, st.sseq}
	h.st.Records++
	h.l.cache.learnID(id, h.k, pos{st.seq, st.sseq}, false)
	if h.v.Record != nil {
		return h.v.Record(id, st.seq, st.data)
	}
	return nil
}

// check verifies a message's place in its session: metadata once and
// first, records dense from 1.
func (h *hydration) check(st stored) error {
	prev, seen := h.last[st.session]
	switch {
	case st.kind == kindMeta && seen:
		return fmt.Errorf("%w: session %s: second metadata at stream seq %d", ErrCorrupt, formatUUID(st.session), st.sseq)
	case st.kind == kindRecord && !seen:
		return fmt.Errorf("%w: session %s: record seq %d at stream seq %d before any metadata", ErrCorrupt, formatUUID(st.session), st.seq, st.sseq)
	case st.kind == kindRecord && st.seq != prev.seq+1:
		return fmt.Errorf("%w: session %s: found seq %d at stream seq %d, want %d", ErrGap, formatUUID(st.session), st.seq, st.sseq, prev.seq+1)
	}
	return nil
}

// fail reports a broken session, or stops.
func (h *hydration) fail(id [16]byte, err error) error {
	if h.v.Broken == nil {
		return err
	}
	h.broken[id] = true
	h.st.Broken++
	h.v.Broken(id, err)
	return nil
}
