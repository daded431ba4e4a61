package wal

import (
	"context"
	"fmt"
	"sync/atomic"
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
	// Meta is the session's metadata. It is required (non-empty) when
	// Records[0].Seq == 1, and is then written in the same transaction as
	// the records; it must be nil otherwise (ErrInvalid).
	Meta []byte
	// Records are consecutive seqs, the first being the session's last
	// stored seq + 1. At least one record is required.
	Records []Record
	// Index are entries of the caller's own index, written (or deleted)
	// in the same transaction as the records: the log does not read
	// them, IndexScan and IndexGet return them.
	Index []IndexEntry
}

// IndexEntry is one key of the caller's index: Key (1 to maxIndexKey
// bytes) holds Value; Delete removes the key instead.
type IndexEntry struct {
	Key    []byte
	Value  []byte
	Delete bool
}

// maxIndexKey is the longest index key.
const maxIndexKey = 1024

// Request states: the committer takes a queued request by moving it to
// stateTaken; an appender whose context ends first moves it to
// stateCancelled, and the committer then drops it unwritten.
const (
	stateQueued int32 = iota
	stateTaken
	stateCancelled
)

// request is one Append call waiting for the committer. Requests are pooled;
// a cancelled one is never reused, as the queue may still point to it.
type request struct {
	writes []Write
	op     func(c *committer) error // an exclusive operation, run alone instead of writes
	size   int                      // bytes charged against MaxBatchBytes
	state  atomic.Int32             // stateQueued, stateTaken or stateCancelled
	err    error                    // outcome, set by the committer
	done   chan error               // capacity 1; receives err once
}

// Append writes all writes atomically, in one badger transaction shared
// with other concurrent appends (group commit), and returns once that
// transaction is committed, fsynced unless Options.NoSync.
//
// The caller must not modify writes or the slices they reference until
// Append returns. If ctx is done before the committer has taken the
// request, Append returns ctx.Err() and nothing is written; once taken,
// Append waits for the real outcome whatever ctx does. Append with no
// writes does nothing and returns nil (ErrClosed after Close).
func (l *Log) Append(ctx context.Context, writes ...Write) error {
	if len(writes) == 0 {
		if err := l.enterRead(); err != nil {
			return err
		}
		l.exitRead()
		return nil
	}
	if l.readOnly {
		return ErrReadOnly
	}
	if err := l.storage.Err(); err != nil {
		return err
	}
	size, err := checkRequest(writes, l.limits)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r := l.reqPool.Get().(*request)
	r.writes, r.size, r.err = writes, size, nil
	r.state.Store(stateQueued)
	if !l.enqueue(r) {
		l.release(r)
		return ErrClosed
	}
	select {
	case err := <-r.done:
		l.release(r)
		return err
	case <-ctx.Done():
	}
	if r.state.CompareAndSwap(stateQueued, stateCancelled) {
		return ctx.Err()
	}
	err = <-r.done
	l.release(r)
	return err
}

// enqueue adds r to the committer's queue unless the log is closed.
func (l *Log) enqueue(r *request) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	l.queue = append(l.queue, r)
	l.mu.Unlock()
	l.signal()
	return true
}

// release returns a finished request to the pool.
func (l *Log) release(r *request) {
	r.writes, r.err, r.op = nil, nil, nil
	l.reqPool.Put(r)
}

const (
	// headEntrySize is what a session's head costs against MaxBatchBytes:
	// every write is charged one, though a transaction writes one per
	// session.
	headEntrySize = headKeyLen + frameHeaderLen + headDataLen + entryOverhead
	// writeMinBytes is the least a write costs: one empty record and a
	// head. A batch holds at most MaxBatchBytes/writeMinBytes writes.
	writeMinBytes = recordKeyLen + frameHeaderLen + entryOverhead + headEntrySize
)

// entrySize is what one stored entry costs against MaxBatchBytes.
func entrySize(keyLen, dataLen int) int {
	return keyLen + frameLen(dataLen) + entryOverhead
}

// limits bound what one request may hold.
type limits struct {
	batch int // MaxBatchBytes
	value int // largest data of one entry; 0 = no limit but batch
}

// checkRequest does the checks that need no stored state: every write has
// records, seqs are non-zero and consecutive, and the whole request fits
// the limits. It returns the request's size.
func checkRequest(writes []Write, lim limits) (int, error) {
	size := 0
	for i := range writes {
		w := &writes[i]
		if len(w.Records) == 0 {
			return 0, fmt.Errorf("%w: write %d (session %x) has no records", ErrInvalid, i, w.Session)
		}
		if w.Records[0].Seq == 0 {
			return 0, fmt.Errorf("%w: session %x: seq 0 (seqs start at 1)", ErrInvalid, w.Session)
		}
		size += headEntrySize
		if w.Meta != nil {
			size += entrySize(metaKeyLen, len(w.Meta))
		}
		maxData := len(w.Meta)
		prev := w.Records[0].Seq - 1
		for j := range w.Records {
			rec := &w.Records[j]
			if rec.Seq != prev+1 || rec.Seq == 0 {
				return 0, fmt.Errorf("%w: session %x: record %d has seq %d after seq %d",
					ErrGap, w.Session, j, rec.Seq, prev)
			}
			prev = rec.Seq
			size += entrySize(recordKeyLen, len(rec.Data))
			maxData = max(maxData, len(rec.Data))
		}
		for _, x := range w.Index {
			if len(x.Key) == 0 || len(x.Key) > maxIndexKey {
				return 0, fmt.Errorf("%w: session %x: an index key of %d bytes (1 to %d)", ErrInvalid, w.Session, len(x.Key), maxIndexKey)
			}
			size += entrySize(1+len(x.Key), len(x.Value))
			maxData = max(maxData, len(x.Value))
		}
		if err := lim.check(size, maxData); err != nil {
			return 0, fmt.Errorf("session %x: %w", w.Session, err)
		}
	}
	return size, nil
}

// check reports ErrTooLarge for a request of size bytes so far whose
// largest entry holds maxData bytes.
func (lim limits) check(size, maxData int) error {
	if size > lim.batch {
		return fmt.Errorf("%w: request of at least %d bytes exceeds MaxBatchBytes %d", ErrTooLarge, size, lim.batch)
	}
	if lim.value > 0 && maxData > lim.value {
		return fmt.Errorf("%w: %d bytes of data in one entry exceed the in-memory limit of %d", ErrTooLarge, maxData, lim.value)
	}
	return nil
}
