package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// purgeFixture appends n sessions of recs records each, every one with
// two index entries naming it (in the key, and as the value).
func purgeFixture(t *testing.T, l *Log, n, recs int) {
	t.Helper()
	for i := range n {
		s := sid(i)
		for first := 1; first <= recs; first += 500 {
			w := mkWrite(s, uint64(first), min(500, recs-first+1))
			if first == 1 {
				w.Index = purgeIndex(s, true)
			}
			mustAppend(t, l, w)
		}
	}
}

// purgeIndex is the index of session s in purgeFixture, as entries or
// (entries false) as the keys to delete.
func purgeIndex(s [16]byte, entries bool) []IndexEntry {
	return []IndexEntry{{Key: append([]byte("L"), s[:]...)}, {Key: append([]byte("K"), s[8:]...), Value: s[:]}}
}

func indexKeys(xs []IndexEntry) [][]byte {
	var out [][]byte
	for _, x := range xs {
		out = append(out, x.Key)
	}
	return out
}

// keysNaming returns every badger key (latest versions) whose key or
// value holds the session's id, but for its tombstone.
func keysNaming(t *testing.T, l *Log, s [16]byte) []string {
	t.Helper()
	var out []string
	err := l.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().KeyCopy(nil)
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			if k[0] == kindGone && bytes.Equal(k[1:], s[:]) {
				continue
			}
			if bytes.Contains(k, s[:]) || bytes.Contains(k, s[8:]) || bytes.Contains(v, s[:]) {
				out = append(out, describeKey(append(k, make([]byte, 8)...)))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkPurged checks that s has no key but its done tombstone, and that
// the other sessions of the fixture are whole.
func checkPurged(t *testing.T, l *Log, s [16]byte, archive string) {
	t.Helper()
	if left := keysNaming(t, l, s); len(left) > 0 {
		t.Fatalf("%d keys of the deleted session left: %v", len(left), firstN(left, 5))
	}
	tomb, ok, err := l.Gone(context.Background(), s)
	if err != nil || !ok || !tomb.Done || tomb.Kind != GonePurged || tomb.Archive != archive {
		t.Fatalf("Gone = %+v, %v, %v; want a done purged tombstone naming %q", tomb, ok, err, archive)
	}
	if _, err := l.Meta(context.Background(), s); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Meta of a deleted session: %v, want ErrNotFound", err)
	}
	if last, err := l.LastSeq(context.Background(), s); err != nil || last != 0 {
		t.Fatalf("LastSeq of a deleted session: %d, %v", last, err)
	}
	lasts := verifyLog(t, l)
	if _, ok := lasts[s]; ok {
		t.Fatal("the deleted session is still listed")
	}
}

func TestDeleteSessionLeavesNoKeyAndSurvivesACrash(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	purgeFixture(t, l, 3, 120)
	victim := sid(1)
	at := time.Date(2026, 11, 29, 1, 2, 3, 0, time.UTC)
	if err := l.DeleteSession(context.Background(), victim, Tombstone{Kind: GonePurged, At: at, Archive: "a.hubarc"},
		indexKeys(purgeIndex(victim, false))); err != nil {
		t.Fatal(err)
	}
	checkPurged(t, l, victim, "a.hubarc")
	if tomb, _, _ := l.Gone(context.Background(), victim); !tomb.At.Equal(at) {
		t.Fatalf("tombstone time %v, want %v", tomb.At, at)
	}
	// A kill -9 now: the journal still holds the session's commits, and
	// Open must neither write them again nor call them lost.
	img := filepath.Join(t.TempDir(), "img")
	copyDir(t, dir, img)
	if !dirHolds(t, filepath.Join(img, journalDir), victim) {
		t.Fatal("the journal of the crash image does not hold the session: the check below proves nothing")
	}
	r, err := Open(Options{Dir: img})
	if err != nil {
		t.Fatalf("reopening after a crash: %v", err)
	}
	defer func() { _ = r.Close() }()
	checkPurged(t, r, victim, "a.hubarc")
	if n := r.Opened().Replayed; n != 0 {
		t.Fatalf("Open wrote %d commits again", n)
	}
	// A clean close deletes the journal's segments, the session's bytes
	// with them.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if dirHolds(t, filepath.Join(dir, journalDir), victim) {
		t.Fatal("the journal still holds the deleted session after a clean close")
	}
}

// dirHolds reports whether a file under dir holds the session's records
// (their data starts with the id in hex; the tombstone holds it raw).
func dirHolds(t *testing.T, dir string, s [16]byte) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, fmt.Appendf(nil, "%x/", s)) {
			found = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func TestDeleteSessionInterruptedIsFinishedAtOpen(t *testing.T) {
	for _, step := range []string{"after the mark", "after a deletion batch"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			img := filepath.Join(t.TempDir(), "img")
			crash := func() {
				if _, err := os.Stat(img); err != nil {
					copyDir(t, dir, img) // what a kill -9 at this point leaves
				}
			}
			hooks := testHooks{}
			if strings.HasPrefix(step, "after the mark") {
				hooks.afterGoneMark = crash
			} else {
				hooks.afterDeleteBatch = crash
			}
			l, err := open(Options{Dir: dir}, hooks)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = l.Close() }()
			purgeFixture(t, l, 3, 3*deleteBatch)
			victim := sid(2)
			if err := l.DeleteSession(context.Background(), victim, Tombstone{Kind: GonePurged, At: time.Unix(1, 0)},
				indexKeys(purgeIndex(victim, false))); err != nil {
				t.Fatal(err)
			}
			if k := keysNaming(t, l, victim); len(k) > 0 {
				t.Fatalf("%d keys left: %v", len(k), firstN(k, 5))
			}
			r, err := Open(Options{Dir: img})
			if err != nil {
				t.Fatalf("reopening the interrupted deletion: %v", err)
			}
			defer func() { _ = r.Close() }()
			if n := r.Opened().Deletions; n != 1 {
				t.Fatalf("Open finished %d deletions, want 1", n)
			}
			checkPurged(t, r, victim, "")
		})
	}
}

