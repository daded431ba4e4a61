package webui_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
	"github.com/hubd/hubd/session"
)

// get makes a GET on the server's HTTP side as a development-mode agent
// ("" for none) and returns the status, content type and body.
func get(t *testing.T, srv *server.Server, path, agent string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), "GET", "http://"+srv.HTTPAddr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if agent != "" {
		req.Header.Set("X-Hubd-Agent", agent)
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
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// reason is the hubd reason of an error answer.
func reason(body string) string {
	var st struct{ Details []struct{ Reason string } }
	json.Unmarshal([]byte(body), &st)
	for _, d := range st.Details {
		return d.Reason
	}
	return ""
}

// TestRoutes: the web view's page and assets, and its own routes with the
// same authentication and refusals as the JSON API, served by a real hubd.
func TestRoutes(t *testing.T) {
	srv, err := server.Start(context.Background(), server.Config{Listen: "127.0.0.1:0", HTTP: "127.0.0.1:0", InMemory: true, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	ctx := context.Background()
	alice, err := agentsdk.Dial(ctx, srv.Addr(), agentsdk.Options{Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	s, err := alice.Open(ctx, agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob"),
		Expectations: []*hubpb.Expectation{session.Expect(session.MaxSilence, time.Hour, session.ActionNotify)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.SendText(ctx, s.ID(), "hello"); err != nil {
		t.Fatal(err)
	}
	sp := "/ui/sessions/" + s.ID()
	for _, tc := range []struct {
		name, path, agent string
		status            int
		ctype, has        string // the content type's start, and a part of the body
	}{
		{"the page", "/", "", 200, "text/html", `<script src="/ui/app.js">`},
		{"the script", "/ui/app.js", "", 200, "text/javascript", "new EventSource("},
		{"the envelopes' script", "/ui/envelopes.js", "", 200, "text/javascript", "function renderEnvelope("},
		{"the forks' and operator actions' script", "/ui/ops.js", "", 200, "text/javascript", "function wireSteer("},
		{"the page loads them first", "/", "", 200, "text/html", `<script src="/ui/envelopes.js"></script>` + "\n" + `<script src="/ui/ops.js"></script>` + "\n" + `<script src="/ui/app.js">`},
		{"the operator actions card", "/", "", 200, "text/html", `<div class="card" id="steer-card" hidden>`},
		{"the style", "/ui/style.css", "", 200, "text/css", ".timeline"},
		{"no such asset", "/ui/nope.js", "", 404, "", ""},
		{"no such page", "/elsewhere", "", 404, "", ""},
		{"graph", sp + "/graph.svg", "bob", 200, "image/svg+xml", `data-node="bob"`},
		{"graph, anonymous", sp + "/graph.svg", "", 401, "application/json", "UNAUTHENTICATED"},
		{"graph, a stranger", sp + "/graph.svg", "mallory", 403, "application/json", "PERMISSION_DENIED"},
		{"graph, a bad id", "/ui/sessions/nope/graph.svg", "bob", 400, "application/json", "MALFORMED"},
		{"graph, unknown", "/ui/sessions/0190a0c4-8f4e-7a2b-9c3d-4e5f60718293/graph.svg", "operator", 404, "application/json", "UNKNOWN_SESSION"},
		{"deadlines", sp + "/deadlines", "alice", 200, "application/json", `"name":"max_silence","action":"notify"`},
		{"deadlines, a stranger", sp + "/deadlines", "mallory", 403, "application/json", "PERMISSION_DENIED"},
		{"own view", sp + "/views?name=full", "bob", 200, "application/json", `"text":"hello"`},
		{"another's view, as an operator", sp + "/views?as=bob&name=last", "operator", 200, "application/json", `"name":"last"`},
		{"another's view, as a participant", sp + "/views?as=alice", "bob", 403, "application/json", "PERMISSION_DENIED"},
		{"a stranger's view, as an operator", sp + "/views?as=mallory", "operator", 403, "application/json", "PERMISSION_DENIED"},
		{"an operator's own view", sp + "/views", "operator", 403, "application/json", "PERMISSION_DENIED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, ctype, body := get(t, srv, tc.path, tc.agent)
			if status != tc.status || !strings.HasPrefix(ctype, tc.ctype) || !strings.Contains(body, tc.has) {
				t.Errorf("%d %q %.300s; want %d %q with %q", status, ctype, body, tc.status, tc.ctype, tc.has)
			}
			if status >= 400 && tc.ctype == "application/json" && !strings.Contains(tc.has, reason(body)) {
				t.Errorf("reason %q", reason(body))
			}
		})
	}
}
