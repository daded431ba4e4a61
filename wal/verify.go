package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
)

// VerifyStats counts what Verify read.
type VerifyStats struct {
	Sessions int // sessions with metadata, records or a head
	Records  int // record keys
}

// Verify checks the whole store and reports what is damaged, reading one
// snapshot and changing nothing: the checksum of every block of every
// badger table, then for every session its metadata, records dense from 1
// with good frames, a head equal to its last record, and its damage mark.
// Sessions are found by walking the metadata, head and record keys and
// then read one by one by seeking (badger's iterators end at a damaged
// block and skip the rest of its table; a seek goes past it). The Damage
// lists each affected session once, from its first affected seq, and each
// damaged table with the range of keys it holds; the error is for a
// failure to read at all. Verify takes memory in proportion to the number
// of sessions.
func (l *Log) Verify(ctx context.Context) (Damage, VerifyStats, error) {
	var dmg Damage
	var st VerifyStats
	if err := l.enterRead(); err != nil {
		return dmg, st, err
	}
	defer l.exitRead()
	dmg.Store = slices.Clone(l.storeDamage)
	if !l.db.Opts().InMemory {
		dmg.Store = append(dmg.Store, verifyTables(l.dir)...)
	}
	txn := l.db.NewTransaction(false)
	defer txn.Discard()
	ids := map[[16]byte]bool{}
	for _, kind := range []byte{kindMeta, kindHead, kindRecord} {
		if err := collectSessions(ctx, txn, kind, ids); err != nil {
			return dmg, st, err
		}
	}
	found := marks{}
	for s, d := range l.marks {
		ids[s] = true
		found.add(SessionDamage{Session: s, From: d.From, Cause: "marked damaged: " + d.Cause})
	}
	for _, s := range slices.SortedFunc(mapKeys(ids), func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) }) {
		if err := ctx.Err(); err != nil {
			return dmg, st, err
		}
		n, d := checkSession(txn, s, l.heads)
		st.Records += n
		if d != nil {
			found.add(*d)
		}
	}
	dmg.Sessions = found.sorted()
	st.Sessions = len(ids)
	return dmg, st, nil
}

// collectSessions adds the session of every key of one kind to ids.
func collectSessions(ctx context.Context, txn *badger.Txn, kind byte, ids map[[16]byte]bool) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{kind}})
	defer it.Close()
	var last [16]byte
	n := 0
	for it.Rewind(); it.Valid(); it.Next() {
		if n++; n%ctxEvery == 1 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		k := it.Item().Key()
		if len(k) < metaKeyLen || bytes.Equal(k[1:metaKeyLen], last[:]) {
			continue
		}
		copy(last[:], k[1:metaKeyLen])
		ids[last] = true
	}
	return ctx.Err()
}

// checkSession checks one session and returns how many records it read
// and its damage, if any.
func checkSession(txn *badger.Txn, s [16]byte, heads bool) (int, *SessionDamage) {
	bad := func(from uint64, format string, args ...any) *SessionDamage {
		return &SessionDamage{Session: s, From: from, Cause: fmt.Sprintf(format, args...)}
	}
	n, last, d := verifyRecords(txn, s)
	if d != nil {
		return n, d
	}
	k := appendMetaKey(nil, s)
	item, err := txn.Get(k)
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return n, bad(1, "the session's metadata is missing")
	case err == nil:
		err = item.Value(func(v []byte) error { _, err := decodeValue(k, v); return err })
	}
	if err != nil {
		return n, bad(1, "metadata: %v", err)
	}
	if last == 0 && !heads {
		return n, bad(1, "the session has metadata but no records")
	}
	if !heads {
		return n, nil
	}
	h, ok, err := headIn(txn, s)
	switch {
	case err != nil:
		return n, bad(last+1, "%v", err)
	case !ok && last == 0:
		return n, bad(1, "the session has metadata but no records and no head")
	case !ok:
		return n, bad(last+1, "records run to seq %d but the session has no head: later records may be lost", last)
	case h > last:
		return n, bad(last+1, "records %d..%d are missing (its head is %d)", last+1, h, h)
	case h < last:
		return n, bad(h+1, "records run to seq %d but its head is %d", last, h)
	}
	return n, nil
}

