package hubhttp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/hubd/hubd/agentsdk"
)

// TestTreeCursorsOutsideTheTree: a tree stream resumed with cursors of
// sessions outside the tree (made up, or another tree's) drops them: its
// event ids carry the tree's cursors only. Past hubhttp's bound on
// cursors, Last-Event-ID is refused.
func TestTreeCursorsOutsideTheTree(t *testing.T) {
	srv := start(t, false)
	ctx := context.Background()
	alice := dial(t, srv, "alice")
	root, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	child, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("carol"), Parent: root.ID()})
	if err != nil {
		t.Fatal(err)
	}
	other, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	lastID := func(n int) string {
		parts := []string{"1", child.ID() + ":1", other.ID() + ":1"}
		for range n {
			parts = append(parts, uuid.NewString()+":7")
		}
		return strings.Join(parts, ",")
	}
	s := openEvents(t, srv, "/v1/sessions/"+root.ID()+"/events?tree=true&verbose=true", lastID(50), as("alice"))
	if _, err := alice.SendText(ctx, root.ID(), "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SendText(ctx, child.ID(), "child"); err != nil {
		t.Fatal(err)
	}
	for seen := 0; seen < 2; {
		e := s.nextEvent(t)
		if e.name != "envelope" {
			t.Fatalf("event %q %s", e.name, e.data)
		}
		if strings.Count(e.id, ",") != 1 || strings.Contains(e.id, other.ID()) || !strings.Contains(e.id, ","+child.ID()+":") {
			t.Fatalf("event id %.300q: want the root's seq and the child's cursor only", e.id)
		}
		if strings.Contains(e.data, `"text":"root"`) || strings.Contains(e.data, `"text":"child"`) {
			seen++
		}
	}
	h := as("alice")
	h["Last-Event-ID"] = lastID(1400)
	r := do(t, srv, call{method: "GET", path: "/v1/sessions/" + root.ID() + "/events?tree=true", header: h})
	if r.status != 400 || r.reason(t) != "MALFORMED" || !strings.Contains(fmt.Sprint(r.json(t)["message"]), "1402 cursors, at most 1024") {
		t.Errorf("1,400 made-up cursors: %d %s; want 400 MALFORMED naming the bound", r.status, r.body)
	}
}
