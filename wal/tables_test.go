package wal

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestTableFooterDamage: a table file cut short, or damaged in its
// footer, makes badger panic when it opens the store; one whose last block
// (which badger reads at open) is damaged makes badger fail obscurely.
// Open refuses each instead, whatever the policy and read-only too,
// naming the file, with a *DamageError that only a restore answers;
// Verify names the file too.
func TestTableFooterDamage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
	}{
		{"cut to 1000 bytes", func(b []byte) []byte { return b[:1000] }},
		{"cut in half", func(b []byte) []byte { return b[:len(b)/2] }},
		{"cut by one byte", func(b []byte) []byte { return b[:len(b)-1] }},
		{"cut to 3 bytes", func(b []byte) []byte { return b[:3] }},
		{"emptied", func([]byte) []byte { return nil }},
		{"checksum length flipped", func(b []byte) []byte { b[len(b)-2] ^= 0x10; return b }},
		{"index flipped", func(b []byte) []byte { b[len(b)-60] ^= 0x10; return b }},
		{"last block flipped", func(b []byte) []byte { b[lastBlockEnd(b)-10] ^= 0x10; return b }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := closedStore(t)
			tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
			if len(tables) != 1 {
				t.Fatalf("tables %v, want one", tables)
			}
			patchFile(t, tables[0], tc.damage)
			name := filepath.Base(tables[0])
			// Read-only first: a writable badger that fails at a table has
			// created its new memtable log already.
			for _, opts := range []Options{{Dir: dir, ReadOnly: true}, {Dir: dir}, {Dir: dir, OnDamage: MarkDamaged}} {
				l, err := Open(opts)
				if err == nil {
					l.Close()
				}
				var de *DamageError
				if !errors.As(err, &de) || !de.RestoreOnly || !strings.Contains(err.Error(), "table "+name+" is damaged") ||
					!strings.Contains(err.Error(), "restore the directory from a backup") {
					t.Errorf("Open(%+v) = %v, want a *DamageError naming %s that only a restore answers", opts, err, name)
				}
			}
			if got := verifyTables(dir); len(got) != 1 || !strings.Contains(got[0], "table "+name) {
				t.Errorf("verifyTables: %q", got)
			}
		})
	}
}

// TestTableFooterIntact: the footer check passes every table a store
// writes, small and large.
func TestTableFooterIntact(t *testing.T) {
	dir, _ := closedStore(t)
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table")
	}
	for _, p := range tables {
		if err := checkTableFooter(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// lastBlockEnd returns where a table's blocks end: before its index, of
// the length its footer gives.
func lastBlockEnd(b []byte) int {
	n := len(b) - 4
	n -= int(binary.BigEndian.Uint32(b[n:])) // the checksum
	n -= 4
	return n - int(binary.BigEndian.Uint32(b[n:n+4])) // the index
}
