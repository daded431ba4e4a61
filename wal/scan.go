package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/dgraph-io/badger/v4"
)

// ctxEvery is how many entries a scan visits between checks of its context.
const ctxEvery = 1024

// Scan calls fn for each record of session with seq >= from, in seq order,
// from one consistent snapshot. data is valid only during the call. A seq
// missing between max(from, 1) and the last record is ErrGap; a bad key or
// value is ErrCorrupt. An error from fn stops the scan and is returned as
// is.
func (l *Log) Scan(ctx context.Context, session [16]byte, from uint64, fn func(seq uint64, data []byte) error) error {
	if err := l.enterRead(); err != nil {
		return err
	}
	defer l.exitRead()
	txn := l.db.NewTransaction(false)
	defer txn.Discard()
	start := max(from, 1)
	s := scanner{want: start, fn: func(_ [16]byte, seq uint64, data []byte) error { return fn(seq, data) }}
	seek := appendRecordKey(nil, session, s.want)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: seek[:metaKeyLen]})
	defer it.Close()
	if err := s.run(ctx, it, seek); err != nil {
		return err
	}
	if d, ok := l.markOf(session); ok {
		return markErr(d)
	}
	if !l.heads {
		return nil
	}
	return checkScanEnd(txn, session, start, s.want-1)
}

// checkScanEnd checks a scan of session from start that found records up
// to last (start-1: none) against the session's head.
func checkScanEnd(txn *badger.Txn, session [16]byte, start, last uint64) error {
	if last >= start {
		return checkHead(txn, session, last)
	}
	h, _, err := headIn(txn, session)
	if err == nil && h >= start {
		err = headMismatch(session, start-1, h)
	}
	return err
}

// ScanAll calls fn for every record of every session, session by session in
// key order (the raw session bytes), seq ascending, from one consistent
// snapshot, with a single iterator and no value prefetch. data is valid
// only during the call. A session whose seqs do not run densely from 1 is
// ErrGap; a bad key or value is ErrCorrupt. An error from fn stops the scan
// and is returned as is.
func (l *Log) ScanAll(ctx context.Context, fn func(session [16]byte, seq uint64, data []byte) error) error {
	if err := l.enterRead(); err != nil {
		return err
	}
	defer l.exitRead()
	txn := l.db.NewTransaction(false)
	defer txn.Discard()
	prefix := []byte{kindRecord}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	s := scanner{all: true, fn: fn, marked: l.markOf, markedIn: l.markIn([16]byte{}, maxSession)}
	if l.heads {
		heads := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{kindHead}})
		defer heads.Close()
		heads.Rewind()
		s.heads = heads
	}
	return s.run(ctx, it, prefix)
}

// ScanRange is ScanAll over the sessions whose ids (as raw bytes) lie
// between first and last, both included: callers split a hydrate into
// ranges and scan them in parallel, each on its own snapshot.
func (l *Log) ScanRange(ctx context.Context, first, last [16]byte, fn func(session [16]byte, seq uint64, data []byte) error) error {
	if err := l.enterRead(); err != nil {
		return err
	}
	defer l.exitRead()
	txn := l.db.NewTransaction(false)
	defer txn.Discard()
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{kindRecord}})
	defer it.Close()
	s := scanner{all: true, fn: fn, until: appendRecordKey(nil, last, math.MaxUint64),
		marked: l.markOf, markedIn: l.markIn(first, last)}
	if l.heads {
		heads := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{kindHead}})
		defer heads.Close()
		heads.Seek(appendSessionKey(nil, kindHead, first))
		s.heads, s.headsUntil = heads, appendSessionKey(nil, kindHead, last)
	}
	return s.run(ctx, it, appendRecordKey(nil, first, 1)[:metaKeyLen])
}

// maxSession is the greatest session id.
var maxSession = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// markIn returns a function that finds a marked session between first and
// last included (the first in key order).
func (l *Log) markIn(first, last [16]byte) func() (SessionDamage, bool) {
	return func() (SessionDamage, bool) {
		l.mu.Lock()
		defer l.mu.Unlock()
		var best SessionDamage
		found := false
		for s, d := range l.marks {
			if bytes.Compare(s[:], first[:]) >= 0 && bytes.Compare(s[:], last[:]) <= 0 &&
				(!found || bytes.Compare(s[:], best.Session[:]) < 0) {
				best, found = d, true
			}
		}
		return best, found
	}
}

