package jetstream

import (
	"context"
	"github.com/hubd/hubd/internal/disktest"
	"testing"
)

// hydrated returns the sessions partition k hands on, and the stats.
func hydrated(t *testing.T, l *Log, k int) (map[[16]byte]int, HydrateStats) {
	t.Helper()
	got := map[[16]byte]int{}
	st, err := l.Hydrate(context.Background(), k, Visitor{
		Meta:   func(s [16]byte, _ []byte) error { got[s] = 0; return nil },
		Record: func(s [16]byte, _ uint64, _ []byte) error { got[s]++; return nil },
	})
	if err != nil {
		t.Fatalf("Hydrate: %v", err)
	}
	return got, st
}

// subjectEmpty reports whether partition k holds no message on subj.
func subjectEmpty(t *testing.T, l *Log, k int, subj string) bool {
	t.Helper()
	_, ok, err := l.lastFor(context.Background(), k, subj)
	if err != nil {
		t.Fatal(err)
	}
	return !ok
}

func TestDelete(t *testing.T) {
	_, l := single(t)
	ctx := context.Background()
	gone, child := id(1), id(3)
	k := l.PartitionOf(gone)
	kept := idIn(t, 2, k, 4) // a root in the same partition
	mustAppend(t, l, open(gone, 3), open(kept, 2))
	mustAppend(t, l, openChild(child, gone, 1))
	if err := l.Delete(ctx, []Deletion{{Session: gone, Tombstone: []byte("purged at noon")}, {Session: child, Tombstone: []byte("child")}}); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []byte{kindMeta, kindRecord} {
		if !subjectEmpty(t, l, k, l.y.subject(k, kind, gone)) {
			t.Fatalf("the %s subject of the deleted session still has messages", letter(kind))
		}
	}
	if tomb, ok, err := l.Tombstone(ctx, gone); err != nil || !ok || string(tomb) != "purged at noon" {
		t.Fatalf("Tombstone = %q, %v, %v", tomb, ok, err)
	}
	if _, ok, err := l.Tombstone(ctx, kept); err != nil || ok {
		t.Fatalf("Tombstone of a kept session = %v, %v", ok, err)
	}
	if p, found, err := openLog(t, l.nc, Options{}).Locate(ctx, gone); err != nil || !found || p != k {
		t.Fatalf("Locate of a deleted session = %d, %v, %v; want its tombstone's partition %d", p, found, err, k)
	}
	if _, found, err := l.Locate(ctx, id(8)); err != nil || found {
		t.Fatalf("Locate of no session = %v, %v", found, err)
	}
	// Again: the first tombstone stays, nothing fails.
	if err := l.Delete(ctx, []Deletion{{Session: gone, Tombstone: []byte("later")}}); err != nil {
		t.Fatal(err)
	}
	if tomb, _, _ := l.Tombstone(ctx, gone); string(tomb) != "purged at noon" {
		t.Fatalf("tombstone after a second Delete = %q", tomb)
	}
	// An erasure of a removed session: its tombstone follows the first.
	if err := l.Delete(ctx, []Deletion{{Session: child, Tombstone: []byte("erased"), Erase: true}}); err != nil {
		t.Fatal(err)
	}
	if tomb, _, _ := l.Tombstone(ctx, child); string(tomb) != "erased" {
		t.Fatalf("tombstone after an erasure of a removed session = %q", tomb)
	}
	got, st := hydrated(t, openLog(t, l.nc, Options{}), k)
	if len(got) != 1 || got[kept] != 2 || st.Gone != 2 || st.Resumed != 0 {
		t.Fatalf("Hydrate after Delete = %v, %+v; want only the kept session, 2 tombstones", got, st)
	}
	wantErr(t, l.Delete(ctx, []Deletion{{Session: id(9)}}), ErrInvalid)
	other := openLog(t, l.nc, Options{}) // owns nothing
	wantErr(t, other.Delete(ctx, []Deletion{{Session: kept}}), ErrNotOwner)
	wantDense(t, l, kept, 2)
}

// A crash between the tombstone and the removal: Hydrate finishes it.
func TestHydrateFinishesADeletion(t *testing.T) {
	_, l := single(t)
	ctx := context.Background()
	s := id(1)
	k := l.PartitionOf(s)
	mustAppend(t, l, open(s, 4))
	if err := l.markGone(ctx, k, Deletion{Session: s, Tombstone: []byte("t"), Erase: true}); err != nil {
		t.Fatal(err)
	}
	got, st := hydrated(t, openLog(t, l.nc, Options{}), k)
	if len(got) != 0 || st.Gone != 1 || st.Resumed != 1 {
		t.Fatalf("Hydrate = %v, %+v; want nothing handed on, one deletion finished", got, st)
	}
	if !subjectEmpty(t, l, k, l.y.subject(k, kindRecord, s)) || !subjectEmpty(t, l, k, l.y.subject(k, kindMeta, s)) {
		t.Fatal("Hydrate left the deleted session's messages")
	}
	if _, st = hydrated(t, l, k); st.Resumed != 0 {
		t.Fatalf("a second Hydrate resumed %d deletions", st.Resumed)
	}
}

// An erasure leaves no byte of the session's records in the server's
// files.
func TestEraseOverwritesTheFiles(t *testing.T) {
	c, l := single(t)
	ctx := context.Background()
	s, kept := id(1), id(2)
	secret := []byte("the-secret-recipe-4471")
	mustAppend(t, l, Write{Session: s, Meta: testMeta(s), Records: []Record{{Seq: 1, Data: secret}, {Seq: 2, Data: append([]byte("again "), secret...)}}})
	mustAppend(t, l, open(kept, 2))
	if n := len(disktest.FilesHolding(t, c.StoreDir(0), secret)); n == 0 {
		t.Fatal("the secret is not in the store before the erasure: the test proves nothing")
	}
	if err := l.Delete(ctx, []Deletion{{Session: s, Tombstone: []byte("erased"), Erase: true}}); err != nil {
		t.Fatal(err)
	}
	if n := len(disktest.FilesHolding(t, c.StoreDir(0), secret)); n != 0 {
		t.Fatalf("%d files of the store still hold the erased record", n)
	}
	wantDense(t, l, kept, 2)
}

// A stream created denying purges keeps its sessions: Delete says so.
func TestDeleteDenied(t *testing.T) {
	_, l := single(t)
	ctx := context.Background()
	s := id(1)
	k := l.PartitionOf(s)
	mustAppend(t, l, open(s, 1))
	cfg := l.streamConfig(k)
	cfg.DenyPurge, cfg.DenyDelete = true, true
	if _, err := l.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	again := openLog(t, l.nc, Options{OwnAll: true})
	wantErr(t, again.Delete(ctx, []Deletion{{Session: s}}), ErrDenied)
	wantDense(t, again, s, 1)
}
