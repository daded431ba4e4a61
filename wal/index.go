package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// The index is a key space the log keeps for its caller (the hub) beside
// the sessions: keys kindIndex|caller's key, values framed like every
// other value. The caller writes entries in the same transaction as the
// records they describe (Write.Index), so an entry and its records are
// durable together, and reads them back by prefix without reading any
// record: what lets a hub find its open sessions, an agent's sessions or
// an idempotency key without folding the whole log.

// IndexGet returns a copy of the value under the index key, and whether
// it is there.
func (l *Log) IndexGet(ctx context.Context, key []byte) ([]byte, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if err := l.enterRead(); err != nil {
		return nil, false, err
	}
	defer l.exitRead()
	txn := l.db.NewTransaction(false)
	defer txn.Discard()
	k := append([]byte{kindIndex}, key...)
	item, err := txn.Get(k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("wal: index key %x: %w", key, err)
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return nil, false, fmt.Errorf("wal: index key %x: %w", key, err)
	}
	data, err := decodeValue(k, v)
	if err != nil {
		return nil, false, fmt.Errorf("wal: index key %x: %w", key, err)
	}
	return data, true, nil
}

// IndexScan calls fn for every index key with prefix, greater than after
// when after is not nil, in key order, from one consistent snapshot. key
// and value are valid only during the call. An error from fn stops the
// scan and is returned as is.
func (l *Log) IndexScan(ctx context.Context, prefix, after []byte, fn func(key, value []byte) error) error {
	if err := l.enterRead(); err != nil {
		return err
	}
	defer l.exitRead()
	txn := l.db.NewTransaction(false)
	defer txn.Discard()
	p := append([]byte{kindIndex}, prefix...)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: p, PrefetchValues: false})
	defer it.Close()
	seek := p
	if after != nil {
		seek = append(append([]byte{kindIndex}, after...), 0) // the first key past after
	}
	n := 0
	for it.Seek(seek); it.Valid(); it.Next() {
		if n++; n%ctxEvery == 1 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		item := it.Item()
		k := item.Key()
		if after != nil && bytes.Compare(k[1:], after) <= 0 {
			continue
		}
		err := item.Value(func(v []byte) error {
			data, err := decodeValue(k, v)
			if err != nil {
				return fmt.Errorf("wal: index key %x: %w", k[1:], err)
			}
			return fn(k[1:], data)
		})
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

// PutIndex writes index entries outside any append, in transactions of
// its own (not atomic as a whole): for a caller that builds its index
// from a log written before it kept one. It must not race appends that
// write the same keys.
func (l *Log) PutIndex(ctx context.Context, entries []IndexEntry) error {
	if l.readOnly {
		return ErrReadOnly
	}
	if err := l.storage.Err(); err != nil {
		return err
	}
	if err := l.enterRead(); err != nil {
		return err
	}
	defer l.exitRead()
	wb := l.db.NewWriteBatch()
	defer wb.Cancel()
	for _, x := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(x.Key) == 0 || len(x.Key) > maxIndexKey {
			return fmt.Errorf("%w: an index key of %d bytes (1 to %d)", ErrInvalid, len(x.Key), maxIndexKey)
		}
		k := append([]byte{kindIndex}, x.Key...)
		var err error
		if x.Delete {
			err = wb.Delete(k)
		} else {
			err = wb.Set(k, appendValue(nil, k, x.Value))
		}
		if err != nil {
			return fmt.Errorf("wal: index: %w", err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("wal: index: %w", err)
	}
	return nil
}
