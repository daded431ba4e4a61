package hub_test

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

// listStates lists as agent with f and returns each session's state.
func listStates(t *testing.T, h *served, agent string, operator bool, f feed.Filter) map[session.ID]string {
	t.Helper()
	list, _, err := h.List(context.Background(), agent, operator, f)
	if err != nil {
		t.Fatalf("list as %s: %v", agent, err)
	}
	out := map[session.ID]string{}
	for _, info := range list {
		out[session.MustParseID(info.GetMeta().GetSessionId())] = info.GetState()
	}
	return out
}

// TestQuarantineFoundByListing: a closed session whose log is damaged is
// not read at start (only live sessions are); the first listing that
// reaches it finds the damage and lists it as QUARANTINED, to the
// operator and its participants, never leaving it out. A listing of the
// QUARANTINED state then names it, and a state filter on a lifecycle
// state leaves it out.
func TestQuarantineFoundByListing(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	healthy := openConversation(t, e.hub, "a", "b")
	damaged := openConversation(t, e.hub, "a", "b")
	r, err := e.hub.CloseSession(ctx, "a", false, damaged, "done")
	if err != nil {
		t.Fatal(err)
	}
	// A record past its close that does not decode.
	if err := e.log.Append(ctx, hub.LogWrite{Session: damaged, Records: []hub.LogRecord{{Seq: r.GetSeq() + 1, Data: []byte("garbage")}}}); err != nil {
		t.Fatal(err)
	}
	e.restart()
	if q := e.hub.Quarantined(); len(q) != 0 {
		t.Fatalf("quarantined at start: %v (a closed session is not read at start)", q)
	}
	if got := listStates(t, e.hub, "operator", true, feed.Filter{Quarantined: true}); len(got) != 0 {
		t.Fatalf("quarantined listing before any read: %v", got)
	}
	for _, who := range []struct {
		agent    string
		operator bool
	}{{"b", false}, {"operator", true}, {"a", false}} {
		got := listStates(t, e.hub, who.agent, who.operator, feed.Filter{})
		if len(got) != 2 || got[damaged] != feed.StateQuarantined || got[healthy] != "OPEN" {
			t.Errorf("%s lists %v, want the damaged session QUARANTINED and the healthy one OPEN", who.agent, got)
		}
	}
	if got := listStates(t, e.hub, "mallory", false, feed.Filter{}); len(got) != 0 {
		t.Errorf("an outsider lists %v", got)
	}
	for _, who := range []string{"operator", "a"} {
		got := listStates(t, e.hub, who, who == "operator", feed.Filter{Quarantined: true})
		if len(got) != 1 || got[damaged] != feed.StateQuarantined {
			t.Errorf("%s lists %v as quarantined, want the damaged session", who, got)
		}
	}
	if got := listStates(t, e.hub, "mallory", false, feed.Filter{Quarantined: true}); len(got) != 0 {
		t.Errorf("an outsider lists %v as quarantined", got)
	}
	if got := listStates(t, e.hub, "operator", true, feed.Filter{State: session.StateClosed}); len(got) != 0 {
		t.Errorf("a filter on CLOSED lists %v", got)
	}
}

// TestQuarantineMarkedAtStart: a store whose journal shows acknowledged
// records of a closed child session missing, opened with its damaged
// sessions marked (--on-damage quarantine), has that session quarantined
// from the start: listed as QUARANTINED before anything reads it, and
// counted in Quarantined.
func TestQuarantineMarkedAtStart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := wal.Open(wal.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	h, err := openServed(ctx, hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil)})
	if err != nil {
		t.Fatal(err)
	}
	parent := openConversation(t, h, "a", "b")
	d, err := h.Delegate(ctx, "a", &hubpb.DelegateRequest{SessionId: parent.String(), Mode: session.ModeBackground,
		Children: []*hubpb.OpenRequest{{Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "c", AutoAccept: true}}}}})
	if err != nil {
		t.Fatal(err)
	}
	child := session.MustParseID(d.GetChildren()[0].GetMeta().GetSessionId())
	if _, err := h.CloseSession(ctx, "a", false, child, "done"); err != nil {
		t.Fatal(err)
	}
	// A later commit: the journal then knows the close was acknowledged.
	if _, err := h.Send(ctx, "a", parent, textEnv("thanks")); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(t.TempDir(), "img") // what a kill -9 now leaves
	copyTree(t, dir, img)
	h.Close()
	l.Close()
	dropRecords(t, img, child) // badger lost the child's records; the parent's are there

	if _, err := wal.Open(wal.Options{Dir: img}); err == nil {
		t.Fatal("the store opened without its damage found")
	}
	l, err = wal.Open(wal.Options{Dir: img, OnDamage: wal.MarkDamaged})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	h, err = openServed(ctx, hub.Config{Log: server.WALLog(l), Adapters: server.Adapters(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if q := h.Quarantined(); len(q) != 1 || q[child] == nil {
		t.Fatalf("quarantined at start: %v, want the child", q)
	}
	for _, who := range []string{"operator", "c"} {
		got := listStates(t, h, who, who == "operator", feed.Filter{Quarantined: true})
		if len(got) != 1 || got[child] != feed.StateQuarantined {
			t.Errorf("%s lists %v as quarantined, want the child", who, got)
		}
	}
	if _, err := h.Get(ctx, "c", false, child); err == nil {
		t.Error("the damaged child serves")
	}
}

// dropRecords deletes a session's records and head from the badger store
// in dir, as damage would.
func dropRecords(t *testing.T, dir string, id session.ID) {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(txn *badger.Txn) error {
		for _, kind := range []byte{0x02, 0x03} { // records, head (wal's format)
			prefix := append([]byte{kind}, id[:]...)
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
			var keys [][]byte
			for it.Rewind(); it.Valid(); it.Next() {
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			it.Close()
			if len(keys) == 0 {
				t.Fatalf("no keys of kind %d for %v", kind, id)
			}
			for _, k := range keys {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the directory src to dst.
func copyTree(t *testing.T, src, dst string) {
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

// copySparse copies the file src to dst, keeping its holes (badger's value
// log is a 2 GiB hole).
func copySparse(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(fi.Size()); err != nil {
		return err
	}
	const seekData, seekHole = 3, 4
	for off := int64(0); off < fi.Size(); {
		start, err := in.Seek(off, seekData)
		if err != nil {
			break // no data past off
		}
		end, err := in.Seek(start, seekHole)
		if err != nil {
			return err
		}
		if _, err := io.Copy(io.NewOffsetWriter(f, start), io.NewSectionReader(in, start, end-start)); err != nil {
			return err
		}
		off = end
	}
	return f.Close()
}
