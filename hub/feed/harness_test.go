package feed_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/fakeclock"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
	"github.com/hubd/hubd/wal"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ids returns a generator of deterministic, time-ordered UUIDv7-shaped ids.
func ids() func() uuid.UUID {
	var n atomic.Uint64
	return func() uuid.UUID {
		var u uuid.UUID
		binary.BigEndian.PutUint64(u[8:], n.Add(1))
		copy(u[:6], []byte{0x01, 0x94, 0x00, 0x00, 0x00, 0x00})
		u[6] = 0x70
		u[8] = 0x80 | (u[8] & 0x3f)
		return u
	}
}

// served is a hub with its feed, as the server wires them: a test calls
// the write side (Send, Open, ...) and the reads (Subscribe, View, ...)
// on one value.
type served struct {
	*hub.Hub
	*feed.Feed
}

// openServed is feed.Open with the feed's defaults.
func openServed(ctx context.Context, cfg hub.Config) (*served, error) {
	h, f, err := feed.Open(ctx, cfg, feed.Config{})
	if err != nil {
		return nil, err
	}
	return &served{h, f}, nil
}

// env is a hub and its feed on a real badger log in a temp dir, with a
// fake clock and deterministic ids, that a test can restart.
type env struct {
	t       *testing.T
	dir     string
	wal     *wal.Log
	clock   *fakeclock.Clock
	hub     *served
	cfg     hub.Config
	feedCfg feed.Config
}

func newEnv(t *testing.T, tweak func(*hub.Config)) *env {
	t.Helper()
	return newEnvWith(t, tweak, nil)
}

// newFeedEnv is newEnv with the feed's bounds tweaked.
func newFeedEnv(t *testing.T, tweak func(*feed.Config)) *env {
	t.Helper()
	return newEnvWith(t, nil, tweak)
}

func newEnvWith(t *testing.T, tweak func(*hub.Config), tweakFeed func(*feed.Config)) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clock: fakeclock.New(epoch)}
	e.cfg = hub.Config{Adapters: server.Adapters(nil), Clock: e.clock, NewID: ids()}
	if tweak != nil {
		tweak(&e.cfg)
	}
	if tweakFeed != nil {
		tweakFeed(&e.feedCfg)
	}
	e.open()
	t.Cleanup(e.shutdown)
	return e
}

func (e *env) open() { e.openWith(nil) }

// openWith opens the hub and its log; wrap, if set, is the hub's log
// around the badger log (which it reads and writes through).
func (e *env) openWith(wrap interface{ wrapLog(hub.Log) hub.Log }) {
	e.t.Helper()
	l, err := wal.Open(wal.Options{Dir: e.dir, NoSync: true})
	if err != nil {
		e.t.Fatal(err)
	}
	e.wal = l
	cfg := e.cfg
	cfg.Log = server.WALLog(l)
	if wrap != nil {
		cfg.Log = wrap.wrapLog(cfg.Log)
	}
	h, f, err := feed.Open(context.Background(), cfg, e.feedCfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.hub = &served{h, f}
}

func (e *env) shutdown() {
	if e.hub != nil {
		e.hub.Close()
		e.hub = nil
	}
	if e.wal != nil {
		e.wal.Close()
		e.wal = nil
	}
}

// restart closes the hub and its log and opens both again from disk.
func (e *env) restart() {
	e.shutdown()
	e.open()
}

// textEnv returns a text envelope.
func textEnv(text string) *hubpb.Envelope {
	return &hubpb.Envelope{Type: session.EventText, Payload: &hubpb.Envelope_Text{Text: &hubpb.Text{Text: text}}}
}

// openConversation opens a conversation of creator with other (who
// auto-accepts), with these expectations (none: no timers), and returns
// its id.
func openConversation(t testing.TB, h *served, creator, other string, exp ...*hubpb.Expectation) session.ID {
	t.Helper()
	o, err := h.Open(context.Background(), creator, &hubpb.OpenRequest{Type: "conversation@1",
		Participants: []*hubpb.Participant{{Name: other, AutoAccept: true}},
		Expectations: &hubpb.Expectations{Items: exp}})
	if err != nil {
		t.Fatal(err)
	}
	return session.MustParseID(o.GetSession().GetMeta().GetSessionId())
}

// conversationWith opens a conversation as creator with other auto-accepted
// and returns its id.
func conversationWith(tb testing.TB, h *served, creator, other string) session.ID {
	tb.Helper()
	return openConversation(tb, h, creator, other)
}

func mustID(tb testing.TB, s string) session.ID {
	tb.Helper()
	id, err := session.ParseID(s)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// wantLimit checks that err is a refusal at limit (its flag named in the
// message with its value) with reason, and that it says so as a
// *hub.LimitError.
func wantLimit(t *testing.T, err error, reason error, flag string, value int) {
	t.Helper()
	var le *hub.LimitError
	if !errors.Is(err, reason) || !errors.As(err, &le) || le.Flag != flag || le.Value != int64(value) ||
		!strings.Contains(err.Error(), fmt.Sprintf("the limit is %d (%s)", value, flag)) {
		t.Fatalf("got %v; want %v at %s %d, naming it", err, reason, flag, value)
	}
	if md := le.ErrorMetadata(); md["limit"] != strings.TrimPrefix(flag, "--") || md["value"] != fmt.Sprint(value) {
		t.Fatalf("metadata %v; want limit %s, value %d", md, flag, value)
	}
}
