package hubhttp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hubd/hubd/internal/server"
)

// TestContentType: the JSON API reads JSON only: a body sent as anything
// but application/json (parameters such as charset allowed) is refused
// 415 with a JSON error and the reason MALFORMED, and nothing is done; a
// call without a body needs no Content-Type.
func TestContentType(t *testing.T) {
	srv := start(t, false)
	open := `{"type":"conversation@1","participants":[{"name":"bob","auto_accept":true}]}`
	for _, tc := range []struct {
		ctype string
		want  int
	}{
		{"application/json", 200},
		{"application/json; charset=utf-8", 200},
		{"Application/JSON;charset=UTF-8", 200},
		{"text/plain", 415},
		{"text/plain;charset=UTF-8", 415},
		{"application/x-www-form-urlencoded", 415},
		{"multipart/form-data; boundary=x", 415},
		{"application/jsonx", 415},
		{"", 415},
	} {
		t.Run(tc.ctype, func(t *testing.T) {
			before := listed(t, srv)
			r := post(t, srv, "/v1/sessions", tc.ctype, open)
			if r.status != tc.want {
				t.Fatalf("Content-Type %q: %d %s; want %d", tc.ctype, r.status, r.body, tc.want)
			}
			if tc.want != 415 {
				return
			}
			if r.header.Get("Content-Type") != "application/json" || r.reason(t) != "MALFORMED" ||
				!strings.Contains(r.json(t)["message"].(string), "application/json") {
				t.Errorf("415 answer: %v %s", r.header, r.body)
			}
			if after := listed(t, srv); after != before {
				t.Errorf("a refused open opened a session: %d → %d", before, after)
			}
		})
	}
	id := post(t, srv, "/v1/sessions", "application/json", open).json(t)["session"].(map[string]any)["meta"].(map[string]any)["session_id"].(string)
	if r := post(t, srv, "/v1/sessions/"+id+":close", "", ""); r.status != 200 {
		t.Errorf("a close without a body or Content-Type: %d %s", r.status, r.body)
	}
}

// listed counts alice's sessions.
func listed(t *testing.T, srv *server.Server) int {
	t.Helper()
	r := do(t, srv, call{method: "GET", path: "/v1/sessions", header: as("alice")})
	s, _ := r.json(t)["sessions"].([]any)
	return len(s)
}

// post sends body as ctype ("": no Content-Type) as alice.
func post(t *testing.T, srv *server.Server, path, ctype, body string) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), "POST", "http://"+srv.HTTPAddr()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Hubd-Agent", "alice")
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}
