package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Deletion names a session Delete removes from its partition stream and
// the tombstone it leaves there.
type Deletion struct {
	Session [16]byte
	// Tombstone is kept on the session's tombstone subject; the log does
	// not read it (Tombstone returns it).
	Tombstone []byte
	// Erase marks an erasure: its tombstone follows one a removal left.
	// Either way each of the session's messages is overwritten in the
	// stream's files (JetStream's secure delete): no byte of them stays in
	// the message blocks, so a session purged and later erased leaves
	// nothing behind either.
	Erase bool
}

// hdrGone is the header of a tombstone that says how its session's
// messages are removed: goneErase, or goneRemove.
const (
	hdrGone    = "Hubd-Gone"
	goneErase  = "erase"
	goneRemove = "remove"
)

// deleteAttempts bounds the tries of one JetStream request of a deletion
// that meets no leader or no answer.
const deleteAttempts = 5

// Delete removes sessions from their partition streams in two steps a
// crash cannot leave half done: first each session's tombstone (subject
// hub.p<k>.g.<session>, written once: a tombstone there already is
// kept), then its metadata and records, each message overwritten in the
// stream's files (a secure delete). Hydrate finishes the
// removal of a session whose tombstone it finds with messages left. The
// partitions must be owned (ErrNotOwner) and their streams must allow
// purges and deletes (ErrDenied: a stream created with deny_purge or
// deny_delete keeps them for ever). A session the log cannot find, with
// no tombstone, is ErrInvalid. The sessions are written no more: the
// caller appends nothing to them.
func (l *Log) Delete(ctx context.Context, ds []Deletion) error {
	if err := l.enter(); err != nil {
		return err
	}
	defer l.exit()
	for _, d := range ds {
		if err := l.deleteOne(ctx, d); err != nil {
			return fmt.Errorf("jetstream: deleting session %s: %w", formatUUID(d.Session), err)
		}
	}
	return nil
}

// deleteOne is Delete of one session.
func (l *Log) deleteOne(ctx context.Context, d Deletion) error {
	e, found, err := l.locate(ctx, d.Session) // a deleted one too
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%w: no such session in any partition", ErrInvalid)
	}
	k := e.part
	if err := l.deletable(k); err != nil {
		return err
	}
	l.sending[k].RLock()
	defer l.sending[k].RUnlock()
	if !l.owned[k].Load() {
		return fmt.Errorf("%w: partition %d (stream %s)", ErrNotOwner, k, l.y.stream(k))
	}
	if err := lock(ctx, []*entry{e}); err != nil {
		return err
	}
	defer unlock([]*entry{e})
	if err := l.markGone(ctx, k, d); err != nil {
		return err
	}
	if err := l.removeMessages(ctx, k, d.Session); err != nil {
		return err
	}
	l.cache.remove(d.Session)
	return nil
}

// deletable refuses a partition whose stream denies purges or deletes.
func (l *Log) deletable(k int) error {
	c := l.streams[k].CachedInfo().Config
	if c.DenyPurge || c.DenyDelete {
		return fmt.Errorf("%w: stream %s was created with deny_purge and deny_delete, which JetStream never lifts", ErrDenied, c.Name)
	}
	return nil
}

// markGone writes session d's tombstone, once: one found there already
// (an earlier attempt, or a deletion resumed) is kept, but for an
// erasure of a session that was only removed: its tombstone follows.
func (l *Log) markGone(ctx context.Context, k int, d Deletion) error {
	m := &nats.Msg{Subject: l.y.subject(k, kindGone, d.Session), Header: nats.Header{},
		Data: frame(d.Session, 0, kindGone, d.Tombstone)}
	m.Header.Set(hdrMsgID, goneMsgID(d.Session, d.Erase))
	m.Header.Set(hdrExpectedSubj, "0")
	how := goneRemove
	if d.Erase {
		how = goneErase
	}
	m.Header.Set(hdrGone, how)
	return l.retry(ctx, "writing the tombstone", func(ctx context.Context) error {
		_, err := l.js.PublishMsg(ctx, m)
		var api *jetstream.APIError
		if !errors.As(err, &api) || api.ErrorCode != codeWrongLastSeq {
			return err
		}
		// The session has its tombstone already: kept, unless this is an
		// erasure of a session only removed, whose tombstone it follows.
		old, ok, err := l.lastFor(ctx, k, m.Subject)
		if err != nil || !ok || !d.Erase || old.Header.Get(hdrGone) == goneErase {
			return err
		}
		m.Header.Set(hdrExpectedSubj, strconv.FormatUint(old.Sequence, 10))
		_, err = l.js.PublishMsg(ctx, m)
		return err
	})
}

// removeMessages removes the metadata and records of session id from
// partition k: a secure delete of each, then a purge of both subjects
// (which finds nothing left, unless another program wrote there).
func (l *Log) removeMessages(ctx context.Context, k int, id [16]byte) error {
	for _, kind := range []byte{kindRecord, kindMeta} {
		subj := l.y.subject(k, kind, id)
		if err := l.eraseSubject(ctx, k, subj); err != nil {
			return err
		}
		err := l.retry(ctx, "purging "+subj, func(ctx context.Context) error {
			return l.streams[k].Purge(ctx, jetstream.WithPurgeSubject(subj))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// eraseSubject overwrites every message on subj in the stream's files.
func (l *Log) eraseSubject(ctx context.Context, k int, subj string) error {
	last, ok, err := l.lastFor(ctx, k, subj)
	if err != nil || !ok {
		return err
	}
	var seqs []uint64
	err = l.readSubject(ctx, k, subj, 1, last.Sequence, func(r raw) error {
		seqs = append(seqs, r.sseq)
		return nil
	})
	if err != nil {
		return err
	}
	for _, seq := range seqs {
		err := l.retry(ctx, "erasing stream seq "+strconv.FormatUint(seq, 10)+" of "+subj, func(ctx context.Context) error {
			err := l.streams[k].SecureDeleteMsg(ctx, seq)
			var api *jetstream.APIError
			if errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeMessageNotFound {
				return nil // erased by an earlier attempt
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// retry runs one JetStream request of a deletion, again after a transient
// failure; every step of a deletion may run twice.
func (l *Log) retry(ctx context.Context, what string, req func(ctx context.Context) error) error {
	backoff := 50 * time.Millisecond
	var err error
	for range deleteAttempts {
		rctx, cancel := context.WithTimeout(ctx, l.opts.RequestTimeout)
		err = req(rctx)
		cancel()
		var api *jetstream.APIError
		if err == nil || ctx.Err() != nil || (errors.As(err, &api) && !transientAPI(api)) || (api == nil && !transient(err)) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Tombstone returns the tombstone Delete left of session id, from any
// node (P requests), found false when it has none; a tombstone found
// makes the log forget the session.
func (l *Log) Tombstone(ctx context.Context, id [16]byte) (tomb []byte, found bool, err error) {
	if err := l.enter(); err != nil {
		return nil, false, err
	}
	defer l.exit()
	k, m, found, err := l.lastInAny(ctx, kindGone, id)
	if err != nil {
		return nil, false, fmt.Errorf("jetstream: looking for the tombstone of session %s: %w", formatUUID(id), err)
	}
	if !found {
		return nil, false, nil
	}
	st, err := l.y.decode(k, m.Subject, m.Header.Get(hdrMsgID), m.Data, m.Sequence)
	if err != nil {
		return nil, false, err
	}
	l.cache.remove(id) // what it knew of the session is history
	return st.data, true, nil
}
