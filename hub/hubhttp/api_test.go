package hubhttp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hub/hubhttp"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/server"
)

// TestJSONAPI opens a session, sends turns, reads it back and closes it,
// all over HTTP as curl would, and checks the one JSON form.
func TestJSONAPI(t *testing.T) {
	srv := start(t, false)
	open := do(t, srv, call{method: "POST", path: "/v1/sessions", header: as("alice"),
		body: `{"type":"conversation@1","participants":[{"name":"bob","auto_accept":true}],"labels":{"team":"a"}}`})
	if open.status != http.StatusOK {
		t.Fatalf("open: %d %s", open.status, open.body)
	}
	if ct := open.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	session, _ := open.json(t)["session"].(map[string]any)
	meta, _ := session["meta"].(map[string]any)
	id, _ := meta["session_id"].(string)
	if session["state"] != "OPEN" || id == "" {
		t.Fatalf("open answered %s", open.body)
	}
	sent := do(t, srv, call{method: "POST", path: "/v1/sessions/" + id + "/envelopes", header: as("alice"),
		body: `{"type":"text","text":{"text":"hello bob"},"client_msg_id":"m1"}`})
	if sent.status != http.StatusOK || sent.json(t)["seq"] != "3" {
		t.Fatalf("send: %d %s", sent.status, sent.body)
	}
	again := do(t, srv, call{method: "POST", path: "/v1/sessions/" + id + "/envelopes", header: as("alice"),
		body: `{"type":"text","text":{"text":"hello bob"},"client_msg_id":"m1"}`})
	if again.json(t)["duplicate"] != true || again.json(t)["seq"] != "3" {
		t.Errorf("retry: %s", again.body)
	}
	turns := do(t, srv, call{method: "GET", path: "/v1/turns", header: as("bob")})
	if !strings.Contains(string(turns.body), `"your_turn":true`) || !strings.Contains(string(turns.body), "hello bob") {
		t.Errorf("bob's turns: %s", turns.body)
	}
	log := do(t, srv, call{method: "GET", path: "/v1/sessions/" + id + "/log?from_seq=3", header: as("bob")})
	var rl hubpb.ReadLogResponse
	if err := hubpb.UnmarshalJSON(log.body, &rl); err != nil || len(rl.GetEnvelopes()) != 1 || rl.GetEnvelopes()[0].GetText().GetText() != "hello bob" {
		t.Fatalf("log: %s (%v)", log.body, err)
	}
	if want, _ := hubpb.MarshalJSON(&rl); string(want) != strings.TrimSpace(string(log.body)) {
		t.Errorf("the answer is not the one JSON form:\n got %s\nwant %s", log.body, want)
	}
	view := do(t, srv, call{method: "GET", path: "/v1/sessions/" + id + "/view?name=full", header: as("bob")})
	if !strings.Contains(string(view.body), `"text":"hello bob"`) {
		t.Errorf("view: %s", view.body)
	}
	list := do(t, srv, call{method: "GET", path: "/v1/sessions?state=OPEN&labels[team]=a", header: as("bob")})
	if !strings.Contains(string(list.body), id) {
		t.Errorf("list: %s", list.body)
	}
	closed := do(t, srv, call{method: "POST", path: "/v1/sessions/" + id + ":close", header: as("alice"), body: `{"reason":"done"}`})
	if c := closed.json(t); c["closed"] != true || c["close_reason"] != "done" {
		t.Errorf("close: %s", closed.body)
	}
	got := do(t, srv, call{method: "GET", path: "/v1/sessions/" + id, header: as("alice")})
	if g := got.json(t); g["state"] != "CLOSED" || g["close_reason"] != "done" {
		t.Errorf("get after close: %s", got.body)
	}
}

