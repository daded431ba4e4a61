package hub_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/archive"
	"github.com/hubd/hubd/session"
)

// DeleteSessions is the wrapped log's: the badger log deletes sessions.
func (f *faultyLog) DeleteSessions(ctx context.Context, ds []hub.Deletion) error {
	return f.Log.(hub.Purger).DeleteSessions(ctx, ds)
}

// Gone is the wrapped log's.
func (f *faultyLog) Gone(ctx context.Context, s [16]byte) (hub.Tombstone, bool, error) {
	return f.Log.(hub.Purger).Gone(ctx, s)
}

// newArchivedEnv is newEnv with an archive in the data directory.
func newArchivedEnv(t *testing.T, tweak func(*hub.Config)) *env {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "archive")
	w, err := archive.NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	return newEnv(t, func(c *hub.Config) {
		c.Archive = w
		if tweak != nil {
			tweak(c)
		}
	})
}

// endedConversation opens a conversation, has alice say something, and
// closes it.
func endedConversation(t *testing.T, h *served, req *hubpb.OpenRequest) session.ID {
	t.Helper()
	ctx := context.Background()
	if req == nil {
		req = &hubpb.OpenRequest{}
	}
	req.Type = "conversation@1"
	req.Participants = []*hubpb.Participant{{Name: "bob", AutoAccept: true}}
	o, err := h.Open(ctx, "alice", req)
	if err != nil {
		t.Fatal(err)
	}
	id := session.MustParseID(o.GetSession().GetMeta().GetSessionId())
	if _, err := h.Send(ctx, "alice", id, textEnv("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CloseSession(ctx, "alice", false, id, "done"); err != nil {
		t.Fatal(err)
	}
	return id
}

// wantPurged checks that err is the PURGED answer naming archive.
func wantPurged(t *testing.T, what string, err error, archive string) {
	t.Helper()
	var pe *hub.PurgedError
	if !errors.Is(err, hub.ErrPurged) || !errors.As(err, &pe) || pe.Archive != archive || pe.At.IsZero() {
		t.Fatalf("%s: %v, want PURGED naming %q", what, err, archive)
	}
}

func TestPurgeAnswersPurgedToEveryRead(t *testing.T) {
	e := newArchivedEnv(t, nil)
	ctx := context.Background()
	id := endedConversation(t, e.hub, nil)
	keep := endedConversation(t, e.hub, nil)
	tomb, err := e.hub.Purge(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if tomb.Archive != archive.FileName(epoch) || !tomb.At.Equal(epoch) {
		t.Fatalf("tombstone %+v", tomb)
	}
	check := func() {
		t.Helper()
		_, err := e.hub.Get(ctx, "alice", false, id)
		wantPurged(t, "Get", err, tomb.Archive)
		_, _, err = e.hub.ReadLog(ctx, "alice", true, id, 1, 10)
		wantPurged(t, "ReadLog", err, tomb.Archive)
		_, err = e.hub.View(ctx, "alice", id, feed.ViewOptions{})
		wantPurged(t, "View", err, tomb.Archive)
		_, err = e.hub.Send(ctx, "alice", id, textEnv("again"))
		wantPurged(t, "Send", err, tomb.Archive)
		_, err = e.hub.Watch(ctx, "alice", true, id, feed.WatchOptions{})
		wantPurged(t, "Watch", err, tomb.Archive)
		_, err = e.hub.Purge(ctx, id)
		wantPurged(t, "Purge again", err, tomb.Archive)
		if _, err := e.hub.Get(ctx, "alice", false, keep); err != nil {
			t.Fatalf("the other session: %v", err)
		}
		list, _, err := e.hub.List(ctx, "alice", false, feed.Filter{})
		if err != nil || len(list) != 1 || list[0].GetMeta().GetSessionId() != keep.String() {
			t.Fatalf("List after the purge: %v %v", list, err)
		}
	}
	check()
	e.restart()
	check()
	got, err := archive.Read(filepath.Join(e.cfg.Archive.(*archive.Writer).Dir(), tomb.Archive))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Sessions) != 1 || got.Sessions[0].GetMeta().GetSessionId() != id.String() || len(got.Sessions[0].Envelopes) < 3 {
		t.Fatalf("archive holds %+v", got.Sessions)
	}
}

func TestPurgeRefusesWhatIsNotEligible(t *testing.T) {
	e := newArchivedEnv(t, nil)
	ctx := context.Background()
	open := openConversation(t, e.hub, "alice", "bob")
	if _, err := e.hub.Purge(ctx, open); !errors.Is(err, session.ErrBadTransition) {
		t.Fatalf("Purge of an open session: %v, want BAD_LIFECYCLE_TRANSITION", err)
	}
	src := endedConversation(t, e.hub, nil)
	f, err := e.hub.Fork(ctx, "alice", false, &hubpb.ForkRequest{SessionId: src.String(), AtSeq: 2})
	if err != nil {
		t.Fatal(err)
	}
	fid := session.MustParseID(f.GetSession().GetMeta().GetSessionId())
	if _, err := e.hub.Purge(ctx, src); !errors.Is(err, session.ErrBadTransition) {
		t.Fatalf("Purge of a fork's source: %v, want BAD_LIFECYCLE_TRANSITION", err)
	}
	if _, err := e.hub.CloseSession(ctx, "alice", false, fid, "done"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.hub.Purge(ctx, fid); err != nil {
		t.Fatalf("Purge of the ended fork: %v", err)
	}
	if _, err := e.hub.Purge(ctx, src); err != nil {
		t.Fatalf("Purge of the source once its fork is purged: %v", err)
	}
	if _, err := e.hub.Purge(ctx, session.MustParseID("01940000-0000-7000-8000-00000000ffff")); !errors.Is(err, hub.ErrUnknownSession) {
		t.Fatalf("Purge of an unknown session: %v", err)
	}
}

func TestPurgeFreesTheThreadKeyAndTheOpenKey(t *testing.T) {
	e := newArchivedEnv(t, nil)
	ctx := context.Background()
	first := endedConversation(t, e.hub, &hubpb.OpenRequest{ThreadKey: "t1", IdempotencyKey: "k1"})
	if _, err := e.hub.Purge(ctx, first); err != nil {
		t.Fatal(err)
	}
	o, err := e.hub.Open(ctx, "alice", &hubpb.OpenRequest{Type: "conversation@1", ThreadKey: "t1", IdempotencyKey: "k1",
		Participants: []*hubpb.Participant{{Name: "bob", AutoAccept: true}}})
	if err != nil {
		t.Fatal(err)
	}
	m := o.GetSession().GetMeta()
	if o.GetExisting() || m.GetSessionId() == first.String() || m.GetPreviousSessionId() != "" {
		t.Fatalf("an open after the purge: existing %v, id %s, previous %q; want a new session starting a new thread",
			o.GetExisting(), m.GetSessionId(), m.GetPreviousSessionId())
	}
}

func TestRetentionSweepPurgesWhatPassedItsRetention(t *testing.T) {
	e := newArchivedEnv(t, func(c *hub.Config) {
		c.Retention = hub.Retention{Ended: time.Hour, Rules: []hub.RetentionRule{
			{Labels: map[string]string{"keep": "forever"}},
			{Labels: map[string]string{"keep": "day"}, Keep: 24 * time.Hour}}}
	})
	ctx := context.Background()
	plain := endedConversation(t, e.hub, nil)
	forever := endedConversation(t, e.hub, &hubpb.OpenRequest{Labels: map[string]string{"keep": "forever"}})
	day := endedConversation(t, e.hub, &hubpb.OpenRequest{Labels: map[string]string{"keep": "day"}})
	short := endedConversation(t, e.hub, &hubpb.OpenRequest{Labels: map[string]string{"keep": "day"}, Retention: durationpb.New(time.Minute)})
	imported := endedConversation(t, e.hub, &hubpb.OpenRequest{Labels: map[string]string{hub.LabelImportedFrom: "a.hubarc"}})
	open := openConversation(t, e.hub, "alice", "bob")
	purged := func() map[session.ID]bool {
		out := map[session.ID]bool{}
		for _, id := range []session.ID{plain, forever, day, short, imported, open} {
			_, err := e.hub.Get(ctx, "alice", true, id)
			out[id] = errors.Is(err, hub.ErrPurged)
		}
		return out
	}
	step := func(d time.Duration, want ...session.ID) {
		t.Helper()
		e.clock.Advance(d)
		if _, err := e.hub.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		got := purged()
		for _, id := range want {
			if !got[id] {
				t.Errorf("after %v: %v not purged", d, id)
			}
			delete(got, id)
		}
		for id, p := range got {
			if p {
				t.Errorf("after %v: %v purged", d, id)
			}
		}
	}
	step(59 * time.Second)
	step(2*time.Second, short)
	step(time.Hour, short, plain)
	step(24*time.Hour, short, plain, day)
}

// A sweep walks the log a page at a time: every session past the first
// page is purged too, and the sessions kept on the first page stay.
func TestRetentionSweepWalksEveryPage(t *testing.T) {
	e := newArchivedEnv(t, func(c *hub.Config) {
		c.Retention = hub.Retention{Ended: time.Minute, Sweep: 24 * time.Hour, Rate: 1_000_000, Rules: []hub.RetentionRule{
			{Labels: map[string]string{"keep": "forever"}}}}
	})
	ctx := context.Background()
	const n = 600 // more than a page
	var kept, gone []session.ID
	for i := range n {
		if i%50 == 0 {
			kept = append(kept, endedConversation(t, e.hub, &hubpb.OpenRequest{Labels: map[string]string{"keep": "forever"}}))
			continue
		}
		gone = append(gone, endedConversation(t, e.hub, nil))
	}
	e.clock.Advance(2 * time.Minute)
	got, err := e.hub.Sweep(ctx)
	if err != nil || got != len(gone) {
		t.Fatalf("Sweep = %d, %v; want %d purged", got, err, len(gone))
	}
	for _, id := range gone[len(gone)-3:] {
		if _, err := e.hub.Get(ctx, "alice", true, id); !errors.Is(err, hub.ErrPurged) {
			t.Fatalf("session %v of the last page: %v, want PURGED", id, err)
		}
	}
	for _, id := range kept {
		if _, err := e.hub.Get(ctx, "alice", true, id); err != nil {
			t.Fatalf("kept session %v: %v", id, err)
		}
	}
}

func TestOpenRefusesARetentionUnderASecond(t *testing.T) {
	e := newEnv(t, nil)
	_, err := e.hub.Open(context.Background(), "alice", &hubpb.OpenRequest{Type: "conversation@1",
		Retention: durationpb.New(time.Millisecond)})
	if !errors.Is(err, session.ErrMalformed) {
		t.Fatalf("retention 1ms: %v, want MALFORMED", err)
	}
}

// TestSweepArmsOnlyForARetention: a hub that keeps everything arms no
// sweep (it reads nothing for retention) until it accepts an open with a
// retention of its own, which it then purges in time.
func TestSweepArmsOnlyForARetention(t *testing.T) {
	e := newArchivedEnv(t, nil)
	ctx := context.Background()
	plain := endedConversation(t, e.hub, nil)
	armed := e.clock.Pending()
	e.clock.Advance(time.Hour)
	if n := e.clock.Pending(); n != armed {
		t.Fatalf("%d timers armed, then %d: a hub without retention swept", armed, n)
	}
	short := endedConversation(t, e.hub, &hubpb.OpenRequest{Retention: durationpb.New(30 * time.Second)})
	if n := e.clock.Pending(); n != armed+1 {
		t.Fatalf("%d timers armed after an open with a retention, want %d (the sweep)", n, armed+1)
	}
	e.clock.Advance(time.Minute)
	if _, err := e.hub.Get(ctx, "alice", true, short); !errors.Is(err, hub.ErrPurged) {
		t.Fatalf("the session kept 30s, a minute later: %v", err)
	}
	if _, err := e.hub.Get(ctx, "alice", true, plain); err != nil {
		t.Fatalf("the session kept for ever: %v", err)
	}
}
