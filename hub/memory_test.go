package hub_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// countingLog counts the per-session scans the hub makes (hydrate folds a
// session with one).
type countingLog struct {
	hub.Log
	scans atomic.Int64
}

func (c *countingLog) Scan(ctx context.Context, s [16]byte, from uint64, fn func(uint64, []byte) error) error {
	c.scans.Add(1)
	return c.Log.Scan(ctx, s, from, fn)
}

func (c *countingLog) ScanRange(ctx context.Context, first, last [16]byte, fn func([16]byte, uint64, []byte) error) error {
	c.scans.Add(1 << 20) // a bulk scan: what an indexed log never needs
	return c.Log.ScanRange(ctx, first, last, fn)
}

// snapshotReads returns what every read of a session answers, as bytes:
// Get, the whole log, the operator's listing entry, the view and the tree.
func snapshotReads(t *testing.T, h *served, id session.ID, agent string) []byte {
	t.Helper()
	ctx := context.Background()
	var out []byte
	add := func(m proto.Message) {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	info, err := h.Get(ctx, agent, false, id)
	if err != nil {
		t.Fatalf("get %v: %v", id, err)
	}
	add(info)
	envs, _, err := h.ReadLog(ctx, agent, false, id, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range envs {
		add(e)
	}
	v, err := h.View(ctx, agent, id, feed.ViewOptions{Name: feed.ViewFull})
	if err != nil {
		t.Fatal(err)
	}
	add(v)
	tr, err := h.GetTree(ctx, agent, false, id)
	if err != nil {
		t.Fatal(err)
	}
	tr.Duration = nil // to now for a live session
	add(tr)
	return out
}

// listAll pages through a listing.
func listAll(t *testing.T, h *served, agent string, operator bool, f feed.Filter) []*hubpb.SessionInfo {
	t.Helper()
	var all []*hubpb.SessionInfo
	for {
		page, next, err := h.List(context.Background(), agent, operator, f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if next.IsZero() {
			return all
		}
		f.After = next
	}
}

// TestEndedSessionsLeaveMemory: a session that ends leaves memory (the
// hub holds only live sessions and a bounded cache of ended ones); a
// restart folds only the live sessions; every read of an ended session
// (get, log, view, tree, listings) answers after the restart with the
// same bytes as before it, and a closed session stays closed.
func TestEndedSessionsLeaveMemory(t *testing.T) {
	const total, open, cache = 120, 7, 8
	e := newEnv(t, func(c *hub.Config) { c.EndedCache = cache })
	ctx := context.Background()
	var ids []session.ID
	for i := range total {
		id := openConversation(t, e.hub, "a", "b")
		env := textEnv("hello")
		env.ClientMsgId = "m1"
		if _, err := e.hub.Send(ctx, "a", id, env); err != nil {
			t.Fatal(err)
		}
		if i >= open {
			if _, err := e.hub.CloseSession(ctx, "a", false, id, ""); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, id)
	}
	if live, cached := e.hub.Resident(); live != open || cached > cache {
		t.Fatalf("resident after closing %d of %d: live %d, cached %d (cache %d)", total-open, total, live, cached, cache)
	}
	before := map[session.ID][]byte{}
	for _, id := range ids {
		before[id] = snapshotReads(t, e.hub, id, "b")
	}
	if _, cached := e.hub.Resident(); cached > cache {
		t.Fatalf("cached %d ended sessions after reading them all, the bound is %d", cached, cache)
	}
	listed := listAll(t, e.hub, "", true, feed.Filter{Limit: 7})

	e.shutdown()
	cl := &countingLog{}
	e.cfg.Log = nil
	e.open()
	cl.Log = e.log
	e.hub.Close()
	h, err := openServed(ctx, withLog(e.cfg, cl))
	if err != nil {
		t.Fatal(err)
	}
	e.hub = h
	if n := cl.scans.Load(); n != open {
		t.Fatalf("hydrate made %d scans, want one per live session (%d)", n, open)
	}
	if live, cached := h.Resident(); live != open || cached != 0 {
		t.Fatalf("resident after restart: live %d, cached %d; want %d and 0", live, cached, open)
	}
	for _, id := range ids {
		if got := snapshotReads(t, h, id, "b"); !bytes.Equal(got, before[id]) {
			t.Fatalf("session %v reads differently after the restart", id)
		}
	}
	if live, cached := h.Resident(); live != open || cached > cache {
		t.Fatalf("resident after reading every session: live %d, cached %d (cache %d)", live, cached, cache)
	}
	again := listAll(t, h, "", true, feed.Filter{Limit: 7})
	if len(again) != total || !slices.EqualFunc(listed, again, func(a, b *hubpb.SessionInfo) bool { return proto.Equal(a, b) }) {
		t.Fatalf("operator listing after restart: %d sessions, want the %d listed before, equal", len(again), len(listed))
	}
	if got := listAll(t, h, "b", false, feed.Filter{State: session.StateClosed}); len(got) != total-open {
		t.Fatalf("b lists %d closed sessions, want %d", len(got), total-open)
	}
	if got := listAll(t, h, "b", false, feed.Filter{State: session.StateOpen}); len(got) != open {
		t.Fatalf("b lists %d open sessions, want %d", len(got), open)
	}
	if got := listAll(t, h, "c", false, feed.Filter{}); len(got) != 0 {
		t.Fatalf("c, in no session, lists %d", len(got))
	}

	// Closed stays closed; a retried send is still answered as a duplicate.
	closed := ids[total-1]
	if _, err := h.Send(ctx, "a", closed, textEnv("again")); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("send to a closed session after restart: %v", err)
	}
	dup := textEnv("hello")
	dup.ClientMsgId = "m1"
	if ack, err := h.Send(ctx, "a", closed, dup); err != nil || !ack.GetDuplicate() || ack.GetSeq() != 3 {
		t.Fatalf("retried send to a closed session: %v %v", ack, err)
	}
	if _, err := h.Get(ctx, "a", false, session.MustParseID("01940000-0000-7000-8000-00000000ffff")); !errors.Is(err, hub.ErrUnknownSession) {
		t.Fatalf("get of an unknown session: %v", err)
	}
	// The live ones go on.
	if _, err := h.Send(ctx, "b", ids[0], textEnv("still here")); err != nil {
		t.Fatal(err)
	}
}

// withLog returns cfg with its log.
func withLog(cfg hub.Config, l hub.Log) hub.Config {
	cfg.Log = l
	return cfg
}

// TestEndedKeysAfterRestart: an open key and a thread key of sessions
// that ended still answer after a restart, from the index in the log.
func TestEndedKeysAfterRestart(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	req := func() *hubpb.OpenRequest {
		return &hubpb.OpenRequest{Type: "conversation@1", IdempotencyKey: "k1", ThreadKey: "th",
			Participants: []*hubpb.Participant{{Name: "b", AutoAccept: true}}}
	}
	first, err := e.hub.Open(ctx, "a", req())
	if err != nil {
		t.Fatal(err)
	}
	id := session.MustParseID(first.GetSession().GetMeta().GetSessionId())
	if _, err := e.hub.CloseSession(ctx, "a", false, id, ""); err != nil {
		t.Fatal(err)
	}
	e.restart()
	again, err := e.hub.Open(ctx, "a", req())
	if err != nil || !again.GetExisting() || again.GetSession().GetMeta().GetSessionId() != id.String() || again.GetSession().GetState() != "CLOSED" {
		t.Fatalf("open with the key of a closed session after restart: %v %v", again, err)
	}
	next, err := e.hub.Open(ctx, "a", &hubpb.OpenRequest{Type: "conversation@1", ThreadKey: "th",
		Participants: []*hubpb.Participant{{Name: "b", AutoAccept: true}}})
	if err != nil || next.GetExisting() || next.GetSession().GetMeta().GetPreviousSessionId() != id.String() {
		t.Fatalf("the thread's next session after restart: %v %v", next, err)
	}
}

// TestEndedChildrenOfLiveParent: a parent still open with ended children
// serves after a restart: its tree lists them, a view with the delegate
// history reads them, it delegates again and closes; then the ended tree
// reads whole.
func TestEndedChildrenOfLiveParent(t *testing.T) {
	e := newEnv(t, func(c *hub.Config) { c.EndedCache = 1 })
	ctx := context.Background()
	root := openConversation(t, e.hub, "a", "b")
	delegate := func(task string) session.ID {
		t.Helper()
		resp, err := e.hub.Delegate(ctx, "a", &hubpb.DelegateRequest{SessionId: root.String(), Mode: session.ModeBackground, Children: []*hubpb.OpenRequest{{
			Type: "conversation@1", Participants: []*hubpb.Participant{{Name: "c", AutoAccept: true}}, Task: task}}})
		if err != nil {
			t.Fatal(err)
		}
		return session.MustParseID(resp.GetChildren()[0].GetMeta().GetSessionId())
	}
	finish := func(child session.ID) {
		t.Helper()
		if _, err := e.hub.CloseSession(ctx, "a", false, child, ""); err != nil {
			t.Fatal(err)
		}
	}
	k1 := delegate("one")
	finish(k1)
	k2 := delegate("two")
	finish(k2)
	k3 := delegate("three") // left open
	if live, _ := e.hub.Resident(); live != 2 {
		t.Fatalf("live sessions: %d, want the root and its open child", live)
	}
	treeBefore, err := e.hub.GetTree(ctx, "a", false, root)
	if err != nil {
		t.Fatal(err)
	}
	e.restart()
	if live, cached := e.hub.Resident(); live != 2 || cached != 0 {
		t.Fatalf("after restart: live %d, cached %d", live, cached)
	}
	tree, err := e.hub.GetTree(ctx, "a", false, root)
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, c := range tree.GetChildren() {
		kids = append(kids, c.GetSession().GetMeta().GetSessionId()+" "+c.GetSession().GetState())
	}
	want := []string{k1.String() + " CLOSED", k2.String() + " CLOSED", k3.String() + " OPEN"}
	if !slices.Equal(kids, want) || len(treeBefore.GetChildren()) != 3 {
		t.Fatalf("children after restart: %v, want %v", kids, want)
	}
	v, err := e.hub.View(ctx, "c", k3, feed.ViewOptions{Name: feed.ViewFull, History: feed.HistoryDelegate})
	if err != nil {
		t.Fatal(err)
	}
	var from []string
	for _, it := range v.GetItems() {
		from = append(from, it.GetSessionId())
	}
	if !slices.Contains(from, k1.String()) || !slices.Contains(from, k2.String()) {
		t.Fatalf("the delegate history of %v reads sessions %v, want %v and %v in it", k3, from, k1, k2)
	}
	k4 := delegate("four")
	if _, err := e.hub.CloseSession(ctx, "a", false, root, ""); err != nil {
		t.Fatal(err)
	}
	if live, _ := e.hub.Resident(); live != 0 {
		t.Fatalf("live sessions after the root closed: %d", live)
	}
	e.restart()
	tree, err = e.hub.GetTree(ctx, "", true, root)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tree.GetChildren()); n != 4 || tree.GetChildren()[3].GetSession().GetMeta().GetSessionId() != k4.String() ||
		tree.GetChildren()[3].GetSession().GetCloseReason() != hub.ReasonParentClosed {
		t.Fatalf("the ended tree after restart: %v", tree)
	}
	w, err := e.hub.Watch(ctx, "", true, root, feed.WatchOptions{Tree: true, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	seen := map[string]bool{}
	for {
		d, err := w.Next(ctx)
		if err != nil {
			break
		}
		seen[d.GetEnvelope().GetSessionId()] = true
	}
	if len(seen) != 5 {
		t.Fatalf("a tree watch of the ended tree saw %d sessions, want 5", len(seen))
	}
}

// TestEndedSessionQuarantined: an ended session whose log is damaged is
// quarantined when a read loads it, and answers with why.
func TestEndedSessionQuarantined(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b")
	if _, err := e.hub.CloseSession(ctx, "a", false, id, ""); err != nil {
		t.Fatal(err)
	}
	info, err := e.hub.Get(ctx, "a", false, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.log.Append(ctx, hub.LogWrite{Session: id, Records: []hub.LogRecord{{Seq: info.GetSeq() + 1, Data: []byte("garbage")}}}); err != nil {
		t.Fatal(err)
	}
	e.restart()
	if _, err := e.hub.Get(ctx, "a", false, id); !errors.Is(err, hub.ErrQuarantined) {
		t.Fatalf("get of a damaged ended session: %v", err)
	}
	if q := e.hub.Quarantined(); q[id] == nil {
		t.Fatalf("quarantined: %v", q)
	}
}

// TestLogWithoutIndex: a log written before the hub kept its index is
// folded whole once, indexed, and from then on served as any other: its
// ended sessions out of memory, listed and readable.
func TestLogWithoutIndex(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	live := openConversation(t, e.hub, "a", "b")
	ended := openConversation(t, e.hub, "a", "b")
	if _, err := e.hub.CloseSession(ctx, "a", false, ended, ""); err != nil {
		t.Fatal(err)
	}
	before := snapshotReads(t, e.hub, ended, "b")
	e.hub.Close()
	e.hub = nil
	var keys []hub.IndexEntry
	err := e.log.IndexScan(ctx, nil, nil, func(k, _ []byte) error {
		keys = append(keys, hub.IndexEntry{Key: bytes.Clone(k), Delete: true})
		return nil
	})
	if err != nil || len(keys) < 5 {
		t.Fatalf("index: %d keys, %v", len(keys), err)
	}
	if err := e.log.PutIndex(ctx, keys); err != nil {
		t.Fatal(err)
	}
	e.restart()
	if n, cached := e.hub.Resident(); n != 1 || cached != 0 {
		t.Fatalf("after indexing: live %d, cached %d", n, cached)
	}
	if got := snapshotReads(t, e.hub, ended, "b"); !bytes.Equal(got, before) {
		t.Fatal("the ended session reads differently after indexing")
	}
	if got := listAll(t, e.hub, "b", false, feed.Filter{}); len(got) != 2 {
		t.Fatalf("b lists %d sessions", len(got))
	}
	e.restart()
	if n, _ := e.hub.Resident(); n != 1 {
		t.Fatalf("second start: live %d", n)
	}
	if _, err := e.hub.Send(ctx, "a", live, textEnv("on")); err != nil {
		t.Fatal(err)
	}
}

// TestSubscribeEnded: a subscription catches up on an ended session it
// names a cursor for, and with Ended on all it took part in, from the log.
func TestSubscribeEnded(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id := openConversation(t, e.hub, "a", "b")
	if _, err := e.hub.Send(ctx, "a", id, textEnv("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.hub.CloseSession(ctx, "a", false, id, ""); err != nil {
		t.Fatal(err)
	}
	e.restart()
	for _, opts := range []feed.SubscribeOptions{{Cursors: map[session.ID]uint64{id: 2}}, {Ended: true}} {
		sub, err := e.hub.Subscribe(ctx, "b", opts)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for {
			c, cancel := context.WithTimeout(ctx, 0)
			d, err := sub.Next(c)
			cancel()
			if err != nil {
				break
			}
			got = append(got, d.GetEnvelope().GetType())
		}
		sub.Close()
		if len(got) == 0 || got[len(got)-1] != session.EventClosed {
			t.Fatalf("catch-up with %+v: %v, want it to end with the close", opts, got)
		}
	}
}
