package hub_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
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

// faultyLog wraps a log and fails appends on demand.
type faultyLog struct {
	hub.Log
	mu      sync.Mutex
	failIn  int // fail the failIn-th append from now (1 = the next); 0 = never
	loseIn  int // write the loseIn-th append from now, then report it failed
	appends int
	full    bool // refuse every append as a full disk would: nothing written
}

var (
	errInjected   = errors.New("injected append failure")
	errAnswerLost = errors.New("injected loss of the answer to an append that was written")
)

func (f *faultyLog) Append(ctx context.Context, writes ...hub.LogWrite) error {
	f.mu.Lock()
	f.appends++
	fail, lose := false, false
	if f.failIn > 0 {
		f.failIn--
		fail = f.failIn == 0
	}
	if f.loseIn > 0 {
		f.loseIn--
		lose = f.loseIn == 0
	}
	full := f.full
	f.mu.Unlock()
	if full {
		return fmt.Errorf("wal: disk full: 1 MiB free, the reserve is 256 MiB: %w", hub.ErrDiskFull)
	}
	if fail {
		return errInjected
	}
	if err := f.Log.Append(ctx, writes...); err != nil || !lose {
		return err
	}
	return errAnswerLost
}

// ScanBack is the wrapped log's, when it reads newest first.
func (f *faultyLog) ScanBack(ctx context.Context, s [16]byte, to uint64, fn func(uint64, []byte) error) error {
	back, ok := f.Log.(hub.BackScanner)
	if !ok {
		return errors.New("the wrapped log does not read newest first")
	}
	return back.ScanBack(ctx, s, to, fn)
}

func (f *faultyLog) setFull(full bool) {
	f.mu.Lock()
	f.full = full
	f.mu.Unlock()
}

func (f *faultyLog) failNth(n int) {
	f.mu.Lock()
	f.failIn = n
	f.mu.Unlock()
}

// loseNth makes the nth append from now land in the log and then fail, as
// one whose answer a replicated log lost (a timeout after the write) does.
func (f *faultyLog) loseNth(n int) {
	f.mu.Lock()
	f.loseIn = n
	f.mu.Unlock()
}

// served is a hub with its feed, as the server wires them: a test calls
// the write side (Send, Open, ...) and the reads (Subscribe, Get, ...) on
// one value.
type served struct {
	*hub.Hub
	*feed.Feed
}

// openServed is hub.New with a feed.
func openServed(ctx context.Context, cfg hub.Config) (*served, error) {
	return openServedWith(ctx, hub.New, cfg, feed.Config{})
}

// openServedWith makes a hub with newHub and its feed with fc.
func openServedWith(ctx context.Context, newHub func(context.Context, hub.Config) (*hub.Hub, error), cfg hub.Config, fc feed.Config) (*served, error) {
	var f *feed.Feed
	cfg.Feed = func(h *hub.Hub) hub.Consumer {
		f = feed.New(h, fc)
		return f
	}
	h, err := newHub(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &served{h, f}, nil
}

// env is a hub on a real badger log in a temp dir, with a fake clock and
// deterministic ids, that a test can restart.
type env struct {
	t       *testing.T
	dir     string
	wal     *wal.Log
	log     *faultyLog
	clock   *fakeclock.Clock
	hub     *served
	newID   func() uuid.UUID
	cfg     hub.Config
	feedCfg feed.Config
	// timedIDs: the ids are UUIDv7s of the fake clock's time (newTimedEnv).
	timedIDs bool
}

func newEnv(t *testing.T, tweak func(*hub.Config)) *env {
	t.Helper()
	return newEnvWith(t, false, tweak, nil)
}

// newTimedEnv is newEnv with ids that are UUIDv7s of the fake clock's time
// (ms), increasing, as the default ids are of the wall clock's.
func newTimedEnv(t *testing.T, tweak func(*hub.Config)) *env {
	t.Helper()
	return newEnvWith(t, true, tweak, nil)
}

func newEnvWith(t *testing.T, timed bool, tweak func(*hub.Config), tweakFeed func(*feed.Config)) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clock: fakeclock.New(epoch), newID: ids(), timedIDs: timed}
	if timed {
		var n atomic.Uint64
		e.newID = func() uuid.UUID {
			var u uuid.UUID
			var ms [8]byte
			binary.BigEndian.PutUint64(ms[:], uint64(e.clock.Now().UnixMilli()))
			copy(u[:6], ms[2:])
			binary.BigEndian.PutUint64(u[8:], n.Add(1))
			u[6], u[8] = 0x70, 0x80|(u[8]&0x3f)
			return u
		}
	}
	e.cfg = hub.Config{Adapters: server.Adapters(nil), Clock: e.clock, NewID: e.newID}
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

func (e *env) open() {
	e.t.Helper()
	l, err := wal.Open(wal.Options{Dir: e.dir, NoSync: true})
	if err != nil {
		e.t.Fatal(err)
	}
	e.wal = l
	e.log = &faultyLog{Log: server.WALLog(l)}
	cfg := e.cfg
	cfg.Log = e.log
	newHub := hub.New
	if e.timedIDs {
		newHub = hub.NewTimedIDs
	}
	h, err := openServedWith(context.Background(), newHub, cfg, e.feedCfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.hub = h
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
