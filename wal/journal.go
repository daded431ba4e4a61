package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The journal is the log's record of its commits kept outside badger's
// files, so that commits badger loses (a damaged, truncated or deleted
// memtable log) are noticed. It lives in the directory journalDir under
// the data directory, as segment files of a fixed size filled with zeros
// when created, so that writing an entry never allocates and syncing it is
// a data-only flush. A segment starts with a header:
//
//	"hubdjnl1" | segment number (8 bytes BE) | CRC-32C of those 16 bytes
//
// followed by entries, each
//
//	body length (4 bytes BE) | CRC-32C of the body (4 bytes BE) | body
//
// and zeros after the last one. A body is one of
//
//	entryCommit | commit (8) | n (4) | n × (session (16) | first (8) | last (8))
//	entryData   | the same | m (4) | m × (key length (2) | key | value length (4) | value)
//	entryAcked  | commit (8)   every commit up to this one was acknowledged
//	entryVoid   | commit (8)   this commit failed: it may or may not be stored
//	entryOpen   | commit (8)   a run of the log begins; its first commit is this
//
// Commit numbers increase by one per committed transaction, across
// segments and across runs. The committer writes a commit's entry and
// syncs it at the same time as badger commits the transaction, and answers
// only when both are done; so every acknowledged commit has its entry,
// and only the last entry of a crashed run may describe a commit that was
// never acknowledged. Its successor entry, or an entryAcked written once
// the log has been idle for ackDelay, says it was.
//
// The journal is the commit point: an entryData carries the
// transaction's badger entries (keys and framed values) as well as its
// spans, and its fdatasync is the only sync of a commit. Badger writes
// its memtable log without syncing it (a synced badger commit costs two
// more syncs: its value log, which hubd's small values never use, and its
// memtable log). A process crash loses nothing badger wrote (the kernel
// has it); a power loss or a damaged memtable log may lose the tail of
// it, and Open writes again, in commit order, every journalled commit
// none of whose sessions has reached its first record (replayJournal),
// before comparing the journal with the store. An entryCommit (spans
// only, from a hub that synced badger too) cannot be replayed: what it
// lacks in the store is damage.
//
// A segment is sealed when the next entry does not fit, with the greatest
// badger version committed so far; it is deleted once badger has flushed
// that version into a table (max TableInfo.MaxVersion), and every segment
// is deleted after a clean Close, which flushes everything.
const (
	journalDir     = "journal"
	journalExt     = ".jnl"
	journalMagic   = "hubdjnl1"
	segHeaderLen   = len(journalMagic) + 8 + 4
	entryHeaderLen = 8
	// minSegmentBytes is the smallest segment; segments grow to hold two
	// of the largest entries a batch can make.
	minSegmentBytes = 1 << 20
	// spanLen is one session's part of a commit entry.
	spanLen = 16 + 8 + 8
)

// Journal entry types: the first byte of a body.
const (
	entryCommit byte = 1
	entryAcked  byte = 2
	entryVoid   byte = 3
	entryOpen   byte = 4
	entryData   byte = 5
)

// kv is one badger entry of a transaction, as staged: a key and its
// framed value.
type kv struct{ key, val []byte }

// span is one session's records in one commit: seqs first..last.
type span struct {
	session     [16]byte
	first, last uint64
}

// jentry is a decoded journal entry.
type jentry struct {
	typ    byte
	commit uint64
	spans  []span
	kvs    []kv   // an entryData's badger entries (typ is then entryCommit)
	seg    uint64 // the segment it was read from
}

// segment is a journal segment file.
type segment struct {
	num     uint64
	path    string
	sealedV uint64 // badger version all its commits are at or below; 0 if active
}

// journal writes entries into the active segment. It is used by the
// committer goroutine only, after open.
type journal struct {
	dir     string
	noSync  bool
	segSize int64       // the usual segment size
	size    int64       // the active segment's size
	segs    []segment   // sealed, oldest first
	f       segmentFile // active segment
	active  segment
	off     int64 // where the next entry goes
	buf     []byte
	next    uint64    // next commit number
	stats   *counters // counts the syncs; nil: not counted
	// wrap, in tests, replaces each new segment's file with one that
	// fails as a broken disk would; nil outside tests.
	wrap func(segmentFile) segmentFile
}

// segName is the file name of segment n.
func segName(n uint64) string { return fmt.Sprintf("%016x%s", n, journalExt) }