// TestJSONErrors checks that refusals carry the stable reason, the gRPC
// code and the HTTP status.
func TestJSONErrors(t *testing.T) {
	srv := start(t, false)
	s, err := dial(t, srv, "alice").Open(context.Background(), agentsdk.OpenOptions{Type: agentsdk.TypeConversation, Participants: agentsdk.AutoAccepted("bob")})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	for _, tc := range []struct {
		name   string
		c      call
		status int
		code   float64
		reason string
	}{
		{"not a participant", call{method: "POST", path: "/v1/sessions/" + id + "/envelopes", header: as("mallory"), body: `{"type":"text","text":{"text":"let me in"}}`}, 403, 7, "NOT_PARTICIPANT"},
		{"may not read", call{method: "GET", path: "/v1/sessions/" + id, header: as("mallory")}, 403, 7, "PERMISSION_DENIED"},
		{"unknown session", call{method: "GET", path: "/v1/sessions/0190a0c4-8f4e-7a2b-9c3d-4e5f60718293", header: as("alice")}, 404, 5, "UNKNOWN_SESSION"},
		{"bad id", call{method: "GET", path: "/v1/sessions/nope", header: as("alice")}, 400, 3, "MALFORMED"},
		{"body not JSON", call{method: "POST", path: "/v1/sessions/" + id + "/envelopes", header: as("alice"), body: `{"type":`}, 400, 3, "MALFORMED"},
		{"unknown field", call{method: "POST", path: "/v1/sessions/" + id + "/envelopes", header: as("alice"), body: `{"type":"text","colour":"red"}`}, 400, 3, "MALFORMED"},
		{"impersonation", call{method: "POST", path: "/v1/sessions/" + id + "/envelopes", header: as("bob"), body: `{"type":"text","from":"alice","text":{"text":"x"}}`}, 403, 7, "IMPERSONATION"},
		{"only the creator closes", call{method: "POST", path: "/v1/sessions/" + id + ":close", header: as("bob"), body: `{}`}, 403, 7, "PERMISSION_DENIED"},
		{"no credentials", call{method: "GET", path: "/v1/sessions"}, 401, 16, "UNAUTHENTICATED"},
		{"no route", call{method: "GET", path: "/v1/nowhere", header: as("alice")}, 404, 5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, srv, tc.c)
			if r.status != tc.status || r.json(t)["code"] != tc.code || r.reason(t) != tc.reason {
				t.Errorf("%d %s; want %d, code %v, reason %q", r.status, r.body, tc.status, tc.code, tc.reason)
			}
			if r.json(t)["message"] == "" {
				t.Errorf("no message: %s", r.body)
			}
		})
	}
}

// TestTokens checks the bearer tokens over HTTP and that development
// names mean nothing once tokens are configured.
func TestTokens(t *testing.T) {
	srv := start(t, true)
	ok := do(t, srv, call{method: "GET", path: "/v1/sessions", header: map[string]string{"Authorization": "Bearer " + testToken}})
	if ok.status != http.StatusOK {
		t.Errorf("with alice's token: %d %s", ok.status, ok.body)
	}
	for name, h := range map[string]map[string]string{
		"wrong token": {"Authorization": "Bearer not-a-token-of-anyone"},
		"not bearer":  {"Authorization": "Basic " + testToken},
		"dev name":    as("alice"),
		"none":        nil,
	} {
		r := do(t, srv, call{method: "GET", path: "/v1/sessions", header: h})
		if r.status != http.StatusUnauthorized || r.reason(t) != "UNAUTHENTICATED" {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
		if got := r.header.Get("WWW-Authenticate"); got != `Bearer realm="hubd"` {
			t.Errorf("%s: WWW-Authenticate %q", name, got)
		}
	}
}

// TestDevModeLoopbackOnly: a hub in development mode refuses to serve HTTP
// on an address that is not loopback.
func TestDevModeLoopbackOnly(t *testing.T) {
	_, err := server.Start(context.Background(), server.Config{Listen: "127.0.0.1:0", HTTP: "0.0.0.0:0", InMemory: true})
	if err == nil || !strings.Contains(err.Error(), "development mode is for loopback") {
		t.Fatalf("dev mode on 0.0.0.0: %v", err)
	}
}

// TestSignIn signs a browser in with a token kept in an HTTP-only cookie,
// uses it, refuses a cross-origin post, and signs out.
func TestSignIn(t *testing.T) {
	srv := start(t, true)
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	bad := doWith(t, browser, srv, call{method: "POST", path: "/v1/auth/signin", body: `{"token":"guess-guess-guess-guess"}`})
	if bad.status != http.StatusUnauthorized || len(bad.header.Values("Set-Cookie")) != 0 {
		t.Fatalf("a wrong token signed in: %d %v", bad.status, bad.header)
	}
	in := doWith(t, browser, srv, call{method: "POST", path: "/v1/auth/signin", body: fmt.Sprintf(`{"token":%q}`, testToken)})
	if w := in.json(t); in.status != 200 || w["agent"] != "alice" || w["signed_in"] != true {
		t.Fatalf("sign-in: %d %s", in.status, in.body)
	}
	cookie := in.header.Get("Set-Cookie")
	for _, attr := range []string{hubhttp.SignInCookie + "=", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(cookie, attr) {
			t.Errorf("cookie %q lacks %s", cookie, attr)
		}
	}
	if strings.Contains(cookie, testToken) {
		t.Errorf("cookie %q holds the token in clear", cookie)
	}
	open := doWith(t, browser, srv, call{method: "POST", path: "/v1/sessions", body: `{"type":"conversation@1","participants":[{"name":"bob","auto_accept":true}]}`})
	if open.status != 200 {
		t.Fatalf("open with the cookie: %d %s", open.status, open.body)
	}
	cross := doWith(t, browser, srv, call{method: "POST", path: "/v1/sessions", body: `{"type":"conversation@1"}`,
		header: map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}})
	if cross.status != http.StatusForbidden {
		t.Errorf("a cross-origin post was let through: %d %s", cross.status, cross.body)
	}
	if w := doWith(t, browser, srv, call{method: "GET", path: "/v1/auth/whoami"}).json(t); w["agent"] != "alice" || w["dev"] != false {
		t.Errorf("whoami: %v", w)
	}
	if out := doWith(t, browser, srv, call{method: "POST", path: "/v1/auth/signout"}); out.status != http.StatusNoContent {
		t.Errorf("sign-out: %d", out.status)
	}
	if w := doWith(t, browser, srv, call{method: "GET", path: "/v1/auth/whoami"}).json(t); w["signed_in"] != false {
		t.Errorf("whoami after sign-out: %v", w)
	}
	if r := doWith(t, browser, srv, call{method: "GET", path: "/v1/sessions"}); r.status != http.StatusUnauthorized {
		t.Errorf("a signed-out browser listed sessions: %d", r.status)
	}
}