// scanner walks record keys and checks that seqs are dense: from want in a
// single-session scan, from 1 for each session in a scan of all. A scan of
// all also walks the heads alongside (when heads is set) and checks that
// each session's records end at its head, and stops at a marked session.
type scanner struct {
	all     bool
	session [16]byte
	want    uint64 // next expected seq of session
	key     []byte // current key, for the value callback
	seq     uint64
	until   []byte // stop past this key; nil: the end
	fn      func(session [16]byte, seq uint64, data []byte) error

	heads      *badger.Iterator // heads in key order; nil: no head check
	headsUntil []byte           // stop past this head key; nil: the end
	marked     func([16]byte) (SessionDamage, bool)
	markedIn   func() (SessionDamage, bool) // any mark in the scanned range
}

func (s *scanner) run(ctx context.Context, it *badger.Iterator, seek []byte) error {
	value := s.value // one closure for the whole scan
	n := 0
	for it.Seek(seek); it.Valid(); it.Next() {
		if n++; n%ctxEvery == 1 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		item := it.Item()
		if s.until != nil && bytes.Compare(item.Key(), s.until) > 0 {
			break
		}
		if err := s.next(item.Key()); err != nil {
			return err
		}
		if err := item.Value(value); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.all {
		return s.finishAll()
	}
	return nil
}

// finishAll checks the last session of a scan of all, then every head
// left (a head whose session has no record lost all of them), then the
// marks of the scanned range: a marked session with nothing left in the
// store still fails the scan.
func (s *scanner) finishAll() error {
	if s.want != 0 {
		if err := s.finish(); err != nil {
			return err
		}
	}
	for s.heads != nil && s.heads.Valid() {
		hs, h, err := s.head()
		switch {
		case err != nil:
			return err
		case hs == nil:
			s.heads = nil
			continue
		}
		if d, ok := s.marked(*hs); ok {
			return markErr(d)
		}
		return headMismatch(*hs, 0, h)
	}
	if s.markedIn != nil {
		if d, ok := s.markedIn(); ok {
			return markErr(d)
		}
	}
	return nil
}

// finish checks the session just scanned (records 1..want-1) against its
// mark and its head.
func (s *scanner) finish() error {
	last := s.want - 1
	if d, ok := s.marked(s.session); ok {
		return markErr(d)
	}
	if s.heads == nil {
		return nil
	}
	noHead := func() error {
		return fmt.Errorf("%w: session %x: records run to seq %d but the session has no head", ErrCorrupt, s.session, last)
	}
	if !s.heads.Valid() {
		return noHead()
	}
	hs, h, err := s.head()
	switch {
	case err != nil:
		return err
	case hs == nil:
		return noHead()
	case bytes.Compare(hs[:], s.session[:]) < 0: // a head whose records are all gone
		if d, ok := s.marked(*hs); ok {
			return markErr(d)
		}
		return headMismatch(*hs, 0, h)
	case *hs != s.session:
		return noHead()
	case h != last:
		return headMismatch(s.session, last, h)
	}
	s.heads.Next()
	return nil
}

// head decodes the head under the heads iterator; a nil session means the
// iterator is past the scan's range.
func (s *scanner) head() (*[16]byte, uint64, error) {
	item := s.heads.Item()
	k := item.Key()
	if s.headsUntil != nil && bytes.Compare(k, s.headsUntil) > 0 {
		return nil, 0, nil
	}
	dk, err := decodeKey(k)
	if err != nil {
		return nil, 0, fmt.Errorf("wal: head key %x: %w", k, err)
	}
	var h uint64
	err = item.Value(func(v []byte) error {
		h, err = decodeHead(k, v)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("wal: session %x head: %w", dk.session, err)
	}
	return &dk.session, h, nil
}

// next checks the record key k against the expected session and seq.
func (s *scanner) next(k []byte) error {
	dk, err := decodeKey(k)
	if err == nil && dk.kind != kindRecord {
		err = fmt.Errorf("%w: key kind %#02x among records", ErrCorrupt, dk.kind)
	}
	if err != nil {
		return fmt.Errorf("wal: key %x: %w", k, err)
	}
	if s.all && (dk.session != s.session || s.want == 0) {
		if s.want != 0 {
			if err := s.finish(); err != nil {
				return err
			}
		}
		s.session, s.want = dk.session, 1
	}
	if dk.seq != s.want {
		return fmt.Errorf("%w: session %x: found seq %d, want %d", ErrGap, dk.session, dk.seq, s.want)
	}
	s.session, s.key, s.seq = dk.session, k, dk.seq
	s.want++
	return nil
}

// value decodes the current record's value and hands it to fn.
func (s *scanner) value(v []byte) error {
	data, err := decodeValue(s.key, v)
	if err != nil {
		return fmt.Errorf("wal: session %x seq %d: %w", s.session, s.seq, err)
	}
	return s.fn(s.session, s.seq, data)
}

// Sessions calls fn for every session that has metadata, in key order, with
// its metadata (valid only during the call) and its last seq (0 if it has
// no records), from one consistent snapshot. A bad key or value is
// ErrCorrupt. An error from fn stops the walk and is returned as is.
func (l *Log) Sessions(ctx context.Context, fn func(session [16]byte, meta []byte, last uint64) error) error {
	return l.walkMeta(ctx, true, nil, fn)
}

// Metas calls fn for every session's metadata, in key order, without
// looking up last seqs (one forward iterator: what a hydrate that reads
// every record anyway needs).
func (l *Log) Metas(ctx context.Context, fn func(session [16]byte, meta []byte) error) error {
	return l.walkMeta(ctx, false, nil, func(s [16]byte, meta []byte, _ uint64) error { return fn(s, meta) })
}

// MetasFrom is Metas over the sessions whose ids (raw bytes) are greater
// than after: a page of a listing in id order.
func (l *Log) MetasFrom(ctx context.Context, after [16]byte, fn func(session [16]byte, meta []byte) error) error {
	seek := append(appendMetaKey(nil, after), 0) // the first key past after's
	return l.walkMeta(ctx, false, seek, func(s [16]byte, meta []byte, _ uint64) error { return fn(s, meta) })
}

// walkMeta walks the metadata keys, with each session's last seq when
// withLast is set.
func (l *Log) walkMeta(ctx context.Context, withLast bool, seek []byte, fn func(session [16]byte, meta []byte, last uint64) error) error {
	if err := l.enterRead(); err != nil {
		return err
	}
	defer l.exitRead()
	txn := l.db.NewTransaction(false)
	defer txn.Discard()
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{kindMeta}})
	defer it.Close()
	w := sessionWalker{fn: fn}
	if withLast {
		w.rev = txn.NewIterator(badger.IteratorOptions{Prefix: []byte{kindRecord}, Reverse: true})
		defer w.rev.Close()
	}
	value := w.value
	n := 0
	if seek == nil {
		seek = []byte{kindMeta}
	}
	for it.Seek(seek); it.Valid(); it.Next() {
		if n++; n%ctxEvery == 1 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		item := it.Item()
		if err := w.next(item.Key()); err != nil {
			return err
		}
		if err := item.Value(value); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// sessionWalker finds each metadata key's last seq with a reverse seek.
type sessionWalker struct {
	rev     *badger.Iterator
	seek    []byte
	key     []byte
	session [16]byte
	last    uint64
	fn      func(session [16]byte, meta []byte, last uint64) error
}

// next decodes the metadata key k and looks up the session's last seq
// (unless the walker has no reverse iterator).
func (w *sessionWalker) next(k []byte) error {
	dk, err := decodeKey(k)
	if err == nil && dk.kind != kindMeta {
		err = fmt.Errorf("%w: key kind %#02x among metadata", ErrCorrupt, dk.kind)
	}
	if err != nil {
		return fmt.Errorf("wal: key %x: %w", k, err)
	}
	w.seek = appendRecordKey(w.seek[:0], dk.session, math.MaxUint64)
	w.key, w.session, w.last = k, dk.session, 0
	if w.rev == nil {
		return nil
	}
	w.rev.Seek(w.seek)
	if !w.rev.Valid() {
		return nil
	}
	rk := w.rev.Item().Key()
	if !bytes.Equal(rk[:min(len(rk), metaKeyLen)], w.seek[:metaKeyLen]) {
		return nil
	}
	last, err := decodeKey(rk)
	if err != nil {
		return fmt.Errorf("wal: session %x: last record key %x: %w", dk.session, rk, err)
	}
	w.last = last.seq
	return nil
}

// value decodes the current metadata value and hands it to fn.
func (w *sessionWalker) value(v []byte) error {
	meta, err := decodeValue(w.key, v)
	if err != nil {
		return fmt.Errorf("wal: session %x metadata: %w", w.session, err)
	}
	return w.fn(w.session, meta, w.last)
}

// Meta returns a copy of the session's metadata; ErrNotFound if it has none.
func (l *Log) Meta(ctx context.Context, session [16]byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := l.enterRead(); err != nil {
		return nil, err
	}
	defer l.exitRead()
	txn := l.db.NewTransaction(false)
	defer txn.Discard()
	k := appendMetaKey(nil, session)
	item, err := txn.Get(k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w: metadata of session %x", ErrNotFound, session)
	}
	if err != nil {
		return nil, fmt.Errorf("wal: session %x metadata: %w", session, err)
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return nil, fmt.Errorf("wal: session %x metadata: %w", session, err)
	}
	meta, err := decodeValue(k, v)
	if err != nil {
		return nil, fmt.Errorf("wal: session %x metadata: %w", session, err)
	}
	return meta, nil
}

// LastSeq returns the session's last stored seq, 0 if it has none. It is
// read from the session's greatest record key (a reverse seek), never from
// a counter.
func (l *Log) LastSeq(ctx context.Context, session [16]byte) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := l.enterRead(); err != nil {
		return 0, err
	}
	defer l.exitRead()
	txn := l.db.NewTransaction(false)
	defer txn.Discard()
	return lastSeqIn(txn, session, nil)
}

// lastSeqIn finds the session's greatest record key in txn by a reverse
// seek; buf is scratch for the seek key.
func lastSeqIn(txn *badger.Txn, session [16]byte, buf []byte) (uint64, error) {
	seek := appendRecordKey(buf[:0], session, math.MaxUint64)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: seek[:metaKeyLen], Reverse: true})
	defer it.Close()
	it.Seek(seek)
	if !it.Valid() {
		return 0, nil
	}
	k := it.Item().Key()
	dk, err := decodeKey(k)
	if err != nil {
		return 0, fmt.Errorf("wal: session %x: last record key %x: %w", session, k, err)
	}
	return dk.seq, nil
}

