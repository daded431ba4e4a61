package wal

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// ackDelay is how long the log must be idle after a commit before the
// committer records in the journal that the commit was acknowledged (a
// busy log records it with the next commit, at no cost). It bounds the
// window in which a commit that badger loses would pass for one that
// never completed: see the journal in journal.go.
const ackDelay = 10 * time.Millisecond

// committer is the single goroutine that writes. Its fields are touched by
// that goroutine only.
type committer struct {
	l       *Log
	batch   []*request          // requests of the current transaction
	last    map[[16]byte]uint64 // committed last seq per session (cache)
	pend    map[[16]byte]uint64 // last seqs accepted into the current transaction
	spans   []span              // sessions of the current transaction, first..last
	spanAt  map[[16]byte]int    // index in spans by session
	kvs     []kv                // the transaction's badger entries, for the journal
	scratch []sessionSeq        // last seqs accepted within the current request
	buf     []byte              // keys and values of the current transaction
	rtxn    *badger.Txn         // read transaction for loading, per batch
	marks   marks               // damaged sessions (read-only after open)

	journal    *journal    // nil in memory
	jreq       chan []byte // entries for the journal writer goroutine
	jres       chan error  // its results
	unrecorded uint64      // a commit whose acknowledgement the journal does not yet say
	ackDelay   time.Duration
	recheck    time.Duration
	checkEvery time.Duration // how often an idle log on disk checks its storage
	timer      *time.Timer   // for wait; stopped and drained between uses
}

// sessionSeq is a session with a seq.
type sessionSeq struct {
	session [16]byte
	seq     uint64
}

func (c *committer) init(l *Log, j *journal) {
	c.l = l
	c.last = make(map[[16]byte]uint64)
	c.pend = make(map[[16]byte]uint64)
	c.spanAt = make(map[[16]byte]int)
	c.marks = l.marks
	c.journal = j
	if j != nil {
		j.stats = &l.stats
	}
	if j != nil && !j.noSync { // a write without a sync is cheaper inline
		c.jreq, c.jres = make(chan []byte), make(chan error, 1)
		go func() {
			for b := range c.jreq {
				c.jres <- j.write(b)
			}
		}()
	}
	c.ackDelay = cmp.Or(l.hooks.ackDelay, ackDelay)
	c.recheck = cmp.Or(l.hooks.recheck, spaceRecheck)
	c.checkEvery = cmp.Or(l.hooks.storageCheck, storageCheckEvery)
}

// run takes batches until Close has begun and the queue is drained.
func (c *committer) run() {
	defer close(c.l.stopped)
	if c.jreq != nil {
		defer close(c.jreq)
	}
	for {
		if h := c.l.hooks.beforeTake; h != nil {
			h()
		}
		size, closed := c.take()
		if len(c.batch) == 1 && c.batch[0].op != nil {
			c.batch[0].err = c.batch[0].op(c)
			c.answer()
			continue
		}
		if len(c.batch) > 0 {
			if h := c.l.hooks.afterTake; h != nil {
				h()
			}
			c.l.commitMu.Lock()
			c.commit(size)
			c.l.commitMu.Unlock()
			continue
		}
		if closed {
			return
		}
		c.wait()
	}
}

// wait blocks until something is queued. Meanwhile, after ackDelay it
// records the last commit's acknowledgement in the journal, while the
// disk is full it measures the free space every recheck, so that Space
// and OnSpace see it return, and on disk it checks the storage every
// checkEvery, so that a failure is reported while nothing is written.
func (c *committer) wait() {
	for {
		var d time.Duration
		switch {
		case c.unrecorded != 0:
			d = c.ackDelay
		case c.l.space.full():
			d = c.recheck
		case c.journal != nil && c.l.storage.Err() == nil:
			d = c.checkEvery
		default:
			<-c.l.wake
			return
		}
		if c.timer == nil {
			c.timer = time.NewTimer(d)
		} else {
			c.timer.Reset(d)
		}
		select {
		case <-c.l.wake:
			c.timer.Stop()
			return
		case <-c.timer.C:
		}
		switch {
		case c.unrecorded != 0:
			c.recordAck()
		case c.l.space.full():
			c.l.space.recheck()
		default:
			_ = c.l.storage.check(c.journal.f)
		}
	}
}

