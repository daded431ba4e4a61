package hub_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// TestStorageFailed: once the log's storage fails (here its directory
// moved away), a send is refused with STORAGE_FAILED, and so is every
// later change of any session, also after time passes (nothing is retried
// and acknowledged); reads go on, and a due timer is not retried every
// second but left for the start that follows.
func TestStorageFailed(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b", session.Expect(session.MaxSilence, time.Minute, session.ActionNotify))
	other := openConversation(t, e.hub, "c", "d")
	if _, err := e.hub.Send(ctx, "a", id, textEnv("before")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(e.dir, filepath.Join(t.TempDir(), "away")); err != nil {
		t.Fatal(err)
	}
	_, err := e.hub.Send(ctx, "b", id, textEnv("after the directory went"))
	if r, _ := session.ReasonOf(err); r != hubpb.Reason_STORAGE_FAILED || !errors.Is(err, hub.ErrStorageFailed) {
		t.Fatalf("send after the data directory went: %v; want STORAGE_FAILED", err)
	}
	for _, c := range []struct {
		from string
		id   session.ID
	}{{"b", id}, {"a", id}, {"c", other}} {
		if _, err := e.hub.Send(ctx, c.from, c.id, textEnv("again")); !errors.Is(err, hub.ErrStorageFailed) {
			t.Fatalf("a later send by %s: %v; want STORAGE_FAILED", c.from, err)
		}
	}
	if _, err := e.hub.Open(ctx, "a", &hubpb.OpenRequest{Type: "conversation@1",
		Participants: []*hubpb.Participant{{Name: "z", AutoAccept: true}}}); !errors.Is(err, hub.ErrStorageFailed) {
		t.Fatalf("an open: %v; want STORAGE_FAILED", err)
	}
	if info, err := e.hub.Get(ctx, "a", false, id); err != nil || info.GetSeq() != 3 {
		t.Fatalf("a read after the failure: %v, %v; want seq 3", info, err)
	}
	e.log.mu.Lock()
	tried := e.log.appends
	e.log.mu.Unlock()
	for range 5 {
		e.clock.Advance(time.Minute) // max_silence falls due; nothing can write it
	}
	e.log.mu.Lock()
	defer e.log.mu.Unlock()
	if e.log.appends > tried+1 {
		t.Errorf("the log was asked %d more times after its storage failed; want at most one try of the due timer", e.log.appends-tried)
	}
}
