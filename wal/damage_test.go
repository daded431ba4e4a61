package wal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// damageSessions and damageRounds shape the store the damage tests break:
// sessions are written in order, a few records per commit, so that damage
// in the middle of the memtable log hits the later sessions only.
const (
	damageSessions = 12
	damageRounds   = 40
)

// crashImage writes a store and copies its directory while the log is
// still open, after every append was acknowledged and the journal has
// recorded the last acknowledgement: the copy is what a kill -9 at that
// moment leaves (the journal is synced; badger's memtable log is written).
// It returns the copy and the last acknowledged seq of each session.
func crashImage(t *testing.T) (string, map[[16]byte]uint64) {
	return crashImageOf(t, false)
}

// crashImageOf is crashImage; with spansOnly the journal holds the spans
// of each commit but not its data, as a hub that synced badger as well
// wrote it, so it cannot replay what badger lost.
func crashImageOf(t *testing.T, spansOnly bool) (string, map[[16]byte]uint64) {
	t.Helper()
	dir := t.TempDir()
	acked := make(chan struct{}, 1)
	l, err := open(Options{Dir: dir}, testHooks{spansOnly: spansOnly, ackDelay: time.Millisecond, afterAck: func() {
		select {
		case acked <- struct{}{}:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	last := map[[16]byte]uint64{}
	for i := range damageSessions {
		s := sid(i)
		for range damageRounds {
			mustAppend(t, l, mkWrite(s, last[s]+1, 3))
			last[s] += 3
		}
	}
	<-acked
	img := filepath.Join(t.TempDir(), "img")
	copyDir(t, dir, img)
	return img, last
}

// copyDir copies the files of src (and its subdirectories) into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		return copySparse(p, out)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// memFile returns the path of the store's memtable log that holds data
// and the offset just past its last non-zero byte.
func memFile(t *testing.T, dir string) (string, int64) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"+memFileExt))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		end := len(bytes.TrimRight(b, "\x00"))
		if end > 4096 {
			return p, int64(end)
		}
	}
	t.Fatalf("no memtable log with data in %s (%v)", dir, files)
	return "", 0
}

// patchFile applies fn to the bytes of the file at p.
func patchFile(t *testing.T, p string, fn func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, fn(b), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lostFrom returns, for each session, the first acknowledged seq that is
// not in the store (0 if none is missing), reading badger directly.
func lostFrom(t *testing.T, l *Log, acked map[[16]byte]uint64) map[[16]byte]uint64 {
	t.Helper()
	out := map[[16]byte]uint64{}
	err := l.db.View(func(txn *badger.Txn) error {
		for s, last := range acked {
			for seq := uint64(1); seq <= last; seq++ {
				_, err := txn.Get(appendRecordKey(nil, s, seq))
				if errors.Is(err, badger.ErrKeyNotFound) {
					out[s] = seq
					break
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// memDamages are the ways a memtable log has been found broken and
// served silently: a flipped byte, zeros, a truncation, a deleted file.
var memDamages = []struct {
	name   string
	damage func(t *testing.T, mem string, end int64)
}{
	{"flip", func(t *testing.T, mem string, end int64) {
		patchFile(t, mem, func(b []byte) []byte { b[end/2] ^= 0x40; return b })
	}},
	{"zero", func(t *testing.T, mem string, end int64) {
		patchFile(t, mem, func(b []byte) []byte { clear(b[end/2 : end]); return b })
	}},
	{"truncate", func(t *testing.T, mem string, end int64) {
		if err := os.Truncate(mem, end/2); err != nil {
			t.Fatal(err)
		}
	}},
	{"delete", func(t *testing.T, mem string, _ int64) {
		if err := os.Remove(mem); err != nil {
			t.Fatal(err)
		}
	}},
}

// TestMemtableLogDamage breaks badger's memtable log (the .mem file) of a
// stopped store whose journal cannot replay it (spans only) in each of
// memDamages. Badger opens each one and drops what it cannot replay; Open
// must notice that acknowledged records are missing and, by default,
// refuse with a report naming exactly the affected sessions and the first
// lost seq of each. Opened with MarkDamaged, the sessions stay marked
// across reopens and refuse appends and scans.
func TestMemtableLogDamage(t *testing.T) {
	for _, tc := range memDamages {
		t.Run(tc.name, func(t *testing.T) {
			dir, acked := crashImageOf(t, true)
			mem, end := memFile(t, dir)
			tc.damage(t, mem, end)

			_, err := Open(Options{Dir: dir})
			var de *DamageError
			if !errors.As(err, &de) || !errors.Is(err, ErrDamaged) {
				t.Fatalf("Open of a store with a damaged memtable log = %v, want a *DamageError", err)
			}
			l, err := Open(Options{Dir: dir, OnDamage: MarkDamaged})
			if err != nil {
				t.Fatalf("Open with MarkDamaged: %v", err)
			}
			want := lostFrom(t, l, acked)
			checkReport(t, de.Damage.Sessions, want)
			checkReport(t, l.Damaged().Sessions, want)
			checkMarked(t, l, de.Damage.Sessions[0])
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// The marks are durable: the default policy opens the store
			// now (nothing new) and still reports them.
			l, err = Open(Options{Dir: dir})
			if err != nil {
				t.Fatalf("reopen after marking: %v", err)
			}
			defer func() { _ = l.Close() }()
			checkReport(t, l.Damaged().Sessions, want)
			checkMarked(t, l, de.Damage.Sessions[0])
		})
	}
}

// TestMemtableLogRepair breaks badger's memtable log in each of
// memDamages, as a power loss would leave its unsynced tail: the journal
// (the commit point) holds every acknowledged commit's data, so Open
// writes back what badger dropped and reports nothing; every record is
// there with its bytes, and appends go on from the last seq.
func TestMemtableLogRepair(t *testing.T) {
	for _, tc := range memDamages {
		t.Run(tc.name, func(t *testing.T) {
			dir, acked := crashImage(t)
			mem, end := memFile(t, dir)
			tc.damage(t, mem, end)
			l, err := Open(Options{Dir: dir})
			if err != nil {
				t.Fatalf("Open of a store whose journal holds what the memtable log lost: %v", err)
			}
			defer func() { _ = l.Close() }()
			if lost := lostFrom(t, l, acked); len(lost) != 0 {
				t.Errorf("records still lost after the replay: %v", lost)
			}
			if d := l.Damaged(); len(d.Sessions) != 0 || len(d.Store) != 0 {
				t.Errorf("damage reported: %s", d)
			}
			ctx := context.Background()
			for s, last := range acked {
				var n uint64
				err := l.Scan(ctx, s, 1, func(seq uint64, data []byte) error {
					n++
					if want := recData(s, seq); seq != n || !bytes.Equal(data, want) {
						return fmt.Errorf("seq %d (record %d): %q, want %q", seq, n, data, want)
					}
					return nil
				})
				if err != nil || n != last {
					t.Fatalf("session %x: scanned %d of %d records: %v", s, n, last, err)
				}
				mustAppend(t, l, mkWrite(s, last+1, 1))
			}
		})
	}
}

// checkReport checks that the report names exactly the sessions of want,
// each from its first lost seq.
func checkReport(t *testing.T, got []SessionDamage, want map[[16]byte]uint64) {
	t.Helper()
	if len(want) == 0 {
		t.Fatal("the damage lost nothing: the test does not test")
	}
	if len(got) != len(want) {
		t.Errorf("report names %d sessions, %d lost records:\n%s", len(got), len(want), Damage{Sessions: got})
	}
	for _, d := range got {
		if want[d.Session] != d.From {
			t.Errorf("session %x reported from seq %d (%s), first lost seq is %d", d.Session, d.From, d.Cause, want[d.Session])
		}
	}
	if !slices.IsSortedFunc(got, func(a, b SessionDamage) int { return bytes.Compare(a.Session[:], b.Session[:]) }) {
		t.Error("report not in session order")
	}
}

// checkMarked checks that a marked session refuses appends and that a
// scan of it, or of everything, ends in ErrDamaged.
func checkMarked(t *testing.T, l *Log, d SessionDamage) {
	t.Helper()
	ctx := context.Background()
	last, err := l.LastSeq(ctx, d.Session)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ctx, mkWrite(d.Session, last+1, 1)); !errors.Is(err, ErrDamaged) {
		t.Errorf("Append to a marked session = %v, want ErrDamaged", err)
	}
	nop := func(uint64, []byte) error { return nil }
	if err := l.Scan(ctx, d.Session, 1, nop); !errors.Is(err, ErrDamaged) {
		t.Errorf("Scan of a marked session = %v, want ErrDamaged", err)
	}
	if err := l.ScanAll(ctx, func([16]byte, uint64, []byte) error { return nil }); !errors.Is(err, ErrDamaged) {
		t.Errorf("ScanAll over a marked session = %v, want ErrDamaged", err)
	}
	other, err := l.LastSeq(ctx, sid(999))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ctx, mkWrite(sid(999), other+1, 1)); err != nil {
		t.Errorf("Append to another session of a damaged store: %v", err)
	}
}

// closedStore writes the damage tests' sessions and closes the log, so
// everything is in badger's tables; it returns the directory and the last
// seq of each session.
func closedStore(t *testing.T) (string, map[[16]byte]uint64) {
	t.Helper()
	dir := t.TempDir()
	l, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	last := map[[16]byte]uint64{}
	for i := range damageSessions {
		s := sid(i)
		for range damageRounds {
			mustAppend(t, l, mkWrite(s, last[s]+1, 3))
			last[s] += 3
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, last
}

// TestTableBlockDamage flips one byte in the records of a badger table of
// a closed store. Badger skips a block whose checksum fails, so records
// vanish; every read must then either return exactly what was written or
// fail, and Verify must name the session.
func TestTableBlockDamage(t *testing.T) {
	for _, at := range []float64{0.3, 0.5, 0.7} {
		dir, acked := closedStore(t)
		tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
		if len(tables) != 1 {
			t.Fatalf("tables %v, want one", tables)
		}
		patchFile(t, tables[0], func(b []byte) []byte { b[int(float64(len(b))*at)] ^= 0x08; return b })
		l, err := Open(Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		failed := 0
		for s, last := range acked {
			want := uint64(1)
			err := l.Scan(ctx, s, 1, func(seq uint64, data []byte) error {
				if seq != want || !bytes.Equal(data, recData(s, seq)) {
					t.Errorf("at %.1f: session %x seq %d served wrong (want seq %d)", at, s, seq, want)
				}
				want++
				return nil
			})
			if err != nil {
				failed++
				// A session whose tail is gone (a closed session would look
				// open) must not take the lost seqs again.
				if got, _ := l.LastSeq(ctx, s); got < last {
					if err := l.Append(ctx, mkWrite(s, got+1, 1)); !errors.Is(err, ErrCorrupt) {
						t.Errorf("at %.1f: Append of seq %d to session %x, whose records end at %d of %d: %v, want ErrCorrupt",
							at, got+1, s, got, last, err)
					}
				}
				continue
			}
			if want != last+1 {
				t.Errorf("at %.1f: session %x scanned to seq %d without error, acknowledged %d", at, s, want-1, last)
			}
		}
		if err := l.ScanAll(ctx, func([16]byte, uint64, []byte) error { return nil }); failed > 0 && err == nil {
			t.Errorf("at %.1f: ScanAll passed over a damaged session", at)
		}
		dmg, _, err := l.Verify(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if failed == 0 || dmg.Empty() {
			t.Errorf("at %.1f: %d sessions failed to scan, Verify reports %q: the flip hit no record", at, failed, dmg)
		}
		t.Logf("flip at %.1f: %d sessions fail to scan; Verify:\n%s", at, failed, dmg)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestManifestDamage: with its MANIFEST deleted badger would start an
// empty store and delete every table; with one that does not replay, or
// that lists a table that is gone, it fails obscurely. Open refuses each
// with a *DamageError and leaves every file in place.
func TestManifestDamage(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		damage     func(t *testing.T, dir string)
	}{
		{"deleted", "MANIFEST is missing", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, badger.ManifestFilename)); err != nil {
				t.Fatal(err)
			}
		}},
		{"flipped", "MANIFEST is unreadable", func(t *testing.T, dir string) {
			patchFile(t, filepath.Join(dir, badger.ManifestFilename), func(b []byte) []byte { b[len(b)-3] ^= 1; return b })
		}},
		{"table deleted", "listed in the MANIFEST is missing", func(t *testing.T, dir string) {
			tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
			if err := os.Remove(tables[0]); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := closedStore(t)
			tc.damage(t, dir)
			before := dirDigest(t, dir)
			for _, opts := range []Options{{Dir: dir}, {Dir: dir, OnDamage: MarkDamaged}, {Dir: dir, ReadOnly: true}} {
				_, err := Open(opts)
				if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Open(%+v) = %v, want ErrDamaged saying %q", opts, err, tc.want)
				}
			}
			if after := dirDigest(t, dir); after != before {
				t.Errorf("a refused Open changed the directory:\n%s\nwas\n%s", after, before)
			}
		})
	}
}

// dirDigest describes every file of dir with a hash of its content.
func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %x\n", rel, sha256.Sum256(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestJournalDamage: a store whose journal directory was deleted, or
// whose journal segment holds a damaged entry, cannot tell what badger
// lost: Open reports it as damage of the store.
func TestJournalDamage(t *testing.T) {
	dir, _ := crashImage(t)
	if err := os.RemoveAll(filepath.Join(dir, journalDir)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: dir}); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "journal directory is missing") {
		t.Fatalf("Open without a journal = %v", err)
	}

	dir, _ = crashImage(t)
	segs, _ := filepath.Glob(filepath.Join(dir, journalDir, "*"+journalExt))
	patchFile(t, segs[len(segs)-1], func(b []byte) []byte { b[segHeaderLen+entryHeaderLen+3] ^= 1; return b })
	_, err := Open(Options{Dir: dir})
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "journal segment") {
		t.Fatalf("Open with a damaged journal entry = %v", err)
	}
	l, err := Open(Options{Dir: dir, OnDamage: MarkDamaged})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	if d := l.Damaged(); len(d.Store) != 1 {
		t.Fatalf("Damaged() = %v, want the journal problem", d)
	}
}

// TestReadOnly: a read-only open changes nothing, is refused while a log
// is open on the directory (badger's lock) and on a store whose log
// crashed, and refuses appends.
func TestReadOnly(t *testing.T) {
	dir, acked := closedStore(t)
	before := dirDigest(t, dir)
	l, err := Open(Options{Dir: dir, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dmg, st, err := l.Verify(ctx)
	if err != nil || !dmg.Empty() || st.Sessions != len(acked) {
		t.Fatalf("Verify = %v, %+v, %v", dmg, st, err)
	}
	verifyLog(t, l)
	if err := l.Append(ctx, mkWrite(sid(0), acked[sid(0)]+1, 1)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Append read-only = %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if after := dirDigest(t, dir); after != before {
		t.Fatalf("a read-only open changed the directory:\n%s\nwas\n%s", after, before)
	}

	live, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: dir, ReadOnly: true}); !errors.Is(err, ErrLocked) {
		t.Fatalf("read-only Open while a log is open = %v, want ErrLocked", err)
	}
	if err := live.Close(); err != nil {
		t.Fatal(err)
	}

	img, _ := crashImage(t)
	if _, err := Open(Options{Dir: img, ReadOnly: true}); !errors.Is(err, ErrUnclean) {
		t.Fatalf("read-only Open of a crashed store = %v, want ErrUnclean", err)
	}
}

// TestUpgradeV2 opens a store of format version 2 (no heads): Open adds
// the heads and writes version 3, and the store reads as before.
func TestUpgradeV2(t *testing.T) {
	dir, acked := closedStore(t)
	db, err := badger.Open(Options{Dir: dir}.badgerOptions())
	if err != nil {
		t.Fatal(err)
	}
	setFormat(t, db, 2)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(Options{Dir: dir, ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open of version 2: %v", err)
	}
	verifyLog(t, ro)
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	if !l.heads {
		t.Fatal("no heads after the upgrade")
	}
	if lasts := verifyLog(t, l); len(lasts) != len(acked) {
		t.Fatalf("%d sessions after the upgrade, want %d", len(lasts), len(acked))
	}
	dmg, _, err := l.Verify(context.Background())
	if err != nil || !dmg.Empty() {
		t.Fatalf("Verify after the upgrade: %v, %v", dmg, err)
	}
}

// TestBackupRestore verifies a log while it serves: a backup taken from
// the open log restores into a directory that opens and verifies clean
// with every record.
func TestBackupRestore(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	for i := range 5 {
		mustAppend(t, l, mkWrite(sid(i), 1, 3+i))
	}
	var buf bytes.Buffer
	if err := l.Backup(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, mkWrite(sid(0), 4, 1)) // after the snapshot
	cp := filepath.Join(t.TempDir(), "restored")
	if err := Restore(Options{Dir: cp}, &buf); err != nil {
		t.Fatal(err)
	}
	if err := Restore(Options{Dir: cp}, &buf); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Restore over a store = %v", err)
	}
	r, err := Open(Options{Dir: cp, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	if lasts := verifyLog(t, r); len(lasts) != 5 || lasts[sid(0)] != 3 {
		t.Fatalf("restored lasts %v", lasts)
	}
	if dmg, _, err := r.Verify(context.Background()); err != nil || !dmg.Empty() {
		t.Fatalf("Verify of the restored backup: %v, %v", dmg, err)
	}
}

// TestOrphanTables: a table file the MANIFEST does not list (a crash
// during a flush leaves one; so does a damaged MANIFEST) would be deleted
// by badger. A read-only open refuses; a writable one moves it into
// orphans/ and opens.
func TestOrphanTables(t *testing.T) {
	dir, acked := closedStore(t)
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	orphan := filepath.Join(dir, "000099.sst")
	if err := copySparse(tables[0], orphan); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: dir, ReadOnly: true}); !errors.Is(err, ErrUnclean) || !strings.Contains(err.Error(), "000099.sst") {
		t.Fatalf("read-only Open with an orphan table = %v, want ErrUnclean naming it", err)
	}
	l, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	if _, err := os.Stat(filepath.Join(dir, orphanDir, "000099.sst")); err != nil {
		t.Fatalf("the orphan table was not kept: %v", err)
	}
	if lasts := verifyLog(t, l); len(lasts) != len(acked) {
		t.Fatalf("%d sessions, want %d", len(lasts), len(acked))
	}
}

// TestHeadGuardsAppend: a session whose last records are gone while its
// head remains (badger lost them) is never extended over the hole: Append
// of the seq after what is left fails with ErrCorrupt, and so do scans.
func TestHeadGuardsAppend(t *testing.T) {
	dir, acked := closedStore(t)
	s := sid(3)
	l := openDamaged(t, dir, func(txn *badger.Txn) error {
		for seq := acked[s] - 4; seq <= acked[s]; seq++ {
			if err := txn.Delete(appendRecordKey(nil, s, seq)); err != nil {
				return err
			}
		}
		return nil
	})
	ctx := context.Background()
	last, err := l.LastSeq(ctx, s)
	if err != nil || last != acked[s]-5 {
		t.Fatalf("LastSeq = %d, %v", last, err)
	}
	if err := l.Append(ctx, mkWrite(s, last+1, 1)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Append over lost records = %v, want ErrCorrupt", err)
	}
	nop := func(uint64, []byte) error { return nil }
	if err := l.Scan(ctx, s, 1, nop); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Scan = %v, want ErrCorrupt: records missing", err)
	}
	if err := l.Scan(ctx, s, last+1, nop); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Scan past what is left = %v, want ErrCorrupt", err)
	}
	if err := l.ScanAll(ctx, func([16]byte, uint64, []byte) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ScanAll = %v, want ErrCorrupt", err)
	}
	mustAppend(t, l, mkWrite(sid(4), acked[sid(4)]+1, 1))
}

// TestLostHeadGuardsCreate: a session whose head is gone while its
// records and metadata remain is not taken for a new one: Append of its
// first seq again fails with ErrCorrupt and writes nothing over what is
// left, and a session the store has never seen is still created.
func TestLostHeadGuardsCreate(t *testing.T) {
	dir, acked := closedStore(t)
	s := sid(3)
	l := openDamaged(t, dir, func(txn *badger.Txn) error { return txn.Delete(appendSessionKey(nil, kindHead, s)) })
	ctx := context.Background()
	w := mkWrite(s, 1, 1)
	w.Records[0].Data = []byte("written over")
	if err := l.Append(ctx, w); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Append of seq 1 over a session that lost its head = %v, want ErrCorrupt", err)
	}
	var first []byte
	err := l.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(appendRecordKey(nil, s, 1))
		if err != nil {
			return err
		}
		first, err = item.ValueCopy(nil)
		return err
	})
	if err != nil || bytes.Contains(first, []byte("written over")) {
		t.Fatalf("record 1 after the refused append: %q, %v", first, err)
	}
	fresh := sid(len(acked) + 10)
	mustAppend(t, l, mkWrite(fresh, 1, 2))
	if last, err := l.LastSeq(ctx, fresh); err != nil || last != 2 {
		t.Fatalf("LastSeq of a new session = %d, %v; want 2", last, err)
	}
}

// openDamaged damages the closed store in dir through badger with damage,
// then opens it as a Log, closed at the end of the test.
func openDamaged(t *testing.T, dir string, damage func(*badger.Txn) error) *Log {
	t.Helper()
	db, err := badger.Open(Options{Dir: dir}.badgerOptions())
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(damage)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}
