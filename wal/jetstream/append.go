package jetstream

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/nats-io/nats.go"
)

// Record is one opaque record of a session, at sequence number Seq.
type Record struct {
	// Seq is the record's sequence number within its session, from 1.
	Seq uint64
	// Data is the record's payload, stored as is.
	Data []byte
}

// Write is one session's part of an append.
type Write struct {
	// Session is the raw 16 bytes of the session's UUID.
	Session [16]byte
	// Meta is the session's metadata: required (non-empty) when
	// Records[0].Seq == 1, and then written in the same atomic batch, just
	// before the first record; nil otherwise (ErrInvalid).
	Meta []byte
	// Records are consecutive seqs, the first being the session's last
	// stored seq + 1. At least one record is required.
	Records []Record
}

// Append writes all writes atomically, as one message (a single record) or
// one JetStream atomic batch, every session's first message fenced by its
// expected last subject sequence, and returns once JetStream has
// acknowledged it: stored, replicated to a quorum and (with sync_interval
// always) fsynced. All writes must lie in one partition: the sessions of
// one tree.
//
// The caller must not modify writes until Append returns. If ctx ends
// before the call has its sessions' locks, Append returns ctx.Err() and
// sends nothing; after that it waits for the real outcome, bounded by
// Options.AppendTimeout, whatever ctx does. Append with no writes does
// nothing (ErrClosed after Close).
func (l *Log) Append(ctx context.Context, writes ...Write) error {
	if err := l.enter(); err != nil {
		return err
	}
	defer l.exit()
	if len(writes) == 0 {
		return nil
	}
	if err := l.checkRequest(writes); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	k, byID, es, err := l.place(ctx, writes)
	if err != nil {
		return err
	}
	if err := lock(ctx, es); err != nil {
		return err
	}
	defer unlock(es)
	l.sending[k].RLock()
	defer l.sending[k].RUnlock()
	tenure := l.tenure[k].Load()
	if !l.Owns(k) {
		return fmt.Errorf("%w: partition %d (stream %s)", ErrNotOwner, k, l.y.stream(k))
	}
	// Taken: from here the outcome does not depend on ctx.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opts.AppendTimeout)
	defer cancel()
	p, err := l.plan(actx, k, writes, byID)
	if err != nil {
		l.cache.forget(es)
		return err
	}
	p.tenure = tenure
	first, err := l.publish(actx, k, p)
	if err != nil {
		l.cache.forget(es)
		return err
	}
	if l.opts.Holds != nil && !l.opts.Holds(k) {
		l.cache.forget(es)
		return fmt.Errorf("%w: %s", ErrLapsed, l.describe(k, p))
	}
	for i, m := range p.msgs {
		if m.kind == kindRecord {
			l.cache.learn(m.e, pos{m.seq, first + uint64(i)}, m.last)
		}
	}
	return nil
}

// checkRequest does the checks that need no stored state.
func (l *Log) checkRequest(writes []Write) error {
	n, size, maxData := 0, 0, l.opts.maxRecordBytes()
	for i := range writes {
		w := &writes[i]
		if len(w.Records) == 0 {
			return fmt.Errorf("%w: write %d (session %s) has no records", ErrInvalid, i, formatUUID(w.Session))
		}
		if w.Records[0].Seq == 0 {
			return fmt.Errorf("%w: session %s: seq 0 (seqs start at 1)", ErrInvalid, formatUUID(w.Session))
		}
		if w.Meta != nil {
			n, size = n+1, size+len(w.Meta)
			if len(w.Meta) > maxData {
				return fmt.Errorf("%w: session %s: %d bytes of metadata, at most %d", ErrTooLarge, formatUUID(w.Session), len(w.Meta), maxData)
			}
		}
		prev := w.Records[0].Seq - 1
		for j, r := range w.Records {
			if r.Seq != prev+1 {
				return fmt.Errorf("%w: session %s: record %d has seq %d after seq %d", ErrGap, formatUUID(w.Session), j, r.Seq, prev)
			}
			if len(r.Data) > maxData {
				return fmt.Errorf("%w: session %s seq %d: %d bytes, at most %d", ErrTooLarge, formatUUID(w.Session), r.Seq, len(r.Data), maxData)
			}
			prev, n, size = r.Seq, n+1, size+len(r.Data)
		}
	}
	if n > l.opts.MaxBatchMessages || size > l.opts.MaxBatchBytes {
		return fmt.Errorf("%w: %d messages of %d bytes in one append; at most %d messages, %d bytes",
			ErrTooLarge, n, size, l.opts.MaxBatchMessages, l.opts.MaxBatchBytes)
	}
	return nil
}

