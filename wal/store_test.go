package wal

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// rawStore opens the badger store in dir directly, runs fn in an update
// transaction and closes it.
func rawStore(t *testing.T, dir string, fn func(txn *badger.Txn) error) {
	t.Helper()
	db, err := badger.Open(Options{Dir: dir}.badgerOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		want    []error
		migrate bool // the error is a *FormatError that Migrate fixes
	}{
		{"new store", func(*testing.T, string) {}, nil, false},
		{"reopen", func(t *testing.T, dir string) {
			l, err := Open(Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			mustAppend(t, l, mkWrite(sid(1), 1, 1))
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		}, nil, false},
		{"newer version", func(t *testing.T, dir string) {
			rawStore(t, dir, func(txn *badger.Txn) error { return txn.Set(formatKey(), encodeFormat(formatVersion+1)) })
		}, []error{ErrFormat}, false},
		{"version 1", func(t *testing.T, dir string) {
			rawStore(t, dir, func(txn *badger.Txn) error { return txn.Set(formatKey(), encodeFormat(1)) })
		}, []error{ErrFormat}, true},
		{"corrupt format record", func(t *testing.T, dir string) {
			rawStore(t, dir, func(txn *badger.Txn) error { return txn.Set(formatKey(), []byte("garbage")) })
		}, []error{ErrFormat, ErrCorrupt}, false},
		{"non-empty without format", func(t *testing.T, dir string) {
			rawStore(t, dir, func(txn *badger.Txn) error {
				k := appendRecordKey(nil, sid(1), 1)
				return txn.Set(k, appendValue(nil, k, nil))
			})
		}, []error{ErrFormat}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.prepare(t, dir)
			l, err := Open(Options{Dir: dir})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Open = %v", err)
				}
				checkFormatRecord(t, l)
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, want := range tc.want {
				if !errors.Is(err, want) {
					t.Fatalf("Open = %v, want %v", err, want)
				}
			}
			checkMigrateHint(t, err, dir, tc.migrate)
			// The failed Open released the directory.
			rawStore(t, dir, func(*badger.Txn) error { return nil })
		})
	}
}

// checkMigrateHint checks that err is a *FormatError telling the operator
// to migrate dir exactly when migrate is set.
func checkMigrateHint(t *testing.T, err error, dir string, migrate bool) {
	t.Helper()
	var fe *FormatError
	isFE := errors.As(err, &fe)
	hint := strings.Contains(err.Error(), "run `hubd log migrate --data "+dir+"`")
	if migrate != (isFE && fe.Migratable()) || migrate != hint {
		t.Fatalf("Open = %v (a *FormatError: %v); want a migration hint: %v", err, isFE, migrate)
	}
	if migrate && (fe.Have != 1 || fe.Want != formatVersion || fe.Dir != dir) {
		t.Fatalf("FormatError = %+v", *fe)
	}
}

// checkFormatRecord checks that the store holds the current format record.
func checkFormatRecord(t *testing.T, l *Log) {
	t.Helper()
	err := l.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(formatKey())
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			ver, err := decodeFormat(v)
			if err == nil && ver != formatVersion {
				t.Errorf("format version %d", ver)
			}
			return err
		})
	})
	if err != nil {
		t.Fatalf("format record: %v", err)
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		mustAppend(t, l, mkWrite(sid(i), 1, i+1))
	}
	mustAppend(t, l, mkWrite(sid(3), 5, 2), mkWrite(sid(4), 6, 1))
	before := verifyLog(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	after := verifyLog(t, l)
	if len(after) != len(before) {
		t.Fatalf("sessions before %v, after %v", before, after)
	}
	for s, last := range before {
		if after[s] != last {
			t.Fatalf("session %x: last %d before, %d after", s, last, after[s])
		}
	}
	// The committer relearns each last seq from the store.
	if err := l.Append(context.Background(), mkWrite(sid(3), 6, 1)); !errors.Is(err, ErrGap) {
		t.Fatalf("Append of a stored seq after reopen = %v, want ErrGap", err)
	}
	for s, last := range before {
		mustAppend(t, l, mkWrite(s, last+1, 2))
	}
	for s, last := range verifyLog(t, l) {
		if last != before[s]+2 {
			t.Fatalf("session %x: last %d, want %d", s, last, before[s]+2)
		}
	}
}
