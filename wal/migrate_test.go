package wal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// In these tests a version-1 value is what mkWrite writes and its
// version-2 form is the same bytes after v2Prefix.
const v2Prefix = "v2:"

// migrateSessions and migrateRecords size the test stores: 10 sessions of
// 1 to 19 records, 100 records and 10 metadata values in all.
const migrateSessions = 10

// migrateValues is how many values a test store holds.
func migrateValues() int {
	n := 0
	for i := range migrateSessions {
		n += 1 + migrateRecords(i)
	}
	return n
}

// migrateRecords is how many records session i of a test store has.
func migrateRecords(i int) int { return 1 + i*2 }

// makeV1Store writes a store in dir and marks it as format version 1.
func makeV1Store(t testing.TB, dir string) {
	t.Helper()
	l, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := range migrateSessions {
		mustAppend(t, l, mkWrite(sid(i), 1, migrateRecords(i)))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := badger.Open(Options{Dir: dir}.badgerOptions())
	if err != nil {
		t.Fatal(err)
	}
	setFormat(t, db, 1)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// setFormat makes the store of db look like one of format version ver:
// the format record says ver, and before version 3 there are no heads.
func setFormat(t testing.TB, db *badger.DB, ver uint32) {
	t.Helper()
	err := db.Update(func(txn *badger.Txn) error {
		if ver < headsVersion {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{kindHead}})
			var heads [][]byte
			for it.Rewind(); it.Valid(); it.Next() {
				heads = append(heads, it.Item().KeyCopy(nil))
			}
			it.Close()
			for _, k := range heads {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
		}
		return txn.Set(formatKey(), encodeFormat(ver))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// toV2 is a Convert for the test stores: it prefixes a version-1 value
// and returns a version-2 one unchanged. It checks that the value is the
// one mkWrite wrote under that key.
func toV2(kind MigrateKind, s [16]byte, seq uint64, data []byte) ([]byte, error) {
	old := bytes.TrimPrefix(data, []byte(v2Prefix))
	want := recData(s, seq)
	if kind == MigrateMeta {
		want = metaData(s)
	}
	if (kind == MigrateMeta) != (seq == 0) || !bytes.Equal(old, want) {
		return nil, fmt.Errorf("%v of session %x seq %d is %q", kind, s, seq, data)
	}
	if len(old) < len(data) {
		return data, nil
	}
	return append([]byte(v2Prefix), data...), nil
}

// countingConvert wraps toV2, counting the values it sees and those
// already converted; it fails with errBoom on value failAt (from 1; 0:
// never).
type countingConvert struct {
	seen, converted, failAt int
}

var errBoom = errors.New("boom")

func (c *countingConvert) convert(kind MigrateKind, s [16]byte, seq uint64, data []byte) ([]byte, error) {
	c.seen++
	if c.seen == c.failAt {
		return nil, errBoom
	}
	if bytes.HasPrefix(data, []byte(v2Prefix)) {
		c.converted++
	}
	return toV2(kind, s, seq, data)
}

// rawConverted counts the values of the store in dir that are in their
// version-2 form, reading badger directly (Open refuses a version-1 store).
func rawConverted(t testing.TB, dir string) (converted, all int) {
	t.Helper()
	db, err := badger.Open(Options{Dir: dir}.badgerOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	err = db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().KeyCopy(nil)
			if k[0] != kindMeta && k[0] != kindRecord {
				continue
			}
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			data, err := decodeValue(k, v)
			if err != nil {
				return err
			}
			all++
			if bytes.HasPrefix(data, []byte(v2Prefix)) {
				converted++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return converted, all
}

// checkMigrated opens the store in dir and checks that it holds every
// session of makeV1Store, every value converted exactly once.
func checkMigrated(t testing.TB, dir string) {
	t.Helper()
	l, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open after migration: %v", err)
	}
	defer func() { _ = l.Close() }()
	checkFormatRecord(t.(*testing.T), l)
	ctx := context.Background()
	sessions := 0
	err = l.Sessions(ctx, func(s [16]byte, meta []byte, last uint64) error {
		sessions++
		if string(meta) != v2Prefix+string(metaData(s)) {
			return fmt.Errorf("session %x: meta %q", s, meta)
		}
		return nil
	})
	if err != nil || sessions != migrateSessions {
		t.Fatalf("Sessions: %d sessions, %v", sessions, err)
	}
	records := 0
	err = l.ScanAll(ctx, func(s [16]byte, seq uint64, data []byte) error {
		records++
		if string(data) != v2Prefix+string(recData(s, seq)) {
			return fmt.Errorf("session %x seq %d: %q", s, seq, data)
		}
		return nil
	})
	if err != nil || records != migrateValues()-migrateSessions {
		t.Fatalf("ScanAll: %d records, %v", records, err)
	}
}

func TestMigrate(t *testing.T) {
	dir := t.TempDir()
	makeV1Store(t, dir)
	if _, err := Open(Options{Dir: dir}); !errors.Is(err, ErrFormat) {
		t.Fatalf("Open of a version-1 store = %v, want ErrFormat", err)
	}
	ctx := context.Background()
	c := &countingConvert{}
	st, err := Migrate(ctx, Options{Dir: dir, MaxBatchBytes: 4 << 10}, 1, c.convert)
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	want := MigrateStats{From: 1, To: formatVersion, Sessions: migrateSessions,
		Records: migrateValues() - migrateSessions, Rewritten: migrateValues(), Commits: st.Commits}
	if st != want || st.Commits < 3 || c.seen != migrateValues() || c.converted != 0 {
		t.Fatalf("stats %+v, want %+v with at least 3 commits; convert saw %d values, %d converted", st, want, c.seen, c.converted)
	}
	checkMigrated(t, dir)
	// A second run finds the current version and does nothing.
	c = &countingConvert{}
	st, err = Migrate(ctx, Options{Dir: dir}, 1, c.convert)
	if err != nil || st != (MigrateStats{From: formatVersion, To: formatVersion}) || c.seen != 0 {
		t.Fatalf("second Migrate = %+v, %v; convert saw %d values", st, err, c.seen)
	}
	checkMigrated(t, dir)
	// The migrated store takes appends like any other.
	l, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	mustAppend(t, l, mkWrite(sid(0), 2, 1), mkWrite(sid(migrateSessions), 1, 2))
	verifySession(t, l, sid(migrateSessions), 2)
}

// TestMigrateInterrupted stops a migration on a failing value after some
// transactions have committed: the store still refuses to open, holds
// converted and unconverted values, and a rerun converts the rest.
func TestMigrateInterrupted(t *testing.T) {
	ctx := context.Background()
	total := migrateValues()
	for _, failAt := range []int{1, 2, 40, total - 1, total} {
		t.Run(fmt.Sprint(failAt), func(t *testing.T) {
			dir := t.TempDir()
			makeV1Store(t, dir)
			opts := Options{Dir: dir, MaxBatchBytes: 4 << 10}
			first := &countingConvert{failAt: failAt}
			st, err := Migrate(ctx, opts, 1, first.convert)
			if !errors.Is(err, errBoom) || !strings.Contains(err.Error(), "session ") {
				t.Fatalf("Migrate = %v, want errBoom naming the session", err)
			}
			_, err = Open(Options{Dir: dir})
			if fe := (*FormatError)(nil); !errors.As(err, &fe) || !fe.Migratable() {
				t.Fatalf("Open after an interrupted migration = %v, want a migratable *FormatError", err)
			}
			done, all := rawConverted(t, dir)
			// Values are staged in order and committed in transactions of
			// about 17, so failing on value 40 leaves at least one commit.
			if all != total || done > failAt-1 || (st.Commits > 0) != (done > 0) || (failAt >= 40) != (done > 0) {
				t.Fatalf("after failing on value %d: %d of %d values converted, stats %+v", failAt, done, all, st)
			}
			t.Logf("failAt %d: %d converted, stats %+v", failAt, done, st)
			second := &countingConvert{}
			st, err = Migrate(ctx, opts, 1, second.convert)
			if err != nil {
				t.Fatalf("rerun: %v", err)
			}
			if second.seen != total || second.converted != done || st.Rewritten != total-done {
				t.Fatalf("rerun saw %d values, %d converted (want %d), rewrote %d", second.seen, second.converted, done, st.Rewritten)
			}
			checkMigrated(t, dir)
		})
	}
}

func TestMigrateErrors(t *testing.T) {
	ctx := context.Background()
	v1 := func(t *testing.T) string {
		dir := t.TempDir()
		makeV1Store(t, dir)
		return dir
	}
	tests := []struct {
		name    string
		dir     func(t *testing.T) string
		opts    func(dir string) Options
		from    uint32
		convert Convert
		want    error
	}{
		{"in memory", nil, func(string) Options { return Options{InMemory: true} }, 1, toV2, ErrInvalid},
		{"no dir", nil, func(string) Options { return Options{} }, 1, toV2, ErrInvalid},
		{"from 0", v1, nil, 0, toV2, ErrInvalid},
		{"from current", v1, nil, formatVersion, toV2, ErrInvalid},
		{"no convert", v1, nil, 1, nil, ErrInvalid},
		{"missing dir", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, nil, 1, toV2, fs.ErrNotExist},
		{"empty dir", func(t *testing.T) string { return t.TempDir() }, nil, 1, toV2, fs.ErrNotExist},
		{"newer store", func(t *testing.T) string {
			dir := t.TempDir()
			rawStore(t, dir, func(txn *badger.Txn) error { return txn.Set(formatKey(), encodeFormat(formatVersion+1)) })
			return dir
		}, nil, 1, toV2, ErrFormat},
		{"no format record", func(t *testing.T) string {
			dir := t.TempDir()
			rawStore(t, dir, func(txn *badger.Txn) error {
				k := appendMetaKey(nil, sid(1))
				return txn.Set(k, appendValue(nil, k, metaData(sid(1))))
			})
			return dir
		}, nil, 1, toV2, ErrFormat},
		{"corrupt value", func(t *testing.T) string {
			dir := v1(t)
			rawStore(t, dir, func(txn *badger.Txn) error {
				k := appendRecordKey(nil, sid(3), 2)
				return txn.Set(k, []byte{frameVersion, 0, 0, 0, 0, 'x'})
			})
			return dir
		}, nil, 1, toV2, ErrCorrupt},
		{"meta to nothing", v1, nil, 1, func(kind MigrateKind, s [16]byte, seq uint64, data []byte) ([]byte, error) {
			if kind == MigrateMeta {
				return nil, nil
			}
			return toV2(kind, s, seq, data)
		}, ErrInvalid},
		{"too large", v1, func(dir string) Options { return Options{Dir: dir, MaxBatchBytes: 1 << 10} },
			1, func(kind MigrateKind, s [16]byte, seq uint64, data []byte) ([]byte, error) {
				return bytes.Repeat([]byte{'x'}, 2<<10), nil
			}, ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := ""
			if tc.dir != nil {
				dir = tc.dir(t)
			}
			opts := Options{Dir: dir}
			if tc.opts != nil {
				opts = tc.opts(dir)
			}
			if _, err := Migrate(ctx, opts, tc.from, tc.convert); !errors.Is(err, tc.want) {
				t.Fatalf("Migrate = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestMigrateWhileOpen(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	if _, err := Migrate(context.Background(), Options{Dir: dir}, 1, toV2); err == nil {
		t.Fatal("Migrate of a store a Log holds open succeeded")
	}
}

func TestMigrateCancelled(t *testing.T) {
	dir := t.TempDir()
	makeV1Store(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Migrate(ctx, Options{Dir: dir}, 1, toV2); !errors.Is(err, context.Canceled) {
		t.Fatalf("Migrate = %v, want context.Canceled", err)
	}
	if done, _ := rawConverted(t, dir); done != 0 {
		t.Fatalf("%d values converted by a cancelled migration", done)
	}
	if _, err := Migrate(context.Background(), Options{Dir: dir}, 1, toV2); err != nil {
		t.Fatal(err)
	}
	checkMigrated(t, dir)
}

// migrateKillEnv switches TestMigrateKillHelper on and names its store.
const migrateKillEnv = "WAL_MIGRATE_KILL_HELPER_DIR"

// migrateKillAt is the value the helper stops at: by then it has
// committed some transactions and staged part of another.
const migrateKillAt = 60

// TestMigrateKill9 runs a migration in a child process and kills it with
// SIGKILL while it holds a staged transaction, after earlier ones have
// committed. The store must then still refuse to open, and a rerun must
// finish the job with every value converted exactly once.
func TestMigrateKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	dir := t.TempDir()
	makeV1Store(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestMigrateKillHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), migrateKillEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, len("stopped\n"))
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "stopped\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper said %q, %v\n%s", line, err, stderr.Bytes())
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("helper ended by itself: %v\n%s", err, stderr.Bytes())
	}
	if _, err := Open(Options{Dir: dir}); !errors.Is(err, ErrFormat) {
		t.Fatalf("Open after a killed migration = %v, want ErrFormat", err)
	}
	done, all := rawConverted(t, dir)
	if done == 0 || done >= migrateKillAt || all != migrateValues() {
		t.Fatalf("after the kill: %d of %d values converted, want some but fewer than %d", done, all, migrateKillAt)
	}
	c := &countingConvert{}
	if _, err := Migrate(context.Background(), Options{Dir: dir}, 1, c.convert); err != nil {
		t.Fatalf("rerun: %v", err)
	}
	if c.converted != done {
		t.Fatalf("rerun found %d values converted, the store had %d", c.converted, done)
	}
	checkMigrated(t, dir)
}

// TestMigrateKillHelper is the child process of TestMigrateKill9; it is
// skipped unless migrateKillEnv is set. It migrates in small transactions,
// prints "stopped" on reaching value migrateKillAt and waits there to be
// killed.
func TestMigrateKillHelper(t *testing.T) {
	dir := os.Getenv(migrateKillEnv)
	if dir == "" {
		t.Skip("helper process of TestMigrateKill9")
	}
	time.AfterFunc(50*time.Second, func() { os.Exit(3) }) // never outlive the parent
	n := 0
	_, err := Migrate(context.Background(), Options{Dir: dir, MaxBatchBytes: 4 << 10}, 1,
		func(kind MigrateKind, s [16]byte, seq uint64, data []byte) ([]byte, error) {
			if n++; n == migrateKillAt {
				fmt.Print("stopped\n")
				select {}
			}
			return toV2(kind, s, seq, data)
		})
	fmt.Fprintln(os.Stderr, "migrate returned:", err)
	os.Exit(2)
}
