package hubhttp_test

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/internal/server"
)

// contextBody is the JSON body of a send setting context "k" to value.
func contextBody(value string) string {
	return `{"type":"context_set","context_set":{"set":{"k":` + value + `}}}`
}

// TestJSONLimits: JSON bodies past the hub's limits are refused before
// protojson builds anything: a value nested too deep (MALFORMED), more
// keys and values than an envelope holds, and a body over the request
// limit (HTTP 413, TOO_LARGE naming the limit); nothing is written. Within
// them the same shapes pass.
func TestJSONLimits(t *testing.T) {
	srv := start(t, false, func(c *server.Config) { c.Hub.MaxEnvelopeBytes = 4096 }) // requests of 4 MiB + 64 KiB
	s, err := dial(t, srv, "alice").Open(context.Background(), agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	path := "/v1/sessions/" + s.ID() + "/envelopes"
	nulls := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("null,", n), ",") + "]" }
	for _, tc := range []struct {
		name, body string
		status     int
		reason     string
		msg        string
	}{
		{"81 deep", contextBody(strings.Repeat("[", 81) + strings.Repeat("]", 81)), 400, "MALFORMED", "nested deeper than 80"},
		{"a million deep", contextBody(strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20)), 400, "MALFORMED", "nested deeper than 80"},
		{"more than an envelope holds", contextBody(nulls(2100)), 413, "TOO_LARGE", "the limit is 4096 (--max-envelope-bytes)"},
		{"over the request limit", `{"type":"text","text":{"text":"` + strings.Repeat("x", 5<<20) + `"}}`, 413, "TOO_LARGE",
			"the limit is 4259840 (--max-request-bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, srv, call{method: "POST", path: path, header: as("alice"), body: tc.body})
			if r.status != tc.status || r.reason(t) != tc.reason || !strings.Contains(r.json(t)["message"].(string), tc.msg) {
				t.Fatalf("%d %.300s; want %d %s with %q", r.status, r.body, tc.status, tc.reason, tc.msg)
			}
		})
	}
	got := do(t, srv, call{method: "GET", path: "/v1/sessions/" + s.ID(), header: as("alice")})
	if seq := got.json(t)["seq"]; seq != "2" {
		t.Fatalf("refused bodies wrote: seq %v", seq)
	}
	// A value as deep as a value may be, and as many values as fit.
	for _, body := range []string{contextBody(strings.Repeat("[", 64) + strings.Repeat("]", 64)), contextBody(nulls(500))} {
		if r := do(t, srv, call{method: "POST", path: path, header: as("alice"), body: body}); r.status != http.StatusOK {
			t.Fatalf("%.100s: %d %s", body, r.status, r.body)
		}
	}
}

// TestJSONWideBodyBounded: a 4 MB body of a million values costs the hub
// about what it reads, not what protojson would build of it (a Value per
// item, over 100 MB).
func TestJSONWideBodyBounded(t *testing.T) {
	srv := start(t, false)
	s, err := dial(t, srv, "alice").Open(context.Background(), agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	body := contextBody("[" + strings.TrimSuffix(strings.Repeat("0,", 2_000_000), ",") + "]")
	path := "/v1/sessions/" + s.ID() + "/envelopes"
	do(t, srv, call{method: "POST", path: path, header: as("alice"), body: body}) // warm
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := do(t, srv, call{method: "POST", path: path, header: as("alice"), body: body})
	runtime.ReadMemStats(&after)
	if r.status != http.StatusRequestEntityTooLarge || r.reason(t) != "TOO_LARGE" {
		t.Fatalf("%d %.300s", r.status, r.body)
	}
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d-byte body of 2,000,000 values: %d bytes allocated (client and server)", len(body), got)
	if got > 32<<20 {
		t.Fatalf("a %d-byte body of 2,000,000 values allocated %d bytes (client and server)", len(body), got)
	}
}
