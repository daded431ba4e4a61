package wal

import (
	"bytes"
	"context"
	"errors"
	"github.com/hubd/hubd/internal/disktest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestScrubLeavesNoByte writes a session whose records and metadata hold
// a secret, across memtables, tables (a flush) and the journal; deletes
// its keys as a transaction would (they stay in the files), then scrubs
// it: no file of the data directory holds the secret any more, before and
// after a restart, and the other sessions are intact.
func TestScrubLeavesNoByte(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	secret := []byte("the-secret-of-session-seven")
	erased, kept := sid(7), sid(8)
	w := Write{Session: erased, Meta: append([]byte("meta:"), secret...)}
	for seq := uint64(1); seq <= 40; seq++ {
		w.Records = append(w.Records, Record{Seq: seq, Data: append(bytes.Repeat([]byte{'x'}, 2000), secret...)})
	}
	mustAppend(t, l, w, mkWrite(kept, 1, 5))
	if err := l.db.DropPrefix([]byte{0x7f}); err != nil { // nothing there: no flush
		t.Fatal(err)
	}
	mustAppend(t, l, Write{Session: erased, Records: []Record{{Seq: 41, Data: secret}}}, mkWrite(kept, 6, 5))
	if got := disktest.FilesHolding(t, dir, secret); len(got) == 0 {
		t.Fatal("the secret is in no file before the scrub: the test sees nothing")
	}
	for _, k := range [][]byte{appendSessionKey(nil, kindMeta, erased), appendSessionKey(nil, kindHead, erased)} {
		rawDelete(t, l, k)
	}
	if got := disktest.FilesHolding(t, dir, secret); len(got) == 0 {
		t.Fatal("deleting the keys removed the bytes: the test shows nothing")
	}
	if err := l.Scrub(ctx, erased); err != nil {
		t.Fatal(err)
	}
	if got := disktest.FilesHolding(t, dir, secret); len(got) > 0 {
		t.Errorf("after the scrub the secret is still in %v", got)
	}
	mustAppend(t, l, mkWrite(kept, 11, 2)) // appends go on
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := disktest.FilesHolding(t, dir, secret); len(got) > 0 {
		t.Errorf("after a restart the secret is in %v", got)
	}
	verifySession(t, l, kept, 12)
	if m, err := l.Meta(ctx, erased); !errors.Is(err, ErrNotFound) || m != nil {
		t.Errorf("the scrubbed session's metadata: %q %v", m, err)
	}
}

func rawDelete(t *testing.T, l *Log, k []byte) {
	t.Helper()
	txn := l.db.NewTransaction(true)
	defer txn.Discard()
	if err := txn.Delete(k); err != nil {
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestScrubBesideAppends scrubs sessions while others append: every
// append is answered and stored, the scrubbed sessions are gone.
func TestScrubBesideAppends(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	for i := range 4 {
		mustAppend(t, l, mkWrite(sid(100+i), 1, 3))
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := uint64(1); seq <= 50; seq++ {
				if err := l.Append(ctx, mkWrite(sid(w), seq, 1)); err != nil {
					t.Errorf("writer %d seq %d: %v", w, seq, err)
					return
				}
			}
		}()
	}
	for i := range 4 {
		if err := l.Scrub(ctx, sid(100+i)); err != nil {
			t.Errorf("scrub %d: %v", i, err)
		}
	}
	wg.Wait()
	for w := range 4 {
		verifySession(t, l, sid(w), 50)
	}
	for i := range 4 {
		if _, err := l.Meta(ctx, sid(100+i)); !errors.Is(err, ErrNotFound) {
			t.Errorf("session %d after its scrub: %v", 100+i, err)
		}
	}
}

// TestEraseSessionsLeavesNoByte erases a session whose metadata, records
// and a membership key (a participant's name) hold secrets: no file of
// the data directory holds them after, its tombstone says who erased it
// and why, and an erasure interrupted right after its mark (a copy of the
// directory then, as a kill -9 leaves it) is finished by the next Open,
// scrub included.
func TestEraseSessionsLeavesNoByte(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(t.TempDir(), "img")
	l, err := open(Options{Dir: dir}, testHooks{afterGoneMark: func() {
		if _, err := os.Stat(img); err != nil {
			copyDir(t, dir, img)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	ctx := context.Background()
	secret, name := []byte("secret-text-of-the-erased"), []byte("participant-dana-erased")
	erased, kept := sid(3), sid(4)
	member := append(append([]byte{'P'}, name...), erased[:]...)
	w := Write{Session: erased, Meta: append([]byte("meta:"), secret...), Index: []IndexEntry{{Key: member}}}
	for seq := uint64(1); seq <= 30; seq++ {
		w.Records = append(w.Records, Record{Seq: seq, Data: append([]byte("text:"), secret...)})
	}
	mustAppend(t, l, w, mkWrite(kept, 1, 4))
	for _, needle := range [][]byte{secret, name} {
		if len(disktest.FilesHolding(t, dir, needle)) == 0 {
			t.Fatalf("%q is in no file before the erasure: the test sees nothing", needle)
		}
	}
	at := time.Unix(1700000000, 0).UTC()
	d := Deletion{Session: erased, Tombstone: Tombstone{At: at, By: "ops", Reason: "asked to be forgotten"},
		Index: [][]byte{member}, Exact: [][]byte{member}}
	if err := l.EraseSessions(ctx, []Deletion{d}); err != nil {
		t.Fatal(err)
	}
	for _, needle := range [][]byte{secret, name} {
		if got := disktest.FilesHolding(t, dir, needle); len(got) > 0 {
			t.Errorf("after the erasure %q is still in %v", needle, got)
		}
	}
	tomb, ok, err := l.Gone(ctx, erased)
	if err != nil || !ok || tomb.Kind != GoneErased || !tomb.Done || tomb.By != "ops" || tomb.Reason != "asked to be forgotten" || !tomb.At.Equal(at) {
		t.Errorf("the tombstone: %+v %v %v", tomb, ok, err)
	}
	verifySession(t, l, kept, 4)

	if len(disktest.FilesHolding(t, img, secret)) == 0 {
		t.Fatal("the copy taken after the mark holds no secret: the test shows nothing")
	}
	r, err := Open(Options{Dir: img})
	if err != nil {
		t.Fatalf("reopening the interrupted erasure: %v", err)
	}
	defer func() { _ = r.Close() }()
	if n := r.Opened().Deletions; n != 1 {
		t.Errorf("Open finished %d deletions, want 1", n)
	}
	for _, needle := range [][]byte{secret, name} {
		if got := disktest.FilesHolding(t, img, needle); len(got) > 0 {
			t.Errorf("after Open finished the erasure %q is still in %v", needle, got)
		}
	}
	if tomb, ok, err := r.Gone(ctx, erased); err != nil || !ok || !tomb.Done || tomb.By != "ops" {
		t.Errorf("the finished tombstone: %+v %v %v", tomb, ok, err)
	}
}

// TestScrubRefusedOnceStorageFailed: a log whose storage failed scrubs
// nothing and says so, as it appends nothing.
func TestScrubRefusedOnceStorageFailed(t *testing.T) {
	l, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	mustAppend(t, l, mkWrite(sid(1), 1, 2))
	l.storage.fail(errors.New("the disk went away"))
	if err := l.Scrub(context.Background(), sid(1)); !errors.Is(err, ErrStorageFailed) {
		t.Errorf("Scrub after the storage failed: %v, want ErrStorageFailed", err)
	}
	if err := l.EraseSessions(context.Background(), []Deletion{{Session: sid(1)}}); !errors.Is(err, ErrStorageFailed) {
		t.Errorf("EraseSessions after the storage failed: %v, want ErrStorageFailed", err)
	}
}