// recordAck writes an entryAcked for the last commit.
func (c *committer) recordAck() {
	n := c.unrecorded
	c.unrecorded = 0
	if c.journal == nil || c.l.storage.Err() != nil {
		return
	}
	b := encodeMarker(entryAcked, n)
	if err := c.ensureRoom(len(b)); err != nil {
		c.l.logger.Warn().Err(err).Msg("wal: journal: recording an acknowledgement")
		return
	}
	if err := c.journal.write(b); err != nil {
		c.l.storage.fail(err)
	}
	if h := c.l.hooks.afterAck; h != nil {
		h()
	}
}

// ensureRoom rotates the journal when an entry of n bytes does not fit
// its active segment. A new segment that finds no space is ErrDiskFull;
// one that cannot be made for another reason fails the storage.
func (c *committer) ensureRoom(n int) error {
	j := c.journal
	for !j.fits(n) { // twice at most: a first segment starts with entryOpen
		err := j.rotate(c.l.db.MaxVersion(), flushedVersion(c.l.db), n)
		switch {
		case isNoSpace(err):
			return fmt.Errorf("%w: %w", ErrDiskFull, err)
		case err != nil:
			return c.l.storage.fail(err)
		}
	}
	return nil
}

// flushedVersion is the greatest version badger has written into a table:
// every commit at or below it has left the memtable logs.
func flushedVersion(db *badger.DB) uint64 {
	var v uint64
	for _, t := range db.Tables() {
		v = max(v, t.MaxVersion)
	}
	return v
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
		if len(c.batch) > 0 && (r.op != nil || size+r.size > l.limits.batch) {
			break // an exclusive operation runs alone, after the writes before it
		}
		if r.state.CompareAndSwap(stateQueued, stateTaken) {
			c.batch = append(c.batch, r)
			size += r.size
			if r.op != nil {
				i++
				break
			}
		}
	}
	n := copy(l.queue, l.queue[i:])
	clear(l.queue[n:])
	l.queue = l.queue[:n]
	return size, l.closed
}

// commit checks each request of c.batch, stages the valid ones in one
// transaction, commits it (writing its journal entry at the same time)
// and answers every request. A disk below its reserve or a failed
// journal fails the whole batch before anything is written.
func (c *committer) commit(size int) {
	if err := c.precheck(size); err != nil {
		for _, r := range c.batch {
			r.err = err
		}
		c.answer()
		return
	}
	txn := c.l.db.NewTransaction(true)
	defer txn.Discard()
	if cap(c.buf) < size {
		c.buf = make([]byte, 0, size)
	}
	c.buf = c.buf[:0]
	clear(c.pend)
	clear(c.spanAt)
	c.spans = c.spans[:0]
	clear(c.kvs)
	c.kvs = c.kvs[:0]
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
		err = c.stageHeads(txn)
	}
	if err == nil && staged > 0 {
		err = c.commitTxn(txn)
	}
	if err != nil {
		c.fail(staged, err)
	} else if staged > 0 {
		for s, seq := range c.pend {
			c.last[s] = seq
		}
		c.count(staged)
		c.l.space.committed(size)
	}
	c.answer()
}

// precheck fails a batch of size bytes when the storage has failed or the
// disk is below its reserve (the batch, and a new journal segment large
// enough for its entry, must fit above it).
func (c *committer) precheck(size int) error {
	if j := c.journal; j != nil {
		// Checked before a commit too, so that a directory gone between
		// commits has nothing written into it.
		if err := c.l.storage.check(j.f); err != nil {
			return err
		}
	} else if err := c.l.storage.Err(); err != nil {
		return err
	}
	need := uint64(2 * size)
	if j := c.journal; j != nil {
		seg := j.segSize // room for the next segment, as the periodic check wants
		if !j.fits(maxEntryBytes(size)) {
			seg = j.segFor(maxEntryBytes(size))
		}
		need += uint64(seg)
	}
	return c.l.space.check(need)
}

