package wal

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
)

// TestIndex: index entries are written and deleted with the records of an
// append, read back by prefix (after a key), survive a reopen, are
// verified, and a bad key is refused before anything is written.
func TestIndex(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Options{Dir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w1 := mkWrite(sid(1), 1, 2)
	w1.Index = []IndexEntry{{Key: []byte("La"), Value: []byte("1")}, {Key: []byte("Lb")}, {Key: []byte("Pa")}}
	mustAppend(t, l, w1)
	w2 := mkWrite(sid(1), 3, 1)
	w2.Index = []IndexEntry{{Key: []byte("La"), Delete: true}, {Key: []byte("Lc"), Value: []byte("3")}}
	mustAppend(t, l, w2)
	bad := mkWrite(sid(2), 1, 1)
	bad.Index = []IndexEntry{{Key: nil}}
	if err := l.Append(ctx, bad); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an empty index key: %v", err)
	}
	if err := l.PutIndex(ctx, []IndexEntry{{Key: []byte("Ld"), Value: []byte("4")}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err = Open(Options{Dir: dir, NoSync: true}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	scan := func(prefix, after string) []string {
		t.Helper()
		var a []byte
		if after != "" {
			a = []byte(after)
		}
		var out []string
		err := l.IndexScan(ctx, []byte(prefix), a, func(k, v []byte) error {
			out = append(out, string(k)+"="+string(v))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := scan("L", ""), []string{"Lb=", "Lc=3", "Ld=4"}; !slices.Equal(got, want) {
		t.Fatalf("scan L: %v, want %v", got, want)
	}
	if got, want := scan("L", "Lb"), []string{"Lc=3", "Ld=4"}; !slices.Equal(got, want) {
		t.Fatalf("scan L after Lb: %v, want %v", got, want)
	}
	if v, ok, err := l.IndexGet(ctx, []byte("Lc")); err != nil || !ok || !bytes.Equal(v, []byte("3")) {
		t.Fatalf("get Lc: %q %v %v", v, ok, err)
	}
	if _, ok, err := l.IndexGet(ctx, []byte("La")); err != nil || ok {
		t.Fatalf("get of a deleted key: %v %v", ok, err)
	}
	if _, ok, _ := l.IndexGet(ctx, []byte("Pb")); ok {
		t.Fatal("a key never written is found")
	}
	dmg, _, err := l.Verify(ctx)
	if err != nil || !dmg.Empty() {
		t.Fatalf("verify with an index: %v %v", dmg, err)
	}
	var metas []string
	err = l.MetasFrom(ctx, sid(0), func(s [16]byte, m []byte) error {
		metas = append(metas, string(m))
		return nil
	})
	if err != nil || len(metas) != 1 || metas[0] != string(metaData(sid(1))) {
		t.Fatalf("metas from: %v %v", metas, err)
	}
	metas = nil
	err = l.MetasFrom(ctx, sid(1), func(s [16]byte, m []byte) error {
		metas = append(metas, string(m))
		return nil
	})
	if err != nil || len(metas) != 0 {
		t.Fatalf("metas after the only session: %v %v", metas, err)
	}
}
