package wal

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestCopyStore: a store in use by a log is refused with ErrLocked; a
// closed one is copied whole (every file's bytes, holes kept as holes)
// and the copy opens with every record; an existing destination is
// refused.
func TestCopyStore(t *testing.T) {
	dir, acked := crashImage(t)
	l, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "copy")
	if err := CopyStore(dir, dst); !errors.Is(err, ErrLocked) {
		t.Fatalf("copy of a store in use: %v, want ErrLocked", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	before := dirDigest(t, dir)
	if err := CopyStore(dir, dst); err != nil {
		t.Fatal(err)
	}
	if got := dirDigest(t, dst); got != before {
		t.Fatalf("the copy differs:\n%s\nfrom\n%s", got, before)
	}
	if err := CopyStore(dir, dst); !errors.Is(err, ErrInvalid) {
		t.Errorf("copy onto an existing directory: %v, want ErrInvalid", err)
	}
	c, err := Open(Options{Dir: dst, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	for s, last := range acked {
		verifySession(t, c, s, last)
	}
}
