package hubhttp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
)

// envelopeEvent checks an "envelope" event and returns its envelope.
func envelopeEvent(t *testing.T, e event) *hubpb.Envelope {
	t.Helper()
	if e.name != "envelope" {
		t.Fatalf("event %q (%s), want envelope", e.name, e.data)
	}
	var env hubpb.Envelope
	if err := hubpb.UnmarshalJSON([]byte(e.data), &env); err != nil {
		t.Fatalf("event data %s: %v", e.data, err)
	}
	if e.id != strconv.FormatUint(env.GetSeq(), 10) {
		t.Fatalf("event id %q for seq %d", e.id, env.GetSeq())
	}
	if want, _ := hubpb.MarshalJSON(&env); string(want) != e.data {
		t.Errorf("data is not the one JSON form:\n got %s\nwant %s", e.data, want)
	}
	return &env
}

// endEvent reads the "end" event.
func endEvent(t *testing.T, s *sse) map[string]any {
	t.Helper()
	e := s.nextEvent(t)
	if e.name != "end" {
		t.Fatalf("event %q (%s), want end", e.name, e.data)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(e.data), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEventsResume reads a session's events, drops the stream, sends
// more, resumes with Last-Event-ID and checks there is no gap and no
// duplicate up to the end, then that a reconnect after the end is told to
// stop.
func TestEventsResume(t *testing.T) {
	srv := start(t, false)
	ctx := context.Background()
	alice := dial(t, srv, "alice")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	say := func(text string) {
		t.Helper()
		if _, err := alice.SendText(ctx, s.ID(), text); err != nil {
			t.Fatal(err)
		}
	}
	say("one")
	say("two")
	path := "/v1/sessions/" + s.ID() + "/events"
	first := openEvents(t, srv, path+"?from=1", "", as("operator"))
	if ct := first.resp.Header.Get("Content-Type"); first.resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("events: %d %q", first.resp.StatusCode, ct)
	}
	var seqs []uint64
	for len(seqs) < 3 {
		seqs = append(seqs, envelopeEvent(t, first.nextEvent(t)).GetSeq())
	}
	first.close()
	say("three")
	say("four")
	second := openEvents(t, srv, path+"?from=1", strconv.FormatUint(seqs[len(seqs)-1], 10), as("operator"))
	for len(seqs) < 6 {
		seqs = append(seqs, envelopeEvent(t, second.nextEvent(t)).GetSeq())
	}
	if _, err := alice.CloseSession(ctx, s.ID(), "enough"); err != nil {
		t.Fatal(err)
	}
	closed := envelopeEvent(t, second.nextEvent(t))
	seqs = append(seqs, closed.GetSeq())
	for i, seq := range seqs {
		if seq != uint64(i+1) {
			t.Fatalf("seqs %v: a gap or a duplicate", seqs)
		}
	}
	if closed.GetType() != "session_closed" {
		t.Fatalf("last envelope %v", closed)
	}
	end := endEvent(t, second)
	if end["reason"] != "session_ended" || end["state"] != "CLOSED" || end["close_reason"] != "enough" || end["last_seq"] != 7.0 {
		t.Errorf("end %v", end)
	}
	if _, err := second.next(); err == nil {
		t.Error("the stream goes on after its end")
	}
	again := openEvents(t, srv, path, "7", as("operator"))
	if again.resp.StatusCode != http.StatusNoContent {
		t.Errorf("a reconnect after the end: %d, want 204", again.resp.StatusCode)
	}
	fresh := openEvents(t, srv, path+"?from=8", "", as("alice"))
	if end := endEvent(t, fresh); end["reason"] != "session_ended" || end["last_seq"] != 7.0 {
		t.Errorf("a fresh stream after the end: %v", end)
	}
}

// TestEventsParticipant: a participant's stream shows what it may read,
// and a stranger gets none.
func TestEventsParticipant(t *testing.T) {
	srv := start(t, false)
	ctx := context.Background()
	alice := dial(t, srv, "alice")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeDiscussion, Participants: agentsdk.AutoAccepted("bob", "carol")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Send(ctx, s.ID(), &hubpb.Envelope{Type: "text", Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: "for carol"}},
		Audience: &hubpb.Audience{Names: []string{"carol"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := dial(t, srv, "bob").SendText(ctx, s.ID(), "for all"); err != nil {
		t.Fatal(err)
	}
	bob := openEvents(t, srv, "/v1/sessions/"+s.ID()+"/events", "", as("bob"))
	var texts []string
	for len(texts) < 1 {
		if env := envelopeEvent(t, bob.nextEvent(t)); env.GetType() == "text" {
			texts = append(texts, env.GetText().GetText())
		}
	}
	if texts[0] != "for all" {
		t.Errorf("bob saw %q first", texts)
	}
	stranger := do(t, srv, call{method: "GET", path: "/v1/sessions/" + s.ID() + "/events", header: as("mallory")})
	if stranger.status != http.StatusForbidden || stranger.reason(t) != "PERMISSION_DENIED" {
		t.Errorf("mallory's stream: %d %s", stranger.status, stranger.body)
	}
}

// TestEventsHeartbeat: an idle stream gets comment lines.
func TestEventsHeartbeat(t *testing.T) {
	srv := start(t, false, func(c *server.Config) { c.Heartbeat = 10 * time.Millisecond })
	s, err := dial(t, srv, "alice").Open(context.Background(), agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	stream := openEvents(t, srv, "/v1/sessions/"+s.ID()+"/events?from=3", "", as("alice"))
	for beats := 0; beats < 2; {
		e, err := stream.next()
		if err != nil {
			t.Fatal(err)
		}
		if e == (event{}) {
			continue // the retry hint
		}
		if !e.comment || e.data != "heartbeat" {
			t.Fatalf("%+v on an idle stream", e)
		}
		beats++
	}
}

// TestEventsDraining: a hub that stops ends its streams saying so, and
// that a reconnect goes on.
func TestEventsDraining(t *testing.T) {
	srv := start(t, false)
	s, err := dial(t, srv, "alice").Open(context.Background(), agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	stream := openEvents(t, srv, "/v1/sessions/"+s.ID()+"/events", "", as("alice"))
	envelopeEvent(t, stream.nextEvent(t))
	envelopeEvent(t, stream.nextEvent(t))
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	end := endEvent(t, stream)
	if end["reason"] != "DRAINING" || end["resume"] != true || end["last_seq"] != 2.0 {
		t.Errorf("end %v", end)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestEventsRefused: what an events request can get wrong.
func TestEventsRefused(t *testing.T) {
	srv := start(t, false)
	s, err := dial(t, srv, "alice").Open(context.Background(), agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	path := "/v1/sessions/" + s.ID() + "/events"
	for _, tc := range []struct {
		name   string
		c      call
		status int
		reason string
	}{
		{"anonymous", call{method: "GET", path: path}, 401, "UNAUTHENTICATED"},
		{"unknown session", call{method: "GET", path: "/v1/sessions/0190a0c4-8f4e-7a2b-9c3d-4e5f60718293/events", header: as("alice")}, 404, "UNKNOWN_SESSION"},
		{"bad from", call{method: "GET", path: path + "?from=x", header: as("alice")}, 400, "MALFORMED"},
		{"bad Last-Event-ID", call{method: "GET", path: path, header: map[string]string{"X-Hubd-Agent": "alice", "Last-Event-ID": "x"}}, 400, "MALFORMED"},
		{"tree, a stranger", call{method: "GET", path: path + "?tree=true", header: as("mallory")}, 403, "PERMISSION_DENIED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := do(t, srv, tc.c); r.status != tc.status || r.reason(t) != tc.reason {
				t.Errorf("%d %s; want %d %q", r.status, r.body, tc.status, tc.reason)
			}
		})
	}
}

// treeEvent reads an "envelope" event of a tree stream: its id must be the
// stream's cursors (the root's seq, then SESSION:SEQ per descendant).
func treeEvent(t *testing.T, e event, root string, cursors map[string]uint64) *hubpb.Envelope {
	t.Helper()
	if e.name != "envelope" {
		t.Fatalf("event %q (%s), want envelope", e.name, e.data)
	}
	var env hubpb.Envelope
	if err := hubpb.UnmarshalJSON([]byte(e.data), &env); err != nil {
		t.Fatalf("event data %s: %v", e.data, err)
	}
	cursors[env.GetSessionId()] = env.GetSeq()
	want := strconv.FormatUint(cursors[root], 10)
	var kids []string
	for id := range cursors {
		if id != root {
			kids = append(kids, id)
		}
	}
	slices.Sort(kids)
	for _, id := range kids {
		want += "," + id + ":" + strconv.FormatUint(cursors[id], 10)
	}
	if e.id != want {
		t.Fatalf("event id %q after %s seq %d, want %q", e.id, env.GetSessionId(), env.GetSeq(), want)
	}
	return &env
}

// TestEventsTree streams a root and its descendants, drops the stream,
// resumes with the last event id, and checks that every session's seqs
// came once each, in order, with no gap, to the end of the tree; then that
// a reconnect after the end is told to stop, and that a terse tree stream
// shows only the descendants' notices.
func TestEventsTree(t *testing.T) {
	srv := start(t, false)
	ctx := context.Background()
	alice := dial(t, srv, "alice")
	root, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	child, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("carol"), Parent: root.ID()})
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := dial(t, srv, "carol").Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("dave"), Parent: child.ID()})
	if err != nil {
		t.Fatal(err)
	}
	say := func(c *agentsdk.Client, sid, text string) {
		t.Helper()
		if _, err := c.SendText(ctx, sid, text); err != nil {
			t.Fatal(err)
		}
	}
	say(alice, root.ID(), "root one")
	say(alice, child.ID(), "child one")
	path := "/v1/sessions/" + root.ID() + "/events?tree=true&verbose=true"
	cursors := map[string]uint64{}
	seen := map[string][]uint64{}
	var lastID string
	read := func(s *sse) *hubpb.Envelope {
		t.Helper()
		e := s.nextEvent(t)
		env := treeEvent(t, e, root.ID(), cursors)
		seen[env.GetSessionId()] = append(seen[env.GetSessionId()], env.GetSeq())
		lastID = e.id
		return env
	}
	first := openEvents(t, srv, path, "", as("operator"))
	for cursors[child.ID()] < 2 { // part of the child's log, so the resume needs its cursor
		read(first)
	}
	first.close()
	say(alice, child.ID(), "child two")
	say(dial(t, srv, "dave"), grandchild.ID(), "grandchild one")
	say(alice, root.ID(), "root two")
	second := openEvents(t, srv, path, lastID, as("operator"))
	if _, err := alice.CloseSession(ctx, root.ID(), "enough"); err != nil {
		t.Fatal(err)
	}
	var end map[string]any
	for end == nil {
		e := second.nextEvent(t)
		if e.name == "end" {
			if err := json.Unmarshal([]byte(e.data), &end); err != nil {
				t.Fatal(err)
			}
			break
		}
		env := treeEvent(t, e, root.ID(), cursors)
		seen[env.GetSessionId()] = append(seen[env.GetSessionId()], env.GetSeq())
		lastID = e.id
	}
	for _, sid := range []string{root.ID(), child.ID(), grandchild.ID()} {
		info, err := alice.GetSession(ctx, sid)
		if sid == grandchild.ID() {
			info, err = dial(t, srv, "dave").GetSession(ctx, sid)
		}
		if err != nil {
			t.Fatal(err)
		}
		if info.GetState() != "CLOSED" {
			t.Errorf("%s is %s", sid, info.GetState())
		}
		got := seen[sid]
		for i, seq := range got {
			if seq != uint64(i+1) {
				t.Fatalf("session %s: seqs %v: a gap or a duplicate", sid, got)
			}
		}
		if uint64(len(got)) != info.GetSeq() {
			t.Errorf("session %s: streamed %v, its log has %d", sid, got, info.GetSeq())
		}
	}
	if end["reason"] != "session_ended" || end["state"] != "CLOSED" || end["close_reason"] != "enough" || end["last_event_id"] != lastID {
		t.Errorf("end %v (last id %q)", end, lastID)
	}
	if _, err := second.next(); err == nil {
		t.Error("the stream goes on after its end")
	}
	again := openEvents(t, srv, path, lastID, as("operator"))
	if again.resp.StatusCode != http.StatusNoContent {
		t.Errorf("a reconnect after the end: %d, want 204", again.resp.StatusCode)
	}
	// Resumed past the root's end but with no cursor for its descendants,
	// the stream still hands out all of theirs, then ends.
	rootOnly, _, _ := strings.Cut(lastID, ",")
	late := openEvents(t, srv, path, rootOnly, as("operator"))
	if late.resp.StatusCode != http.StatusOK {
		t.Fatalf("a resume with the descendants left: %d", late.resp.StatusCode)
	}
	lc := map[string]uint64{root.ID(): cursors[root.ID()]}
	n := 0
	for {
		e := late.nextEvent(t)
		if e.name == "end" {
			break
		}
		if env := treeEvent(t, e, root.ID(), lc); env.GetSessionId() == root.ID() {
			t.Errorf("root seq %d again", env.GetSeq())
		}
		n++
	}
	if want := len(seen[child.ID()]) + len(seen[grandchild.ID()]); n != want {
		t.Errorf("%d descendants' envelopes after the root's end, want %d", n, want)
	}
	// A terse stream from the start, as alice: the root's envelopes and
	// the descendants' notices only (the grandchild's delegation record in
	// the child), then the end.
	terse := openEvents(t, srv, "/v1/sessions/"+root.ID()+"/events?tree=true", "", as("alice"))
	tc := map[string]uint64{}
	var notices []string
	for {
		e := terse.nextEvent(t)
		if e.name == "end" {
			break
		}
		if env := treeEvent(t, e, root.ID(), tc); env.GetSessionId() != root.ID() {
			notices = append(notices, env.GetType())
		}
	}
	if !slices.Equal(notices, []string{"delegation"}) {
		t.Errorf("a terse stream shows the descendants' %v, want their delegation only", notices)
	}
}

// TestTreeEventsRefused: what a tree stream's request can get wrong.
func TestTreeEventsRefused(t *testing.T) {
	srv := start(t, false)
	s, err := dial(t, srv, "alice").Open(context.Background(), agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	path := "/v1/sessions/" + s.ID() + "/events"
	for _, tc := range []struct {
		name, query, lastID string
	}{
		{"bad tree", "?tree=maybe", ""},
		{"verbose without tree", "?verbose=true", ""},
		{"bad root seq", "?tree=true", "x,0190a0c4-8f4e-7a2b-9c3d-4e5f60718293:1"},
		{"bad session", "?tree=true", "3,nope:1"},
		{"bad cursor", "?tree=true", "3,0190a0c4-8f4e-7a2b-9c3d-4e5f60718293:x"},
		{"no cursor", "?tree=true", "3,0190a0c4-8f4e-7a2b-9c3d-4e5f60718293"},
		{"the nil session", "?tree=true", "3,00000000-0000-0000-0000-000000000000:1"},
		{"tree id on a session stream", "", "3,0190a0c4-8f4e-7a2b-9c3d-4e5f60718293:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := as("alice")
			if tc.lastID != "" {
				h["Last-Event-ID"] = tc.lastID
			}
			if r := do(t, srv, call{method: "GET", path: path + tc.query, header: h}); r.status != 400 || r.reason(t) != "MALFORMED" {
				t.Errorf("%d %s; want 400 MALFORMED", r.status, r.body)
			}
		})
	}
}
