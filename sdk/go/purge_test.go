package sdkgo_test

import (
	"errors"
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/hubtest"
	"github.com/hubd/hubd/internal/archive"
)

// TestClientPurge purges an ended session as an operator; reads of it then
// fail with ErrPurged and its time in the error's metadata; an agent may
// not purge, and an open session is refused.
func TestClientPurge(t *testing.T) {
	ctx := testCtx(t)
	h := hubtest.New(t)
	alice, op := dial(t, h.Addr(), "alice"), dial(t, h.Addr(), "operator")
	s := openPipeline(t, ctx, alice)
	if _, err := op.Purge(ctx, s.ID()); !errors.Is(err, agentsdk.ErrBadTransition) {
		t.Fatalf("Purge of an open session: %v", err)
	}
	if _, err := alice.CloseSession(ctx, s.ID(), "done"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Purge(ctx, s.ID()); !errors.Is(err, agentsdk.ErrPermissionDenied) {
		t.Fatalf("Purge by an agent: %v", err)
	}
	p, err := op.Purge(ctx, s.ID())
	if err != nil || p.SessionID != s.ID() || p.At.IsZero() || p.Archive != "" {
		t.Fatalf("Purge = %+v, %v (a hub without an archive)", p, err)
	}
	_, err = alice.GetSession(ctx, s.ID())
	var e *agentsdk.Error
	if !errors.Is(err, agentsdk.ErrPurged) || !errors.As(err, &e) || e.Metadata["purged_at"] == "" {
		t.Fatalf("GetSession of the purged session: %v", err)
	}
}

// TestClientImport brings a purged session back from the hub's archive
// as an operator: it reads again, labelled imported_from, with its
// envelopes; an agent may not import, a path is refused, and a second
// import of the session is refused.
func TestClientImport(t *testing.T) {
	ctx := testCtx(t)
	w, err := archive.NewWriter(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := hubtest.New(t, hubtest.Options{Hub: hub.Config{Archive: w}})
	alice, op := dial(t, h.Addr(), "alice"), dial(t, h.Addr(), "operator")
	s := openPipeline(t, ctx, alice)
	if _, err := alice.CloseSession(ctx, s.ID(), "done"); err != nil {
		t.Fatal(err)
	}
	envs, err := alice.ReadLog(ctx, s.ID(), 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	p, err := op.Purge(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Import(ctx, p.Archive, s.ID()); !errors.Is(err, agentsdk.ErrPermissionDenied) {
		t.Fatalf("Import by an agent: %v", err)
	}
	if _, err := op.Import(ctx, "../"+p.Archive, s.ID()); !errors.Is(err, agentsdk.ErrMalformed) {
		t.Fatalf("Import of a path: %v", err)
	}
	got, err := op.Import(ctx, p.Archive, s.ID())
	if err != nil || len(got) != 1 || got[0] != (agentsdk.Imported{SessionID: s.ID(), Envelopes: len(envs), Archive: p.Archive}) {
		t.Fatalf("Import = %+v, %v", got, err)
	}
	info, err := alice.GetSession(ctx, s.ID())
	if err != nil || info.GetState() != agentsdk.StateClosed || info.GetMeta().GetLabels()[hub.LabelImportedFrom] != p.Archive {
		t.Fatalf("GetSession of the imported session: %v, %v", info, err)
	}
	if again, err := alice.ReadLog(ctx, s.ID(), 1, 100); err != nil || len(again) != len(envs) {
		t.Fatalf("ReadLog of the imported session: %d envelopes, %v; want %d", len(again), err, len(envs))
	}
	if _, err := op.Import(ctx, p.Archive, s.ID()); !errors.Is(err, agentsdk.ErrBadTransition) {
		t.Fatalf("a second Import: %v", err)
	}
}
