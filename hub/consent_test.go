package hub_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hubd/hubd/hub"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// TestConsent: with RequireConsent, a creator's auto_accept puts another
// agent into a session only when that agent consented (Consent); without
// it, the agent is invited and must acknowledge, a session with a task
// that needs it is refused, and a delegation is bound alike. Without
// RequireConsent (development mode) anyone may auto-add anyone.
func TestConsent(t *testing.T) {
	consent, err := hub.ParseConsent(strings.NewReader("# who takes sessions from whom\nbob alice\n\nci *\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *hub.Config) { c.RequireConsent, c.Consent = true, consent })
	ctx := context.Background()
	open := func(creator string, task string, names ...string) (*hubpb.OpenResponse, error) {
		req := &hubpb.OpenRequest{Type: "conversation@1", Task: task}
		for _, n := range names {
			req.Participants = append(req.Participants, &hubpb.Participant{Name: n, AutoAccept: true})
		}
		return e.hub.Open(ctx, creator, req)
	}
	for _, tc := range []struct {
		creator, invitee, state string
	}{
		{"alice", "bob", "OPEN"},      // bob takes sessions from alice
		{"mallory", "bob", "PENDING"}, // but not from mallory: an invite
		{"mallory", "ci", "OPEN"},     // ci takes them from anyone
		{"alice", "dave", "PENDING"},  // dave consented to nobody
	} {
		o, err := open(tc.creator, "", tc.invitee)
		if err != nil || o.GetSession().GetState() != tc.state {
			t.Fatalf("%s adds %s: %v %v, want %s", tc.creator, tc.invitee, o.GetSession().GetState(), err, tc.state)
		}
		if tc.state == "PENDING" {
			id := session.MustParseID(o.GetSession().GetMeta().GetSessionId())
			if _, err := e.hub.AckInvite(ctx, tc.invitee, id); err != nil {
				t.Fatalf("%s acknowledges: %v", tc.invitee, err)
			}
			if info, _ := e.hub.Get(ctx, tc.invitee, false, id); info.GetState() != "OPEN" {
				t.Fatalf("after %s's acknowledgement: %s", tc.invitee, info.GetState())
			}
		}
	}
	if _, err := open("mallory", "do this", "bob"); !errors.Is(err, hub.ErrPermissionDenied) || !strings.Contains(err.Error(), "consent") {
		t.Fatalf("a task for an agent that did not consent: %v", err)
	}
	parent := openConversation(t, e.hub, "alice", "bob")
	_, err = e.hub.Delegate(ctx, "alice", &hubpb.DelegateRequest{SessionId: parent.String(), Mode: session.ModeBackground,
		Children: []*hubpb.OpenRequest{{Type: "conversation@1", Task: "t", Participants: []*hubpb.Participant{{Name: "dave", AutoAccept: true}}}}})
	if !errors.Is(err, hub.ErrPermissionDenied) {
		t.Fatalf("a delegation to an agent that did not consent: %v", err)
	}

	dev := newEnv(t, nil)
	o, err := dev.hub.Open(ctx, "mallory", &hubpb.OpenRequest{Type: "conversation@1", Task: "x",
		Participants: []*hubpb.Participant{{Name: "dave", AutoAccept: true}}})
	if err != nil || o.GetSession().GetState() != "OPEN" {
		t.Fatalf("development mode: %v %v", o.GetSession().GetState(), err)
	}
	if _, err := hub.ParseConsent(strings.NewReader("bob\n")); err == nil {
		t.Fatal("a line without creators is accepted")
	}
}
