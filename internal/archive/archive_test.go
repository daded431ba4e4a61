package archive_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/archive"
)

// archived is a session of n text envelopes.
func archived(t *testing.T, id string, n int, at time.Time) hub.ArchivedSession {
	t.Helper()
	meta, err := proto.Marshal(&hubpb.SessionMeta{SessionId: id, Type: "conversation@1", Creator: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	s := hub.ArchivedSession{Meta: meta, At: at, EndedAt: at.Add(-time.Hour)}
	for i := range n {
		b, err := proto.Marshal(&hubpb.Envelope{SessionId: id, Seq: uint64(i + 1), Type: "text",
			Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "hello"}}})
		if err != nil {
			t.Fatal(err)
		}
		s.Records = append(s.Records, b)
	}
	return s
}

func TestAppendsStayVerifiableAndATornTailIsCutOff(t *testing.T) {
	dir := t.TempDir()
	w, err := archive.NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	ctx := context.Background()
	name, err := w.Archive(ctx, []hub.ArchivedSession{archived(t, "s1", 3, at)})
	if err != nil || name != "hubd-archive-2026-11-29.hubarc" {
		t.Fatalf("Archive = %q, %v", name, err)
	}
	if _, err := w.Archive(ctx, []hub.ArchivedSession{archived(t, "s2", 1, at)}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0x20, 1, 2, 3}) // a torn append: a record cut short
	f.Close()
	if _, err := archive.Read(path); !errors.Is(err, archive.ErrDamaged) {
		t.Fatalf("Read of a torn file: %v, want ErrDamaged", err)
	}
	if _, err := w.Archive(ctx, []hub.ArchivedSession{archived(t, "s3", 2, at)}); err != nil {
		t.Fatal(err)
	}
	got, err := archive.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range got.Sessions {
		ids = append(ids, s.GetMeta().GetSessionId())
		if uint64(len(s.Envelopes)) != s.GetLastSeq() {
			t.Errorf("session %s: %d envelopes, last seq %d", s.GetMeta().GetSessionId(), len(s.Envelopes), s.GetLastSeq())
		}
	}
	if len(ids) != 3 || ids[0] != "s1" || ids[1] != "s2" || ids[2] != "s3" || got.Header.GetDay() != "2026-11-29" {
		t.Fatalf("sessions %v, header %v", ids, got.Header)
	}
	if e := got.Sessions[0].Envelopes[2]; e.GetSeq() != 3 || e.GetText().GetText() != "hello" {
		t.Fatalf("envelope read back: %v", e)
	}
	// One byte changed inside: the checksum after it fails.
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 0x40
	os.WriteFile(path, b, 0o644)
	if _, err := archive.Read(path); !errors.Is(err, archive.ErrDamaged) {
		t.Fatalf("Read of a changed file: %v, want ErrDamaged", err)
	}
}
