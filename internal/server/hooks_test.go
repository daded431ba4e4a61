package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/fakeclock"
	"github.com/hubd/hubd/session"
)

// logBuffer collects log lines written from any goroutine.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the log's JSON lines with the given message.
func (l *logBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["message"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// hooked starts a server logging to a buffer at level, with a fake clock;
// the caller's own hooks signal timers fired and sessions closed, so the
// test can wait for them (and checks they still run).
func hooked(t *testing.T, level zerolog.Level) (*Server, *logBuffer, *fakeclock.Clock, chan string) {
	t.Helper()
	logs := &logBuffer{}
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	events := make(chan string, 16)
	cfg := Config{Listen: "127.0.0.1:0", InMemory: true, Logger: zerolog.New(logs).Level(level)}
	cfg.Hub.Clock = clock
	cfg.Hub.Hooks.TimerFired = func(_ session.ID, e *hubpb.Envelope) { events <- "timer " + e.GetType() }
	cfg.Hub.Hooks.Closed = func(_ session.ID, st session.State, reason string) { events <- "closed " + reason }
	srv, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return srv, logs, clock, events
}

func dial(t *testing.T, addr, name string) *agentsdk.Client {
	t.Helper()
	c, err := agentsdk.Dial(context.Background(), addr, agentsdk.Options{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestLogHooks drives a session through open, a refused send, a warning
// timer and an expiry, and checks what the log says of each.
func TestLogHooks(t *testing.T) {
	srv, logs, clock, events := hooked(t, zerolog.DebugLevel)
	ctx := context.Background()
	alice, mallory := dial(t, srv.Addr(), "alice"), dial(t, srv.Addr(), "mallory")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob"),
		TTL: time.Minute, Expectations: []*hubpb.Expectation{agentsdk.Expect("max_silence", 10*time.Second, "warn")}})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	if _, err := mallory.SendText(ctx, id, "let me in"); !errors.Is(err, agentsdk.ErrNotParticipant) {
		t.Fatalf("mallory's send: %v", err)
	}
	clock.Advance(11 * time.Second)
	if got := <-events; got != "timer expectation_violated" {
		t.Fatalf("first event %q", got)
	}
	clock.Advance(time.Minute)
	// The hub reports the close (at its commit) before the timer that caused it.
	if got := []string{<-events, <-events}; got[0] != "closed ttl_expired" || got[1] != "timer session_expired" {
		t.Fatalf("events %q after the TTL", got)
	}
	for _, tc := range []struct {
		msg  string
		want map[string]any
	}{
		{"session opened", map[string]any{"level": "info", "session": id, "type": "conversation@1", "creator": "alice"}},
		{"send rejected", map[string]any{"level": "debug", "session": id, "agent": "mallory", "type": "text", "reason": "NOT_PARTICIPANT"}},
		{"timer fired", map[string]any{"level": "info", "session": id, "type": "expectation_violated", "expectation": "max_silence", "action": "warn"}},
		{"session closed", map[string]any{"level": "info", "session": id, "state": "EXPIRED", "reason": "ttl_expired"}},
		{"envelope accepted", map[string]any{"level": "debug", "session": id, "seq": 1.0, "type": "session_invite"}},
		{"hubd listening", map[string]any{"level": "info", "listen": srv.Addr(), "data": "(in memory)"}},
	} {
		lines := logs.lines(t, tc.msg)
		if len(lines) == 0 {
			t.Errorf("no %q line", tc.msg)
			continue
		}
		for k, v := range tc.want {
			if lines[0][k] != v {
				t.Errorf("%q: %s = %v, want %v (%v)", tc.msg, k, lines[0][k], v, lines[0])
			}
		}
	}
	if timers := logs.lines(t, "timer fired"); len(timers) != 2 || timers[1]["type"] != "session_expired" || timers[1]["reason"] != "ttl_expired" {
		t.Errorf("timer lines %v, want the violation and the expiry", timers)
	}
}

// TestLogHooksInfo checks that at info level the debug lines are left out
// and the hub says it listens once.
func TestLogHooksInfo(t *testing.T) {
	srv, logs, _, events := hooked(t, zerolog.InfoLevel)
	ctx := context.Background()
	alice := dial(t, srv.Addr(), "alice")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dial(t, srv.Addr(), "mallory").SendText(ctx, s.ID(), "x"); err == nil {
		t.Fatal("mallory's send was accepted")
	}
	if _, err := alice.CloseSession(ctx, s.ID(), "done"); err != nil {
		t.Fatal(err)
	}
	if got := <-events; got != "closed done" {
		t.Fatalf("event %q", got)
	}
	for msg, n := range map[string]int{"envelope accepted": 0, "send rejected": 0, "session opened": 1, "session closed": 1, "hubd listening": 1} {
		if got := len(logs.lines(t, msg)); got != n {
			t.Errorf("%d %q lines, want %d", got, msg, n)
		}
	}
}