// verifyRecords reads the session's records by a seek and checks their
// keys, frames and density from 1. It returns how many it read, the last
// dense seq and the first problem.
func verifyRecords(txn *badger.Txn, s [16]byte) (int, uint64, *SessionDamage) {
	seek := appendRecordKey(nil, s, 1)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: seek[:metaKeyLen]})
	defer it.Close()
	var last uint64
	n := 0
	for it.Seek(seek); it.Valid(); it.Next() {
		n++
		item := it.Item()
		k := item.Key()
		dk, err := decodeKey(k)
		if err != nil {
			return n, last, &SessionDamage{Session: s, From: last + 1, Cause: fmt.Sprintf("bad key %x: %v", k, err)}
		}
		if dk.seq != last+1 {
			return n, last, &SessionDamage{Session: s, From: last + 1, Cause: fmt.Sprintf(
				"records %d..%d are missing (the next one found is %d)", last+1, dk.seq-1, dk.seq)}
		}
		if err := item.Value(func(v []byte) error { _, err := decodeValue(k, v); return err }); err != nil {
			return n, last, &SessionDamage{Session: s, From: dk.seq, Cause: fmt.Sprintf("seq %d: %v", dk.seq, err)}
		}
		last = dk.seq
	}
	return n, last, nil
}

// verifyTables checks the checksum of every block of every table file in
// dir and describes each damaged table with the range of keys it holds.
// It reads the files itself: badger's own DB.VerifyChecksum panics on a
// bad block when blocks are verified on read.
func verifyTables(dir string) []string {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	m, err := readManifest(dir)
	if err != nil {
		return []string{"the MANIFEST is unreadable: " + err.Error()}
	}
	var out []string
	for _, p := range paths {
		id, _ := table.ParseFileID(filepath.Base(p))
		tm, ok := m.Tables[id]
		if !ok {
			out = append(out, fmt.Sprintf("table %s is not listed in the MANIFEST", filepath.Base(p)))
			continue
		}
		if err := checkTableFooter(p); err != nil {
			out = append(out, fmt.Sprintf("table %s is damaged: %v", filepath.Base(p), err))
			continue
		}
		if err := verifyTable(p, id, tm.Compression); err != nil {
			out = append(out, fmt.Sprintf("table %s: %v", filepath.Base(p), err))
		}
	}
	return out
}

// verifyTable checks one table file, compressed as c.
func verifyTable(path string, id uint64, c options.CompressionType) (err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = errors.New("unreadable: its index does not decode")
		}
	}()
	t, err := table.OpenInMemoryTable(data, id, &table.Options{ChkMode: options.NoVerification, Compression: c})
	if err != nil {
		return err
	}
	defer func() { _ = t.DecrRef() }()
	if err := t.VerifyChecksum(); err != nil {
		return fmt.Errorf("%w; it holds keys %s to %s", err, describeKey(t.Smallest()), describeKey(t.Biggest()))
	}
	return nil
}

// describeKey names a badger key (with its 8-byte version) as the kind and
// session it belongs to.
func describeKey(k []byte) string {
	if len(k) > 8 {
		k = k[:len(k)-8]
	}
	dk, err := decodeKey(k)
	if err != nil {
		return fmt.Sprintf("%x", k)
	}
	kinds := map[byte]string{kindFormat: "format", kindMeta: "metadata", kindRecord: "record", kindHead: "head", kindMark: "mark", kindIndex: "index", kindGone: "tombstone"}
	if dk.kind == kindRecord {
		return fmt.Sprintf("%s %s seq %d", kinds[dk.kind], uuidString(dk.session), dk.seq)
	}
	return fmt.Sprintf("%s %s", kinds[dk.kind], uuidString(dk.session))
}