// listSegments returns the segment numbers in dir, ascending. A missing
// directory has none.
func listSegments(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("wal: journal: %w", err)
	}
	var nums []uint64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, journalExt) {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(name, journalExt), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: journal: unexpected file %q", ErrDamaged, name)
		}
		nums = append(nums, n)
	}
	slices.Sort(nums)
	return nums, nil
}

// journalReport is what reading the journal found.
type journalReport struct {
	entries []jentry
	lastSeg uint64   // greatest segment number, 0 if none
	lastNum uint64   // greatest commit number, 0 if none
	damage  []string // unreadable parts of the journal
}

// readJournal reads every segment of dir in order. A torn last entry
// (a crash while writing it: nothing but zeros follows) ends a segment
// quietly; any other unreadable byte is reported as damage.
func readJournal(dir string) (journalReport, error) {
	var rep journalReport
	nums, err := listSegments(dir)
	if err != nil {
		return rep, err
	}
	for _, n := range nums {
		b, err := os.ReadFile(filepath.Join(dir, segName(n)))
		if err != nil {
			return rep, fmt.Errorf("wal: journal: %w", err)
		}
		rep.lastSeg = n
		ents, derr := parseSegment(n, b)
		rep.entries = append(rep.entries, ents...)
		if derr != nil {
			rep.damage = append(rep.damage, fmt.Sprintf("journal segment %s: %v", segName(n), derr))
		}
	}
	for _, e := range rep.entries {
		rep.lastNum = max(rep.lastNum, e.commit)
	}
	return rep, nil
}

// parseSegment decodes the entries of segment n from its bytes b.
func parseSegment(n uint64, b []byte) ([]jentry, error) {
	if len(b) < segHeaderLen || string(b[:len(journalMagic)]) != journalMagic {
		return nil, errors.New("bad segment header")
	}
	h := b[:segHeaderLen]
	if crc32.Checksum(h[:16], crcTable) != binary.BigEndian.Uint32(h[16:]) ||
		binary.BigEndian.Uint64(h[8:16]) != n {
		return nil, errors.New("bad segment header")
	}
	var out []jentry
	off := segHeaderLen
	for off+entryHeaderLen <= len(b) {
		n32 := binary.BigEndian.Uint32(b[off:])
		if n32 == 0 {
			break
		}
		end := off + entryHeaderLen + int(n32)
		var e jentry
		var err error
		if end > len(b) || crc32.Checksum(b[off+entryHeaderLen:end], crcTable) != binary.BigEndian.Uint32(b[off+4:]) {
			err = errors.New("checksum mismatch")
		} else {
			e, err = decodeEntry(b[off+entryHeaderLen : end])
		}
		if err != nil {
			if allZero(b[min(off+entryHeaderLen, len(b)):]) || (end <= len(b) && allZero(b[end:])) {
				break // torn last entry
			}
			return out, fmt.Errorf("entry at offset %d: %w", off, err)
		}
		e.seg = n
		out = append(out, e)
		off = end
	}
	return out, nil
}

// allZero reports whether b holds only zeros.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// decodeEntry decodes an entry body.
func decodeEntry(b []byte) (jentry, error) {
	var e jentry
	if len(b) < 9 {
		return e, errors.New("short entry")
	}
	e.typ, e.commit = b[0], binary.BigEndian.Uint64(b[1:9])
	switch e.typ {
	case entryAcked, entryVoid, entryOpen:
		if len(b) != 9 {
			return e, errors.New("bad entry length")
		}
		return e, nil
	case entryCommit, entryData:
	default:
		return e, fmt.Errorf("unknown entry type %d", e.typ)
	}
	if len(b) < 13 {
		return e, errors.New("short entry")
	}
	n := int(binary.BigEndian.Uint32(b[9:13]))
	end := 13 + n*spanLen
	if n < 0 || end < 13 || (e.typ == entryCommit && len(b) != end) || len(b) < end {
		return e, errors.New("bad entry length")
	}
	if e.typ == entryData {
		kvs, err := decodeKVs(b[end:])
		if err != nil {
			return e, err
		}
		e.typ, e.kvs = entryCommit, kvs
	}
	e.spans = make([]span, n)
	for i := range e.spans {
		p := b[13+i*spanLen:]
		copy(e.spans[i].session[:], p[:16])
		e.spans[i].first = binary.BigEndian.Uint64(p[16:])
		e.spans[i].last = binary.BigEndian.Uint64(p[24:])
	}
	return e, nil
}

