package hub_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

// TestLiveSnapshot: a clean Close leaves the live set for the next start,
// which uses it instead of scanning the index, and a stale or damaged
// snapshot (a crash after it, a hub that ignored it) still gives the
// live set exactly: the same as a full scan of the index.
func TestLiveSnapshot(t *testing.T) {
	var logs bytes.Buffer
	e := newTimedEnv(t, func(c *hub.Config) { c.Logger = zerolog.New(&logs) })
	ctx := context.Background()
	var open []session.ID
	for i := range 30 {
		if i == 15 {
			// Hours between the halves, as between a day's sessions.
			e.clock.Advance(3 * time.Hour)
		}
		id := openConversation(t, e.hub, "alice", "bob")
		if i%3 == 0 {
			open = append(open, id)
		} else if _, err := e.hub.CloseSession(ctx, "alice", false, id, "done"); err != nil {
			t.Fatal(err)
		}
	}
	// usedSnapshot restarts and says whether hydrate used the snapshot.
	usedSnapshot := func() bool {
		t.Helper()
		logs.Reset()
		e.restart()
		for line := range strings.Lines(logs.String()) {
			if strings.Contains(line, `"message":"hydrated"`) {
				return strings.Contains(line, `"snapshot":true`)
			}
		}
		t.Fatalf("no hydrated line in\n%s", logs.String())
		return false
	}
	check := func(what string, want []session.ID) {
		t.Helper()
		slices.SortFunc(want, func(a, b session.ID) int { return bytes.Compare(a[:], b[:]) })
		if got := e.hub.ResidentIDs(); !slices.Equal(got, want) {
			t.Fatalf("%s: live after the restart %v, want %v", what, got, want)
		}
	}
	if !usedSnapshot() {
		t.Fatal("the restart after a clean close scanned the index")
	}
	check("clean restart", open)

	// A stale snapshot: the one of that close, put back after more work
	// (two of its sessions ended, three opened), as a crash leaves it.
	stale, ok, err := e.wal.IndexGet(ctx, []byte{'S'})
	if err != nil || !ok {
		t.Fatalf("no snapshot in the log: %v", err)
	}
	for _, id := range open[:2] { // in the snapshot: looked up, not scanned
		if _, err := e.hub.CloseSession(ctx, "alice", false, id, "done"); err != nil {
			t.Fatal(err)
		}
	}
	open = open[2:]
	for range 3 {
		open = append(open, openConversation(t, e.hub, "bob", "alice"))
	}
	e.hub.Close()
	if err := e.wal.PutIndex(ctx, []wal.IndexEntry{{Key: []byte{'S'}, Value: stale}}); err != nil {
		t.Fatal(err)
	}
	if !usedSnapshot() {
		t.Fatal("the stale snapshot was not used")
	}
	check("stale snapshot", slices.Clone(open))

	// A damaged one is ignored: the index is scanned.
	e.hub.Close()
	if err := e.wal.PutIndex(ctx, []wal.IndexEntry{{Key: []byte{'S'}, Value: []byte("live1 cut short")}}); err != nil {
		t.Fatal(err)
	}
	if usedSnapshot() {
		t.Fatal("a damaged snapshot was used")
	}
	check("damaged snapshot", slices.Clone(open))
	if !strings.Contains(logs.String(), "live snapshot ignored") {
		t.Fatalf("the damaged snapshot was not reported:\n%s", logs.String())
	}
}
