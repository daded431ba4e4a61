package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubtest"
)

// TestTailDeltas: sessions tail --deltas prints the pieces of a reply as
// they are written, before the reply's envelope.
func TestTailDeltas(t *testing.T) {
	h := hubtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	alice, err := agentsdk.Dial(ctx, h.Addr(), agentsdk.Options{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"sessions", "tail", s.ID(), "--deltas", "--hub", h.Addr(), "--as", "operator"}, strings.NewReader(""), pw, &errb)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	next := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("tail ended: %v %s", lines.Err(), errb.String())
		}
		return lines.Text()
	}
	for !strings.Contains(next(), "opened") { // the catch-up: the watch is registered
	}
	if err := alice.SendDelta(ctx, s.ID(), "r1", 0, "Hel"); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != `~ alice is writing: "Hel"` {
		t.Fatalf("tail printed %q; want the delta", got)
	}
	if _, err := alice.SendText(ctx, s.ID(), "Hello", agentsdk.WithClientMsgID("r1")); err != nil {
		t.Fatal(err)
	}
	if got := next(); !strings.Contains(got, "Hello") {
		t.Fatalf("tail printed %q; want the final envelope", got)
	}
	if _, err := alice.CloseSession(ctx, s.ID(), "done"); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	if err := <-done; err != nil {
		t.Fatalf("tail: %v %s", err, errb.String())
	}
}
