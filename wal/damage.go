package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/rs/zerolog"
)

// DamagePolicy says what Open does when it finds that acknowledged records
// are missing.
type DamagePolicy uint8

const (
	// RefuseDamaged (the zero value) makes Open fail with a *DamageError
	// that lists what is affected; nothing is marked.
	RefuseDamaged DamagePolicy = iota
	// MarkDamaged makes Open record a durable mark for each affected
	// session and succeed: [Log.Damaged] lists the marks, and Append and
	// Scan of a marked session fail with ErrDamaged from then on.
	MarkDamaged
)

// SessionDamage is one session whose records from From on are missing or
// cannot be trusted.
type SessionDamage struct {
	Session [16]byte
	From    uint64 // first seq affected; 1 when the whole session is
	Cause   string // what was found, in words
}

// Damage is what is known to be damaged in a store: sessions, in key
// order, and problems of the store as a whole that name no session.
type Damage struct {
	Sessions []SessionDamage
	Store    []string
}

// Empty reports whether d lists nothing.
func (d Damage) Empty() bool { return len(d.Sessions) == 0 && len(d.Store) == 0 }

// String lists d, one finding a line.
func (d Damage) String() string {
	var b strings.Builder
	for _, s := range d.Store {
		fmt.Fprintf(&b, "store: %s\n", s)
	}
	for _, s := range d.Sessions {
		fmt.Fprintf(&b, "session %s from seq %d: %s\n", uuidString(s.Session), s.From, s.Cause)
	}
	return b.String()
}

// uuidString formats a session id as a UUID.
func uuidString(s [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", s[:4], s[4:6], s[6:8], s[8:10], s[10:])
}

// DamageError is Open's error for a damaged store. It matches ErrDamaged.
type DamageError struct {
	Dir    string
	Damage Damage
	// RestoreOnly: no DamagePolicy opens the store (its MANIFEST or a
	// table is damaged or gone, found before badger opens it); only a
	// restore from a backup helps. Otherwise MarkDamaged opens it.
	RestoreOnly bool
}

// Error summarises the damage and says what to do.
func (e *DamageError) Error() string {
	todo := "restore the directory from a backup, or open it with the damaged sessions marked (MarkDamaged)"
	if e.RestoreOnly {
		todo = "restore the directory from a backup: no damage policy opens it"
	}
	return fmt.Sprintf("%v in %s: %d sessions affected, %d store problems:\n%s%s",
		ErrDamaged, e.Dir, len(e.Damage.Sessions), len(e.Damage.Store), e.Damage, todo)
}

// storeDamage is the *DamageError of problems checkFiles found.
func storeDamage(dir string, problems ...string) *DamageError {
	return &DamageError{Dir: dir, Damage: Damage{Store: problems}, RestoreOnly: true}
}

// Is reports whether target is ErrDamaged.
func (e *DamageError) Is(target error) bool { return target == ErrDamaged }

// orphanDir is where Open moves table files the MANIFEST does not list,
// which badger would otherwise delete.
const orphanDir = "orphans"

// checkFiles looks at the directory before badger opens it: a MANIFEST
// missing while data files exist (badger would start empty and delete
// every table), or unreadable, or naming a table that is gone, is damage
// of the store, refused whatever the policy. Table files the MANIFEST does
// not list are left by a crash during a flush or compaction, or by a
// damaged MANIFEST: badger deletes them at open, even read-only, so a
// writable open moves them into orphans/ and a read-only one refuses. A
// listed table whose footer cannot be read (cut short: badger would
// panic) is damage of the store too.
// It returns the files it moved into orphans/.
func checkFiles(dir string, readOnly bool, logger zerolog.Logger) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if readOnly {
			return nil, fmt.Errorf("wal: no store in %q: %w", dir, err)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	tables, data, emptyMem := dataFiles(ents)
	m, err := readManifest(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) && len(data) > 0:
		return nil, storeDamage(dir, fmt.Sprintf(
			"the MANIFEST is missing while %d data files exist (%s): badger would start empty and delete every table",
			len(data), strings.Join(firstN(data, 5), ", ")))
	case errors.Is(err, fs.ErrNotExist):
		if readOnly {
			return nil, fmt.Errorf("wal: no store in %q: %w", dir, err)
		}
		return nil, nil
	case err != nil:
		return nil, storeDamage(dir, "the MANIFEST is unreadable: "+err.Error())
	}
	if err := moveEmptyMem(dir, emptyMem, readOnly); err != nil {
		return nil, err
	}
	if len(emptyMem) > 0 {
		logger.Warn().Strs("files", emptyMem).Msg("wal: moved empty memtable logs into orphans/")
	}
	if problems := tableProblems(dir, tables, m); len(problems) > 0 {
		return emptyMem, storeDamage(dir, problems...)
	}
	moved, err := handleOrphans(dir, tables, m.Tables, readOnly)
	if len(moved) > 0 {
		logger.Warn().Strs("files", moved).Msg("wal: moved tables the MANIFEST does not list into orphans/ " +
			"(left by a crash during a flush or compaction, or by a damaged MANIFEST)")
	}
	return append(emptyMem, moved...), err
}

