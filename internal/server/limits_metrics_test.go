package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
	"github.com/hubd/hubd/session"
)

// TestLimitMetrics: every refusal at a limit and every stream cut off at
// a buffer bound is counted once in hubd_limit_refusals_total by limit,
// whichever side refused it: the hub (an open, a subscriber), the gRPC
// codec (a request too large) or the HTTP side (a body too large).
func TestLimitMetrics(t *testing.T) {
	srv := startHTTP(t, Config{Hub: hub.Config{MaxOpenPerAgent: 1}, Feed: feed.Config{SubscriberBuffer: 2}, MaxMsgBytes: 2 << 20})
	ctx := context.Background()
	alice := dial(t, srv.Addr(), "alice")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")}); !errors.Is(err, agentsdk.ErrLimit) {
		t.Fatalf("a second open: %v", err)
	}
	sub, err := srv.Feed().Subscribe(ctx, "bob", feed.SubscribeOptions{Cursors: map[session.ID]uint64{session.MustParseID(s.ID()): 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for range 3 {
		if _, err := alice.SendText(ctx, s.ID(), "unread"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alice.SendText(ctx, s.ID(), strings.Repeat("x", 3<<20)); !errors.Is(err, agentsdk.ErrTooLarge) {
		t.Fatalf("a 3 MiB send: %v", err)
	}
	req, _ := http.NewRequest("POST", "http://"+srv.HTTPAddr()+"/v1/sessions/"+s.ID()+"/envelopes",
		strings.NewReader(`{"type":"text","text":{"text":"`+strings.Repeat("y", 3<<20)+`"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hubd-Agent", "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 3 MiB body: %d", resp.StatusCode)
	}
	got := scrape(t, srv)
	for limit, want := range map[string]float64{"max-open-per-agent": 1, "subscriber-buffer": 1, "max-request-bytes": 2} {
		if n := got[`hubd_limit_refusals_total{limit="`+limit+`"}`]; n != want {
			t.Errorf("hubd_limit_refusals_total{limit=%q} = %v, want %v", limit, n, want)
		}
	}
}
