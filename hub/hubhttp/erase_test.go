package hubhttp_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/hubd/hubd/agentsdk"
)

// TestJSONErase erases a session over POST /v1/erasures: an agent is
// refused 403 PERMISSION_DENIED and an erasure without a reason 400
// MALFORMED, neither erasing; the operator's erasure answers the
// tombstone, and a read of the session then answers 404 ERASED.
func TestJSONErase(t *testing.T) {
	srv := start(t, false)
	alice := dial(t, srv, "alice")
	s, err := alice.Open(context.Background(), agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"session_ids":["` + s.ID() + `"],"reason":"asked to be forgotten"}`
	for _, c := range []struct {
		who, body, reason string
		status            int
	}{
		{"alice", body, "PERMISSION_DENIED", 403},
		{"operator", `{"session_ids":["` + s.ID() + `"]}`, "MALFORMED", 400},
	} {
		got := do(t, srv, call{method: "POST", path: "/v1/erasures", header: as(c.who), body: c.body})
		if got.status != c.status || got.reason(t) != c.reason {
			t.Errorf("%s %s: %d %s", c.who, c.body, got.status, got.body)
		}
	}
	if r := do(t, srv, call{method: "GET", path: "/v1/sessions/" + s.ID(), header: as("alice")}); r.status != http.StatusOK {
		t.Fatalf("the refusals erased: %d %s", r.status, r.body)
	}
	r := do(t, srv, call{method: "POST", path: "/v1/erasures", header: as("operator"), body: body})
	if m := r.json(t); r.status != http.StatusOK || m["sessions"] == nil {
		t.Fatalf("erase: %d %s", r.status, r.body)
	}
	if r := do(t, srv, call{method: "GET", path: "/v1/sessions/" + s.ID(), header: as("alice")}); r.status != http.StatusNotFound || r.reason(t) != "ERASED" {
		t.Errorf("a read of the erased session: %d %s", r.status, r.body)
	}
}