// decodeKVs decodes an entryData's badger entries, which must fill b.
func decodeKVs(b []byte) ([]kv, error) {
	if len(b) < 4 {
		return nil, errors.New("short entry")
	}
	m := int(binary.BigEndian.Uint32(b))
	b = b[4:]
	if m <= 0 || m > len(b)/6 {
		return nil, errors.New("bad entry count")
	}
	out := make([]kv, m)
	for i := range out {
		if len(b) < 2 {
			return nil, errors.New("short entry")
		}
		k := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+k+4 {
			return nil, errors.New("short entry")
		}
		out[i].key = b[2 : 2+k : 2+k]
		b = b[2+k:]
		v := int(binary.BigEndian.Uint32(b))
		if v < 0 || len(b) < 4+v {
			return nil, errors.New("short entry")
		}
		out[i].val = b[4 : 4+v : 4+v]
		b = b[4+v:]
	}
	if len(b) != 0 {
		return nil, errors.New("bad entry length")
	}
	return out, nil
}

// crcTable is the Castagnoli table; crc32.MakeTable caches it.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// segmentBytes is the usual segment size for a log whose batches hold at
// most batch bytes: two of the largest spans of a commit such a batch can
// make (each span stands for a write of at least writeMinBytes). An entry
// that does not fit a segment of this size, with the batch's data, gets a
// segment of its own size (segFor).
func segmentBytes(batch int) int64 {
	maxEntry := entryHeaderLen + 13 + (batch/writeMinBytes+1)*spanLen
	return max(minSegmentBytes, int64(2*maxEntry+segHeaderLen))
}

// startJournal opens the journal for writing after the open-time check:
// every existing segment becomes sealed at version v (everything
// committed so far), and a new active segment follows the last one.
func startJournal(dir string, noSync bool, batch int, rep journalReport, v uint64) (*journal, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("wal: journal: %w", err)
	}
	j := &journal{dir: dir, noSync: noSync, segSize: segmentBytes(batch), next: rep.lastNum + 1}
	nums, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	for _, n := range nums {
		j.segs = append(j.segs, segment{num: n, path: filepath.Join(dir, segName(n)), sealedV: v})
	}
	j.active.num = rep.lastSeg // the next segment follows it
	return j, nil
}

// ensureActive creates the run's first segment, beginning with an
// entryOpen, if it is not there yet (a full disk at open leaves it for
// the first commit).
func (j *journal) ensureActive() error {
	if j.f != nil {
		return nil
	}
	if err := j.newSegment(j.active.num+1, j.segSize); err != nil {
		return err
	}
	return j.write(encodeMarker(entryOpen, j.next))
}

// segFor is the size of a new segment for an entry of n bytes.
func (j *journal) segFor(n int) int64 { return max(j.segSize, int64(n+segHeaderLen)) }

// newSegment creates segment n of size bytes, filled with zeros and
// synced, and makes it the active segment.
func (j *journal) newSegment(n uint64, size int64) error {
	path := filepath.Join(j.dir, segName(n))
	tmp := path + ".tmp"
	of, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("wal: journal: %w", err)
	}
	var f segmentFile = osFile{of}
	if j.wrap != nil {
		f = j.wrap(f)
	}
	err = fillSegment(f, n, size)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(j.dir)
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("wal: journal: new segment: %w", err)
	}
	j.f, j.active, j.off, j.size = f, segment{num: n, path: path}, int64(segHeaderLen), size
	return nil
}

// fillSegment writes segment n's header and zeros up to size, and syncs.
func fillSegment(f segmentFile, n uint64, size int64) error {
	h := binary.BigEndian.AppendUint64([]byte(journalMagic), n)
	h = binary.BigEndian.AppendUint32(h, crc32.Checksum(h, crcTable))
	zeros := make([]byte, 256<<10)
	copy(zeros, h)
	for off := int64(0); off < size; off += int64(len(zeros)) {
		chunk := zeros[:min(int64(len(zeros)), size-off)]
		if _, err := f.WriteAt(chunk, off); err != nil {
			return err
		}
		if off == 0 {
			clear(zeros[:len(h)])
		}
	}
	return f.Sync()
}

