package hub_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/archive"
	"github.com/hubd/hubd/session"
)

// RestoreSession is the wrapped log's: the badger log restores sessions.
func (f *faultyLog) RestoreSession(ctx context.Context, s [16]byte, meta []byte, recs []hub.LogRecord, index []hub.IndexEntry) error {
	return f.Log.(hub.Restorer).RestoreSession(ctx, s, meta, recs, index)
}

// readEveryEnvelope returns every envelope of session id as alice reads it.
func readEveryEnvelope(t *testing.T, h *served, id session.ID) []*hubpb.Envelope {
	t.Helper()
	envs, _, err := h.ReadLog(context.Background(), "alice", true, id, 1, 100)
	if err != nil {
		t.Fatalf("ReadLog of %v: %v", id, err)
	}
	return envs
}

func TestImportBringsAPurgedSessionBack(t *testing.T) {
	e := newArchivedEnv(t, func(c *hub.Config) { c.Retention = hub.Retention{Ended: 24 * time.Hour, Sweep: 24 * time.Hour} })
	ctx := context.Background()
	id := endedConversation(t, e.hub, &hubpb.OpenRequest{Labels: map[string]string{"team": "audit"}})
	before, err := e.hub.Get(ctx, "alice", false, id)
	if err != nil {
		t.Fatal(err)
	}
	envs := readEveryEnvelope(t, e.hub, id)
	tomb, err := e.hub.Purge(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.hub.Get(ctx, "alice", false, id); !errors.Is(err, hub.ErrPurged) {
		t.Fatalf("Get before the import: %v", err)
	}
	got, err := e.hub.Import(ctx, tomb.Archive, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != id || got[0].Envelopes != len(envs) || got[0].Archive != tomb.Archive {
		t.Fatalf("Import = %+v, want %v with %d envelopes from %s", got, id, len(envs), tomb.Archive)
	}
	check := func() {
		t.Helper()
		info, err := e.hub.Get(ctx, "alice", false, id)
		if err != nil {
			t.Fatalf("Get after the import: %v", err)
		}
		want := proto.CloneOf(before)
		want.Meta.Labels[hub.LabelImportedFrom] = tomb.Archive
		if !proto.Equal(info, want) {
			t.Fatalf("Get after the import: %v, want %v", info, want)
		}
		if after := readEveryEnvelope(t, e.hub, id); !slices.EqualFunc(after, envs, func(a, b *hubpb.Envelope) bool { return proto.Equal(a, b) }) {
			t.Fatalf("ReadLog after the import: %v, want %v", after, envs)
		}
		if _, err := e.hub.View(ctx, "alice", id, feed.ViewOptions{}); err != nil {
			t.Fatalf("View after the import: %v", err)
		}
		list, _, err := e.hub.List(ctx, "bob", false, feed.Filter{})
		if err != nil || len(list) != 1 || list[0].GetMeta().GetSessionId() != id.String() {
			t.Fatalf("List of a participant after the import: %v %v", list, err)
		}
	}
	check()
	e.restart()
	check()
	e.clock.Advance(48 * time.Hour)
	if n, err := e.hub.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("Sweep purged %d (%v): an imported session is left alone", n, err)
	}
	check()
	if _, err := e.hub.Import(ctx, tomb.Archive, []session.ID{id}); !errors.Is(err, session.ErrBadTransition) {
		t.Fatalf("a second Import: %v, want BAD_LIFECYCLE_TRANSITION", err)
	}
	if _, err := e.hub.Purge(ctx, id); err != nil {
		t.Fatalf("an operator purges an imported session again: %v", err)
	}
}

func TestImportRefusalsWriteNothing(t *testing.T) {
	e := newArchivedEnv(t, nil)
	ctx := context.Background()
	gone, erased := endedConversation(t, e.hub, nil), endedConversation(t, e.hub, nil)
	kept := endedConversation(t, e.hub, nil)
	var file string
	for _, id := range []session.ID{gone, erased} {
		tomb, err := e.hub.Purge(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		file = tomb.Archive
	}
	dir := e.cfg.Archive.(*archive.Writer).Dir()
	writeCopy(t, filepath.Join(dir, file), filepath.Join(dir, "copy.hubarc"))
	if _, _, err := e.hub.Erase(ctx, "operator", true, &hubpb.EraseRequest{SessionIds: []string{erased.String()}, Reason: "asked"}); err != nil {
		t.Fatal(err)
	}
	other := session.MustParseID("01940000-0000-7000-8000-00000000ffff")
	for _, c := range []struct {
		name, file string
		ids        []session.ID
		want       error
	}{
		{"an erased session", "copy.hubarc", []session.ID{gone, erased}, hub.ErrErased},
		{"every session of a file with an erased one", "copy.hubarc", nil, hub.ErrErased},
		{"a session the file does not hold", file, []session.ID{gone, other}, session.ErrMalformed},
		{"a file the directory does not hold", "hubd-archive-1999-01-01.hubarc", nil, session.ErrMalformed},
		{"a path out of the directory", "../archive/" + file, nil, session.ErrMalformed},
		{"a path", filepath.Join(dir, file), nil, session.ErrMalformed},
		{"the parent directory", "..", nil, session.ErrMalformed},
		{"no file", "", nil, session.ErrMalformed},
	} {
		if got, err := e.hub.Import(ctx, c.file, c.ids); !errors.Is(err, c.want) || len(got) != 0 {
			t.Errorf("Import of %s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	wantPurged(t, "Get of the session no refused import wrote", getErr(e.hub, gone), file)
	if _, err := e.hub.Get(ctx, "alice", false, erased); !errors.Is(err, hub.ErrErased) {
		t.Fatalf("Get of the erased session: %v", err)
	}
	writeCopy(t, filepath.Join(dir, "copy.hubarc"), filepath.Join(dir, "kept.hubarc"))
	if _, err := e.hub.Import(ctx, "kept.hubarc", []session.ID{gone}); err != nil {
		t.Fatalf("Import of the purged session: %v", err)
	}
	if _, err := e.hub.Import(ctx, "kept.hubarc", []session.ID{gone}); !errors.Is(err, session.ErrBadTransition) {
		t.Fatalf("Import of a session the log holds: %v, want BAD_LIFECYCLE_TRANSITION", err)
	}
	if _, err := e.hub.Get(ctx, "alice", false, kept); err != nil {
		t.Fatal(err)
	}
}

// getErr is the error of alice's Get of id.
func getErr(h *served, id session.ID) error {
	_, err := h.Get(context.Background(), "alice", false, id)
	return err
}

// writeCopy copies the file from to to.
func writeCopy(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestImportOnAHubWithoutAnArchive(t *testing.T) {
	e := newEnv(t, nil)
	id := endedConversation(t, e.hub, nil)
	if _, err := e.hub.Purge(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.hub.Import(context.Background(), "hubd-archive-2026-01-01.hubarc", nil); !errors.Is(err, session.ErrBadTransition) {
		t.Fatalf("Import on a hub without an archive: %v, want BAD_LIFECYCLE_TRANSITION", err)
	}
}

// TestImportRefusedByClusterNode: a partitioned hub refuses an import,
// writing nothing.
func TestImportRefusedByClusterNode(t *testing.T) {
	e := newArchivedEnv(t, nil)
	ctx := context.Background()
	id := endedConversation(t, e.hub, nil)
	tomb, err := e.hub.Purge(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	e.hub.Close() // the log stays open for the node's hub
	cfg := e.cfg
	cfg.Log, cfg.Partitioned = e.log, true
	b, err := openServed(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Import(ctx, tomb.Archive, nil); !errors.Is(err, session.ErrBadTransition) || !strings.Contains(err.Error(), "a cluster node brings none back") {
		t.Errorf("an import on a cluster node: %v, want BAD_LIFECYCLE_TRANSITION naming why", err)
	}
	if raw, err := e.log.Meta(ctx, id); err != nil || raw != nil {
		t.Fatalf("the log holds %d bytes of metadata of the session (%v), want none", len(raw), err)
	}
}

// TestImportedForkKeepsItsSource: a fork imported back marks its source
// again, which is then not purged under it.
func TestImportedForkKeepsItsSource(t *testing.T) {
	e := newArchivedEnv(t, nil)
	ctx := context.Background()
	src := endedConversation(t, e.hub, nil)
	f, err := e.hub.Fork(ctx, "alice", false, &hubpb.ForkRequest{SessionId: src.String(), AtSeq: 2})
	if err != nil {
		t.Fatal(err)
	}
	fid := session.MustParseID(f.GetSession().GetMeta().GetSessionId())
	if _, err := e.hub.CloseSession(ctx, "alice", false, fid, "done"); err != nil {
		t.Fatal(err)
	}
	tomb, err := e.hub.Purge(ctx, fid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.hub.Import(ctx, tomb.Archive, []session.ID{fid}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.hub.Purge(ctx, src); !errors.Is(err, session.ErrBadTransition) {
		t.Fatalf("Purge of the source of an imported fork: %v, want BAD_LIFECYCLE_TRANSITION", err)
	}
	if _, err := e.hub.Get(ctx, "alice", false, fid); err != nil {
		t.Fatalf("the imported fork: %v", err)
	}
}
