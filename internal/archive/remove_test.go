package archive_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/archive"
	"github.com/hubd/hubd/session"
)

// secretSession is an archived session whose text is secret.
func secretSession(t *testing.T, id session.ID, secret string, at time.Time) hub.ArchivedSession {
	t.Helper()
	meta, err := proto.Marshal(&hubpb.SessionMeta{SessionId: id.String(), Type: "conversation@1", Creator: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(&hubpb.Envelope{SessionId: id.String(), Seq: 1, Type: "text", Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: secret}}})
	if err != nil {
		t.Fatal(err)
	}
	return hub.ArchivedSession{Meta: meta, Records: [][]byte{b}, At: at, EndedAt: at}
}

// TestRemoveRewritesWithout removes one session of three from a file: no
// byte of its text is in the file after, the others read back whole and
// verifiable, and the file takes appends again.
func TestRemoveRewritesWithout(t *testing.T) {
	dir := t.TempDir()
	w, err := archive.NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	a, b, c := session.MustParseID("01a224b6-2092-7a77-96b8-d3155efc5061"), session.MustParseID("01a224b6-2092-7a77-96b8-d3155efc5062"),
		session.MustParseID("01a224b6-2092-7a77-96b8-d3155efc5063")
	name, err := w.Archive(ctx, []hub.ArchivedSession{secretSession(t, a, "keep-a", at), secretSession(t, b, "forget-b", at)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Archive(ctx, []hub.ArchivedSession{secretSession(t, c, "keep-c", at)}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if raw, _ := os.ReadFile(path); !bytes.Contains(raw, []byte("forget-b")) {
		t.Fatal("the file does not hold the text before: the test shows nothing")
	}
	if err := w.Remove(ctx, name, []session.ID{b}); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(path); bytes.Contains(raw, []byte("forget-b")) {
		t.Error("the removed session's text is still in the file")
	}
	f, err := archive.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range f.Sessions {
		got = append(got, s.Envelopes[0].GetText().GetText())
	}
	if len(got) != 2 || got[0] != "keep-a" || got[1] != "keep-c" {
		t.Errorf("the sessions kept: %v", got)
	}
	if _, err := w.Archive(ctx, []hub.ArchivedSession{secretSession(t, b, "later", at)}); err != nil {
		t.Fatal(err)
	}
	if f, err := archive.Read(path); err != nil || len(f.Sessions) != 3 {
		t.Errorf("after an append: %v sessions, %v", len(f.Sessions), err)
	}
	if err := w.Remove(ctx, "../elsewhere", []session.ID{b}); err == nil {
		t.Error("a name outside the directory was taken")
	}
}
