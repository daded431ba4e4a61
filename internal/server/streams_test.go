package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
)

// TestStreamsPerConn: one connection holds at most MaxStreamsPerConn
// Subscribe and Watch streams (LIMIT_REACHED past it); another connection
// of the same agent has its own; an ended stream frees its place.
func TestStreamsPerConn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv, err := Start(ctx, Config{Listen: "127.0.0.1:0", InMemory: true, MaxStreamsPerConn: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	dial := func() *agentsdk.Client {
		t.Helper()
		c, err := agentsdk.Dial(ctx, srv.Addr(), agentsdk.Options{Name: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	alice := dial()
	// Opened on another connection: the opener's agent stream would
	// count against this one's limit.
	s, err := dial().Open(ctx, agentsdk.OpenOptions{Type: "conversation@1", Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	watch := func(c *agentsdk.Client) (*agentsdk.Stream, error) {
		w, err := c.Watch(ctx, s.ID(), 1)
		if err != nil {
			return nil, err
		}
		if _, err := w.Recv(); err != nil { // the invite: the stream is served
			w.Close()
			return nil, err
		}
		return w, nil
	}
	var ws []*agentsdk.Stream
	for range 3 {
		w, err := watch(alice)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	if _, err := watch(alice); !errors.Is(err, agentsdk.ErrLimit) {
		t.Fatalf("a fourth stream on one connection: %v", err)
	}
	if w, err := watch(dial()); err != nil {
		t.Fatalf("a stream on another connection: %v", err)
	} else {
		w.Close()
	}
	ws[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		w, err := watch(alice)
		if err == nil {
			w.Close()
			break
		}
		if !errors.Is(err, agentsdk.ErrLimit) || time.Now().After(deadline) {
			t.Fatalf("a stream after one ended: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // the server sees the end a moment later
	}
}
