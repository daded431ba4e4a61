package archive_test

import (
	"context"
	"errors"
	"io/fs"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/archive"
)

func TestSessionsReadsAFileOfTheDirectoryAsTheLogStoresIt(t *testing.T) {
	w, err := archive.NewWriter(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	ctx := context.Background()
	s1 := archived(t, "s1", 3, at)
	name, err := w.Archive(ctx, []hub.ArchivedSession{s1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := w.Sessions(ctx, name)
	if err != nil || len(got) != 1 || len(got[0].Records) != 3 || !got[0].At.Equal(s1.At) || !got[0].EndedAt.Equal(s1.EndedAt) {
		t.Fatalf("Sessions = %+v, %v", got, err)
	}
	for i, b := range got[0].Records {
		var a, want hubpb.Envelope
		if err := proto.Unmarshal(b, &a); err != nil || proto.Unmarshal(s1.Records[i], &want) != nil || !proto.Equal(&a, &want) {
			t.Fatalf("record %d: %v (%v), want %v", i+1, &a, err, &want)
		}
	}
	for _, bad := range []string{"", ".", "..", "../" + name, "/" + name} {
		if _, err := w.Sessions(ctx, bad); err == nil || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Sessions(%q): %v, want a refusal of the name", bad, err)
		}
	}
	if _, err := w.Sessions(ctx, "hubd-archive-1999-01-01.hubarc"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Sessions of a file the directory lacks: %v, want fs.ErrNotExist", err)
	}
	gap := archived(t, "s2", 2, at.Add(24*time.Hour))
	gap.Records = gap.Records[1:] // seq 2 alone
	name, err = w.Archive(ctx, []hub.ArchivedSession{gap})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Sessions(ctx, name); !errors.Is(err, archive.ErrDamaged) {
		t.Errorf("Sessions of a session whose envelopes do not start at seq 1: %v, want ErrDamaged", err)
	}
}
