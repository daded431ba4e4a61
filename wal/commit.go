package wal

import (
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// committer is the single goroutine that writes. Its fields are touched by
// that goroutine only.
type committer struct {
	l       *Log
	batch   []*request          // requests of the current transaction
	last    map[[16]byte]uint64 // committed last seq per session (cache)
	pend    map[[16]byte]uint64 // last seqs accepted into the current transaction
	scratch []sessionSeq        // last seqs accepted within the current request
	buf     []byte              // keys and values of the current transaction
	rtxn    *badger.Txn         // read transaction for loading, per batch
}

// sessionSeq is a session with a seq.
type sessionSeq struct {
	session [16]byte
	seq     uint64
}

func (c *committer) init(l *Log) {
	c.l = l
	c.last = make(map[[16]byte]uint64)
	c.pend = make(map[[16]byte]uint64)
}

// run takes batches until Close has begun and the queue is drained.
func (c *committer) run() {
	defer close(c.l.stopped)
	for {
		if h := c.l.hooks.beforeTake; h != nil {
			h()
		}
		size, closed := c.take()
		if len(c.batch) > 0 {
			if h := c.l.hooks.afterTake; h != nil {
				h()
			}
			c.commit(size)
			continue
		}
		if closed {
			return
		}
		<-c.l.wake
	}
}

// take moves queued requests into c.batch, oldest first, while they fit in
// MaxBatchBytes (the first always fits: checkRequest saw to that). Requests
// cancelled by their appender are dropped. It returns the batch's size and
// whether Close has begun.
func (c *committer) take() (size int, closed bool) {
	l := c.l
	c.batch = c.batch[:0]
	l.mu.Lock()
	defer l.mu.Unlock()
	i := 0
	for ; i < len(l.queue); i++ {
		r := l.queue[i]
		if len(c.batch) > 0 && size+r.size > l.limits.batch {
			break
		}
		if r.state.CompareAndSwap(stateQueued, stateTaken) {
			c.batch = append(c.batch, r)
			size += r.size
		}
	}
	n := copy(l.queue, l.queue[i:])
	clear(l.queue[n:])
	l.queue = l.queue[:n]
	return size, l.closed
}

// commit checks each request of c.batch, stages the valid ones in one
// transaction, commits it and answers every request.
func (c *committer) commit(size int) {
	txn := c.l.db.NewTransaction(true)
	defer txn.Discard()
	if cap(c.buf) < size {
		c.buf = make([]byte, 0, size)
	}
	c.buf = c.buf[:0]
	clear(c.pend)
	staged := 0
	var err error
	for _, r := range c.batch {
		if r.err = c.check(r); r.err != nil {
			continue
		}
		if err = c.stage(txn, r); err != nil {
			break
		}
		staged++
	}
	c.endRead()
	if err == nil && staged > 0 {
		if h := c.l.hooks.beforeCommit; h != nil {
			h()
		}
		start := time.Now()
		err = txn.Commit()
		c.l.stats.commitNanos.Add(int64(time.Since(start)))
	}
	if err != nil {
		c.fail(staged, err)
	} else if staged > 0 {
		for s, seq := range c.pend {
			c.last[s] = seq
		}
		c.count(staged)
	}
	c.answer()
}

// count adds a committed transaction of staged requests to the stats.
func (c *committer) count(staged int) {
	records := 0
	for _, r := range c.batch {
		if r.err == nil {
			for _, w := range r.writes {
				records += len(w.Records)
			}
		}
	}
	c.l.stats.commits.Add(1)
	c.l.stats.requests.Add(uint64(staged))
	c.l.stats.records.Add(uint64(records))
}

// fail gives every request not already rejected the commit error, and
// forgets the cached last seq of every session the transaction touched:
// the outcome of a failed commit is unknown, so they are reloaded from the
// store on next use.
func (c *committer) fail(staged int, err error) {
	c.l.logger.Error().Err(err).Int("requests", staged).Msg("wal: commit failed")
	err = fmt.Errorf("wal: commit of %d requests failed: %w", staged, err)
	for _, r := range c.batch {
		if r.err == nil {
			r.err = err
		}
	}
	for s := range c.pend {
		delete(c.last, s)
	}
}

// answer sends every request its outcome. A request must not be touched
// after its answer: its appender reuses it.
func (c *committer) answer() {
	for i, r := range c.batch {
		err := r.err
		c.batch[i] = nil
		r.done <- err
	}
	c.batch = c.batch[:0]
}

// check verifies r against the stored state and the requests already
// accepted into this transaction: each write's first seq is its session's
// last + 1, and Meta is present exactly when the session starts. On
// success the new last seqs join c.pend.
func (c *committer) check(r *request) error {
	c.scratch = c.scratch[:0]
	for i := range r.writes {
		w := &r.writes[i]
		last, err := c.lastSeq(w.Session)
		if err != nil {
			return err
		}
		first := w.Records[0].Seq
		switch {
		case first != last+1:
			return fmt.Errorf("%w: session %x: first seq %d, want %d", ErrGap, w.Session, first, last+1)
		case first == 1 && len(w.Meta) == 0:
			return fmt.Errorf("%w: session %x", ErrNoMeta, w.Session)
		case first > 1 && w.Meta != nil:
			return fmt.Errorf("%w: session %x: Meta given, but the session already has %d records",
				ErrInvalid, w.Session, last)
		}
		c.scratch = append(c.scratch, sessionSeq{w.Session, w.Records[len(w.Records)-1].Seq})
	}
	for _, s := range c.scratch {
		c.pend[s.session] = s.seq
	}
	return nil
}

// lastSeq returns the session's last seq as the current request would leave
// it: its own earlier writes, then this transaction's, then the committed
// cache, then the store (a reverse seek, cached).
func (c *committer) lastSeq(session [16]byte) (uint64, error) {
	for i := len(c.scratch) - 1; i >= 0; i-- {
		if c.scratch[i].session == session {
			return c.scratch[i].seq, nil
		}
	}
	if seq, ok := c.pend[session]; ok {
		return seq, nil
	}
	if seq, ok := c.last[session]; ok {
		return seq, nil
	}
	if c.rtxn == nil {
		c.rtxn = c.l.db.NewTransaction(false)
	}
	seq, err := lastSeqIn(c.rtxn, session, nil)
	if err != nil {
		return 0, err
	}
	c.last[session] = seq
	return seq, nil
}

// endRead discards the batch's read transaction, if any.
func (c *committer) endRead() {
	if c.rtxn != nil {
		c.rtxn.Discard()
		c.rtxn = nil
	}
}

// stage adds r's metadata and records to txn, encoding keys and framed
// values into c.buf, which is not reused before the commit returns.
func (c *committer) stage(txn *badger.Txn, r *request) error {
	for i := range r.writes {
		w := &r.writes[i]
		if w.Meta != nil {
			c.buf = appendMetaKey(c.buf, w.Session)
			if err := c.set(txn, metaKeyLen, w.Meta); err != nil {
				return err
			}
		}
		for j := range w.Records {
			c.buf = appendRecordKey(c.buf, w.Session, w.Records[j].Seq)
			if err := c.set(txn, recordKeyLen, w.Records[j].Data); err != nil {
				return err
			}
		}
	}
	return nil
}

// set frames data after the keyLen-byte key just appended to c.buf and
// hands both to txn.
func (c *committer) set(txn *badger.Txn, keyLen int, data []byte) error {
	k := len(c.buf) - keyLen
	c.buf = appendValue(c.buf, c.buf[k:], data)
	key := c.buf[k : k+keyLen : k+keyLen]
	val := c.buf[k+keyLen : len(c.buf) : len(c.buf)]
	if err := txn.SetEntry(badger.NewEntry(key, val)); err != nil {
		return fmt.Errorf("wal: stage entry: %w", err)
	}
	return nil
}