// syncDir fsyncs a directory, making renames and removals in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// encodeCommit encodes the entry of commit n holding spans and, unless
// kvs is nil (an entryCommit), the transaction's badger entries (an
// entryData) into j.buf.
func (j *journal) encodeCommit(n uint64, spans []span, kvs []kv) []byte {
	b := append(j.buf[:0], make([]byte, entryHeaderLen)...)
	typ := entryData
	if kvs == nil {
		typ = entryCommit
	}
	b = append(b, typ)
	b = binary.BigEndian.AppendUint64(b, n)
	b = binary.BigEndian.AppendUint32(b, uint32(len(spans)))
	for _, s := range spans {
		b = append(b, s.session[:]...)
		b = binary.BigEndian.AppendUint64(b, s.first)
		b = binary.BigEndian.AppendUint64(b, s.last)
	}
	if kvs != nil {
		b = binary.BigEndian.AppendUint32(b, uint32(len(kvs)))
		for _, e := range kvs {
			b = binary.BigEndian.AppendUint16(b, uint16(len(e.key)))
			b = append(b, e.key...)
			b = binary.BigEndian.AppendUint32(b, uint32(len(e.val)))
			b = append(b, e.val...)
		}
	}
	j.buf = b
	return sealEntry(b)
}

// encodeMarker encodes an entryAcked or entryVoid for commit n.
func encodeMarker(typ byte, n uint64) []byte {
	b := make([]byte, entryHeaderLen, entryHeaderLen+9)
	b = append(b, typ)
	b = binary.BigEndian.AppendUint64(b, n)
	return sealEntry(b)
}

// sealEntry fills in the length and CRC of the entry in b.
func sealEntry(b []byte) []byte {
	body := b[entryHeaderLen:]
	binary.BigEndian.PutUint32(b, uint32(len(body)))
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(body, crcTable))
	return b
}

// maxEntryBytes bounds the journal entry of a batch of size bytes: its
// spans and its badger entries (with their headers) each take at most
// size bytes, as a write is charged more than a span and an entry more
// than its header.
func maxEntryBytes(size int) int { return entryHeaderLen + 13 + 4 + 2*size }

// fits reports whether an entry of n bytes fits the active segment.
func (j *journal) fits(n int) bool { return j.f != nil && j.off+int64(n) <= j.size }

// rotate seals the active segment at version v, deletes the sealed
// segments badger has flushed (flushed: the greatest version in its
// tables) and starts the next segment, large enough for an entry of n
// bytes.
func (j *journal) rotate(v, flushed uint64, n int) error {
	if j.f == nil {
		return j.ensureActive()
	}
	if err := j.f.Close(); err != nil {
		return fmt.Errorf("wal: journal: %w", err)
	}
	j.active.sealedV = v
	j.segs = append(j.segs, j.active)
	j.f = nil
	j.prune(flushed)
	return j.newSegment(j.active.num+1, j.segFor(n))
}

// prune deletes the sealed segments whose commits are all at or below
// version flushed. A segment it cannot delete stays (and is checked again
// at the next open).
func (j *journal) prune(flushed uint64) {
	keep := j.segs[:0]
	for _, s := range j.segs {
		if s.sealedV > flushed || os.Remove(s.path) != nil {
			keep = append(keep, s)
		}
	}
	j.segs = keep
}

// write writes entry b at the end of the active segment and syncs it
// (unless noSync). The caller has checked that it fits.
func (j *journal) write(b []byte) error {
	if _, err := j.f.WriteAt(b, j.off); err != nil {
		return fmt.Errorf("wal: journal: write: %w", err)
	}
	j.off += int64(len(b))
	if j.noSync {
		return nil
	}
	start := time.Now()
	if err := j.f.Datasync(); err != nil {
		return fmt.Errorf("wal: journal: sync: %w", err)
	}
	if j.stats != nil {
		j.stats.syncNanos.Add(int64(time.Since(start)))
		j.stats.syncs.Add(1)
	}
	return nil
}

// close closes the active segment; with removeAll (after badger closed
// cleanly, having flushed every commit) it deletes every segment.
func (j *journal) close(removeAll bool) error {
	var err error
	if j.f != nil {
		err = j.f.Close()
	}
	if removeAll {
		segs := j.segs
		if j.f != nil {
			segs = append(segs, j.active)
		}
		for _, s := range segs {
			if rerr := os.Remove(s.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
				err = rerr
			}
		}
		if serr := syncDir(j.dir); err == nil {
			err = serr
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("wal: journal: close: %w", err)
	}
	return nil
}
