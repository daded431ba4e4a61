package hub_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/adapters/conversation"
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// TestQuarantine: at hydrate, a session whose type is no longer served and
// a session with a corrupt record are quarantined and reported; the others
// serve, and a quarantined session answers with why.
func TestQuarantine(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	open := func(kind string) session.ID {
		t.Helper()
		o, err := e.hub.Open(ctx, "a", &hubpb.OpenRequest{Type: kind + "@1",
			Participants: []*hubpb.Participant{{Name: "b", AutoAccept: true}}})
		if err != nil {
			t.Fatal(err)
		}
		return session.MustParseID(o.GetSession().GetMeta().GetSessionId())
	}
	healthy, corrupt, gone := open("conversation"), open("conversation"), open("consulting")
	// A record that does not decode, at the corrupt session's next seq.
	if err := e.log.Append(ctx, hub.LogWrite{Session: corrupt, Records: []hub.LogRecord{{Seq: 3, Data: []byte("garbage")}}}); err != nil {
		t.Fatal(err)
	}
	e.hub.Close()
	reg, err := adapters.NewRegistry(conversation.Adapter{}) // consulting is no longer served
	if err != nil {
		t.Fatal(err)
	}
	h, err := hub.New(ctx, hub.Config{Log: e.log, Adapters: reg, Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	e.hub = h
	q := h.Quarantined()
	if len(q) != 2 || q[corrupt] == nil || q[gone] == nil {
		t.Fatalf("quarantined: %v", q)
	}
	t.Logf("corrupt: %v", q[corrupt])
	t.Logf("gone: %v", q[gone])
	if _, err := h.Send(ctx, "a", healthy, textEnv("still here")); err != nil {
		t.Fatalf("the healthy session does not serve: %v", err)
	}
	_, err = h.Send(ctx, "a", corrupt, textEnv("x"))
	if !errors.Is(err, hub.ErrSessionFailed) || !strings.Contains(err.Error(), "quarantined") {
		t.Fatalf("send to a quarantined session: %v", err)
	}
}