// place finds the partition of every write, which must be one, and
// returns it with the sessions' entries, by id and in session order.
func (l *Log) place(ctx context.Context, writes []Write) (int, map[[16]byte]*entry, []*entry, error) {
	k := -1
	byID := map[[16]byte]*entry{}
	for i := range writes {
		w := &writes[i]
		e, err := l.entryFor(ctx, w)
		if err != nil {
			return 0, nil, nil, err
		}
		if k >= 0 && e.part != k {
			return 0, nil, nil, fmt.Errorf("%w: session %s lies in partition %d, the append's first in %d: one append is one tree",
				ErrInvalid, formatUUID(w.Session), e.part, k)
		}
		k, byID[w.Session] = e.part, e
	}
	ids := make([][16]byte, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	es := make([]*entry, len(ids))
	for i, id := range ids {
		es[i] = byID[id]
	}
	return k, byID, es, nil
}

// entryFor places a write's session: by its metadata's root when it starts
// the session, else where the log knows or finds it.
func (l *Log) entryFor(ctx context.Context, w *Write) (*entry, error) {
	if w.Meta != nil {
		root, err := l.opts.Root(w.Session, w.Meta)
		if err != nil {
			return nil, fmt.Errorf("%w: session %s: the root of its metadata: %v", ErrInvalid, formatUUID(w.Session), err)
		}
		part := l.PartitionOf(root)
		e := l.cache.place(w.Session, part)
		if e.part != part {
			return nil, fmt.Errorf("%w: session %s lies in partition %d, its metadata's root %s in %d",
				ErrInvalid, formatUUID(w.Session), e.part, formatUUID(root), part)
		}
		return e, nil
	}
	e, found, err := l.locate(ctx, w.Session)
	switch {
	case err != nil:
		return nil, err
	case found:
		return e, nil
	case w.Records[0].Seq == 1:
		return nil, fmt.Errorf("%w: session %s", ErrNoMeta, formatUUID(w.Session))
	}
	return nil, fmt.Errorf("%w: session %s has no records, first seq %d", ErrGap, formatUUID(w.Session), w.Records[0].Seq)
}

// planned is one message of an append.
type planned struct {
	msg  *nats.Msg
	e    *entry
	kind byte
	seq  uint64 // hub seq; 0 for metadata
	last bool   // the session's last record in this append
}

// plan is an append's messages, in order; the first carries a fence
// (every session's first message does), expected being its value.
type plan struct {
	msgs     []planned
	expected uint64
	tenure   uint64 // the partition's tenure when the append took its sessions
}

// plan checks every write against its session's tail (known, or read from
// the stream) and builds the messages.
func (l *Log) plan(ctx context.Context, k int, writes []Write, byID map[[16]byte]*entry) (plan, error) {
	var p plan
	written := map[*entry]uint64{} // sessions already in this append: their last seq
	for i := range writes {
		w := &writes[i]
		e := byID[w.Session]
		last, fence, err := l.lastSeq(ctx, k, w.Session, e, written)
		if err != nil {
			return plan{}, err
		}
		first := w.Records[0].Seq
		switch {
		case first != last.seq+1:
			return plan{}, fmt.Errorf("%w: session %s: first seq %d, want %d", ErrGap, formatUUID(w.Session), first, last.seq+1)
		case first == 1 && len(w.Meta) == 0:
			return plan{}, fmt.Errorf("%w: session %s", ErrNoMeta, formatUUID(w.Session))
		case first > 1 && w.Meta != nil:
			return plan{}, fmt.Errorf("%w: session %s: Meta given, but the session already has %d records", ErrInvalid, formatUUID(w.Session), last.seq)
		}
		if w.Meta != nil {
			p.add(l.message(k, kindMeta, w.Session, 0, w.Meta, true, 0), e, kindMeta, 0, false)
		}
		for j, r := range w.Records {
			m := l.message(k, kindRecord, w.Session, r.Seq, r.Data, fence && j == 0, last.sseq)
			p.add(m, e, kindRecord, r.Seq, j == len(w.Records)-1)
		}
		written[e] = w.Records[len(w.Records)-1].Seq
	}
	p.expected, _ = strconv.ParseUint(p.msgs[0].msg.Header.Get(hdrExpectedSubj), 10, 64)
	// A session written twice in one append: only its last record is last.
	for i := range p.msgs {
		if m := &p.msgs[i]; m.last && written[m.e] != m.seq {
			m.last = false
		}
	}
	return p, nil
}

func (p *plan) add(m *nats.Msg, e *entry, kind byte, seq uint64, last bool) {
	p.msgs = append(p.msgs, planned{msg: m, e: e, kind: kind, seq: seq, last: last})
}

// lastSeq returns where a session's next record goes after: its earlier
// write in this append (no fence then: JetStream refuses a second
// expected-sequence check on one subject in a batch), its tail as known,
// or its tail read from the stream.
func (l *Log) lastSeq(ctx context.Context, k int, id [16]byte, e *entry, written map[*entry]uint64) (pos, bool, error) {
	if seq, ok := written[e]; ok {
		return pos{seq: seq}, false, nil
	}
	if t, ok := l.cache.tail(e); ok {
		return t, true, nil
	}
	t, err := l.fetchTail(ctx, k, id)
	return t, true, err
}

// message builds one message: subject, Nats-Msg-Id, the fence if asked,
// the framed payload.
func (l *Log) message(k int, kind byte, id [16]byte, seq uint64, data []byte, fence bool, expected uint64) *nats.Msg {
	m := &nats.Msg{Subject: l.y.subject(k, kind, id), Header: nats.Header{}, Data: frame(id, seq, kind, data)}
	m.Header.Set(hdrMsgID, msgID(id, seq))
	if fence {
		m.Header.Set(hdrExpectedSubj, strconv.FormatUint(expected, 10))
	}
	return m
}
