package wal

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// RestoreSession writes back a session that was deleted (DeleteSessions),
// from a copy of its records kept elsewhere (an archive): records are its
// records from seq 1, meta its metadata, index the caller's index entries
// to write with it. The records go first, in transactions of deleteBatch,
// then the metadata, head and index entries with the removal of the
// tombstone in one transaction, synced: until that one commits, the
// session stays gone (its partial records are not read), and a retry
// writes them again. A session the log holds is refused (ErrInvalid); so
// is one never deleted. The log must not be serving appends to the
// session.
func (l *Log) RestoreSession(ctx context.Context, session [16]byte, meta []byte, records []Record, index []IndexEntry) error {
	if l.readOnly {
		return ErrReadOnly
	}
	if err := l.enterRead(); err != nil {
		return err
	}
	defer l.exitRead()
	if len(meta) == 0 || len(records) == 0 {
		return fmt.Errorf("%w: session %x: a restore needs its metadata and records", ErrInvalid, session)
	}
	for i, r := range records {
		if r.Seq != uint64(i+1) {
			return fmt.Errorf("%w: session %x: record %d has seq %d (a restore starts at 1, dense)", ErrGap, session, i, r.Seq)
		}
	}
	t, gone, err := l.gone(session)
	if err != nil {
		return err
	}
	if !gone || !t.Done {
		return fmt.Errorf("%w: session %x has no finished deletion to undo", ErrInvalid, session)
	}
	for start := 0; start < len(records); start += deleteBatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		batch := records[start:min(len(records), start+deleteBatch)]
		if err := l.db.Update(func(txn *badger.Txn) error {
			for _, r := range batch {
				k := appendRecordKey(nil, session, r.Seq)
				if err := txn.Set(k, appendValue(nil, k, r.Data)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("wal: session %x: restoring records: %w", session, err)
		}
	}
	err = l.db.Update(func(txn *badger.Txn) error {
		mk := appendMetaKey(nil, session)
		sets := []struct{ k, v []byte }{{mk, appendValue(nil, mk, meta)},
			{appendSessionKey(nil, kindHead, session), encodeHead(session, uint64(len(records)))}}
		for _, x := range index {
			k := append([]byte{kindIndex}, x.Key...)
			sets = append(sets, struct{ k, v []byte }{k, appendValue(nil, k, x.Value)})
		}
		for _, s := range sets {
			if err := txn.Set(s.k, s.v); err != nil {
				return err
			}
		}
		return txn.Delete(appendSessionKey(nil, kindGone, session))
	})
	if err == nil {
		err = l.db.Sync()
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("wal: session %x: restoring its metadata: %w", session, err)
	}
	return err
}
