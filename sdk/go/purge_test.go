package sdkgo_test

import (
	"errors"
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
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