// headIn returns the session's head in txn, and whether it has one.
func headIn(txn *badger.Txn, session [16]byte) (uint64, bool, error) {
	k := appendSessionKey(nil, kindHead, session)
	item, err := txn.Get(k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("wal: session %x head: %w", session, err)
	}
	var h uint64
	err = item.Value(func(v []byte) error {
		h, err = decodeHead(k, v)
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("wal: session %x head: %w", session, err)
	}
	return h, true, nil
}

// checkHead checks that the session's records, ending at last (0: none),
// agree with its head: a store of format 3 writes both in every commit,
// so a difference means badger lost one of them (a damaged table block,
// which badger skips).
func checkHead(txn *badger.Txn, session [16]byte, last uint64) error {
	h, found, err := headIn(txn, session)
	switch {
	case err != nil:
		return err
	case !found && last == 0:
		return nil
	case !found:
		return fmt.Errorf("%w: session %x: records run to seq %d but the session has no head", ErrCorrupt, session, last)
	case h != last:
		return headMismatch(session, last, h)
	}
	return nil
}

// headMismatch is the error of a session whose records end at last while
// its head says h.
func headMismatch(session [16]byte, last, h uint64) error {
	if last < h {
		return fmt.Errorf("%w: session %x: records from seq %d to %d are missing (its head is %d)",
			ErrCorrupt, session, last+1, h, h)
	}
	return fmt.Errorf("%w: session %x: records run to seq %d but its head is %d", ErrCorrupt, session, last, h)
}