// dataFiles sorts a store directory's entries: its table files by id, its
// data files (tables, value and memtable logs) and its empty memtable
// logs.
func dataFiles(ents []fs.DirEntry) (tables map[uint64]string, data, emptyMem []string) {
	tables = map[uint64]string{}
	for _, e := range ents {
		name := e.Name()
		if id, ok := table.ParseFileID(name); ok {
			tables[id] = name
		}
		if fi, err := e.Info(); err == nil && strings.HasSuffix(name, memFileExt) && fi.Size() == 0 {
			emptyMem = append(emptyMem, name)
		}
		if strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".vlog") || strings.HasSuffix(name, memFileExt) {
			data = append(data, name)
		}
	}
	return tables, data, emptyMem
}

// tableProblems describes the tables the MANIFEST m lists that are gone
// from dir or, when all are there, whose footers cannot be read.
func tableProblems(dir string, tables map[uint64]string, m badger.Manifest) []string {
	var problems []string
	for _, id := range slices.Sorted(mapKeys(m.Tables)) {
		if _, ok := tables[id]; !ok {
			problems = append(problems, fmt.Sprintf("table %s listed in the MANIFEST is missing", table.IDToFilename(id)))
		}
	}
	if len(problems) > 0 {
		return problems
	}
	return checkTableFiles(dir, m)
}

// firstN returns at most n elements of s.
func firstN(s []string, n int) []string { return s[:min(len(s), n)] }

// mapKeys returns an iterator over m's keys.
func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// readManifest replays the MANIFEST of dir without changing it.
func readManifest(dir string) (badger.Manifest, error) {
	f, err := os.Open(filepath.Join(dir, badger.ManifestFilename))
	if err != nil {
		return badger.Manifest{}, err
	}
	defer f.Close()
	m, _, err := badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dir))
	return m, err
}

// moveEmptyMem moves memtable log files of no bytes at all (truncated:
// badger refuses to open a store with one) into orphans/, so that badger
// opens the store without them and the journal tells what they held; a
// read-only open cannot, and fails with ErrUnclean.
func moveEmptyMem(dir string, names []string, readOnly bool) error {
	if len(names) == 0 {
		return nil
	}
	if readOnly {
		return fmt.Errorf("%w: %s: memtable log %s is empty (truncated)", ErrUnclean, dir, names[0])
	}
	return moveAside(dir, names)
}

// moveAside moves the named files of dir into orphans/.
func moveAside(dir string, names []string) error {
	od := filepath.Join(dir, orphanDir)
	if err := os.MkdirAll(od, 0o755); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	for _, name := range names {
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(od, name)); err != nil {
			return fmt.Errorf("wal: moving %s aside: %w", name, err)
		}
	}
	return syncDir(dir)
}

