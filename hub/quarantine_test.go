package hub_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hubd/hubd/adapters"
	"github.com/hubd/hubd/adapters/conversation"
	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hub/feed"
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
	h, err := openServed(ctx, hub.Config{Log: e.log, Adapters: reg, Clock: e.clock})
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
	// Not retryable; the participant and the operator learn what was
	// found, an outsider only that the session is quarantined.
	_, err = h.Send(ctx, "a", corrupt, textEnv("x"))
	if !errors.Is(err, hub.ErrQuarantined) || !strings.Contains(err.Error(), "quarantined") || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("send to a quarantined session by a participant: %v", err)
	}
	if r, _ := session.ReasonOf(err); r != hubpb.Reason_QUARANTINED {
		t.Errorf("reason %v, want QUARANTINED", r)
	}
	if _, err := h.Get(ctx, "operator", true, corrupt); !errors.Is(err, hub.ErrQuarantined) || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("read by the operator: %v", err)
	}
	for _, call := range []func() error{
		func() error { _, err := h.Send(ctx, "mallory", corrupt, textEnv("x")); return err },
		func() error { _, err := h.Get(ctx, "mallory", false, corrupt); return err },
	} {
		err := call()
		if !errors.Is(err, hub.ErrQuarantined) || strings.Contains(err.Error(), "corrupt") || strings.Contains(err.Error(), "garbage") {
			t.Errorf("an outsider's call: %v; want QUARANTINED without the damage", err)
		}
	}
	// Listed as quarantined, to the operator and to its participants.
	for _, who := range []struct {
		agent    string
		operator bool
		want     int
	}{{"operator", true, 3}, {"a", false, 3}, {"b", false, 3}, {"mallory", false, 0}} {
		list, _, err := h.List(context.Background(), who.agent, who.operator, feed.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		states := map[string]string{}
		for _, info := range list {
			states[info.GetMeta().GetSessionId()] = info.GetState()
		}
		if len(list) != who.want || (who.want > 0 && (states[corrupt.String()] != feed.StateQuarantined || states[gone.String()] != feed.StateQuarantined || states[healthy.String()] != "OPEN")) {
			t.Errorf("%s lists %v", who.agent, states)
		}
	}
	if list, _, _ := h.List(context.Background(), "operator", true, feed.Filter{State: session.StateOpen}); len(list) != 1 {
		t.Errorf("a filter on OPEN lists %d sessions, want the healthy one", len(list))
	}
}
