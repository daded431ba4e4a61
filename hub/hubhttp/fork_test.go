package hubhttp_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
)

// TestJSONFork forks a session over POST /v1/sessions/{id}:fork: the
// answer is the fork's SessionInfo with the edits applied; an outsider is
// refused 403 PERMISSION_DENIED and a seq past the end 400 MALFORMED.
func TestJSONFork(t *testing.T) {
	srv := start(t, false)
	ctx := context.Background()
	alice := dial(t, srv, "alice")
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SendText(ctx, s.ID(), "hello"); err != nil {
		t.Fatal(err)
	}
	path := "/v1/sessions/" + s.ID() + ":fork"
	r := do(t, srv, call{method: "POST", path: path, header: as("bob"),
		body: `{"at_seq":"2","context":{"set":{"mood":"calm"}},"labels":{"try":"2"}}`})
	if r.status != http.StatusOK {
		t.Fatalf("fork: %d %s", r.status, r.body)
	}
	var resp hubpb.ForkResponse
	if err := hubpb.UnmarshalJSON(r.body, &resp); err != nil {
		t.Fatal(err)
	}
	f := resp.GetSession()
	if f.GetState() != "OPEN" || f.GetMeta().GetLabels()["forked_from"] != s.ID() || f.GetMeta().GetLabels()["try"] != "2" ||
		f.GetContext()["mood"].GetStringValue() != "calm" || f.GetTurn() != 0 {
		t.Errorf("the fork: %s", r.body)
	}
	for _, c := range []struct {
		who, body, reason string
		status            int
	}{
		{"mallory", `{"at_seq":"2"}`, "PERMISSION_DENIED", 403},
		{"bob", `{"at_seq":"9"}`, "MALFORMED", 400},
	} {
		got := do(t, srv, call{method: "POST", path: path, header: as(c.who), body: c.body})
		if got.status != c.status || got.reason(t) != c.reason {
			t.Errorf("%s %s: %d %s", c.who, c.body, got.status, got.body)
		}
	}
}