// handleOrphans moves the table files listed in tables but not in the
// MANIFEST into orphans/ (writable) and returns their names, or refuses
// (read-only).
func handleOrphans(dir string, tables map[uint64]string, listed map[uint64]badger.TableManifest, readOnly bool) ([]string, error) {
	var orphans []string
	for id, name := range tables {
		if _, ok := listed[id]; !ok {
			orphans = append(orphans, name)
		}
	}
	if len(orphans) == 0 {
		return nil, nil
	}
	slices.Sort(orphans)
	if readOnly {
		return nil, fmt.Errorf("%w: %s: %d table files are not listed in the MANIFEST (%s): left by a crash, "+
			"or by a damaged MANIFEST; badger deletes them when it opens the store, so a read-only open refuses: open a copy",
			ErrUnclean, dir, len(orphans), strings.Join(firstN(orphans, 5), ", "))
	}
	return orphans, moveAside(dir, orphans)
}

// marks are the damage marks of a store, by session.
type marks map[[16]byte]SessionDamage

// loadMarks reads every mark of db.
func loadMarks(db *badger.DB) (marks, error) {
	m := marks{}
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{kindMark}, PrefetchValues: false})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			k := item.Key()
			dk, err := decodeKey(k)
			if err != nil {
				return fmt.Errorf("wal: mark key %x: %w", k, err)
			}
			err = item.Value(func(v []byte) error {
				from, cause, err := decodeMark(k, v)
				m[dk.session] = SessionDamage{Session: dk.session, From: from, Cause: cause}
				return err
			})
			if err != nil {
				return fmt.Errorf("wal: session %x mark: %w", dk.session, err)
			}
		}
		return nil
	})
	return m, err
}

// writeMarks records a mark for each session of ds, in one transaction.
func writeMarks(db *badger.DB, ds []SessionDamage) error {
	return db.Update(func(txn *badger.Txn) error {
		for _, d := range ds {
			if err := txn.Set(appendSessionKey(nil, kindMark, d.Session), encodeMark(d.Session, d.From, d.Cause)); err != nil {
				return err
			}
		}
		return nil
	})
}

// sorted returns the marks in key order.
func (m marks) sorted() []SessionDamage {
	out := make([]SessionDamage, 0, len(m))
	for _, d := range m {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b SessionDamage) int { return bytes.Compare(a.Session[:], b.Session[:]) })
	return out
}

// add records d unless the session already has a mark from an earlier or
// equal seq; it reports whether d was new.
func (m marks) add(d SessionDamage) bool {
	if old, ok := m[d.Session]; ok && old.From <= d.From {
		return false
	}
	m[d.Session] = d
	return true
}

// checkJournal compares the journal's commits with the store: a commit
// whose records are not all there lost acknowledged records, unless it is
// the last commit of its run and was never acknowledged (see journal.go).
// It returns the affected sessions, the earliest missing commit per
// session, in key order.
func checkJournal(db *badger.DB, rep journalReport) ([]SessionDamage, error) {
	acked, void := ackedCommits(rep.entries)
	found := marks{}
	err := db.View(func(txn *badger.Txn) error {
		for _, e := range rep.entries {
			if e.typ != entryCommit || void[e.commit] {
				continue
			}
			missing, err := missingSpans(txn, e.spans)
			if err != nil {
				return err
			}
			if len(missing) == len(e.spans) && !acked(e.commit) {
				continue // the crashed run's last commit: never acknowledged
			}
			for _, s := range missing {
				found.add(SessionDamage{Session: s.session, From: s.first, Cause: fmt.Sprintf(
					"acknowledged records %d..%d (commit %d, journal segment %s) are missing from the store",
					s.first, s.last, e.commit, segName(e.seg))})
			}
		}
		return nil
	})
	return found.sorted(), err
}

