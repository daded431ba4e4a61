package hubhttp_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

// TestJSONSteer steers a session over POST /v1/sessions/{id}:steer: an
// operator's context edit is acknowledged with its seq and shows in the
// session's context; a participant is refused 403 PERMISSION_DENIED, an
// action without a reason 400 MALFORMED, and neither writes.
func TestJSONSteer(t *testing.T) {
	srv := start(t, false)
	ctx := context.Background()
	alice := dial(t, srv, "alice")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	path := "/v1/sessions/" + s.ID() + ":steer"
	for _, c := range []struct {
		who, body, reason string
		status            int
	}{
		{"alice", `{"action":{"reason":"mine","context":{"set":{"mood":"calm"}}}}`, "PERMISSION_DENIED", 403},
		{"operator", `{"action":{"context":{"set":{"mood":"calm"}}}}`, "MALFORMED", 400},
	} {
		got := do(t, srv, call{method: "POST", path: path, header: as(c.who), body: c.body})
		if got.status != c.status || got.reason(t) != c.reason {
			t.Errorf("%s %s: %d %s", c.who, c.body, got.status, got.body)
		}
	}
	before, err := alice.GetSession(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	r := do(t, srv, call{method: "POST", path: path, header: as("operator"),
		body: `{"action":{"reason":"the customer is calm now","context":{"set":{"mood":"calm"}}}}`})
	if r.status != http.StatusOK {
		t.Fatalf("steer: %d %s", r.status, r.body)
	}
	var ack hubpb.SendResponse
	if err := hubpb.UnmarshalJSON(r.body, &ack); err != nil {
		t.Fatal(err)
	}
	if ack.GetSeq() != before.GetSeq()+1 {
		t.Errorf("steer acknowledged at seq %d, want %d (the refusals wrote nothing)", ack.GetSeq(), before.GetSeq()+1)
	}
	info, err := alice.GetSession(ctx, s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if info.GetContext()["mood"].GetStringValue() != "calm" {
		t.Errorf("context after the steer: %v", info.GetContext())
	}
}