// TestSignInDev signs in by name in development mode, with a form and a
// redirect as a plain HTML page would.
func TestSignInDev(t *testing.T) {
	srv := start(t, false)
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ctx := context.Background()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+srv.HTTPAddr()+"/v1/auth/signin", strings.NewReader("agent=operator&next=/sessions"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/sessions" {
		t.Fatalf("form sign-in: %d %v", resp.StatusCode, resp.Header)
	}
	if w := doWith(t, browser, srv, call{method: "GET", path: "/v1/auth/whoami"}).json(t); w["agent"] != "operator" || w["operator"] != true || w["dev"] != true {
		t.Errorf("whoami: %v", w)
	}
	if r := doWith(t, browser, srv, call{method: "GET", path: "/debug/pprof/cmdline"}); r.status != 200 {
		t.Errorf("the operator's pprof: %d %s", r.status, r.body)
	}
}

// TestPprofOperatorsOnly: /debug/pprof answers operators only.
func TestPprofOperatorsOnly(t *testing.T) {
	srv := start(t, true)
	if r := do(t, srv, call{method: "GET", path: "/debug/pprof/", header: map[string]string{"Authorization": "Bearer " + testToken}}); r.status != 403 || r.reason(t) != "PERMISSION_DENIED" {
		t.Errorf("alice's pprof: %d %s", r.status, r.body)
	}
	if r := do(t, srv, call{method: "GET", path: "/debug/pprof/"}); r.status != 401 {
		t.Errorf("anonymous pprof: %d", r.status)
	}
	r := do(t, srv, call{method: "GET", path: "/debug/pprof/goroutine?debug=1", header: map[string]string{"Authorization": "Bearer op-" + testToken}})
	if r.status != 200 || !strings.Contains(string(r.body), "goroutine") {
		t.Errorf("the operator's pprof: %d %.100s", r.status, r.body)
	}
	if r := do(t, srv, call{method: "GET", path: "/healthz"}); r.status != 200 || string(r.body) != "ok\n" {
		t.Errorf("healthz: %d %q", r.status, r.body)
	}
	if r := do(t, srv, call{method: "GET", path: "/metrics"}); r.status != 200 || !strings.Contains(string(r.body), "hubd_sessions_quarantined 0") {
		t.Errorf("metrics: %d %.200s", r.status, r.body)
	}
}
