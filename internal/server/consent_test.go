package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/hubgrpc"
)

// TestConsentWithTokens: with tokens, consent is the default: a creator's
// auto_accept adds another agent only when the consent file says that
// agent takes sessions from it; otherwise the agent is invited.
func TestConsentWithTokens(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tokens, err := hubgrpc.ParseTokens(strings.NewReader("alice alice-token-0123456789\nmallory mallory-token-0123456789\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Listen: "127.0.0.1:0", InMemory: true, Tokens: tokens}
	cfg.Hub.Consent = hub.Consent{"bob": {"alice"}}
	srv, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	for _, tc := range []struct{ who, state string }{{"alice", agentsdk.StateOpen}, {"mallory", "PENDING"}} {
		c, err := agentsdk.Dial(ctx, srv.Addr(), agentsdk.Options{Token: tc.who + "-token-0123456789"})
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Open(ctx, agentsdk.OpenOptions{Type: "conversation@1", Participants: agentsdk.AutoAccepted("bob")})
		c.Close()
		if err != nil || s.GetState() != tc.state {
			t.Fatalf("%s auto-adds bob: %v %v, want %s", tc.who, s.GetState(), err, tc.state)
		}
	}
}