// replayJournal writes again, in commit order, every journalled commit
// with its data (entryData) that is not void and none of whose sessions
// has its first record in the store: badger lost it with the unsynced
// tail of its memtable log. A commit of which some sessions are present
// is left for checkJournal to report.
func replayJournal(db *badger.DB, rep journalReport, logger zerolog.Logger) (int, error) {
	_, void := ackedCommits(rep.entries)
	replayed := 0
	for _, e := range rep.entries {
		if e.typ != entryCommit || e.kvs == nil || void[e.commit] || len(e.spans) == 0 {
			continue // a commit whose sessions were all deleted: nothing to write
		}
		lost := true
		err := db.View(func(txn *badger.Txn) error {
			for _, s := range e.spans {
				last, err := lastSeqIn(txn, s.session, nil)
				if err != nil {
					return err
				}
				lost = lost && last < s.first
			}
			return nil
		})
		if err != nil {
			return replayed, fmt.Errorf("wal: journal replay: %w", err)
		}
		if !lost {
			continue
		}
		txn := db.NewTransaction(true)
		for _, x := range e.kvs {
			if err = txn.SetEntry(badger.NewEntry(x.key, x.val)); err != nil {
				break
			}
		}
		if err == nil {
			err = txn.Commit()
		}
		txn.Discard()
		if err != nil {
			return replayed, fmt.Errorf("wal: journal replay of commit %d: %w", e.commit, err)
		}
		replayed++
	}
	if replayed > 0 {
		logger.Info().Int("commits", replayed).Msg("wal: rewrote commits the store had lost from the journal")
	}
	return replayed, nil
}

// ackedCommits returns whether a commit is known to have been
// acknowledged (a later commit or an entryAcked follows it) and the set of
// commits that failed.
func ackedCommits(entries []jentry) (func(uint64) bool, map[uint64]bool) {
	var maxAcked uint64
	void := map[uint64]bool{}
	var prev uint64
	for _, e := range entries {
		switch e.typ {
		case entryAcked:
			maxAcked = max(maxAcked, e.commit)
		case entryVoid:
			void[e.commit] = true
		case entryOpen:
			prev = 0 // the last commit of a crashed run was never answered
		case entryCommit:
			maxAcked = max(maxAcked, prev) // a commit follows only an answered one
			prev = e.commit
		}
	}
	return func(n uint64) bool { return n <= maxAcked }, void
}

// missingSpans returns the spans whose first or last record is not in txn.
func missingSpans(txn *badger.Txn, spans []span) ([]span, error) {
	var out []span
	var k []byte
	for _, s := range spans {
		for _, seq := range []uint64{s.first, s.last} {
			k = appendRecordKey(k[:0], s.session, seq)
			_, err := txn.Get(k)
			if errors.Is(err, badger.ErrKeyNotFound) {
				out = append(out, s)
				break
			}
			if err != nil {
				return nil, fmt.Errorf("wal: journal check: %w", err)
			}
		}
	}
	return out, nil
}

// Damaged returns the damage known in the store: the marked sessions (see
// MarkDamaged), and the store problems found when it was opened. The hub
// quarantines these sessions: their records from From on are lost or
// untrusted, and Append to them fails with ErrDamaged.
func (l *Log) Damaged() Damage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Damage{Sessions: l.marks.sorted(), Store: slices.Clone(l.storeDamage)}
}

// DamageMarks calls fn for every session marked damaged (see
// MarkDamaged), in key order, with its mark in words: the first seq
// affected and what was found.
func (l *Log) DamageMarks(fn func(session [16]byte, cause string)) {
	for _, d := range l.Damaged().Sessions {
		fn(d.Session, fmt.Sprintf("records from seq %d: %s", d.From, d.Cause))
	}
}

// markOf returns the session's damage mark, if any.
func (l *Log) markOf(session [16]byte) (SessionDamage, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.marks[session]
	return d, ok
}

// markErr is the error of a read or append of a marked session.
func markErr(d SessionDamage) error {
	return fmt.Errorf("%w: session %s: records from seq %d: %s", ErrDamaged, uuidString(d.Session), d.From, d.Cause)
}
