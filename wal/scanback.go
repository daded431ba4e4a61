package wal

import (
	"context"
	"fmt"
	"math"

	"github.com/dgraph-io/badger/v4"
)

// ScanBack calls fn for one session's records with seq <= to (0: all),
// newest first, with a single reverse iterator and no value prefetch:
// a reader that keeps the newest records (a view) reads no more than
// those. data is valid only during the call. Seqs must run densely down
// from the first record read (ErrGap otherwise); a bad key or value is
// ErrCorrupt, a session marked damaged its damage. An error from fn stops
// the scan and is returned as is.
func (l *Log) ScanBack(ctx context.Context, session [16]byte, to uint64, fn func(seq uint64, data []byte) error) error {
	if err := l.enterRead(); err != nil {
		return err
	}
	defer l.exitRead()
	if d, ok := l.markOf(session); ok {
		return markErr(d)
	}
	if to == 0 {
		to = math.MaxUint64
	}
	txn := l.db.NewTransaction(false)
	defer txn.Discard()
	seek := appendRecordKey(nil, session, to)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: seek[:metaKeyLen], Reverse: true})
	defer it.Close()
	var want uint64 // the next seq expected; 0 before the first
	n := 0
	for it.Seek(seek); it.Valid(); it.Next() {
		if n++; n%ctxEvery == 1 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		seq, err := backRecord(it.Item(), session, want, fn)
		if err != nil {
			return err
		}
		if want = seq - 1; want == 0 {
			break
		}
	}
	return ctx.Err()
}

// backRecord checks the record under a reverse scan's iterator (its seq
// must be want, unless want is 0: the first) and hands it to fn; it
// returns the record's seq.
func backRecord(item *badger.Item, session [16]byte, want uint64, fn func(seq uint64, data []byte) error) (uint64, error) {
	k := item.Key()
	dk, err := decodeKey(k)
	if err == nil && dk.kind != kindRecord {
		err = fmt.Errorf("%w: key kind %#02x among records", ErrCorrupt, dk.kind)
	}
	if err != nil {
		return 0, fmt.Errorf("wal: key %x: %w", k, err)
	}
	if want != 0 && dk.seq != want {
		return 0, fmt.Errorf("%w: session %x: found seq %d, want %d", ErrGap, session, dk.seq, want)
	}
	return dk.seq, item.Value(func(v []byte) error {
		data, err := decodeValue(k, v)
		if err != nil {
			return fmt.Errorf("wal: session %x seq %d: %w", session, dk.seq, err)
		}
		return fn(dk.seq, data)
	})
}