// versionsOf counts the versions badger holds of the session's record
// keys, deletion markers included: what a compaction has not dropped.
func versionsOf(t *testing.T, l *Log, s [16]byte) int {
	t.Helper()
	n := 0
	err := l.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{AllVersions: true, Prefix: appendSessionKey(nil, kindRecord, s)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestReclaimDropsTheDeletedVersions(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Options{Dir: dir, MinFreeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	// Each Close flushes a table into level 0; past badger's count of
	// them, its compactions move them down, so that the store spans
	// levels as a store that served a while does.
	for i := range 8 {
		s := sid(i)
		mustAppend(t, l, mkWrite(s, 1, 500))
		for first := uint64(501); first <= 4000; first += 500 {
			mustAppend(t, l, mkWrite(s, first, 500))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if l, err = Open(Options{Dir: dir, MinFreeBytes: -1}); err != nil {
			t.Fatal(err)
		}
	}
	victim := sid(3)
	if err := l.DeleteSession(context.Background(), victim, Tombstone{Kind: GonePurged, At: time.Unix(1, 0)}, nil); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	// The deletions are in the memtable, the records in tables: Reclaim
	// must flush the one to drop the other.
	if n := versionsOf(t, l, victim); n < 4000 {
		t.Fatalf("%d versions of the deleted records before Reclaim: the check below proves nothing", n)
	}
	if err := l.Reclaim(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := versionsOf(t, l, victim); n != 0 {
		t.Fatalf("%d versions of the deleted records after Reclaim, want 0", n)
	}
	if last := verifyLog(t, l); len(last) != 7 {
		t.Fatalf("%d sessions left, want 7", len(last))
	}
}

func TestRestoreSessionUndoesADeletion(t *testing.T) {
	l := openMem(t)
	purgeFixture(t, l, 2, 30)
	ctx := context.Background()
	s := sid(1)
	w := mkWrite(s, 1, 30)
	if err := l.RestoreSession(ctx, s, w.Meta, w.Records, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("RestoreSession of a session the log holds: %v, want ErrInvalid", err)
	}
	if err := l.DeleteSession(ctx, s, Tombstone{Kind: GonePurged, At: time.Unix(1, 0)}, indexKeys(purgeIndex(s, false))); err != nil {
		t.Fatal(err)
	}
	if err := l.RestoreSession(ctx, s, w.Meta, w.Records[1:], nil); !errors.Is(err, ErrGap) {
		t.Fatalf("RestoreSession from seq 2: %v, want ErrGap", err)
	}
	if err := l.RestoreSession(ctx, s, w.Meta, w.Records, purgeIndex(s, true)[:1]); err != nil {
		t.Fatal(err)
	}
	if lasts := verifyLog(t, l); lasts[s] != 30 {
		t.Fatalf("the restored session's last seq: %d, want 30", lasts[s])
	}
	if _, ok, err := l.Gone(ctx, s); ok || err != nil {
		t.Fatalf("the restored session still has its tombstone (%v)", err)
	}
	if _, ok, _ := l.IndexGet(ctx, purgeIndex(s, true)[0].Key); !ok {
		t.Fatal("the restored session's index entry is missing")
	}
}

// A lazy deletion writes what a synced one does, without syncing; a
// synced one syncs its mark and its tombstone; SyncDeletions syncs.
func TestLazyDeletionIsNotSynced(t *testing.T) {
	syncs := 0
	l, err := open(Options{Dir: t.TempDir()}, testHooks{goneSynced: func() { syncs++ }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	ctx := context.Background()
	purgeFixture(t, l, 3, 4)
	lazy, synced := sid(1), sid(2)
	tomb := Tombstone{Kind: GonePurged, At: time.Unix(1, 0)}
	if err := l.DeleteSessions(ctx, []Deletion{{Session: lazy, Tombstone: tomb, Index: indexKeys(purgeIndex(lazy, false)), Lazy: true}}); err != nil {
		t.Fatal(err)
	}
	if syncs != 0 {
		t.Fatalf("a lazy deletion synced %d times", syncs)
	}
	if err := l.DeleteSessions(ctx, []Deletion{{Session: synced, Tombstone: tomb, Index: indexKeys(purgeIndex(synced, false))}}); err != nil {
		t.Fatal(err)
	}
	if syncs != 2 {
		t.Fatalf("a deletion synced %d times, want 2 (its mark, its tombstone)", syncs)
	}
	for _, s := range [][16]byte{lazy, synced} {
		if k := keysNaming(t, l, s); len(k) > 0 {
			t.Fatalf("%d keys left of %x: %v", len(k), s[:2], firstN(k, 5))
		}
		if tb, ok, err := l.Gone(ctx, s); err != nil || !ok || !tb.Done {
			t.Fatalf("Gone(%x) = %+v, %v, %v", s[:2], tb, ok, err)
		}
	}
	if err := l.SyncDeletions(ctx); err != nil || syncs != 3 {
		t.Fatalf("SyncDeletions: %v, %d syncs", err, syncs)
	}
}
