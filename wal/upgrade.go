package wal

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// addHeads upgrades a store of format version 2 to 3: it writes each
// session's head (its greatest record seq) in transactions of at most
// budget bytes, then the format record. It is crash safe: until the last
// step the store still says version 2, and a rerun writes every head
// again. It returns the number of sessions.
func addHeads(db *badger.DB, budget int) (int, error) {
	var heads []sessionSeq
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{kindMeta}})
		defer it.Close()
		var buf []byte
		for it.Rewind(); it.Valid(); it.Next() {
			dk, err := decodeKey(it.Item().Key())
			if err != nil {
				return fmt.Errorf("wal: upgrade: key %x: %w", it.Item().Key(), err)
			}
			last, err := lastSeqIn(txn, dk.session, buf)
			if err != nil {
				return err
			}
			heads = append(heads, sessionSeq{dk.session, last})
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := writeHeads(db, heads, budget); err != nil {
		return 0, err
	}
	err = db.Update(func(txn *badger.Txn) error { return txn.Set(formatKey(), encodeFormat(formatVersion)) })
	if err != nil {
		return 0, fmt.Errorf("wal: upgrade: write format version %d: %w", formatVersion, err)
	}
	return len(heads), nil
}

// writeHeads writes the heads of sessions with records, in transactions
// of at most budget bytes.
func writeHeads(db *badger.DB, heads []sessionSeq, budget int) error {
	txn := db.NewTransaction(true)
	defer func() { txn.Discard() }()
	size := 0
	for _, h := range heads {
		if h.seq == 0 {
			continue
		}
		e := badger.NewEntry(appendSessionKey(nil, kindHead, h.session), encodeHead(h.session, h.seq))
		var err error
		if size+headEntrySize <= budget {
			err = txn.SetEntry(e)
		}
		if size+headEntrySize > budget || errors.Is(err, badger.ErrTxnTooBig) {
			if err := txn.Commit(); err != nil {
				return fmt.Errorf("wal: writing heads: %w", err)
			}
			txn, size = db.NewTransaction(true), 0
			err = txn.SetEntry(e)
		}
		if err != nil {
			return fmt.Errorf("wal: writing heads: %w", err)
		}
		size += headEntrySize
	}
	if err := txn.Commit(); err != nil {
		return fmt.Errorf("wal: writing heads: %w", err)
	}
	return nil
}
