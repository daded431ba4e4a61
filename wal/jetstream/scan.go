package jetstream

import (
	"bytes"
	"context"
	"fmt"
	"slices"
)

// Scan calls fn for each record of session with seq >= from, in seq order,
// up to the session's last record when the scan began. data is valid only
// during the call. A seq missing between the first record read and the
// last is ErrGap; a message that fails its checks is ErrCorrupt. An error
// from fn stops the scan and is returned as is. A session with no records
// (or unknown anywhere) scans nothing. Any node may scan any partition.
func (l *Log) Scan(ctx context.Context, session [16]byte, from uint64, fn func(seq uint64, data []byte) error) error {
	if err := l.enter(); err != nil {
		return err
	}
	defer l.exit()
	e, found, err := l.locate(ctx, session)
	if err != nil || !found {
		return err
	}
	k, subj := e.part, l.y.subject(e.part, kindRecord, session)
	from = max(from, 1)
	m, ok, err := l.lastFor(ctx, k, subj)
	if err != nil || !ok {
		return err
	}
	tail, err := l.y.decode(k, m.Subject, m.Header.Get(hdrMsgID), m.Data, m.Sequence)
	if err != nil {
		return err
	}
	l.cache.learn(e, pos{tail.seq, tail.sseq}, true)
	switch {
	case tail.seq < from:
		return nil
	case tail.seq == from:
		return fn(tail.seq, tail.data)
	}
	start, want := uint64(1), uint64(1)
	if mk, ok := l.cache.mark(session, from); ok {
		start, want = mk.sseq, mk.seq
	}
	err = l.readSubject(ctx, k, subj, start, tail.sseq, func(r raw) error {
		st, err := l.y.decode(k, r.subj, r.id, r.data, r.sseq)
		if err != nil {
			return err
		}
		if st.seq != want {
			return fmt.Errorf("%w: session %s: found seq %d at stream seq %d, want %d", ErrGap, formatUUID(session), st.seq, st.sseq, want)
		}
		want++
		l.cache.learn(e, pos{st.seq, st.sseq}, false)
		if st.seq < from {
			return nil
		}
		return fn(st.seq, st.data)
	})
	if err != nil {
		return err
	}
	if want != tail.seq+1 {
		return fmt.Errorf("%w: session %s: read through seq %d, its last is %d", ErrGap, formatUUID(session), want-1, tail.seq)
	}
	return nil
}

// rec is one record kept by ScanRange until its session's turn.
type rec struct {
	seq  uint64
	data []byte
}

// ScanRange calls fn for every record of the sessions whose ids (raw
// bytes) lie between first and last included, session by session in that
// order, seq ascending: hub.Log's contract. Sessions are spread over the
// partitions, so it reads every partition's records and holds the range's
// in memory to order them; a hub that loads partitions should use Hydrate,
// which streams one partition with one consumer. A session whose seqs do
// not run densely from 1 is ErrGap; a bad message is ErrCorrupt. An error
// from fn stops the scan and is returned as is.
func (l *Log) ScanRange(ctx context.Context, first, last [16]byte, fn func(session [16]byte, seq uint64, data []byte) error) error {
	if err := l.enter(); err != nil {
		return err
	}
	defer l.exit()
	in := func(id [16]byte) bool {
		return bytes.Compare(id[:], first[:]) >= 0 && bytes.Compare(id[:], last[:]) <= 0
	}
	recs := map[[16]byte][]rec{}
	for k := range l.opts.Partitions {
		err := l.consumeAll(ctx, k, l.y.kindFilter(k, kindRecord), func(r raw) error {
			st, err := l.y.decode(k, r.subj, r.id, r.data, r.sseq)
			if err != nil || !in(st.session) {
				return err
			}
			rs := recs[st.session]
			if want := uint64(len(rs)) + 1; st.seq != want {
				return fmt.Errorf("%w: session %s: found seq %d at stream seq %d, want %d", ErrGap, formatUUID(st.session), st.seq, st.sseq, want)
			}
			l.cache.learnID(st.session, k, pos{st.seq, st.sseq}, false)
			recs[st.session] = append(rs, rec{st.seq, st.data})
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, id := range sortedIDs(recs) {
		for _, r := range recs[id] {
			if err := fn(id, r.seq, r.data); err != nil {
				return err
			}
		}
	}
	return nil
}

// Metas calls fn for every session's metadata, in session id order (raw
// bytes), reading every partition's metadata subjects. meta is valid only
// during the call.
func (l *Log) Metas(ctx context.Context, fn func(session [16]byte, meta []byte) error) error {
	if err := l.enter(); err != nil {
		return err
	}
	defer l.exit()
	metas := map[[16]byte][]byte{}
	for k := range l.opts.Partitions {
		err := l.consumeAll(ctx, k, l.y.kindFilter(k, kindMeta), func(r raw) error {
			st, err := l.y.decode(k, r.subj, r.id, r.data, r.sseq)
			if err != nil {
				return err
			}
			l.cache.place(st.session, k)
			metas[st.session] = st.data
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, id := range sortedIDs(metas) {
		if err := fn(id, metas[id]); err != nil {
			return err
		}
	}
	return nil
}

// sortedIDs returns a map's session ids in byte order.
func sortedIDs[V any](m map[[16]byte]V) [][16]byte {
	ids := make([][16]byte, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	return ids
}
