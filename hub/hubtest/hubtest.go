// Package hubtest runs a real hubd in process, for tests of agents and
// tools: the same log, hub and gRPC service as the binary, on a free
// loopback port, in development mode (any agent name is accepted through
// the x-hubd-agent metadata; the agent "operator" has operator rights),
// with its log in memory unless a directory is given.
//
//	func TestMyAgent(t *testing.T) {
//		h := hubtest.New(t)
//		c, err := agentsdk.Dial(ctx, h.Addr(), agentsdk.Options{Name: "me"})
//		...
//	}
package hubtest

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/internal/server"
)

// Options configure a test hub. The zero value is an in-memory hub with
// the binary's defaults.
type Options struct {
	// Addr is the address to listen on, "host:port"; "" picks a free
	// loopback port. A test that stops a hub and starts another on the
	// same DataDir passes the first one's Addr, so that its agents
	// reconnect to the second.
	Addr string
	// DataDir keeps the log on disk there (fsynced as in production), so a
	// test can stop the hub and start another on the same log; "" keeps it
	// in memory.
	DataDir string
	// Hub sets limits and the clock (hub.Config's Log and Adapters are
	// filled in).
	Hub hub.Config
	// Feed bounds what subscribers leave unread and the streams an agent
	// holds.
	Feed feed.Config
	// Logger receives the hub's log; default none.
	Logger zerolog.Logger
}

// Hub is a running test hub.
type Hub struct {
	srv *server.Server
}

// Start starts a hub on Options.Addr, by default a free loopback port.
// Stop it with Close.
func Start(ctx context.Context, opts Options) (*Hub, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	srv, err := server.Start(ctx, server.Config{Listen: addr, DataDir: opts.DataDir, InMemory: opts.DataDir == "",
		Hub: opts.Hub, Feed: opts.Feed, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	return &Hub{srv: srv}, nil
}

// New starts a hub for the test t and stops it when the test ends; it
// fails t if the hub does not start.
func New(t testing.TB, opts ...Options) *Hub {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	h, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("hubtest: starting a hub: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("hubtest: stopping the hub: %v", err)
		}
	})
	return h
}

// Addr returns the hub's gRPC address, "127.0.0.1:port".
func (h *Hub) Addr() string { return h.srv.Addr() }

// Hub returns the hub itself, for tests that look inside.
func (h *Hub) Hub() *hub.Hub { return h.srv.Hub() }

// Feed returns the hub's feed (its deliveries and reads), for tests that
// look inside.
func (h *Hub) Feed() *feed.Feed { return h.srv.Feed() }

// Close stops the hub: streams end, in-flight sends finish, the log
// closes. It waits at most 10 seconds for calls to drain.
func (h *Hub) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return h.srv.Shutdown(ctx)
}
