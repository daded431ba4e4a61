package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/fakeclock"
)

// scrape reads /metrics from the HTTP side: every sample by its name and
// labels as exposed ("hubd_sessions{session_type=\"x\",state=\"OPEN\"}").
func scrape(t *testing.T, srv *Server) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + srv.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// startHTTP starts a server with its HTTP side, in development mode.
func startHTTP(t *testing.T, cfg Config) *Server {
	t.Helper()
	cfg.Listen, cfg.HTTP, cfg.Logger = "127.0.0.1:0", "127.0.0.1:0", zerolog.Nop()
	if cfg.DataDir == "" {
		cfg.InMemory = true
	}
	srv, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return srv
}

// TestMetrics drives a session through sends, a refusal, a timer, a watch
// and its close, and checks that the scraped metrics move.
func TestMetrics(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	srv := startHTTP(t, Config{Hub: hub.Config{Clock: clock}})
	before := scrape(t, srv)
	for _, name := range []string{"go_goroutines", "hubd_hydrate_duration_seconds", "hubd_sessions_quarantined", "hubd_wal_commits_total", "process_resident_memory_bytes"} {
		if _, ok := before[name]; !ok {
			t.Errorf("no %s before any session", name)
		}
	}
	ctx := context.Background()
	alice, mallory := dial(t, srv.Addr(), "alice"), dial(t, srv.Addr(), "mallory")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob"),
		Expectations: []*hubpb.Expectation{agentsdk.Expect("max_silence", 10*time.Second, "warn")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SendText(ctx, s.ID(), "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := mallory.SendText(ctx, s.ID(), "let me in"); !errors.Is(err, agentsdk.ErrNotParticipant) {
		t.Fatalf("mallory's send: %v", err)
	}
	w, err := alice.Watch(ctx, s.ID(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Recv(); err != nil { // the stream is served: counted
		t.Fatal(err)
	}
	clock.Advance(11 * time.Second)
	during := scrape(t, srv)
	resp, err := http.Get("http://" + srv.HTTPAddr() + "/v1/sessions/" + s.ID() + "?x=1")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if _, err := alice.CloseSession(ctx, s.ID(), ""); err != nil {
		t.Fatal(err)
	}
	after := scrape(t, srv)
	const typ = `session_type="conversation@1"`
	for _, tc := range []struct {
		m    map[string]float64
		name string
		want float64
	}{
		{during, `hubd_sessions{` + typ + `,state="OPEN"}`, 1},
		{during, `hubd_subscribers{kind="watch"}`, 1},
		{during, `hubd_timer_firings_total{action="warn"}`, 1},
		{after, `hubd_sessions_opened_total{` + typ + `}`, 1},
		{after, `hubd_sessions_ended_total{` + typ + `,state="CLOSED"}`, 1},
		{after, `hubd_sends_accepted_total{` + typ + `}`, 1}, // the text (the hub writes the invite)
		{after, `hubd_sends_rejected_total{reason="NOT_PARTICIPANT",` + typ + `}`, 1},
		{after, `hubd_envelopes_written_total{` + typ + `}`, 5},                             // invite, opened, text, violation, close
		{after, `hubd_requests_total{code="OK",method="Send",transport="agent_stream"}`, 1}, // agentsdk sends on its stream
		{after, `hubd_requests_total{code="PermissionDenied",method="Send",transport="agent_stream"}`, 1},
		{after, `hubd_requests_total{code="OK",method="Open",transport="agent_stream"}`, 1}, // and opens on it
		{after, `hubd_requests_total{code="Unauthenticated",method="GetSession",transport="http"}`, 1},
	} {
		if got, ok := tc.m[tc.name]; !ok || got != tc.want {
			t.Errorf("%s = %v (present %v), want %v", tc.name, got, ok, tc.want)
		}
	}
	// The gauge counts the sessions in memory: live ones. An ended
	// session leaves memory (it is read from the log on demand).
	for name := range after {
		if strings.HasPrefix(name, `hubd_sessions{`) && after[name] != 0 {
			t.Errorf("after the close, %s = %v, want no live session", name, after[name])
		}
	}
	for _, name := range []string{"hubd_wal_commits_total", "hubd_wal_committed_records_total", "hubd_wal_append_duration_seconds_count", "hubd_wal_append_records_sum"} {
		if after[name] <= before[name] {
			t.Errorf("%s did not move: %v → %v", name, before[name], after[name])
		}
	}
}

// TestMetricsAfterRestart: sessions rebuilt by hydrate are counted and
// labelled with their type.
func TestMetricsAfterRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	first := startHTTP(t, Config{DataDir: dir})
	s, err := dial(t, first.Addr(), "alice").Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	second := startHTTP(t, Config{DataDir: dir})
	if _, err := dial(t, second.Addr(), "mallory").SendText(ctx, s.ID(), "x"); err == nil {
		t.Fatal("mallory's send was accepted")
	}
	m := scrape(t, second)
	for name, want := range map[string]float64{
		`hubd_sessions{session_type="conversation@1",state="OPEN"}`:                         1,
		`hubd_sends_rejected_total{reason="NOT_PARTICIPANT",session_type="conversation@1"}`: 1,
	} {
		if m[name] != want {
			t.Errorf("%s = %v, want %v", name, m[name], want)
		}
	}
	if m["hubd_hydrate_duration_seconds"] <= 0 {
		t.Errorf("hydrate took %v s", m["hubd_hydrate_duration_seconds"])
	}
}

// TestHTTPAnyPort: a default HTTP address that is taken gives way to a
// free port; one asked for does not.
func TestHTTPAnyPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := Config{Listen: "127.0.0.1:0", HTTP: taken.Addr().String(), InMemory: true, Logger: zerolog.Nop()}
	if _, err := Start(context.Background(), cfg); err == nil {
		t.Fatal("served HTTP on a taken port")
	}
	cfg.HTTPAnyPort = true
	srv, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	if srv.HTTPAddr() == "" || srv.HTTPAddr() == taken.Addr().String() {
		t.Errorf("HTTP on %q", srv.HTTPAddr())
	}
}