// commitTxn writes the transaction's journal entry and commits txn at the
// same time, and returns once both are durable and the storage is still
// where it was: a journal entry synced into a directory that is gone
// acknowledges nothing. A commit that failed for lack of space is
// recorded in the journal (entryVoid); any other failure of the journal
// or of badger's commit fails the storage, which stops all later
// appends: a write or sync that failed once is never retried and
// acknowledged.
func (c *committer) commitTxn(txn *badger.Txn) error {
	if h := c.l.hooks.beforeCommit; h != nil {
		h()
	}
	j := c.journal
	if j != nil {
		kvs := c.kvs
		if c.l.hooks.spansOnly {
			kvs = nil
		}
		entry := j.encodeCommit(j.next, c.spans, kvs)
		if err := c.ensureRoom(len(entry)); err != nil {
			return err
		}
		if c.jreq != nil {
			c.jreq <- entry // written and synced while badger commits
		} else {
			if err := j.write(entry); err != nil {
				return c.l.storage.fail(err)
			}
		}
	}
	err := txn.Commit()
	if j == nil {
		return err
	}
	var jerr error
	if c.jreq != nil {
		jerr = <-c.jres
	}
	n := j.next
	j.next++
	switch {
	case jerr != nil:
		return c.l.storage.fail(errors.Join(jerr, err))
	case err != nil && isNoSpace(err):
		c.unrecorded = 0
		if verr := j.write(encodeMarker(entryVoid, n)); verr != nil {
			return c.l.storage.fail(verr)
		}
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	case err != nil:
		return c.l.storage.fail(err)
	}
	if err := c.l.storage.check(j.f); err != nil {
		return err
	}
	c.unrecorded = n
	return nil
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
		if d, ok := c.marks[w.Session]; ok {
			return markErr(d)
		}
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
	for i := range r.writes {
		c.addSpan(&r.writes[i])
	}
	return nil
}

// addSpan adds w's seqs to its session's span in this transaction.
func (c *committer) addSpan(w *Write) {
	first, last := w.Records[0].Seq, w.Records[len(w.Records)-1].Seq
	if i, ok := c.spanAt[w.Session]; ok {
		c.spans[i].last = last
		return
	}
	c.spanAt[w.Session] = len(c.spans)
	c.spans = append(c.spans, span{session: w.Session, first: first, last: last})
}

// stageHeads writes each session's new head, once per transaction.
func (c *committer) stageHeads(txn *badger.Txn) error {
	if !c.l.heads {
		return nil
	}
	var data [headDataLen]byte
	for _, sp := range c.spans {
		binary.BigEndian.PutUint64(data[:], sp.last)
		c.buf = appendSessionKey(c.buf, kindHead, sp.session)
		if err := c.set(txn, headKeyLen, data[:]); err != nil {
			return err
		}
	}
	return nil
}

// lastSeq returns the session's last seq as the current request would leave
// it: its own earlier writes, then this transaction's, then the committed
// cache, then the store (cached). In a store with heads, a session with
// neither a head nor metadata has no records (both are written in the
// transaction of its first records, and records are never deleted), so a
// new session costs two point lookups rather than a seek; a session with
// either is read by a reverse seek and checked against its head, so that
// a hole at its end is never extended, and records that lost their head
// are never written over.
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
	if c.l.heads {
		known, err := c.known(session)
		if err != nil {
			return 0, err
		}
		if !known {
			c.last[session] = 0
			return 0, nil
		}
	}
	seq, err := lastSeqIn(c.rtxn, session, nil)
	if err != nil {
		return 0, err
	}
	if c.l.heads {
		if err := checkHead(c.rtxn, session, seq); err != nil {
			return 0, err
		}
	}
	c.last[session] = seq
	return seq, nil
}

// known reports whether the store has a head or metadata for session.
func (c *committer) known(session [16]byte) (bool, error) {
	for _, kind := range []byte{kindHead, kindMeta} {
		var k [headKeyLen]byte
		_, err := c.rtxn.Get(appendSessionKey(k[:0], kind, session))
		switch {
		case err == nil:
			return true, nil
		case !errors.Is(err, badger.ErrKeyNotFound):
			return false, fmt.Errorf("wal: session %x: %w", session, err)
		}
	}
	return false, nil
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
		for _, x := range w.Index {
			c.buf = append(append(c.buf, kindIndex), x.Key...)
			if !x.Delete {
				if err := c.set(txn, 1+len(x.Key), x.Value); err != nil {
					return err
				}
				continue
			}
			k := c.buf[len(c.buf)-1-len(x.Key) : len(c.buf) : len(c.buf)]
			if err := txn.Delete(k); err != nil {
				return fmt.Errorf("wal: stage index delete: %w", err)
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
	c.kvs = append(c.kvs, kv{key, val})
	return nil
}
